// The mock's state: accounts, projects, keys, sandboxes, volumes and
// snapshots, the mock clock, the reaper of expired sandboxes, and the state
// directory where sandbox files live.
//
// Thread safety: every member function may be called from any thread. The
// tables are reached only through locked(), which holds the one lock for
// the duration of the callback (never call back into MockState from it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "entities.h"
#include "lizard/mock/mock_server.h"
#include "sandbox_runtime.h"

namespace lizard::mock::internal {

class MockState {
 public:
  struct Tables {
    std::map<std::string, Workspace> workspaces;
    std::vector<Project> projects;
    std::map<std::string, ApiKey> keys;
    std::map<std::string, std::shared_ptr<Sandbox>> sandboxes;
    std::map<std::string, Volume> volumes;
    std::map<std::string, Snapshot> snapshots;

    const Project* project_by_id(const std::string& id) const;
    // An ID, slug or name (case-insensitive) among the projects `key`
    // reaches; 404 PROJECT_NOT_FOUND, 400 PROJECT_AMBIGUOUS.
    Project resolve_project(const ApiKey& key, const std::string& ref) const;
    // Removes a sandbox from the table (and frees its volume); null if absent.
    std::shared_ptr<Sandbox> take(const std::string& id);
  };

  // Creates (or adopts) the state directory, the configured accounts, and
  // starts the reaper. Throws std::runtime_error when the directory cannot
  // be made.
  explicit MockState(const MockOptions& options);
  // Stops the reaper, kills every sandbox, removes a state directory it made.
  ~MockState();
  MockState(const MockState&) = delete;
  MockState& operator=(const MockState&) = delete;

  template <class F>
  auto locked(F&& f) {
    std::lock_guard lock(mu_);
    return f(tables_);
  }
  template <class F>
  auto locked(F&& f) const {
    std::lock_guard lock(mu_);
    return f(static_cast<const Tables&>(tables_));
  }

  const MockOptions& options() const { return options_; }
  const std::string& state_dir() const { return state_dir_; }
  // How sandboxes map users to the host, and their limits.
  const SandboxSettings& sandbox_settings() const { return settings_; }
  std::string first_project_id() const;

  // The mock clock: real time plus the offset moved by advance_clock().
  std::int64_t now_ms() const;
  std::int64_t clock_offset_ms() const { return clock_offset_ms_.load(); }
  // Moves the clock; sandboxes past their lifetime are gone when it returns.
  void advance_clock(std::int64_t by_ms);

  std::string new_id(const std::string& prefix, std::size_t hex_digits = 16);
  static bool reaches(const ApiKey& key, const Project& project);
  // The caller's key record, or null when `key` is unknown.
  std::optional<ApiKey> key_record(const std::string& key) const;

  // The sandbox `id` when alive and reachable by `key`; else 404.
  std::shared_ptr<Sandbox> find_sandbox(const ApiKey& key, const std::string& id);
  bool alive(const std::string& id);
  // Its runtime; 409 SANDBOX_PAUSED while paused.
  std::shared_ptr<SandboxRuntime> running_runtime(const Sandbox& sb) const;
  // Starts the processes of sandbox `id`, whose files live in `base_dir`
  // (`workspace_dir`: a volume's directory, or empty for base_dir/workspace).
  std::shared_ptr<SandboxRuntime> start_runtime(const std::string& id, const std::string& base_dir,
                                                const std::string& workspace_dir) const;
  // Makes a directory of the state dir (volumes, snapshots) the sandboxes' own.
  void make_sandbox_dir(const std::string& path) const;
  // Kills the processes of a sandbox already taken out of the table and
  // removes its files (never a volume's).
  void discard(Sandbox& sb) const;
  void reap_expired();
  void kill_all_sandboxes();
  std::size_t live_sandboxes();
  std::size_t live_processes() const;
  std::string workspace_dir(const std::string& id) const;

  // Back to the configured accounts: kills every sandbox, drops volumes,
  // snapshots and everything made through the API; clock offset 0.
  void reset();
  // From now on creates answer 503 (the server is stopping).
  void begin_stopping();
  bool stopping() const { return stopping_.load(); }

 private:
  void reap_loop();

  MockOptions options_;
  SandboxSettings settings_;
  std::string state_dir_;
  bool own_state_dir_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> clock_offset_ms_{0};

  std::mutex rng_mu_;
  std::mt19937_64 rng_;

  mutable std::mutex mu_;
  Tables tables_;
  Tables initial_;  // the configured accounts, for reset()

  std::mutex reap_mu_;
  std::condition_variable reap_cv_;
  bool reap_stop_ = false;
  std::thread reaper_;
};

}  // namespace lizard::mock::internal
