#include "state.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "api_error.h"
#include "file_trees.h"
#include "sandbox_runtime.h"
#include "state_dirs.h"
#include "wire_values.h"

namespace lizard::mock::internal {
namespace {

const std::map<std::string, SizeSpec> kSizes = {{"nano", {1, 512}},    {"mini", {1, 1024}},
                                                {"small", {2, 4096}},  {"medium", {4, 8192}},
                                                {"large", {8, 16384}}, {"big", {16, 32768}}};

const std::set<std::string> kTemplates = {"base",   "interpreter", "codex",
                                          "claude", "desktop",     "code-interpreter-v1"};

std::string random_hex(std::mt19937_64& rng, std::size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kHex[rng() % 16];
  return s;
}

}  // namespace

const SizeSpec* find_size(const std::string& name) {
  auto it = kSizes.find(name);
  return it == kSizes.end() ? nullptr : &it->second;
}

bool known_template(const std::string& name) { return kTemplates.count(name) > 0; }

const Project* MockState::Tables::project_by_id(const std::string& id) const {
  for (const auto& p : projects) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

Project MockState::Tables::resolve_project(const ApiKey& key, const std::string& ref) const {
  const std::string l = lower(ref);
  std::vector<const Project*> hits;
  for (const auto& p : projects) {
    if (!reaches(key, p)) continue;
    if (lower(p.id) == l || lower(p.slug) == l || lower(p.name) == l) hits.push_back(&p);
  }
  if (hits.empty()) api_error(404, "Project not found", "PROJECT_NOT_FOUND");
  if (hits.size() > 1)
    api_error(400, "Project reference is ambiguous; pass the project ID", "PROJECT_AMBIGUOUS");
  return *hits.front();
}

std::shared_ptr<Sandbox> MockState::Tables::take(const std::string& id) {
  auto it = sandboxes.find(id);
  if (it == sandboxes.end()) return nullptr;
  auto sb = it->second;
  sandboxes.erase(it);
  if (!sb->volume_id.empty()) {
    auto v = volumes.find(sb->volume_id);
    if (v != volumes.end()) v->second.attached_to.clear();
  }
  return sb;
}

MockState::MockState(const MockOptions& options)
    : options_(options),
      settings_(sandbox_settings_for_this_process(options)),
      rng_(std::random_device{}()) {
  if (options_.api_keys.empty()) options_.api_keys.push_back(kDefaultApiKey);
  if (options_.projects.empty()) options_.projects.push_back(kDefaultProject);
  if (auto problem = isolation_problem()) throw IsolationUnavailable(*problem);
  if (options_.state_dir.empty()) {
    remove_abandoned_state_dirs();
    std::string tmpl = (std::filesystem::temp_directory_path() / "lizard-mock-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create the state directory");
    state_dir_ = tmpl;
    own_state_dir_ = true;
    mark_state_dir_owner(state_dir_);
  } else {
    std::filesystem::create_directories(options_.state_dir);
    state_dir_ = std::filesystem::absolute(options_.state_dir).string();
  }
  for (const char* sub : {"/sandboxes", "/volumes", "/snapshots"}) {
    std::filesystem::create_directories(state_dir_ + sub);
    ::chmod((state_dir_ + sub).c_str(), 0700);
  }
  if (own_state_dir_) register_state_dir(state_dir_);
  const std::int64_t now = now_ms();
  Workspace ws{new_id("wks_"), "Mock workspace", "mock-workspace", now};
  tables_.workspaces[ws.id] = ws;
  for (const auto& name : options_.projects) {
    tables_.projects.push_back(Project{new_id("prj_"), name, name, ws.id, now});
  }
  for (const auto& k : options_.api_keys) {
    ApiKey key;
    key.key = k;
    key.id = new_id("key_");
    key.name = "mock key";
    key.full = true;
    key.created_at = now;
    tables_.keys[k] = key;
  }
  initial_ = tables_;
  reaper_ = std::thread([this] { reap_loop(); });
}

MockState::~MockState() {
  begin_stopping();
  kill_all_sandboxes();
  {
    std::lock_guard lock(reap_mu_);
    reap_stop_ = true;
  }
  reap_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  kill_all_sandboxes();
  if (own_state_dir_) {
    unregister_state_dir(state_dir_);
    remove_tree(state_dir_);
  }
}

std::string MockState::first_project_id() const {
  std::lock_guard lock(mu_);
  return initial_.projects.front().id;
}

std::int64_t MockState::now_ms() const { return real_now_ms() + clock_offset_ms_.load(); }

void MockState::advance_clock(std::int64_t by_ms) {
  clock_offset_ms_ += by_ms;
  reap_cv_.notify_all();
  reap_expired();
}

std::string MockState::new_id(const std::string& prefix, std::size_t hex_digits) {
  std::lock_guard lock(rng_mu_);
  return prefix + random_hex(rng_, hex_digits);
}

bool MockState::reaches(const ApiKey& key, const Project& project) {
  return key.full || key.projects.count(project.id) || key.workspaces.count(project.workspace_id);
}

std::optional<ApiKey> MockState::key_record(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = tables_.keys.find(key);
  if (key.empty() || it == tables_.keys.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<Sandbox> MockState::find_sandbox(const ApiKey& key, const std::string& id) {
  reap_expired();
  std::lock_guard lock(mu_);
  auto it = tables_.sandboxes.find(id);
  if (it == tables_.sandboxes.end()) not_found_sandbox();
  const Project* p = tables_.project_by_id(it->second->project_id);
  if (!p || !reaches(key, *p)) not_found_sandbox();
  return it->second;
}

bool MockState::alive(const std::string& id) {
  reap_expired();
  std::lock_guard lock(mu_);
  return tables_.sandboxes.count(id) > 0;
}

std::shared_ptr<SandboxRuntime> MockState::running_runtime(const Sandbox& sb) const {
  std::lock_guard lock(mu_);
  if (!sb.rt) api_error(409, "Sandbox is paused", "SANDBOX_PAUSED");
  return sb.rt;
}

std::shared_ptr<SandboxRuntime> MockState::start_runtime(const std::string& id,
                                                         const std::string& base_dir,
                                                         const std::string& workspace_dir) const {
  return std::make_shared<SandboxRuntime>(base_dir, workspace_dir, settings_, id);
}

void MockState::make_sandbox_dir(const std::string& path) const {
  std::filesystem::create_directories(path);
  if (settings_.ids.chown)
    (void)::lchown(path.c_str(), settings_.ids.uid_base, settings_.ids.gid_base);
}

void MockState::discard(Sandbox& sb) const {
  if (sb.rt) {
    sb.rt->destroy();
  } else if (!sb.base_dir.empty()) {
    if (sb.volume_id.empty()) {
      remove_tree(sb.base_dir);
    } else {
      for (const char* d : {"/root", "/tmp", "/home"}) remove_tree(sb.base_dir + d);
      ::rmdir(sb.base_dir.c_str());
    }
  }
}

void MockState::reap_expired() {
  std::vector<std::shared_ptr<Sandbox>> dead;
  {
    std::lock_guard lock(mu_);
    const std::int64_t now = now_ms();
    std::vector<std::string> ids;
    for (const auto& [id, sb] : tables_.sandboxes) {
      if (sb->end_at != 0 && now >= sb->end_at) ids.push_back(id);
    }
    for (const auto& id : ids) dead.push_back(tables_.take(id));
  }
  for (auto& sb : dead) discard(*sb);
}

void MockState::reap_loop() {
  std::unique_lock lock(reap_mu_);
  while (!reap_stop_) {
    reap_cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (reap_stop_) break;
    lock.unlock();
    reap_expired();
    lock.lock();
  }
}

void MockState::kill_all_sandboxes() {
  std::vector<std::shared_ptr<Sandbox>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, sb] : tables_.sandboxes) all.push_back(sb);
    tables_.sandboxes.clear();
    for (auto& [id, v] : tables_.volumes) v.attached_to.clear();
  }
  for (auto& sb : all) discard(*sb);
}

std::size_t MockState::live_sandboxes() {
  reap_expired();
  std::lock_guard lock(mu_);
  return tables_.sandboxes.size();
}

std::size_t MockState::live_processes() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, sb] : tables_.sandboxes) {
    if (sb->rt) n += sb->rt->process_count();
  }
  return n;
}

std::string MockState::workspace_dir(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = tables_.sandboxes.find(id);
  if (it == tables_.sandboxes.end() || !it->second->rt) return {};
  return it->second->rt->workspace_dir();
}

void MockState::reset() {
  std::vector<std::shared_ptr<Sandbox>> sandboxes;
  std::vector<std::string> dirs;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, sb] : tables_.sandboxes) sandboxes.push_back(sb);
    for (auto& [id, v] : tables_.volumes) dirs.push_back(v.dir);
    for (auto& [id, s] : tables_.snapshots) dirs.push_back(s.dir);
    tables_ = initial_;
    clock_offset_ms_ = 0;
  }
  for (auto& sb : sandboxes) discard(*sb);
  for (const auto& d : dirs) remove_tree(d);
}

void MockState::begin_stopping() { stopping_ = true; }

}  // namespace lizard::mock::internal
