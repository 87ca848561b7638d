// The real side of a mock sandbox: a directory tree on this machine, a
// long-lived "holder" process that owns the sandbox's mount and PID
// namespaces, and the spawning of commands inside them.
//
// Isolated mode (the normal one): the holder is PID 1 of a fresh PID
// namespace, in a fresh mount namespace whose root is a read-only tree of
// bind mounts of the host's /usr, /etc (and the usr-merge links), a minimal
// /dev, a private /proc, and read-write binds of the sandbox's own
// workspace (/workspace), tmp (/tmp) and home (/root). Killing the holder
// makes the kernel kill every process of the namespace, detached ones too.
//
// Degraded mode (namespaces refused): no holder; commands run on the host
// with the sandbox's workspace directory as their working directory. The
// server announces it; see docs/mockserver.md.
//
// Thread safety: a SandboxRuntime may be used from many threads at once;
// stop() may race with spawn() (the spawn then fails or its process dies).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace lizard::mock::internal {

// True when this process may create mount and PID namespaces (probed once
// by forking a child that tries).
bool namespaces_available(std::string* why_not);

struct ExecSpec {
  std::vector<std::string> argv;  // argv[0] looked up on PATH unless it holds '/'
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string workdir;            // as the sandbox sees it
};

struct ExecOutcome {
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  int exit_code = -1;
  bool timed_out = false;
  bool started = false;    // false: the spawn itself failed (sandbox gone)
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
  // Creates base/{root,tmp,home} (and base/workspace unless workspace_dir
  // is given, e.g. a volume) and, when `isolate`, the holder. Throws
  // std::runtime_error when the holder cannot be set up.
  SandboxRuntime(std::string base_dir, std::string workspace_dir, bool isolate);
  ~SandboxRuntime();
  SandboxRuntime(const SandboxRuntime&) = delete;
  SandboxRuntime& operator=(const SandboxRuntime&) = delete;

  // Kills every process of the sandbox and waits for the holder. Files stay.
  void stop();
  // stop() and removes base_dir (never crossing into another file system,
  // and never the workspace when it is an external directory).
  void destroy();

  bool isolated() const { return isolate_; }
  const std::string& workspace_dir() const { return workspace_dir_; }
  const std::string& base_dir() const { return base_dir_; }
  // The host directory seen as /root (the sandbox's home).
  const std::string& home_dir() const { return home_dir_; }
  // A directory fd (O_PATH) of the root the sandbox's processes see; -1
  // after stop(). Use with openat2(RESOLVE_IN_ROOT).
  int root_fd() const { return root_fd_; }
  // A private duplicate of root_fd() (close it yourself), or -1 once
  // stopped: a concurrent stop() can never turn it into another file.
  int dup_root_fd() const;

  // Runs a command and collects its output under the rules of the API:
  // each stream kept up to `cap` bytes (then drained and dropped), killed
  // with its process group after `timeout`, answered once the direct
  // process exited and the pipes closed (or a short grace passed).
  // `on_output(stream, bytes)` (stream 1 or 2) sees every byte when given;
  // `on_pid(sandbox_pid)` fires once the process exists; `should_stop`
  // is polled and kills the group when it returns true.
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
  void start_holder();
  void kill_all_groups();

  std::string base_dir_;
  std::string workspace_dir_;
  std::string root_dir_;
  std::string home_dir_;
  bool isolate_;
  bool external_workspace_;
  mutable std::mutex mu_;
  pid_t holder_ = -1;
  int root_fd_ = -1;
  int mnt_ns_fd_ = -1;
  int pid_ns_fd_ = -1;
  bool stopped_ = false;
  std::vector<ProcessInfo> running_;
};

// Removes a directory tree without following links and without crossing
// into other file systems (a stale bind mount is never descended into).
void remove_tree(const std::string& path);

// Copies a directory tree (files, dirs, links; modes kept). For fork and
// snapshot.
void copy_tree(const std::string& from, const std::string& to);

}  // namespace lizard::mock::internal
