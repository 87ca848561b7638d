#include "lizard/mock/mock_server.h"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "json.h"
#include "sandbox_files.h"
#include "sandbox_runtime.h"

namespace lizard::mock {
namespace {

using internal::JsonOut;
using internal::SandboxRuntime;
using rapidjson::Value;

constexpr std::size_t kExecStreamCap = 512 * 1024;
constexpr std::size_t kJournalBodyCap = 1024 * 1024;
constexpr std::int64_t kExecTimeoutDefaultMs = 60000;
constexpr std::int64_t kExecTimeoutMinMs = 1000;
constexpr std::int64_t kExecTimeoutMaxMs = 600000;
constexpr std::int64_t kSetTimeoutMinMs = 1000;
constexpr std::int64_t kSetTimeoutMaxMs = 2147483647;
constexpr const char* kDefaultRegion = "us-east-1";
constexpr const char* kBasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const std::set<std::string> kTemplates = {"base",   "interpreter", "codex",
                                          "claude", "desktop",     "code-interpreter-v1"};

struct SizeSpec {
  int cpus;
  int memory_mb;
};
const std::map<std::string, SizeSpec> kSizes = {{"nano", {1, 512}},    {"mini", {1, 1024}},
                                                {"small", {2, 4096}},  {"medium", {4, 8192}},
                                                {"large", {8, 16384}}, {"big", {16, 32768}}};

const std::map<std::string, int> kSignals = {
    {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}, {"SIGINT", SIGINT},  {"SIGHUP", SIGHUP},
    {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}};

std::int64_t real_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string iso_time(std::int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string slugify(const std::string& name) {
  std::string out;
  for (char c : lower(name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "project" : out;
}

// '*' matches within one path segment, '**' across segments.
bool glob_match(std::string_view pat, std::string_view s) {
  if (pat.empty()) return s.empty();
  if (pat.substr(0, 2) == "**") {
    std::string_view rest = pat.substr(2);
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (glob_match(rest, s.substr(i))) return true;
    }
    return false;
  }
  if (pat[0] == '*') {
    std::string_view rest = pat.substr(1);
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (glob_match(rest, s.substr(i))) return true;
      if (i < s.size() && s[i] == '/') break;
    }
    return false;
  }
  return !s.empty() && pat[0] == s[0] && glob_match(pat.substr(1), s.substr(1));
}

bool decode_base64(std::string_view in, std::string& out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string clean;
  clean.reserve(in.size());
  for (char c : in) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    clean += c;
  }
  std::size_t pad = 0;
  while (!clean.empty() && clean.back() == '=') {
    clean.pop_back();
    ++pad;
  }
  if (pad > 2 || clean.size() % 4 == 1) return false;
  if (pad > 0 && (clean.size() + pad) % 4 != 0) return false;
  out.clear();
  out.reserve(clean.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : clean) {
    int v = val(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return true;
}

std::string random_hex(std::mt19937_64& rng, std::size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kHex[rng() % 16];
  return s;
}

// Finds the socket of the connection a request came on (httplib 0.11.4
// does not expose it) and shuts it down, so that the client gets no
// status line at all.
void drop_connection_by_ports(int local_port, int remote_port) {
  internal::DirPtr d(::opendir("/proc/self/fd"));
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    int fd = std::atoi(e->d_name);
    if (fd <= 2) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    auto port_of = [](const sockaddr_storage& a) -> int {
      if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
      if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
      return -1;
    };
    if (port_of(peer) == remote_port && port_of(local) == local_port) {
      ::shutdown(fd, SHUT_RDWR);
    }
  }
}

void drop_connection(const httplib::Request& req) {
  drop_connection_by_ports(req.local_port, req.remote_port);
}

// httplib 0.11.4 listens with a backlog of 5: a burst of 64 connects then
// overflows the accept queue and some clients see resets. listen(2) again
// on the bound socket raises the backlog; the socket is found by its port.
void raise_listen_backlog(int port) {
  internal::DirPtr d(::opendir("/proc/self/fd"));
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    int fd = std::atoi(e->d_name);
    if (fd <= 2) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage local{};
    socklen_t ll = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    int p = -1;
    if (local.ss_family == AF_INET) p = ntohs(reinterpret_cast<const sockaddr_in&>(local).sin_port);
    if (local.ss_family == AF_INET6)
      p = ntohs(reinterpret_cast<const sockaddr_in6&>(local).sin6_port);
    if (p == port) ::listen(fd, 1024);
  }
}

struct Workspace {
  std::string id, name;
  std::int64_t created_at = 0;
};
struct Project {
  std::string id, name, slug, workspace_id;
  std::int64_t created_at = 0;
};
struct ApiKey {
  std::string key, id, name;
  bool full = true;
  std::set<std::string> workspaces, projects;
};
struct Volume {
  std::string id, project_id, name, region, dir, attached_to;
  int size_gb = 10;
  std::int64_t created_at = 0;
};
struct Snapshot {
  std::string id, name, project_id, workspace_id, region, source, dir;
  int cpus = 0, memory_mb = 0;
  std::int64_t created_at = 0;
};
struct Sandbox {
  std::string id, template_name, size, region, project_id, metadata_json = "{}", volume_id;
  std::vector<std::pair<std::string, std::string>> envs;
  std::int64_t started_at = 0, end_at = 0;  // end_at 0: no deadline
  std::int64_t lifetime_ms = 0;
  std::string status = "running";
  std::string base_dir;
  std::shared_ptr<SandboxRuntime> rt;  // null while paused
};
struct FaultState {
  FaultRule rule;
  int remaining;
  std::mt19937_64 rng;
  std::uniform_real_distribution<double> dist{0.0, 1.0};
};

// Raised inside handlers to answer an error; caught by the dispatcher.
struct ApiError {
  int status;
  std::string message;
  std::string code;
  std::string error_field;  // when set, "error" carries this and "message" the sentence
};

[[noreturn]] void api_error(int status, std::string message, std::string code = "") {
  throw ApiError{status, std::move(message), std::move(code), ""};
}

std::string error_body(const ApiError& e) {
  JsonOut j;
  j.begin_object();
  if (!e.error_field.empty()) {
    j.kv("error", e.error_field).kv("message", e.message);
  } else {
    j.kv("error", e.message);
    if (!e.code.empty()) j.kv("code", e.code);
  }
  j.end_object();
  return j.text();
}

[[noreturn]] void not_found_sandbox() { api_error(404, "Sandbox not found", "SANDBOX_NOT_FOUND"); }

[[noreturn]] void fs_error(const std::system_error& e) {
  int err = e.code().value();
  std::string msg = e.what();
  switch (err) {
    case ENOENT:
      api_error(404, msg, "ENOENT");
    case EISDIR:
      api_error(400, msg, "EISDIR");
    case ENOTDIR:
      api_error(400, msg, "ENOTDIR");
    case EACCES:
    case EPERM:
    case EROFS:
      api_error(400, msg, "EACCES");
    case EEXIST:
    case ENOTEMPTY:
      api_error(400, msg, "EEXIST");
    case ELOOP:
      api_error(400, msg, "ELOOP");
    default:
      api_error(400, msg, "EINVAL");
  }
}

// Typed access to a request body.
class Body {
 public:
  explicit Body(const std::string& text, bool allow_empty = false) {
    if (allow_empty && text.find_first_not_of(" \t\r\n") == std::string::npos) {
      doc_.SetObject();
      return;
    }
    std::string err;
    if (!internal::parse_json(text, doc_, err)) api_error(400, err, "BAD_REQUEST");
    if (!doc_.IsObject()) api_error(400, "The request body must be a JSON object", "BAD_REQUEST");
  }
  const Value* get(const char* name) const {
    auto it = doc_.FindMember(name);
    if (it == doc_.MemberEnd() || it->value.IsNull()) return nullptr;
    return &it->value;
  }
  std::optional<std::string> str(const char* name) const {
    const Value* v = get(name);
    if (!v) return std::nullopt;
    if (!v->IsString())
      api_error(400, std::string("'") + name + "' must be a string", "BAD_REQUEST");
    return internal::string_of(*v);
  }
  std::optional<std::int64_t> integer(const char* name) const {
    const Value* v = get(name);
    if (!v) return std::nullopt;
    if (v->IsInt64()) return v->GetInt64();
    if (v->IsDouble()) {
      double d = v->GetDouble();
      // The range first: casting an out-of-range double is undefined (the
      // fuzzer's {"sizeGb":1e308} found it).
      if (d > -9e18 && d < 9e18 && d == static_cast<double>(static_cast<std::int64_t>(d)))
        return static_cast<std::int64_t>(d);
    }
    api_error(400, std::string("'") + name + "' must be an integer", "BAD_REQUEST");
  }
  std::optional<bool> boolean(const char* name) const {
    const Value* v = get(name);
    if (!v) return std::nullopt;
    if (!v->IsBool())
      api_error(400, std::string("'") + name + "' must be a boolean", "BAD_REQUEST");
    return v->GetBool();
  }
  std::vector<std::pair<std::string, std::string>> env_map(const char* name) const {
    std::vector<std::pair<std::string, std::string>> out;
    const Value* v = get(name);
    if (!v) return out;
    if (!v->IsObject())
      api_error(400, std::string("'") + name + "' must be an object of strings", "BAD_REQUEST");
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
      if (!it->value.IsString())
        api_error(400, std::string("'") + name + "' must be an object of strings", "BAD_REQUEST");
      std::string k = internal::string_of(it->name);
      std::string val = internal::string_of(it->value);
      if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
          val.find('\0') != std::string::npos)
        api_error(400, "Invalid environment variable name or value", "BAD_REQUEST");
      out.emplace_back(std::move(k), std::move(val));
    }
    return out;
  }
  std::vector<std::string> string_list(const char* name) const {
    std::vector<std::string> out;
    const Value* v = get(name);
    if (!v) return out;
    if (!v->IsArray())
      api_error(400, std::string("'") + name + "' must be an array", "BAD_REQUEST");
    for (const auto& x : v->GetArray()) {
      if (!x.IsString())
        api_error(400, std::string("'") + name + "' must be an array of strings", "BAD_REQUEST");
      out.push_back(internal::string_of(x));
    }
    return out;
  }
  const rapidjson::Document& doc() const { return doc_; }

 private:
  rapidjson::Document doc_;
};

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

class MockServer::Impl {
 public:
  explicit Impl(MockOptions options) : opt_(std::move(options)), rng_(std::random_device{}()) {
    if (opt_.api_keys.empty()) opt_.api_keys.push_back(kDefaultApiKey);
    if (opt_.projects.empty()) opt_.projects.push_back(kDefaultProject);
    std::string why = "disabled by MockOptions::use_namespaces";
    isolated_ = opt_.use_namespaces && internal::namespaces_available(&why);
    if (!isolated_) {
      log("WARNING: Linux namespaces are not permitted here (" + why +
          "); sandboxes run in DEGRADED mode without isolation: commands run on the host, "
          "in the sandbox's own directory. See docs/mockserver.md.");
    }
    if (opt_.state_dir.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "lizard-mock-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create the state directory");
      state_dir_ = tmpl;
      own_state_dir_ = true;
    } else {
      std::filesystem::create_directories(opt_.state_dir);
      state_dir_ = std::filesystem::absolute(opt_.state_dir).string();
    }
    init_accounts();
    setup_routes();
    port_ = opt_.port == 0 ? http_.bind_to_any_port(opt_.host)
                           : (http_.bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
    if (port_ <= 0) {
      cleanup_state_dir();
      throw std::runtime_error("cannot bind " + opt_.host + ":" + std::to_string(opt_.port));
    }
    raise_listen_backlog(port_);
    listener_ = std::thread([this] { http_.listen_after_bind(); });
    reaper_ = std::thread([this] { reap_loop(); });
    // Ready means accepting: the socket is listening already, so wait only
    // for the loop to run.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!http_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  ~Impl() {
    stopping_ = true;
    kill_all_sandboxes();
    http_.stop();
    if (listener_.joinable()) listener_.join();
    {
      std::lock_guard lock(reap_mu_);
      reap_stop_ = true;
    }
    reap_cv_.notify_all();
    if (reaper_.joinable()) reaper_.join();
    kill_all_sandboxes();
    cleanup_state_dir();
  }

  // ---- public operations -------------------------------------------------
  std::string url() const { return "http://" + opt_.host + ":" + std::to_string(port_); }
  int port() const { return port_; }
  std::string api_key() const { return opt_.api_keys.front(); }
  std::string project_id() const {
    std::lock_guard lock(mu_);
    return initial_projects_.front().id;
  }
  bool isolated() const { return isolated_; }

  std::vector<JournalEntry> requests() const {
    std::lock_guard lock(journal_mu_);
    return journal_;
  }
  void clear_journal() {
    std::lock_guard lock(journal_mu_);
    journal_.clear();
  }
  void add_fault(FaultRule rule) {
    std::lock_guard lock(fault_mu_);
    FaultState st{rule, rule.times, std::mt19937_64(rule.seed)};
    faults_.push_back(std::move(st));
  }
  void clear_faults() {
    std::lock_guard lock(fault_mu_);
    faults_.clear();
  }
  void advance_clock(std::chrono::milliseconds by) {
    clock_offset_ms_ += by.count();
    reap_cv_.notify_all();
    reap_expired();
  }
  void reset() {
    clear_journal();
    clear_faults();
    kill_all_sandboxes();
    std::vector<Volume> vols;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, v] : volumes_) vols.push_back(v);
      volumes_.clear();
      for (auto& [id, s] : snapshots_) internal::remove_tree(s.dir);
      snapshots_.clear();
      projects_ = initial_projects_;
      workspaces_ = initial_workspaces_;
      keys_ = initial_keys_;
      clock_offset_ms_ = 0;
    }
    for (const auto& v : vols) internal::remove_tree(v.dir);
  }
  std::size_t live_sandboxes() {
    reap_expired();
    std::lock_guard lock(mu_);
    return sandboxes_.size();
  }
  std::size_t live_processes() const {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& [id, sb] : sandboxes_) {
      if (sb->rt) n += sb->rt->process_count();
    }
    return n;
  }
  std::string workspace_dir(const std::string& id) const {
    std::lock_guard lock(mu_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end() || !it->second->rt) return {};
    return it->second->rt->workspace_dir();
  }

 private:
  // Where a sandbox keeps its home under its directory (see SandboxRuntime).
  const char* home_sub() const { return isolated_ ? "/home" : "/root"; }

  std::int64_t now_ms() const { return real_now_ms() + clock_offset_ms_.load(); }

  void log(const std::string& line) const {
    if (opt_.log) opt_.log(line);
  }

  std::string new_id(const std::string& prefix, std::size_t n = 16) {
    std::lock_guard lock(rng_mu_);
    return prefix + random_hex(rng_, n);
  }

  void init_accounts() {
    std::int64_t now = now_ms();
    Workspace ws{new_id("wks_"), "Mock workspace", now};
    workspaces_[ws.id] = ws;
    for (const auto& name : opt_.projects) {
      Project p{new_id("prj_"), name, name, ws.id, now};
      projects_.push_back(p);
    }
    for (const auto& k : opt_.api_keys) {
      ApiKey key;
      key.key = k;
      key.id = new_id("key_");
      key.name = "mock key";
      key.full = true;
      keys_[k] = key;
    }
    initial_projects_ = projects_;
    initial_workspaces_ = workspaces_;
    initial_keys_ = keys_;
  }

  void cleanup_state_dir() {
    if (own_state_dir_) internal::remove_tree(state_dir_);
  }

  // ---- sandboxes lifecycle ------------------------------------------------
  void kill_all_sandboxes() {
    std::vector<std::shared_ptr<Sandbox>> all;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, sb] : sandboxes_) all.push_back(sb);
      sandboxes_.clear();
      for (auto& [id, v] : volumes_) v.attached_to.clear();
    }
    for (auto& sb : all) discard(*sb);
  }

  // Discards a sandbox already removed from the table.
  void discard(Sandbox& sb) {
    if (sb.rt) {
      sb.rt->destroy();
    } else if (!sb.base_dir.empty()) {
      if (sb.volume_id.empty()) {
        internal::remove_tree(sb.base_dir);
      } else {
        for (const char* d : {"/root", "/tmp", "/home"}) internal::remove_tree(sb.base_dir + d);
        ::unlink((sb.base_dir + "/workspace").c_str());
        ::rmdir(sb.base_dir.c_str());
      }
    }
  }

  // Removes a sandbox from the table (caller holds mu_); returns it.
  std::shared_ptr<Sandbox> take_locked(const std::string& id) {
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return nullptr;
    auto sb = it->second;
    sandboxes_.erase(it);
    if (!sb->volume_id.empty()) {
      auto v = volumes_.find(sb->volume_id);
      if (v != volumes_.end()) v->second.attached_to.clear();
    }
    return sb;
  }

  void reap_expired() {
    std::vector<std::shared_ptr<Sandbox>> dead;
    {
      std::lock_guard lock(mu_);
      std::int64_t now = now_ms();
      std::vector<std::string> ids;
      for (const auto& [id, sb] : sandboxes_) {
        if (sb->end_at != 0 && now >= sb->end_at) ids.push_back(id);
      }
      for (const auto& id : ids) dead.push_back(take_locked(id));
    }
    for (auto& sb : dead) discard(*sb);
  }

  void reap_loop() {
    std::unique_lock lock(reap_mu_);
    while (!reap_stop_) {
      reap_cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (reap_stop_) break;
      lock.unlock();
      reap_expired();
      lock.lock();
    }
  }

  bool reaches(const ApiKey& k, const Project& p) const {
    return k.full || k.projects.count(p.id) || k.workspaces.count(p.workspace_id);
  }

  // The sandbox `id` if alive and reachable by `key`, else 404.
  std::shared_ptr<Sandbox> find_sandbox(const ApiKey& key, const std::string& id) {
    reap_expired();
    std::lock_guard lock(mu_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) not_found_sandbox();
    const Project* p = project_by_id_locked(it->second->project_id);
    if (!p || !reaches(key, *p)) not_found_sandbox();
    return it->second;
  }

  bool alive(const std::string& id) {
    reap_expired();
    std::lock_guard lock(mu_);
    return sandboxes_.count(id) > 0;
  }

  const Project* project_by_id_locked(const std::string& id) const {
    for (const auto& p : projects_) {
      if (p.id == id) return &p;
    }
    return nullptr;
  }

  // Resolves an ID, slug or name (case-insensitive) among the projects
  // `key` reaches. Caller holds mu_.
  Project resolve_project_locked(const ApiKey& key, const std::string& ref) const {
    std::string l = lower(ref);
    std::vector<const Project*> hits;
    for (const auto& p : projects_) {
      if (!reaches(key, p)) continue;
      if (lower(p.id) == l || lower(p.slug) == l || lower(p.name) == l) hits.push_back(&p);
    }
    if (hits.empty()) api_error(404, "Project not found", "PROJECT_NOT_FOUND");
    if (hits.size() > 1)
      api_error(400, "Project reference is ambiguous; pass the project ID", "PROJECT_AMBIGUOUS");
    return *hits.front();
  }

  // Takes mu_: a sandbox's fields change under it (timeout, pause).
  std::string sandbox_json(const Sandbox& sb) const {
    std::lock_guard lock(mu_);
    JsonOut j;
    write_sandbox(j, sb);
    return j.text();
  }

  void write_sandbox(JsonOut& j, const Sandbox& sb) const {
    const SizeSpec& sz = kSizes.at(sb.size);
    j.begin_object()
        .kv("sandboxId", sb.id)
        .kv("id", sb.id)
        .kv("template", sb.template_name)
        .kv("status", sb.status)
        .kv("startedAt", iso_time(sb.started_at));
    j.key("endAt");
    if (sb.end_at != 0) {
      j.str(iso_time(sb.end_at));
    } else {
      j.null();
    }
    j.kv("region", sb.region)
        .kv("size", sb.size)
        .kv("cpus", sz.cpus)
        .kv("memoryMb", sz.memory_mb)
        .key("metadata")
        .raw(sb.metadata_json)
        .kv("projectId", sb.project_id)
        .kv("runtime", opt_.era == Era::kFirecracker ? "firecracker" : "container");
    if (!sb.volume_id.empty()) j.kv("volumeId", sb.volume_id);
    j.end_object();
  }

  std::string volume_json(const Volume& v) const {
    JsonOut j;
    j.begin_object()
        .kv("id", v.id)
        .kv("projectId", v.project_id)
        .kv("name", v.name)
        .kv("sizeGb", v.size_gb)
        .kv("region", v.region)
        .kv("status", v.attached_to.empty() ? "available" : "attached");
    j.key("attachedTo");
    if (v.attached_to.empty()) {
      j.null();
    } else {
      j.str(v.attached_to);
    }
    j.kv("createdAt", iso_time(v.created_at)).end_object();
    return j.text();
  }

  static void write_project(JsonOut& j, const Project& p) {
    j.begin_object()
        .kv("id", p.id)
        .kv("name", p.name)
        .kv("slug", p.slug)
        .kv("workspaceId", p.workspace_id)
        .kv("createdAt", iso_time(p.created_at))
        .end_object();
  }

  // ---- HTTP plumbing ------------------------------------------------------
  struct Ctx {
    const httplib::Request& req;
    httplib::Response& res;
    std::vector<std::string> seg;
    ApiKey key;
  };

  static void reply(httplib::Response& res, int status, const std::string& json) {
    res.status = status;
    res.set_content(json, "application/json");
  }

  void setup_routes() {
    http_.new_task_queue = [] { return new httplib::ThreadPool(256); };
    http_.set_payload_max_length(opt_.max_body_bytes);
    http_.set_keep_alive_max_count(1000);
    // httplib writes headers and body separately; without TCP_NODELAY, Nagle's
    // algorithm holds the body until the client's delayed ACK (~40 ms a request).
    http_.set_tcp_nodelay(true);
    http_.set_read_timeout(30, 0);
    http_.set_write_timeout(30, 0);
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      dispatch(req, res);
    };
    // httplib 0.11.4 answers an oversized body with 413 only after reading
    // (and discarding) all of it; a client announcing gigabytes would be read
    // whole. The announced length is known before the body: refuse it then.
    // httplib would next parse the unread body as a request line (buffered
    // without bound until a newline), so the connection is dropped a moment
    // after the answer went out (at once would reset it before the client
    // read the 413: the unread body makes close() send RST).
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || length.find_first_not_of("0123456789") != std::string::npos ||
          length.size() > 19 || std::stoull(length) <= opt_.max_body_bytes) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.status = 413;
      res.set_header("Connection", "close");
      res.set_content(error_body({413, "Request body too large", "PAYLOAD_TOO_LARGE", ""}),
                      "application/json");
      if (req.path.rfind("/api/", 0) == 0) record(req, 413, false);
      std::thread([local = req.local_port, remote = req.remote_port] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        drop_connection_by_ports(local, remote);
      }).detach();
      return httplib::Server::HandlerResponse::Handled;
    });
    const std::string any = ".*";
    http_.Get(any, handler);
    http_.Post(any, handler);
    http_.Put(any, handler);
    http_.Delete(any, handler);
    http_.Patch(any, handler);
    http_.Options(any, handler);
    http_.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          std::string msg = res.status == 413   ? "Request body too large"
                            : res.status == 404 ? "Not found"
                            : res.status == 400 ? "Bad request"
                                                : "Request failed";
          std::string code = res.status == 413   ? "PAYLOAD_TOO_LARGE"
                             : res.status == 404 ? "NOT_FOUND"
                                                 : "BAD_REQUEST";
          res.set_content(error_body({res.status, msg, code, ""}), "application/json");
          if (res.status == 413 && req.path.rfind("/api/", 0) == 0) record(req, res.status, false);
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          reply(res, 500, error_body({500, "Internal error in the mock", "INTERNAL", ""}));
        });
  }

  void record(const httplib::Request& req, int status, bool with_body = true) {
    JournalEntry e;
    e.method = req.method;
    e.path = req.path;
    auto q = req.target.find('?');
    if (q != std::string::npos) e.query = req.target.substr(q + 1);
    e.status = status;
    if (with_body) {
      if (req.body.size() > kJournalBodyCap) {
        e.body = req.body.substr(0, kJournalBodyCap) +
                 "...[cut by lizard-mock: " + std::to_string(req.body.size()) + " bytes in all]";
      } else {
        e.body = req.body;
      }
    }
    e.accept = req.get_header_value("Accept");
    std::lock_guard lock(journal_mu_);
    journal_.push_back(std::move(e));
  }

  std::optional<FaultRule> match_fault(const httplib::Request& req) {
    std::lock_guard lock(fault_mu_);
    for (auto& f : faults_) {
      if (!f.rule.method.empty() && f.rule.method != "*" && f.rule.method != req.method) continue;
      if (!glob_match(f.rule.path_pattern, req.path)) continue;
      if (f.remaining == 0) continue;
      if (f.rule.probability < 1.0 && f.dist(f.rng) >= f.rule.probability) continue;
      if (f.remaining > 0) --f.remaining;
      return f.rule;
    }
    return std::nullopt;
  }

  void dispatch(const httplib::Request& req, httplib::Response& res) {
    auto t0 = std::chrono::steady_clock::now();
    if (req.path.rfind("/_mock/", 0) == 0) {
      try {
        control(req, res);
      } catch (const ApiError& e) {
        reply(res, e.status, error_body(e));
      }
      return;
    }
    std::optional<FaultRule> fault = match_fault(req);
    if (fault) {
      switch (fault->action) {
        case FaultRule::Action::kRespond:
          res.status = fault->status;
          res.set_content(fault->body, fault->content_type);
          record(req, res.status);
          log_line(req, res.status, t0);
          return;
        case FaultRule::Action::kDelay:
          std::this_thread::sleep_for(fault->delay);
          break;
        case FaultRule::Action::kClose:
          record(req, 0);
          log_line(req, 0, t0);
          drop_connection(req);
          return;
        default:
          break;
      }
    }
    handle_api(req, res);
    if (fault && fault->action == FaultRule::Action::kCloseAfterHandling) {
      // The work happens (a streamed exec runs to its end), the answer is lost.
      finish_streaming_silently(res);
      record(req, 0);
      log_line(req, 0, t0);
      drop_connection(req);
      return;
    }
    if (fault && fault->action == FaultRule::Action::kTruncate)
      truncate_response(res, fault->truncate_at);
    record(req, res.status);
    log_line(req, res.status, t0);
  }

  void log_line(const httplib::Request& req, int status,
                std::chrono::steady_clock::time_point t0) const {
    if (!opt_.log) return;
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // Never the headers: the key lives there.
    opt_.log(req.method + " " + req.path + " " + std::to_string(status) + " " + std::to_string(ms) +
             "ms");
  }

  static void finish_streaming_silently(httplib::Response& res) {
    if (!res.content_provider_) return;
    httplib::DataSink sink;
    bool done = false;
    sink.write = [](const char*, std::size_t) { return true; };
    sink.is_writable = [] { return true; };
    sink.done = [&done] { done = true; };
    std::size_t offset = 0;
    while (!done && res.content_provider_(offset, 0, sink)) {
    }
    res.content_provider_ = nullptr;
  }

  static void truncate_response(httplib::Response& res, std::size_t at) {
    if (res.content_provider_) {
      // A stream: pass its first `at` bytes, then break the connection.
      auto inner = res.content_provider_;
      auto sent = std::make_shared<std::size_t>(0);
      res.content_provider_ = [inner, sent, at](std::size_t offset, std::size_t length,
                                                httplib::DataSink& outer) {
        httplib::DataSink proxy;
        bool cut = false;
        proxy.write = [&](const char* d, std::size_t n) {
          std::size_t room = at > *sent ? at - *sent : 0;
          std::size_t take = std::min(room, n);
          if (take > 0 && !outer.write(d, take)) return false;
          *sent += take;
          if (take < n) cut = true;
          return !cut;
        };
        proxy.is_writable = [&] { return !cut && outer.is_writable(); };
        proxy.done = [&] { cut = true; };
        inner(offset, length, proxy);
        return false;
      };
      return;
    }
    auto full = std::make_shared<std::string>(std::move(res.body));
    res.body.clear();
    std::string type = res.get_header_value("Content-Type");
    if (type.empty()) type = "application/json";
    res.set_content_provider(
        full->size(), type, [full, at](std::size_t offset, std::size_t, httplib::DataSink& sink) {
          if (offset < at) {
            sink.write(full->data() + offset, std::min(at, full->size()) - offset);
          }
          return false;
        });
  }

  // ---- /_mock control plane -------------------------------------------------
  void control(const httplib::Request& req, httplib::Response& res) {
    const std::string& p = req.path;
    if (p == "/_mock/requests" && req.method == "GET") {
      JsonOut j;
      j.begin_array();
      for (const auto& e : requests()) {
        j.begin_object()
            .kv("method", e.method)
            .kv("path", e.path)
            .kv("query", e.query)
            .kv("status", e.status)
            .kv("body", e.body)
            .kv("accept", e.accept)
            .end_object();
      }
      j.end_array();
      return reply(res, 200, j.text());
    }
    if (p == "/_mock/requests" && req.method == "DELETE") {
      clear_journal();
      return reply(res, 200, "{}");
    }
    if (p == "/_mock/reset" && req.method == "POST") {
      reset();
      return reply(res, 200, "{}");
    }
    if (p == "/_mock/faults" && req.method == "DELETE") {
      clear_faults();
      return reply(res, 200, "{}");
    }
    if (p == "/_mock/faults" && req.method == "POST") {
      Body b(req.body);
      FaultRule r;
      r.method = b.str("method").value_or("*");
      auto path = b.str("path");
      if (!path) api_error(400, "'path' (a glob) is required", "BAD_REQUEST");
      r.path_pattern = *path;
      std::string action = b.str("action").value_or("respond");
      static const std::map<std::string, FaultRule::Action> kActions = {
          {"respond", FaultRule::Action::kRespond},
          {"delay", FaultRule::Action::kDelay},
          {"close", FaultRule::Action::kClose},
          {"close_after_handling", FaultRule::Action::kCloseAfterHandling},
          {"truncate", FaultRule::Action::kTruncate}};
      auto a = kActions.find(action);
      if (a == kActions.end()) api_error(400, "Unknown action " + action, "BAD_REQUEST");
      r.action = a->second;
      r.status = static_cast<int>(b.integer("status").value_or(500));
      if (const Value* body = b.get("body")) {
        r.body = body->IsString() ? internal::string_of(*body) : internal::to_json(*body);
      }
      r.content_type = b.str("contentType").value_or("application/json");
      r.delay = std::chrono::milliseconds(b.integer("delayMs").value_or(0));
      r.truncate_at =
          static_cast<std::size_t>(std::max<std::int64_t>(0, b.integer("truncateAt").value_or(0)));
      r.times = static_cast<int>(b.integer("times").value_or(-1));
      if (const Value* pr = b.get("probability")) {
        if (!pr->IsNumber()) api_error(400, "'probability' must be a number", "BAD_REQUEST");
        r.probability = pr->GetDouble();
      }
      r.seed = static_cast<std::uint64_t>(b.integer("seed").value_or(1));
      add_fault(r);
      return reply(res, 200, "{}");
    }
    if (p == "/_mock/clock" && req.method == "POST") {
      Body b(req.body);
      auto by = b.integer("advanceMs");
      if (!by || *by < 0)
        api_error(400, "'advanceMs' must be a non-negative integer", "BAD_REQUEST");
      advance_clock(std::chrono::milliseconds(*by));
      JsonOut j;
      j.begin_object().kv("offsetMs", clock_offset_ms_.load()).kv("nowMs", now_ms()).end_object();
      return reply(res, 200, j.text());
    }
    if (p == "/_mock/state" && req.method == "GET") {
      JsonOut j;
      j.begin_object()
          .kv("isolated", isolated_)
          .kv("sandboxes", static_cast<std::int64_t>(live_sandboxes()))
          .kv("processes", static_cast<std::int64_t>(live_processes()))
          .kv("era", opt_.era == Era::kFirecracker ? "firecracker" : "kubernetes")
          .kv("execLimitMs", static_cast<std::int64_t>(opt_.exec_limit.count()))
          .end_object();
      return reply(res, 200, j.text());
    }
    api_error(404, "No such control route", "NOT_FOUND");
  }

  // ---- /api ---------------------------------------------------------------
  void handle_api(const httplib::Request& req, httplib::Response& res) {
    try {
      if (req.path.rfind("/api/", 0) != 0 && req.path != "/api")
        api_error(404, "Not found", "NOT_FOUND");
      std::string key = req.get_header_value("X-API-Key");
      if (key.empty()) {
        std::string auth = req.get_header_value("Authorization");
        if (auth.rfind("Bearer ", 0) == 0) key = auth.substr(7);
      }
      ApiKey k;
      {
        std::lock_guard lock(mu_);
        auto it = keys_.find(key);
        if (key.empty() || it == keys_.end()) {
          res.status = 401;
          res.set_content(R"({"error":"Invalid or missing API key"})", "application/json");
          return;
        }
        k = it->second;
      }
      Ctx c{req, res, split_path(req.path), k};
      route(c);
    } catch (const ApiError& e) {
      reply(res, e.status, error_body(e));
    } catch (const std::system_error& e) {
      reply(res, 500, error_body({500, e.what(), "INTERNAL", ""}));
    } catch (const std::exception& e) {
      reply(res, 500, error_body({500, e.what(), "INTERNAL", ""}));
    }
  }

  void route(Ctx& c) {
    const auto& s = c.seg;  // s[0] == "api"
    const std::string& m = c.req.method;
    std::size_t n = s.size();
    if (n >= 2 && s[1] == "sandboxes") {
      if (n == 2 && m == "POST") return create_sandbox(c);
      if (n == 2 && m == "GET") return list_sandboxes(c, std::nullopt);
      if (n == 2) method_not_allowed();
      const std::string& id = s[2];
      if (n == 3 && m == "GET") return reply(c.res, 200, sandbox_json(*find_sandbox(c.key, id)));
      if (n == 3 && m == "DELETE") return kill_sandbox(c, id);
      if (n == 3) method_not_allowed();
      const std::string& op = s[3];
      if (n == 4 && op == "timeout" && m == "POST") return set_timeout(c, id);
      if (n == 4 && op == "exec" && m == "POST") return exec(c, id);
      if (n == 4 && op == "processes" && m == "GET") return list_processes(c, id);
      if (n == 5 && op == "processes" && s[4] == "signal" && m == "POST") return signal(c, id);
      if (op == "files") return files(c, id);
      if (n == 4 && (op == "pause" || op == "resume" || op == "fork" || op == "snapshot") &&
          m == "POST")
        return era_op(c, id, op);
      if (n == 5 && op == "expose" && m == "POST") return expose(c, id, s[4]);
      if (n == 5 && op == "expose" && m == "DELETE") {
        find_sandbox(c.key, id);
        return reply(c.res, 200, "{}");
      }
      api_error(404, "Not found", "NOT_FOUND");
    }
    if (n >= 2 && s[1] == "projects") {
      if (n == 2 && m == "GET") return list_projects(c);
      if (n == 2 && m == "POST") return create_project(c);
      if (n == 2) method_not_allowed();
      Project p;
      {
        std::lock_guard lock(mu_);
        p = resolve_project_locked(c.key, s[2]);
      }
      if (n == 3 && m == "GET") {
        JsonOut j;
        write_project(j, p);
        return reply(c.res, 200, j.text());
      }
      if (n == 4 && s[3] == "sandboxes" && m == "GET") return list_sandboxes(c, p.id);
      if (n >= 4 && s[3] == "volumes") return volumes(c, p);
      api_error(404, "Not found", "NOT_FOUND");
    }
    if (n == 2 && s[1] == "workspaces") return workspaces(c);
    if (n == 2 && s[1] == "api-keys" && m == "POST") return create_key(c);
    // The SDK's route for the same operation: {name, scopes: [{type, id}]}.
    if (n == 3 && s[1] == "account" && s[2] == "api-keys" && m == "POST") return create_key(c);
    if (n >= 2 && (s[1] == "billing" || s[1] == "usage")) {
      if (!c.key.full) {
        throw ApiError{403,
                       "This API key is scoped to workspaces or projects; billing and usage need "
                       "an account-wide key",
                       "", "ACCOUNT_SCOPE_REQUIRED"};
      }
      return reply(c.res, 200, R"({"plan":"mock","balanceUsd":0,"usage":[]})");
    }
    api_error(404, "Not found", "NOT_FOUND");
  }

  [[noreturn]] static void method_not_allowed() {
    api_error(405, "Method not allowed", "METHOD_NOT_ALLOWED");
  }

  // ---- sandboxes ------------------------------------------------------------
  void create_sandbox(Ctx& c) {
    if (stopping_) api_error(503, "The mock is shutting down", "SHUTTING_DOWN");
    Body b(c.req.body);
    auto sb = std::make_shared<Sandbox>();
    sb->template_name = b.str("template").value_or("base");
    if (!kTemplates.count(sb->template_name))
      api_error(400, "Unknown template: " + sb->template_name, "INVALID_TEMPLATE");
    sb->size = b.str("size").value_or("medium");
    if (!kSizes.count(sb->size)) api_error(400, "Unknown size: " + sb->size, "INVALID_SIZE");
    auto project_ref = b.str("projectId");
    if (!project_ref || project_ref->empty())
      api_error(400, "A project is required to create a sandbox", "PROJECT_REQUIRED");
    auto timeout = b.integer("timeoutMs");
    if (timeout && (*timeout < 0 || *timeout > kSetTimeoutMaxMs))
      api_error(400, "'timeoutMs' must be between 0 and 2147483647", "INVALID_TIMEOUT");
    sb->region = b.str("region").value_or(kDefaultRegion);
    sb->envs = b.env_map("envs");
    if (const Value* md = b.get("metadata")) {
      if (!md->IsObject()) api_error(400, "'metadata' must be an object", "BAD_REQUEST");
      sb->metadata_json = internal::to_json(*md);
    }
    auto volume_id = b.str("volumeId");
    auto volume_name = b.str("volumeName");
    auto snapshot_id = b.str("snapshotId");
    sb->id = new_id("sbx_");
    sb->base_dir = state_dir_ + "/sandboxes/" + sb->id;
    std::string workspace_src;
    std::string snapshot_dir;
    {
      std::lock_guard lock(mu_);
      Project p = resolve_project_locked(c.key, *project_ref);
      sb->project_id = p.id;
      if (volume_id || volume_name) {
        Volume* v = nullptr;
        for (auto& [id, vol] : volumes_) {
          if (vol.project_id == p.id &&
              ((volume_id && vol.id == *volume_id) || (volume_name && vol.name == *volume_name)))
            v = &vol;
        }
        if (!v) api_error(404, "Volume not found", "VOLUME_NOT_FOUND");
        if (!v->attached_to.empty())
          api_error(409, "Volume is attached to another sandbox", "VOLUME_IN_USE");
        v->attached_to = sb->id;
        sb->volume_id = v->id;
        sb->region = v->region;
        workspace_src = v->dir;
      }
      if (snapshot_id) {
        auto it = snapshots_.find(*snapshot_id);
        if (it == snapshots_.end() || it->second.project_id != p.id)
          api_error(404, "Snapshot not found", "SNAPSHOT_NOT_FOUND");
        snapshot_dir = it->second.dir;
      }
    }
    try {
      if (!snapshot_dir.empty()) {
        for (const char* d : {"/workspace", "/tmp", home_sub()})
          internal::copy_tree(snapshot_dir + d, sb->base_dir + d);
      }
      sb->rt = std::make_shared<SandboxRuntime>(sb->base_dir, workspace_src, isolated_);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      if (!sb->volume_id.empty()) volumes_[sb->volume_id].attached_to.clear();
      internal::remove_tree(sb->base_dir);
      api_error(500, std::string("Sandbox could not start: ") + e.what(), "SANDBOX_START_FAILED");
    }
    sb->started_at = now_ms();
    sb->lifetime_ms = timeout.value_or(0);
    sb->end_at = sb->lifetime_ms > 0 ? sb->started_at + sb->lifetime_ms : 0;
    {
      std::lock_guard lock(mu_);
      sandboxes_[sb->id] = sb;
    }
    if (stopping_) {
      std::shared_ptr<Sandbox> gone;
      {
        std::lock_guard lock(mu_);
        gone = take_locked(sb->id);
      }
      if (gone) discard(*gone);
      api_error(503, "The mock is shutting down", "SHUTTING_DOWN");
    }
    reply(c.res, 201, sandbox_json(*sb));
  }

  void list_sandboxes(Ctx& c, std::optional<std::string> project) {
    reap_expired();
    JsonOut j;
    j.begin_array();
    std::lock_guard lock(mu_);
    for (const auto& [id, sb] : sandboxes_) {
      const Project* p = project_by_id_locked(sb->project_id);
      if (!p || !reaches(c.key, *p)) continue;
      if (project && sb->project_id != *project) continue;
      write_sandbox(j, *sb);
    }
    j.end_array();
    reply(c.res, 200, j.text());
  }

  void kill_sandbox(Ctx& c, const std::string& id) {
    find_sandbox(c.key, id);
    std::shared_ptr<Sandbox> sb;
    {
      std::lock_guard lock(mu_);
      sb = take_locked(id);
    }
    if (!sb) not_found_sandbox();
    discard(*sb);
    reply(c.res, 200, "{}");
  }

  void set_timeout(Ctx& c, const std::string& id) {
    auto sb = find_sandbox(c.key, id);
    Body b(c.req.body);
    auto t = b.integer("timeoutMs");
    if (!t) api_error(400, "'timeoutMs' is required", "INVALID_TIMEOUT");
    if (*t < kSetTimeoutMinMs || *t > kSetTimeoutMaxMs)
      api_error(400, "'timeoutMs' must be between 1000 and 2147483647", "INVALID_TIMEOUT");
    std::lock_guard lock(mu_);
    sb->lifetime_ms = *t;
    sb->end_at = now_ms() + *t;
    reply(c.res, 200, "{}");
  }

  void expose(Ctx& c, const std::string& id, const std::string& port_text) {
    auto sb = find_sandbox(c.key, id);
    char* end = nullptr;
    long port = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || port < 1 || port > 65535)
      api_error(400, "Invalid port", "BAD_REQUEST");
    std::string host = id + "-" + std::to_string(port) + ".sandbox." + sb->region + ".onlizard.com";
    JsonOut j;
    j.begin_object()
        .kv("hostname", host)
        .kv("url", "https://" + host)
        .kv("port", static_cast<std::int64_t>(port))
        .kv("accessToken", new_id("tok_", 32))
        .end_object();
    reply(c.res, 200, j.text());
  }

  void era_op(Ctx& c, const std::string& id, const std::string& op) {
    auto sb = find_sandbox(c.key, id);
    if (opt_.era == Era::kKubernetes) {
      reply(c.res, 501, R"({"error":"Not implemented"})");
      return;
    }
    if (op == "pause") {
      std::shared_ptr<SandboxRuntime> rt;
      {
        std::lock_guard lock(mu_);
        rt = std::move(sb->rt);
        sb->status = "paused";
      }
      // Files survive, processes do not.
      if (rt) rt->stop();
      return reply(c.res, 200, sandbox_json(*sb));
    }
    if (op == "resume") {
      {
        std::lock_guard lock(mu_);
        if (!sb->rt) {
          std::string ws;
          if (!sb->volume_id.empty()) ws = volumes_[sb->volume_id].dir;
          sb->rt = std::make_shared<SandboxRuntime>(sb->base_dir, ws, isolated_);
        }
        sb->status = "running";
      }
      return reply(c.res, 200, sandbox_json(*sb));
    }
    if (op == "fork") {
      if (!sb->volume_id.empty())
        api_error(409, "A sandbox with a volume attached cannot be forked", "VOLUME_ATTACHED");
      Body b(c.req.body, true);
      std::int64_t count = b.integer("count").value_or(1);
      if (count < 1 || count > 10)
        api_error(400, "'count' must be between 1 and 10", "BAD_REQUEST");
      std::int64_t lifetime = b.integer("timeoutMs").value_or(0);
      if (lifetime < 0) api_error(400, "'timeoutMs' must not be negative", "BAD_REQUEST");
      if (lifetime == 0) lifetime = sb->lifetime_ms;
      JsonOut j;
      j.begin_array();
      for (std::int64_t i = 0; i < count; ++i) {
        std::shared_ptr<Sandbox> f;
        {
          std::lock_guard lock(mu_);
          f = std::make_shared<Sandbox>(*sb);
        }
        f->id = new_id("sbx_");
        f->base_dir = state_dir_ + "/sandboxes/" + f->id;
        for (const char* d : {"/workspace", "/tmp", home_sub()})
          internal::copy_tree(sb->base_dir + d, f->base_dir + d);
        f->rt = std::make_shared<SandboxRuntime>(f->base_dir, "", isolated_);
        f->status = "running";
        f->started_at = now_ms();
        f->lifetime_ms = lifetime;
        f->end_at = lifetime > 0 ? f->started_at + lifetime : 0;
        j.begin_object().key("sandbox");
        write_sandbox(j, *f);
        j.end_object();
        {
          std::lock_guard lock(mu_);
          sandboxes_[f->id] = f;
        }
      }
      j.end_array();
      return reply(c.res, 200, j.text());
    }
    // snapshot
    Body b(c.req.body, true);
    Snapshot s;
    s.id = new_id("snap_");
    s.name = b.str("name").value_or("Snapshot " + sb->id);
    s.project_id = sb->project_id;
    s.region = sb->region;
    s.source = sb->id;
    s.dir = state_dir_ + "/snapshots/" + s.id;
    s.cpus = kSizes.at(sb->size).cpus;
    s.memory_mb = kSizes.at(sb->size).memory_mb;
    s.created_at = now_ms();
    std::string ws_dir;
    {
      std::lock_guard lock(mu_);
      ws_dir = sb->rt ? sb->rt->workspace_dir() : sb->base_dir + "/workspace";
    }
    internal::copy_tree(ws_dir, s.dir + "/workspace");
    internal::copy_tree(sb->base_dir + "/tmp", s.dir + "/tmp");
    internal::copy_tree(sb->base_dir + home_sub(), s.dir + home_sub());
    {
      std::lock_guard lock(mu_);
      if (const Project* p = project_by_id_locked(s.project_id)) s.workspace_id = p->workspace_id;
      snapshots_[s.id] = s;
    }
    JsonOut j;
    j.begin_object()
        .kv("id", s.id)
        .kv("name", s.name)
        .kv("projectId", s.project_id)
        .kv("workspaceId", s.workspace_id)
        .kv("region", s.region)
        .kv("sourceSandboxId", s.source)
        .kv("status", "ready")
        .kv("poolSize", 0)
        .kv("readyCount", 0)
        .key("error")
        .null()
        .kv("cpus", s.cpus)
        .kv("memoryMb", s.memory_mb)
        .kv("createdAt", s.created_at)
        .end_object();
    reply(c.res, 200, j.text());
  }

  std::shared_ptr<SandboxRuntime> running_runtime(const std::shared_ptr<Sandbox>& sb) {
    std::lock_guard lock(mu_);
    if (!sb->rt) api_error(409, "Sandbox is paused", "SANDBOX_PAUSED");
    return sb->rt;
  }

  // ---- exec -----------------------------------------------------------------
  void exec(Ctx& c, const std::string& id) {
    auto sb = find_sandbox(c.key, id);
    Body b(c.req.body);
    const Value* cmd = b.get("cmd");
    internal::ExecSpec spec;
    if (!cmd) api_error(400, "'cmd' is required", "BAD_REQUEST");
    if (cmd->IsString()) {
      std::string s = internal::string_of(*cmd);
      if (s.find('\0') != std::string::npos)
        api_error(400, "'cmd' must not contain NUL", "BAD_REQUEST");
      spec.argv = {"/bin/sh", "-c", s};
    } else if (cmd->IsArray()) {
      for (const auto& a : cmd->GetArray()) {
        if (!a.IsString())
          api_error(400, "'cmd' must be a string or an array of strings", "BAD_REQUEST");
        std::string s = internal::string_of(a);
        if (s.find('\0') != std::string::npos)
          api_error(400, "'cmd' must not contain NUL", "BAD_REQUEST");
        spec.argv.push_back(std::move(s));
      }
      if (spec.argv.empty()) api_error(400, "'cmd' must not be an empty array", "BAD_REQUEST");
      if (spec.argv[0].empty()) api_error(400, "'cmd[0]' must not be empty", "BAD_REQUEST");
    } else {
      api_error(400, "'cmd' must be a string or an array of strings", "BAD_REQUEST");
    }
    auto req_envs = b.env_map("envs");
    spec.workdir = b.str("workdir").value_or("/workspace");
    if (spec.workdir.empty() || spec.workdir[0] != '/' ||
        spec.workdir.find('\0') != std::string::npos)
      api_error(400, "'workdir' must be an absolute path", "EINVAL");
    std::string user = b.str("user").value_or("root");
    if (user != "root") api_error(400, "Unknown user: the mock runs commands as root", "EINVAL");
    auto timeout = b.integer("timeoutMs");
    std::int64_t timeout_ms = timeout.value_or(kExecTimeoutDefaultMs);
    if (timeout_ms < kExecTimeoutMinMs || timeout_ms > kExecTimeoutMaxMs)
      api_error(400, "'timeoutMs' must be between 1000 and 600000", "INVALID_TIMEOUT");
    bool pid_event = b.boolean("pidEvent").value_or(false);
    auto rt = running_runtime(sb);
    {
      int root = rt->dup_root_fd();
      if (root < 0) not_found_sandbox();
      bool dir_ok = internal::is_directory(root, spec.workdir);
      ::close(root);
      if (!dir_ok)
        api_error(400, "The working directory does not exist: " + spec.workdir, "ENOENT");
    }
    std::map<std::string, std::string> env = {
        {"PATH", kBasePath}, {"HOME", "/root"},    {"LANG", "C.UTF-8"}, {"USER", "root"},
        {"LOGNAME", "root"}, {"SHELL", "/bin/sh"}, {"TERM", "dumb"}};
    for (const auto& [k, v] : sb->envs) env[k] = v;
    for (const auto& [k, v] : req_envs) env[k] = v;
    for (const auto& [k, v] : env) spec.env.push_back(k + "=" + v);
    auto limit = std::min(std::chrono::milliseconds(timeout_ms), opt_.exec_limit);
    std::vector<std::string> display = spec.argv;
    std::int64_t started = now_ms();

    bool streaming =
        c.req.get_header_value("Accept").find("text/event-stream") != std::string::npos;
    if (!streaming) {
      auto out = rt->run(
          spec, limit, kExecStreamCap, nullptr, nullptr, [this] { return stopping_.load(); },
          started, display);
      if (!alive(id) || !out.started) not_found_sandbox();
      JsonOut j;
      j.begin_object()
          .kv("stdout", out.stdout_bytes)
          .kv("stderr", out.stderr_bytes)
          .kv("exitCode", out.exit_code);
      if (out.stdout_truncated || out.stderr_truncated) j.kv("truncated", true);
      if (out.timed_out) j.kv("timedOut", true);
      j.end_object();
      return reply(c.res, 200, j.text());
    }
    c.res.status = 200;
    c.res.set_header("Cache-Control", "no-cache");
    c.res.set_chunked_content_provider(
        "text/event-stream", [this, rt, spec, limit, display, started, pid_event, id](
                                 std::size_t, httplib::DataSink& sink) {
          stream_exec(*rt, spec, limit, display, started, pid_event, id, sink);
          return true;
        });
  }

  void stream_exec(SandboxRuntime& rt, const internal::ExecSpec& spec,
                   std::chrono::milliseconds limit, const std::vector<std::string>& display,
                   std::int64_t started, bool pid_event, const std::string& id,
                   httplib::DataSink& sink) {
    std::string pending[2];
    bool broken = false;
    auto last_write = std::chrono::steady_clock::now();
    auto send = [&](const std::string& text) {
      if (broken) return;
      if (!sink.write(text.data(), text.size())) broken = true;
      last_write = std::chrono::steady_clock::now();
    };
    auto emit_line = [&](int stream, std::string_view line) {
      JsonOut j;
      j.begin_object()
          .kv("stream", stream == 1 ? "stdout" : "stderr")
          .kv("line", line)
          .end_object();
      send("data: " + j.text() + "\n\n");
    };
    auto on_output = [&](int stream, std::string_view data) {
      std::string& buf = pending[stream - 1];
      buf.append(data);
      std::size_t start = 0;
      for (;;) {
        std::size_t nl = buf.find('\n', start);
        if (nl == std::string::npos) break;
        emit_line(stream, std::string_view(buf).substr(start, nl - start));
        start = nl + 1;
      }
      buf.erase(0, start);
    };
    auto on_pid = [&](pid_t pid) {
      if (pid_event) send("data: {\"pid\":" + std::to_string(pid) + "}\n\n");
    };
    auto should_stop = [&] {
      if (!broken && std::chrono::steady_clock::now() - last_write > std::chrono::seconds(15))
        send(": keep-alive\n\n");
      return broken || stopping_.load() || !sink.is_writable();
    };
    auto out = rt.run(spec, limit, 0, on_output, on_pid, should_stop, started, display);
    for (int s = 1; s <= 2; ++s) {
      if (!pending[s - 1].empty()) emit_line(s, pending[s - 1]);
    }
    if (!alive(id) || !out.started) {
      send("event: error\ndata: Sandbox not found\n\n");
    } else if (out.timed_out) {
      send("event: exit\ndata: {\"exitCode\":124,\"timedOut\":true}\n\n");
    } else {
      send("event: exit\ndata: {\"exitCode\":" + std::to_string(out.exit_code) + "}\n\n");
    }
    sink.done();
  }

  void list_processes(Ctx& c, const std::string& id) {
    auto sb = find_sandbox(c.key, id);
    JsonOut j;
    j.begin_array();
    std::shared_ptr<SandboxRuntime> rt;
    {
      std::lock_guard lock(mu_);
      rt = sb->rt;
    }
    if (rt) {
      for (const auto& p : rt->processes()) {
        std::string joined;
        for (const auto& a : p.cmd) joined += (joined.empty() ? "" : " ") + a;
        j.begin_object().kv("pid", static_cast<std::int64_t>(p.pid)).key("cmd").begin_array();
        for (const auto& a : p.cmd) j.str(a);
        j.end_array().kv("command", joined).kv("startedAt", p.started_at_ms).end_object();
      }
    }
    j.end_array();
    reply(c.res, 200, j.text());
  }

  void signal(Ctx& c, const std::string& id) {
    auto sb = find_sandbox(c.key, id);
    Body b(c.req.body);
    auto pid = b.integer("pid");
    if (!pid) api_error(400, "'pid' is required", "BAD_REQUEST");
    std::string name = b.str("signal").value_or("SIGTERM");
    auto it = kSignals.find(name);
    if (it == kSignals.end()) api_error(400, "Unknown signal: " + name, "BAD_REQUEST");
    auto rt = running_runtime(sb);
    if (!rt->signal(static_cast<pid_t>(*pid), it->second))
      api_error(404, "Process not found", "PROCESS_NOT_FOUND");
    reply(c.res, 200, R"({"ok":true})");
  }

  // ---- files ----------------------------------------------------------------
  void files(Ctx& c, const std::string& id) {
    auto sb = find_sandbox(c.key, id);
    const auto& s = c.seg;
    const std::string& m = c.req.method;
    std::string sub = s.size() > 4 ? s[4] : "";
    if (sub == "watch") {
      reply(c.res, 501, R"({"error":"Not implemented"})");
      return;
    }
    if (s.size() > 5 || (!sub.empty() && sub != "list" && sub != "stat" && sub != "move"))
      api_error(404, "Not found", "NOT_FOUND");
    auto rt = running_runtime(sb);
    int root = rt->dup_root_fd();
    if (root < 0) not_found_sandbox();
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{root};
    auto query_path = [&]() {
      if (!c.req.has_param("path")) api_error(400, "The 'path' parameter is required", "EINVAL");
      return c.req.get_param_value("path");
    };
    try {
      if (sub.empty() && m == "POST") {
        Body b(c.req.body);
        auto path = b.str("path");
        if (!path) api_error(400, "'path' is required", "EINVAL");
        auto content = b.str("content");
        if (!content) api_error(400, "'content' is required", "EINVAL");
        std::string user = b.str("user").value_or("root");
        if (user != "root") api_error(400, "Unknown user: the mock writes files as root", "EINVAL");
        std::string enc = b.str("encoding").value_or("utf8");
        std::string bytes;
        if (enc == "base64") {
          if (!decode_base64(*content, bytes))
            api_error(400, "'content' is not valid base64", "EINVAL");
        } else if (enc == "utf8" || enc == "utf-8" || enc == "text") {
          bytes = std::move(*content);
        } else {
          api_error(400, "Unknown encoding: " + enc, "EINVAL");
        }
        internal::write_file(root, *path, bytes);
        return reply(c.res, 200, "{}");
      }
      if (sub.empty() && m == "GET") {
        std::string data = internal::read_file(root, query_path());
        c.res.status = 200;
        c.res.set_content(std::move(data), "application/octet-stream");
        return;
      }
      if (sub.empty() && m == "DELETE") {
        std::string path;
        if (c.req.has_param("path")) {
          path = c.req.get_param_value("path");
        } else {
          Body b(c.req.body);
          auto p = b.str("path");
          if (!p) api_error(400, "'path' is required", "EINVAL");
          path = *p;
        }
        internal::remove_path(root, path);
        return reply(c.res, 200, "{}");
      }
      if (sub == "list" && m == "GET") {
        auto entries = internal::list_dir(root, query_path());
        JsonOut j;
        j.begin_array();
        for (const auto& e : entries) write_info(j, e);
        j.end_array();
        return reply(c.res, 200, j.text());
      }
      if (sub == "stat" && m == "GET") {
        auto info = internal::stat_path(root, query_path());
        JsonOut j;
        write_info(j, info);
        return reply(c.res, 200, j.text());
      }
      if (sub == "move" && m == "POST") {
        Body b(c.req.body);
        auto from = b.str("from");
        auto to = b.str("to");
        if (!from || !to) api_error(400, "'from' and 'to' are required", "EINVAL");
        internal::move_path(root, *from, *to);
        return reply(c.res, 200, "{}");
      }
    } catch (const std::system_error& e) {
      if (!alive(id)) not_found_sandbox();
      fs_error(e);
    }
    method_not_allowed();
  }

  static void write_info(JsonOut& j, const internal::FileInfo& f) {
    j.begin_object()
        .kv("name", f.name)
        .kv("path", f.path)
        .kv("type", f.type)
        .kv("size", static_cast<std::int64_t>(f.size))
        .kv("mode", static_cast<std::int64_t>(f.mode))
        .kv("permissions", f.permissions)
        .kv("owner", f.owner)
        .kv("group", f.group)
        .kv("modTime", f.mod_time_ms);
    if (f.is_link) j.kv("symlinkTarget", f.symlink_target);
    j.end_object();
  }

  // ---- volumes, workspaces, projects, keys ------------------------------------
  void volumes(Ctx& c, const Project& p) {
    const auto& s = c.seg;
    const std::string& m = c.req.method;
    if (s.size() == 4 && m == "GET") {
      JsonOut j;
      j.begin_array();
      std::vector<std::string> items;
      {
        std::lock_guard lock(mu_);
        for (const auto& [id, v] : volumes_) {
          if (v.project_id == p.id) items.push_back(volume_json(v));
        }
      }
      for (const auto& t : items) j.raw(t);
      j.end_array();
      return reply(c.res, 200, j.text());
    }
    if (s.size() == 4 && m == "POST") {
      Body b(c.req.body);
      auto name = b.str("name");
      if (!name || name->empty()) api_error(400, "'name' is required", "BAD_REQUEST");
      std::int64_t size = b.integer("sizeGb").value_or(10);
      if (size < 1 || size > 10000)
        api_error(400, "'sizeGb' must be between 1 and 10000", "BAD_REQUEST");
      std::string region = b.str("region").value_or(kDefaultRegion);
      bool get_or_create = b.boolean("getOrCreate").value_or(false);
      std::lock_guard lock(mu_);
      for (const auto& [id, v] : volumes_) {
        if (v.project_id == p.id && v.name == *name) {
          if (get_or_create) return reply(c.res, 200, volume_json(v));
          api_error(409, "A volume with this name already exists", "VOLUME_EXISTS");
        }
      }
      Volume v;
      v.id = new_id("vol_");
      v.project_id = p.id;
      v.name = *name;
      v.size_gb = static_cast<int>(size);
      v.region = region;
      v.created_at = now_ms();
      v.dir = state_dir_ + "/volumes/" + v.id;
      std::filesystem::create_directories(v.dir);
      volumes_[v.id] = v;
      return reply(c.res, 201, volume_json(v));
    }
    if (s.size() == 5) {
      std::lock_guard lock(mu_);
      Volume* found = nullptr;
      for (auto& [id, v] : volumes_) {
        if (v.project_id == p.id && (v.id == s[4] || v.name == s[4])) found = &v;
      }
      if (!found) api_error(404, "Volume not found", "VOLUME_NOT_FOUND");
      if (m == "GET") return reply(c.res, 200, volume_json(*found));
      if (m == "DELETE") {
        if (!found->attached_to.empty())
          api_error(409, "Volume is attached to a sandbox", "VOLUME_IN_USE");
        internal::remove_tree(found->dir);
        volumes_.erase(found->id);
        return reply(c.res, 200, "{}");
      }
      method_not_allowed();
    }
    api_error(404, "Not found", "NOT_FOUND");
  }

  void workspaces(Ctx& c) {
    const std::string& m = c.req.method;
    if (m == "GET") {
      JsonOut j;
      j.begin_array();
      std::lock_guard lock(mu_);
      for (const auto& [id, w] : workspaces_) {
        if (!c.key.full && !c.key.workspaces.count(id)) continue;
        j.begin_object()
            .kv("id", w.id)
            .kv("name", w.name)
            .kv("createdAt", iso_time(w.created_at))
            .end_object();
      }
      j.end_array();
      return reply(c.res, 200, j.text());
    }
    if (m != "POST") method_not_allowed();
    if (!c.key.full)
      throw ApiError{403, "Creating a workspace needs an account-wide key", "",
                     "ACCOUNT_SCOPE_REQUIRED"};
    Body b(c.req.body);
    auto name = b.str("name");
    if (!name || name->empty()) api_error(400, "'name' is required", "BAD_REQUEST");
    Workspace w{new_id("wks_"), *name, now_ms()};
    {
      std::lock_guard lock(mu_);
      workspaces_[w.id] = w;
    }
    JsonOut j;
    j.begin_object()
        .kv("id", w.id)
        .kv("name", w.name)
        .kv("createdAt", iso_time(w.created_at))
        .end_object();
    reply(c.res, 201, j.text());
  }

  void list_projects(Ctx& c) {
    JsonOut j;
    j.begin_array();
    std::lock_guard lock(mu_);
    for (const auto& p : projects_) {
      if (reaches(c.key, p)) write_project(j, p);
    }
    j.end_array();
    reply(c.res, 200, j.text());
  }

  void create_project(Ctx& c) {
    Body b(c.req.body);
    auto name = b.str("name");
    if (!name || name->empty()) api_error(400, "'name' is required", "BAD_REQUEST");
    auto ws = b.str("workspaceId");
    std::lock_guard lock(mu_);
    std::string wid = ws.value_or(workspaces_.begin()->first);
    if (!workspaces_.count(wid)) api_error(404, "Workspace not found", "WORKSPACE_NOT_FOUND");
    if (!c.key.full && !c.key.workspaces.count(wid))
      api_error(403, "This API key cannot reach that workspace", "FORBIDDEN");
    Project p{new_id("prj_"), *name, slugify(*name), wid, now_ms()};
    projects_.push_back(p);
    JsonOut j;
    write_project(j, p);
    reply(c.res, 201, j.text());
  }

  void create_key(Ctx& c) {
    Body b(c.req.body);
    std::string name = b.str("name").value_or("key");
    auto ws = b.string_list("workspaces");
    auto ps = b.string_list("projects");
    if (const Value* scopes = b.get("scopes")) {
      if (!scopes->IsArray()) api_error(400, "'scopes' must be an array", "BAD_REQUEST");
      for (const auto& scope : scopes->GetArray()) {
        const auto type = scope.IsObject() ? scope.FindMember("type") : scope.MemberEnd();
        const auto id = scope.IsObject() ? scope.FindMember("id") : scope.MemberEnd();
        if (!scope.IsObject() || type == scope.MemberEnd() || id == scope.MemberEnd() ||
            !type->value.IsString() || !id->value.IsString()) {
          api_error(400, "Each scope is {type: \"workspace\"|\"project\", id}", "BAD_REQUEST");
        }
        const std::string kind = internal::string_of(type->value);
        if (kind == "workspace") {
          ws.push_back(internal::string_of(id->value));
        } else if (kind == "project") {
          ps.push_back(internal::string_of(id->value));
        } else {
          api_error(400, "Unknown scope type: " + kind, "BAD_REQUEST");
        }
      }
    }
    ApiKey k;
    k.name = name;
    k.full = ws.empty() && ps.empty();
    {
      std::lock_guard lock(mu_);
      for (const auto& w : ws) {
        if (!workspaces_.count(w))
          api_error(404, "Workspace not found: " + w, "WORKSPACE_NOT_FOUND");
        if (!c.key.full && !c.key.workspaces.count(w))
          api_error(403, "A key cannot grant more than it has", "KEY_SCOPE_EXCEEDED");
        k.workspaces.insert(w);
      }
      for (const auto& pid : ps) {
        const Project* p = project_by_id_locked(pid);
        if (!p) api_error(404, "Project not found: " + pid, "PROJECT_NOT_FOUND");
        if (!reaches(c.key, *p))
          api_error(403, "A key cannot grant more than it has", "KEY_SCOPE_EXCEEDED");
        k.projects.insert(pid);
      }
      if (k.full && !c.key.full)
        api_error(403, "A scoped key cannot create an account-wide key", "KEY_SCOPE_EXCEEDED");
      k.id = new_id("key_");
      k.key = new_id("liz_", 40);
      keys_[k.key] = k;
    }
    JsonOut j;
    j.begin_object()
        .kv("key", k.key)
        .kv("id", k.id)
        .kv("name", k.name)
        .key("workspaces")
        .begin_array();
    for (const auto& w : k.workspaces) j.str(w);
    j.end_array().key("projects").begin_array();
    for (const auto& p : k.projects) j.str(p);
    j.end_array().kv("createdAt", iso_time(now_ms())).end_object();
    reply(c.res, 201, j.text());
  }

  MockOptions opt_;
  httplib::Server http_;
  std::thread listener_;
  std::thread reaper_;
  int port_ = -1;
  bool isolated_ = false;
  std::string state_dir_;
  bool own_state_dir_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> clock_offset_ms_{0};

  std::mutex rng_mu_;
  std::mt19937_64 rng_;

  mutable std::mutex mu_;
  std::map<std::string, Workspace> workspaces_, initial_workspaces_;
  std::vector<Project> projects_, initial_projects_;
  std::map<std::string, ApiKey> keys_, initial_keys_;
  std::map<std::string, std::shared_ptr<Sandbox>> sandboxes_;
  std::map<std::string, Volume> volumes_;
  std::map<std::string, Snapshot> snapshots_;

  mutable std::mutex journal_mu_;
  std::vector<JournalEntry> journal_;
  std::mutex fault_mu_;
  std::vector<FaultState> faults_;

  std::mutex reap_mu_;
  std::condition_variable reap_cv_;
  bool reap_stop_ = false;
};

MockServer::MockServer(MockOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
MockServer::~MockServer() = default;
std::string MockServer::url() const { return impl_->url(); }
int MockServer::port() const { return impl_->port(); }
std::string MockServer::api_key() const { return impl_->api_key(); }
std::string MockServer::project_id() const { return impl_->project_id(); }
bool MockServer::isolated() const { return impl_->isolated(); }
std::vector<JournalEntry> MockServer::requests() const { return impl_->requests(); }
void MockServer::reset() { impl_->reset(); }
void MockServer::clear_journal() { impl_->clear_journal(); }
void MockServer::add_fault(FaultRule rule) { impl_->add_fault(std::move(rule)); }
void MockServer::clear_faults() { impl_->clear_faults(); }
void MockServer::advance_clock(std::chrono::milliseconds by) { impl_->advance_clock(by); }
std::size_t MockServer::live_sandboxes() const { return impl_->live_sandboxes(); }
std::size_t MockServer::live_processes() const { return impl_->live_processes(); }
std::string MockServer::workspace_dir(const std::string& sandbox_id) const {
  return impl_->workspace_dir(sandbox_id);
}

}  // namespace lizard::mock
