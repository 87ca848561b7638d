// The real side of a mock sandbox: a directory tree on this machine, its
// PID 1 (lizard-sandbox-init, mockserver/init/) in fresh user, mount, PID,
// network, UTS, IPC and cgroup namespaces, and the commands it starts.
//
// Users: uid 0 in the sandbox is never host uid 0. When the mock runs as
// root, sandbox ids 0..65535 map to an unprivileged host range (see
// SandboxIds); otherwise uid 0 maps to the mock's own uid and no other id
// exists. Files the mock writes for a sandbox belong to its root.
//
// Thread safety: a SandboxRuntime may be used from many threads at once;
// stop() may race with run() (the run then fails or its process dies).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/mock/mock_server.h"
#include "sandbox_files.h"

namespace lizard::mock::internal {

// How one mock's sandboxes map users to the host, and their limits.
struct SandboxSettings {
  IdMap ids;
  SandboxLimits limits;
  // The host uid that makes every sandbox's outer user namespace
  // (sandbox_launch.cc): as root the id past the sandboxes' range
  // (root_id_base + 65536; the last of the range where that id does not
  // exist); 0 when not root (the mock's own uid makes them).
  std::uint32_t owner_uid = 0;
};

// The settings for a mock running as this process's user: a root mock maps
// sandbox ids 0..65535 to host ids from `root_id_base` and makes the
// sandboxes' namespaces as the last of them; any other user maps uid 0 (and
// gid 0) to itself. Throws std::invalid_argument when those ids would
// include 0 or pass 2^32 - 2, or a process limit is not positive.
SandboxSettings sandbox_settings_for_this_process(const MockOptions& options);

// Why sandboxes cannot be isolated here, with the fixes; nullopt when they
// can. Tried once (a sandbox is really started) and remembered.
std::optional<std::string> isolation_problem();

struct ExecSpec {
  std::vector<std::string> argv;  // argv[0] looked up on PATH unless it holds '/'
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string workdir;            // as the sandbox sees it
  std::uint32_t uid = 0;          // as the sandbox sees them
  std::uint32_t gid = 0;
};

struct ExecOutcome {
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  int exit_code = -1;
  bool timed_out = false;
  bool started = false;    // false: the command could not be handed to the sandbox
  bool cancelled = false;  // the caller's should_stop said so
};

struct ProcessInfo {
  pid_t pid = 0;       // as the sandbox sees it (reported to clients)
  pid_t host_pid = 0;  // the process group leader on the host
  std::vector<std::string> cmd;
  std::int64_t started_at_ms = 0;
};

class SandboxRuntime {
 public:
  // Creates base/{tmp,home} (and base/workspace unless workspace_dir is
  // given, e.g. a volume) and starts the sandbox's init. Throws
  // std::runtime_error naming the step that failed.
  SandboxRuntime(std::string base_dir, std::string workspace_dir, const SandboxSettings& settings,
                 const std::string& hostname);
  ~SandboxRuntime();
  SandboxRuntime(const SandboxRuntime&) = delete;
  SandboxRuntime& operator=(const SandboxRuntime&) = delete;

  // Kills every process of the sandbox (its init first). Files stay.
  void stop();
  // stop() and removes base_dir (never crossing into another file system,
  // and never the workspace when it is an external directory).
  void destroy();

  const std::string& workspace_dir() const { return workspace_dir_; }
  const std::string& base_dir() const { return base_dir_; }
  // The host directory seen as /root (the sandbox's home).
  const std::string& home_dir() const { return home_dir_; }
  const IdMap& ids() const { return settings_.ids; }
  // A private duplicate of the root the sandbox's processes see (O_PATH;
  // close it yourself), or -1 once stopped. Use with openat2(RESOLVE_IN_ROOT).
  int dup_root_fd() const;

  // Runs a command and collects its output under the rules of the API:
  // each stream kept up to `cap` bytes (0: no cap; then drained and
  // dropped), killed with its process group after `timeout`, answered once
  // the command exited and the pipes closed (or a short grace passed).
  // `on_output(stream, bytes)` (stream 1 or 2) sees every byte when given;
  // `on_pid(sandbox_pid)` fires once the process exists; `should_stop` is
  // polled and kills the group when it returns true.
  ExecOutcome run(const ExecSpec& spec, std::chrono::milliseconds timeout, std::size_t cap,
                  const std::function<void(int, std::string_view)>& on_output,
                  const std::function<void(pid_t)>& on_pid,
                  const std::function<bool()>& should_stop, std::int64_t started_at_ms,
                  const std::vector<std::string>& display_cmd);

  std::vector<ProcessInfo> processes() const;
  std::size_t process_count() const;
  // Sends `sig` to the process group of the exec whose sandbox pid is `pid`.
  // False when no such exec runs.
  bool signal(pid_t pid, int sig);

 private:
  // Sends the init the command's exec socket and output pipes (false once
  // stopped, or when the init is gone).
  bool hand_over(int exec_sock, int out_w, int err_w);
  // Lists a command that announced itself (killed at once when stopped).
  void note_running(const ProcessInfo& process);
  void forget(pid_t host_pid);

  std::string base_dir_;
  std::string workspace_dir_;
  std::string home_dir_;
  bool external_workspace_;
  SandboxSettings settings_;
  mutable std::mutex mu_;
  pid_t init_ = -1;
  int control_ = -1;
  int root_fd_ = -1;
  bool stopped_ = false;
  std::vector<ProcessInfo> running_;
};

}  // namespace lizard::mock::internal
