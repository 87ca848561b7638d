#include "lizard/api/client.h"

#include <curl/curl.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "lizard/api/codec.h"

namespace lizard::api {

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void write_string(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void write_map(JsonWriter& w, const char* name, const std::map<std::string, std::string>& map) {
  if (map.empty()) return;
  w.Key(name);
  w.StartObject();
  for (const auto& [k, v] : map) {
    write_string(w, k);
    write_string(w, v);
  }
  w.EndObject();
}

std::string str(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return {};
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

double num(const rapidjson::Value& object, const char* name, double fallback = 0) {
  if (!object.IsObject()) return fallback;
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsNumber()) return fallback;
  return it->value.GetDouble();
}

// A JSON number as an integer type without undefined behaviour: absent or not
// a number gives `fallback`; nullopt when T cannot hold it (a negative size,
// 1e300, NaN never parses). In-range fractions are truncated.
template <typename T>
std::optional<T> integer_member(const rapidjson::Value& object, const char* name, T fallback) {
  if (!object.IsObject()) return fallback;
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsNumber()) return fallback;
  const rapidjson::Value& v = it->value;
  if (v.IsInt64()) {
    const std::int64_t n = v.GetInt64();
    if (std::in_range<T>(n)) return static_cast<T>(n);
    return std::nullopt;
  }
  if (v.IsUint64()) {
    const std::uint64_t n = v.GetUint64();
    if (std::in_range<T>(n)) return static_cast<T>(n);
    return std::nullopt;
  }
  const double d = v.GetDouble();
  // [-2^digits, 2^digits) for signed T, [0, 2^digits) for unsigned: both
  // bounds are exact doubles, and every double inside truncates into T.
  const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
  const double lowest = std::numeric_limits<T>::is_signed ? -limit : 0.0;
  if (std::isfinite(d) && d >= lowest && d < limit) return static_cast<T>(d);
  return std::nullopt;
}

// integer_member, or a WorkspaceError naming the field for a number out of range.
template <typename T>
T integer(const rapidjson::Value& object, const char* name, std::string_view what, T fallback = 0) {
  if (const auto value = integer_member<T>(object, name, fallback)) return *value;
  throw workspace::WorkspaceError(std::string(what) + ": the API answered with a malformed \"" +
                                  name + "\" (out of range)");
}

bool flag(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return false;
  auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

rapidjson::Document parse(const Response& response, std::string_view what) {
  rapidjson::Document doc;
  doc.Parse(response.body.data(), response.body.size());
  if (doc.HasParseError()) {
    throw workspace::WorkspaceError(std::string(what) + ": the API answered with malformed JSON");
  }
  return doc;
}

SandboxInfo decode_sandbox(const rapidjson::Value& v) {
  SandboxInfo info;
  info.sandbox_id = str(v, "sandboxId");
  if (info.sandbox_id.empty()) info.sandbox_id = str(v, "id");
  info.template_name = str(v, "template");
  info.status = str(v, "status");
  info.region = str(v, "region");
  info.size = str(v, "size");
  info.project_id = str(v, "projectId");
  info.started_at = str(v, "startedAt");
  info.end_at = str(v, "endAt");
  if (v.IsObject()) {
    auto it = v.FindMember("metadata");
    if (it != v.MemberEnd() && it->value.IsObject()) {
      for (const auto& m : it->value.GetObject()) {
        if (m.value.IsString()) {
          info.metadata[std::string(m.name.GetString(), m.name.GetStringLength())] =
              std::string(m.value.GetString(), m.value.GetStringLength());
        }
      }
    }
  }
  return info;
}

FileInfo decode_file(const rapidjson::Value& v, std::string_view what) {
  FileInfo info;
  info.name = str(v, "name");
  info.path = str(v, "path");
  info.type = str(v, "type");
  info.size = integer<std::uint64_t>(v, "size", what);
  info.mode = integer<std::uint32_t>(v, "mode", what);
  info.permissions = str(v, "permissions");
  info.mod_time_ms = integer<std::int64_t>(v, "modTime", what);
  if (v.IsObject()) {
    auto it = v.FindMember("symlinkTarget");
    if (it != v.MemberEnd() && it->value.IsString()) {
      info.symlink_target = std::string(it->value.GetString(), it->value.GetStringLength());
    }
  }
  return info;
}

VolumeInfo decode_volume(const rapidjson::Value& v) {
  VolumeInfo info;
  info.id = str(v, "id");
  info.project_id = str(v, "projectId");
  info.name = str(v, "name");
  info.size_gb = num(v, "sizeGb");
  info.region = str(v, "region");
  info.status = str(v, "status");
  info.attached_to = str(v, "attachedTo");
  return info;
}

std::string exec_body(const ExecRequest& request) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("cmd");
  if (const auto* text = std::get_if<std::string>(&request.cmd)) {
    write_string(w, *text);
  } else {
    w.StartArray();
    for (const auto& item : std::get<std::vector<std::string>>(request.cmd)) write_string(w, item);
    w.EndArray();
  }
  write_map(w, "envs", request.envs);
  if (request.workdir) {
    w.Key("workdir");
    write_string(w, *request.workdir);
  }
  if (request.user) {
    w.Key("user");
    write_string(w, *request.user);
  }
  if (request.timeout_ms) {
    w.Key("timeoutMs");
    w.Int64(*request.timeout_ms);
  }
  if (request.pid_event) {
    w.Key("pidEvent");
    w.Bool(true);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string path_body(std::initializer_list<std::pair<const char*, std::string_view>> fields) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  for (const auto& [k, v] : fields) {
    w.Key(k);
    write_string(w, v);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string escape_segment(std::string_view segment) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : segment) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::string sandbox_path(std::string_view id, std::string_view rest = {}) {
  return "/api/sandboxes/" + escape_segment(id) + std::string(rest);
}

}  // namespace

ClientOptions ClientOptions::from_environment() {
  ClientOptions options;
  if (const char* v = std::getenv("LIZARD_API_KEY")) options.api_key = v;
  if (const char* v = std::getenv("LIZARD_PROJECT_ID")) options.project = v;
  if (const char* v = std::getenv("LIZARD_API_URL"); v != nullptr && *v != '\0') {
    options.api_url = v;
  }
  return options;
}

// ---------------------------------------------------------------------------
// Transport: a pool of easy handles, one share for connections and DNS.

class Client::Transport {
 public:
  Transport() {
    global_init();
    share_ = curl_share_init();
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &Transport::lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &Transport::unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  }
  ~Transport() {
    for (CURL* h : free_) curl_easy_cleanup(h);
    curl_share_cleanup(share_);
  }

  struct Exchange {
    std::string method;
    std::string url;
    std::string_view body;
    bool has_body = false;
    std::string accept;
    std::string api_key;
    std::chrono::milliseconds timeout{0};
    std::stop_token stop;
    bool fresh_connection = false;
    // Buffered answer bytes allowed (see CallOptions::max_answer_bytes).
    std::uint64_t max_body = kMaxJsonAnswerBytes;
    // When set, 2xx body bytes go here instead of the response.
    const std::function<void(std::string_view)>* sink = nullptr;
  };

  TransportOutcome perform(const Exchange& x) {
    CURL* h = acquire();
    struct Guard {
      Transport* t;
      CURL* h;
      ~Guard() { t->release(h); }
    } guard{this, h};

    State state;
    state.stop = x.stop;
    state.sink = x.sink;
    state.max_body = x.max_body;
    char error_buffer[CURL_ERROR_SIZE] = {0};

    curl_slist* headers = nullptr;
    const std::string key_header = "X-API-Key: " + x.api_key;
    headers = curl_slist_append(headers, key_header.c_str());
    if (x.has_body) headers = curl_slist_append(headers, "Content-Type: application/json");
    const std::string accept =
        "Accept: " + (x.accept.empty() ? std::string("application/json") : x.accept);
    headers = curl_slist_append(headers, accept.c_str());
    // No "Expect: 100-continue" round trip before large bodies.
    headers = curl_slist_append(headers, "Expect:");
    struct SlistGuard {
      curl_slist* l;
      ~SlistGuard() { curl_slist_free_all(l); }
    } slist_guard{headers};

    curl_easy_setopt(h, CURLOPT_SHARE, share_);
    curl_easy_setopt(h, CURLOPT_URL, x.url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(x.timeout.count()));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (x.fresh_connection) curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Transport::on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &state);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Transport::on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &state);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &Transport::on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &state);
    if (x.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (x.method == "POST") {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
    } else {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x.method.c_str());
    }
    if (x.has_body || x.method == "POST") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, x.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(x.body.size()));
    }

    const CURLcode rc = curl_easy_perform(h);
    TransportOutcome outcome;
    outcome.curl_code = rc;
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    outcome.status = status;
    long request_size = 0;
    curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_size);
    outcome.request_sent = request_size > 0;
    if (rc != CURLE_OK) outcome.curl_message = error_buffer;
    outcome.headers = std::move(state.headers);
    outcome.body = std::move(state.body);
    if (state.over_limit) outcome.answer_limit = state.max_body;
    return outcome;
  }

 private:
  struct State {
    std::stop_token stop;
    const std::function<void(std::string_view)>* sink = nullptr;
    long status = 0;
    std::map<std::string, std::string> headers;
    std::string body;
    std::uint64_t max_body = kMaxJsonAnswerBytes;
    bool over_limit = false;
  };

  static size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto* s = static_cast<State*>(user);
    const std::string_view chunk(data, size * count);
    if (s->sink != nullptr && s->status >= 200 && s->status < 300) {
      (*s->sink)(chunk);
    } else {
      if (chunk.size() > s->max_body - std::min<std::uint64_t>(s->max_body, s->body.size())) {
        // Anything but the size handed in makes curl stop with CURLE_WRITE_ERROR.
        s->over_limit = true;
        return 0;
      }
      s->body.append(chunk);
    }
    return size * count;
  }

  static size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto* s = static_cast<State*>(user);
    std::string_view line(data, size * count);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.substr(0, 5) == "HTTP/") {
      // A new response (after a 100 Continue or a redirect): forget the last one's headers.
      s->headers.clear();
      const auto space = line.find(' ');
      if (space != std::string_view::npos)
        s->status = std::atol(std::string(line.substr(space + 1, 3)).c_str());
      return size * count;
    }
    const auto colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      const std::string name = lower(line.substr(0, colon));
      if (name == "content-length") {
        const long long n = std::atoll(std::string(value).c_str());
        // Reads of large files land in one buffer sized once; a length past
        // the cap is not reserved (the body will be refused at the cap).
        if (n > 0 && static_cast<std::uint64_t>(n) <= s->max_body) {
          s->body.reserve(static_cast<std::size_t>(n));
        }
      }
      s->headers[name] = std::string(value);
    }
    return size * count;
  }

  static int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* s = static_cast<State*>(user);
    return s->stop.stop_requested() ? 1 : 0;
  }

  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Transport*>(user)->locks_[static_cast<std::size_t>(data) % kLocks].lock();
  }
  static void unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Transport*>(user)->locks_[static_cast<std::size_t>(data) % kLocks].unlock();
  }

  CURL* acquire() {
    {
      std::lock_guard lock(pool_mutex_);
      if (!free_.empty()) {
        CURL* h = free_.back();
        free_.pop_back();
        return h;
      }
    }
    CURL* h = curl_easy_init();
    if (h == nullptr) throw workspace::WorkspaceError("curl_easy_init failed");
    return h;
  }

  void release(CURL* h) {
    curl_easy_reset(h);
    std::lock_guard lock(pool_mutex_);
    free_.push_back(h);
  }

  static constexpr std::size_t kLocks = 16;
  CURLSH* share_ = nullptr;
  std::array<std::mutex, kLocks> locks_;
  std::mutex pool_mutex_;
  std::vector<CURL*> free_;
};

// ---------------------------------------------------------------------------

Client::Client(ClientOptions options)
    : options_(std::move(options)), transport_(std::make_unique<Transport>()) {
  if (options_.api_url.empty()) throw std::invalid_argument("the Lizard API URL is empty");
  while (!options_.api_url.empty() && options_.api_url.back() == '/') options_.api_url.pop_back();
}

Client::~Client() = default;

std::string Client::encode_query(
    const std::vector<std::pair<std::string, std::string>>& parameters) {
  std::string out;
  for (const auto& [k, v] : parameters) {
    if (!out.empty()) out += '&';
    out += escape_segment(k);
    out += '=';
    out += escape_segment(v);
  }
  return out;
}

Response Client::request(std::string_view method, std::string_view path, std::string_view query,
                         std::string_view body, const CallOptions& call, std::string_view accept) {
  Transport::Exchange x;
  x.method = std::string(method);
  x.url = options_.api_url + std::string(path);
  if (!query.empty()) x.url += "?" + std::string(query);
  x.body = body;
  x.has_body = !body.empty();
  x.accept = std::string(accept);
  x.api_key = options_.api_key;
  x.timeout = call.timeout.count() > 0 ? call.timeout : options_.request_timeout;
  x.stop = call.stop;
  x.fresh_connection = call.no_replay;
  if (call.max_answer_bytes > 0) x.max_body = call.max_answer_bytes;
  const auto start = std::chrono::steady_clock::now();
  TransportOutcome outcome = transport_->perform(x);
  if (options_.log) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    options_.log(
        redact(std::string(method) + " " + std::string(path) + " -> " +
                   (outcome.curl_code != 0 ? "curl error " + std::to_string(outcome.curl_code)
                                           : std::to_string(outcome.status)) +
                   " " + std::to_string(ms) + " ms",
               options_.api_key));
  }
  if (outcome.curl_code != 0) {
    throw_transport_error(outcome, std::string(method) + " " + std::string(path), options_.api_key);
  }
  return Response{outcome.status, std::move(outcome.headers), std::move(outcome.body)};
}

Response Client::checked(std::string_view method, std::string_view path, std::string_view query,
                         std::string_view body, const CallOptions& call, std::string_view accept) {
  Response response = request(method, path, query, body, call, accept);
  if (response.status < 200 || response.status >= 300) {
    TransportOutcome outcome;
    outcome.status = response.status;
    outcome.headers = std::move(response.headers);
    outcome.body = std::move(response.body);
    outcome.request_sent = true;
    throw_transport_error(outcome, std::string(method) + " " + std::string(path), options_.api_key);
  }
  return response;
}

std::vector<ProjectInfo> Client::list_projects(const CallOptions& call) {
  const Response r = checked("GET", "/api/projects", {}, {}, call);
  const auto doc = parse(r, "GET /api/projects");
  std::vector<ProjectInfo> out;
  if (!doc.IsArray()) return out;
  for (const auto& v : doc.GetArray()) {
    out.push_back({str(v, "id"), str(v, "name"), str(v, "slug"), str(v, "workspaceId")});
  }
  return out;
}

std::string Client::resolve_project(std::string_view ref, const CallOptions& call) {
  static std::mutex cache_mutex;
  static std::map<std::string, std::string> cache;
  // The key is part of the cache key (different keys see different projects),
  // but only as a hash so the cache never holds the secret itself.
  const std::string cache_key = options_.api_url + '\0' +
                                std::to_string(std::hash<std::string>{}(options_.api_key)) + '\0' +
                                std::string(ref);
  {
    std::lock_guard lock(cache_mutex);
    const auto it = cache.find(cache_key);
    if (it != cache.end()) return it->second;
  }
  if (ref.empty()) {
    throw std::invalid_argument("a project (ID, slug or name) is required; set LIZARD_PROJECT_ID");
  }
  const std::string wanted = lower(ref);
  std::vector<ProjectInfo> matches;
  for (auto& p : list_projects(call)) {
    if (lower(p.id) == wanted || lower(p.slug) == wanted || lower(p.name) == wanted) {
      matches.push_back(std::move(p));
    }
  }
  if (matches.size() > 1) {
    throw ApiError(
        "project reference \"" + std::string(ref) + "\" is ambiguous; pass the project ID", 400,
        "PROJECT_AMBIGUOUS", {});
  }
  if (matches.empty()) {
    throw NotFoundError("project \"" + std::string(ref) + "\" not found", 404, "PROJECT_NOT_FOUND",
                        {});
  }
  std::lock_guard lock(cache_mutex);
  cache[cache_key] = matches.front().id;
  return matches.front().id;
}

SandboxInfo Client::create_sandbox(const CreateSandboxRequest& request, const CallOptions& call) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("template");
  write_string(w, request.template_name);
  w.Key("projectId");
  write_string(w, request.project_id);
  if (request.timeout_ms) {
    w.Key("timeoutMs");
    w.Int64(*request.timeout_ms);
  }
  if (request.size) {
    w.Key("size");
    write_string(w, *request.size);
  }
  if (request.region) {
    w.Key("region");
    write_string(w, *request.region);
  }
  write_map(w, "envs", request.envs);
  write_map(w, "metadata", request.metadata);
  if (request.volume_id) {
    w.Key("volumeId");
    write_string(w, *request.volume_id);
  }
  if (request.volume_name) {
    w.Key("volumeName");
    write_string(w, *request.volume_name);
  }
  w.EndObject();
  CallOptions once = call;
  once.no_replay = true;
  const Response r = checked("POST", "/api/sandboxes", {},
                             std::string_view(buffer.GetString(), buffer.GetSize()), once);
  auto info = decode_sandbox(parse(r, "POST /api/sandboxes"));
  if (info.sandbox_id.empty()) {
    throw workspace::WorkspaceError("POST /api/sandboxes: the answer names no sandbox");
  }
  return info;
}

SandboxInfo Client::get_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  const auto path = sandbox_path(sandbox_id);
  return decode_sandbox(parse(checked("GET", path, {}, {}, call), "GET " + path));
}

std::vector<SandboxInfo> Client::list_sandboxes(const std::optional<std::string>& project_id,
                                                const CallOptions& call) {
  const std::string path = project_id
                               ? "/api/projects/" + escape_segment(*project_id) + "/sandboxes"
                               : std::string("/api/sandboxes");
  const auto doc = parse(checked("GET", path, {}, {}, call), "GET " + path);
  std::vector<SandboxInfo> out;
  if (doc.IsArray()) {
    for (const auto& v : doc.GetArray()) out.push_back(decode_sandbox(v));
  }
  return out;
}

bool Client::kill_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  const auto path = sandbox_path(sandbox_id);
  const Response r = request("DELETE", path, {}, {}, call);
  if (r.status == 404) return false;
  if (r.status < 200 || r.status >= 300) {
    TransportOutcome outcome;
    outcome.status = r.status;
    outcome.headers = r.headers;
    outcome.body = r.body;
    outcome.request_sent = true;
    throw_transport_error(outcome, "DELETE " + path, options_.api_key);
  }
  return true;
}

void Client::set_sandbox_timeout(std::string_view sandbox_id, std::int64_t timeout_ms,
                                 const CallOptions& call) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("timeoutMs");
  w.Int64(timeout_ms);
  w.EndObject();
  checked("POST", sandbox_path(sandbox_id, "/timeout"), {},
          std::string_view(buffer.GetString(), buffer.GetSize()), call);
}

void Client::pause_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  checked("POST", sandbox_path(sandbox_id, "/pause"), {}, {}, call);
}

void Client::resume_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  checked("POST", sandbox_path(sandbox_id, "/resume"), {}, {}, call);
}

ExecResult Client::exec(std::string_view sandbox_id, const ExecRequest& request,
                        const CallOptions& call) {
  const auto path = sandbox_path(sandbox_id, "/exec");
  const auto doc = parse(checked("POST", path, {}, exec_body(request), call), "POST " + path);
  ExecResult result;
  result.out = str(doc, "stdout");
  result.err = str(doc, "stderr");
  result.exit_code = integer<int>(doc, "exitCode", "POST " + path, -1);
  result.truncated = flag(doc, "truncated");
  result.timed_out = flag(doc, "timedOut");
  if (!doc.IsObject() || !doc.HasMember("exitCode")) {
    throw workspace::WorkspaceError("POST " + path + ": the answer has no exitCode");
  }
  return result;
}

int Client::exec_stream(std::string_view sandbox_id, const ExecRequest& request,
                        const std::function<void(const ExecEvent&)>& on_event,
                        const CallOptions& call) {
  const auto path = sandbox_path(sandbox_id, "/exec");
  std::optional<int> exit_code;
  std::optional<std::string> error;
  // Set when an event carries a number out of range: exceptions must not
  // cross the curl write callback this parser runs in.
  std::optional<std::string> malformed;
  SseParser parser([&](const std::string& event, const std::string& data) {
    if (event == "error") {
      error = data;
      on_event(ExecEvent{ExecEvent::Kind::kError, data, 0});
      return;
    }
    rapidjson::Document doc;
    doc.Parse(data.data(), data.size());
    if (doc.HasParseError() || !doc.IsObject()) return;
    if (event == "exit" || doc.HasMember("exitCode")) {
      const auto code = integer_member<int>(doc, "exitCode", -1);
      if (!code) {
        malformed = "exitCode";
        return;
      }
      exit_code = *code;
      on_event(ExecEvent{ExecEvent::Kind::kExit, {}, *exit_code});
    } else if (doc.HasMember("line")) {
      const bool is_err = str(doc, "stream") == "stderr";
      on_event(ExecEvent{is_err ? ExecEvent::Kind::kStderr : ExecEvent::Kind::kStdout,
                         str(doc, "line"), 0});
    } else if (doc.HasMember("pid")) {
      const auto pid = integer_member<long long>(doc, "pid", 0);
      if (!pid) {
        malformed = "pid";
        return;
      }
      on_event(ExecEvent{ExecEvent::Kind::kPid, {}, *pid});
    }
  });
  const std::function<void(std::string_view)> sink = [&](std::string_view chunk) {
    parser.feed(chunk);
  };
  Transport::Exchange x;
  x.method = "POST";
  x.url = options_.api_url + path;
  const std::string body = exec_body(request);
  x.body = body;
  x.has_body = true;
  x.accept = "text/event-stream";
  x.api_key = options_.api_key;
  x.timeout = call.timeout.count() > 0 ? call.timeout : options_.request_timeout;
  x.stop = call.stop;
  if (call.max_answer_bytes > 0) x.max_body = call.max_answer_bytes;
  x.sink = &sink;
  TransportOutcome outcome = transport_->perform(x);
  if (outcome.curl_code != 0 || outcome.status < 200 || outcome.status >= 300) {
    outcome.request_sent = outcome.request_sent || outcome.curl_code == 0;
    throw_transport_error(outcome, "POST " + path + " (stream)", options_.api_key);
  }
  parser.feed("\n");
  parser.finish();
  if (malformed) {
    throw workspace::WorkspaceError("POST " + path + ": the stream carried a malformed \"" +
                                    *malformed + "\" (out of range)");
  }
  if (error) {
    throw workspace::WorkspaceError(
        "POST " + path + ": the stream reported an error: " + redact(*error, options_.api_key));
  }
  if (!exit_code) {
    throw workspace::WorkspaceError("POST " + path + ": the stream ended without an exit event");
  }
  return *exit_code;
}

std::vector<ProcessInfo> Client::list_processes(std::string_view sandbox_id,
                                                const CallOptions& call) {
  const auto path = sandbox_path(sandbox_id, "/processes");
  const auto doc = parse(checked("GET", path, {}, {}, call), "GET " + path);
  std::vector<ProcessInfo> out;
  if (!doc.IsArray()) return out;
  for (const auto& v : doc.GetArray()) {
    ProcessInfo p;
    p.pid = integer<long long>(v, "pid", "GET " + path);
    p.started_at = str(v, "startedAt");
    if (v.IsObject()) {
      auto it = v.FindMember("cmd");
      if (it != v.MemberEnd() && it->value.IsArray()) {
        for (const auto& item : it->value.GetArray()) {
          if (item.IsString()) p.cmd.emplace_back(item.GetString(), item.GetStringLength());
        }
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

void Client::signal_process(std::string_view sandbox_id, long long pid, std::string_view signal,
                            const CallOptions& call) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("pid");
  w.Int64(pid);
  w.Key("signal");
  write_string(w, signal);
  w.EndObject();
  checked("POST", sandbox_path(sandbox_id, "/processes/signal"), {},
          std::string_view(buffer.GetString(), buffer.GetSize()), call);
}

void Client::write_file(std::string_view sandbox_id, std::string_view path, std::string_view data,
                        const CallOptions& call) {
  // {"path":<json>,"content":"<base64>","encoding":"base64"} in one string
  // sized up front: memory is the base64 (1.33x) plus the caller's data.
  rapidjson::StringBuffer path_json;
  JsonWriter w(path_json);
  write_string(w, path);
  constexpr std::string_view kHead = "{\"path\":";
  constexpr std::string_view kMiddle = ",\"content\":\"";
  constexpr std::string_view kTail = "\",\"encoding\":\"base64\"}";
  std::string body;
  body.reserve(kHead.size() + path_json.GetSize() + kMiddle.size() +
               base64_encoded_size(data.size()) + kTail.size());
  body.append(kHead);
  body.append(path_json.GetString(), path_json.GetSize());
  body.append(kMiddle);
  base64_encode_append(data, body);
  body.append(kTail);
  checked("POST", sandbox_path(sandbox_id, "/files"), {}, body, call);
}

void Client::write_base64_text_file(std::string_view sandbox_id, std::string_view path,
                                    std::string_view data, const CallOptions& call) {
  rapidjson::StringBuffer path_json;
  JsonWriter w(path_json);
  write_string(w, path);
  constexpr std::string_view kHead = "{\"path\":";
  constexpr std::string_view kMiddle = ",\"content\":\"";
  constexpr std::string_view kTail = "\"}";
  std::string body;
  body.reserve(kHead.size() + path_json.GetSize() + kMiddle.size() +
               base64_encoded_size(data.size()) + kTail.size());
  body.append(kHead);
  body.append(path_json.GetString(), path_json.GetSize());
  body.append(kMiddle);
  base64_encode_append(data, body);
  body.append(kTail);
  checked("POST", sandbox_path(sandbox_id, "/files"), {}, body, call);
}

void Client::write_text_file(std::string_view sandbox_id, std::string_view path,
                             std::string_view text, const CallOptions& call) {
  checked("POST", sandbox_path(sandbox_id, "/files"), {},
          path_body({{"path", path}, {"content", text}}), call);
}

std::string Client::read_file(std::string_view sandbox_id, std::string_view path,
                              const CallOptions& call) {
  CallOptions raw = call;
  if (raw.max_answer_bytes == 0) raw.max_answer_bytes = kMaxFileReadBytes;
  Response r = checked("GET", sandbox_path(sandbox_id, "/files"),
                       encode_query({{"path", std::string(path)}}), {}, raw, "*/*");
  return std::move(r.body);
}

std::vector<FileInfo> Client::list_files(std::string_view sandbox_id, std::string_view path,
                                         const CallOptions& call) {
  const auto route = sandbox_path(sandbox_id, "/files/list");
  const auto doc = parse(
      checked("GET", route, encode_query({{"path", std::string(path)}}), {}, call), "GET " + route);
  std::vector<FileInfo> out;
  if (doc.IsArray()) {
    for (const auto& v : doc.GetArray()) out.push_back(decode_file(v, "GET " + route));
  }
  return out;
}

FileInfo Client::stat_file(std::string_view sandbox_id, std::string_view path,
                           const CallOptions& call) {
  const auto route = sandbox_path(sandbox_id, "/files/stat");
  return decode_file(
      parse(checked("GET", route, encode_query({{"path", std::string(path)}}), {}, call),
            "GET " + route),
      "GET " + route);
}

void Client::remove_file(std::string_view sandbox_id, std::string_view path,
                         const CallOptions& call) {
  CallOptions once = call;
  once.no_replay = true;
  checked("DELETE", sandbox_path(sandbox_id, "/files"), {}, path_body({{"path", path}}), once);
}

void Client::move_file(std::string_view sandbox_id, std::string_view from, std::string_view to,
                       const CallOptions& call) {
  CallOptions once = call;
  once.no_replay = true;
  checked("POST", sandbox_path(sandbox_id, "/files/move"), {},
          path_body({{"from", from}, {"to", to}}), once);
}

VolumeInfo Client::create_volume(std::string_view project_id, const CreateVolumeRequest& request,
                                 const CallOptions& call) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("name");
  write_string(w, request.name);
  if (request.size_gb) {
    w.Key("sizeGb");
    w.Double(*request.size_gb);
  }
  if (request.region) {
    w.Key("region");
    write_string(w, *request.region);
  }
  if (request.get_or_create) {
    w.Key("getOrCreate");
    w.Bool(true);
  }
  w.EndObject();
  const std::string path = "/api/projects/" + escape_segment(project_id) + "/volumes";
  return decode_volume(
      parse(checked("POST", path, {}, std::string_view(buffer.GetString(), buffer.GetSize()), call),
            "POST " + path));
}

std::vector<VolumeInfo> Client::list_volumes(std::string_view project_id, const CallOptions& call) {
  const std::string path = "/api/projects/" + escape_segment(project_id) + "/volumes";
  const auto doc = parse(checked("GET", path, {}, {}, call), "GET " + path);
  std::vector<VolumeInfo> out;
  if (doc.IsArray()) {
    for (const auto& v : doc.GetArray()) out.push_back(decode_volume(v));
  }
  return out;
}

VolumeInfo Client::get_volume(std::string_view project_id, std::string_view name_or_id,
                              const CallOptions& call) {
  const std::string path =
      "/api/projects/" + escape_segment(project_id) + "/volumes/" + escape_segment(name_or_id);
  return decode_volume(parse(checked("GET", path, {}, {}, call), "GET " + path));
}

void Client::delete_volume(std::string_view project_id, std::string_view name_or_id,
                           const CallOptions& call) {
  const std::string path =
      "/api/projects/" + escape_segment(project_id) + "/volumes/" + escape_segment(name_or_id);
  checked("DELETE", path, {}, {}, call);
}

}  // namespace lizard::api
