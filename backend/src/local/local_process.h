// One host process for LocalWorkspaceBackend::run: spawned with posix_spawn
// in its own process group, stdin at /dev/null, stdout/stderr read through
// pipes with poll(2), the direct child watched through a pidfd.
//
// Thread safety: run_process() may be called from many threads at once; all
// its state is local to the call. Every descriptor it opens is O_CLOEXEC and
// the child closes every descriptor above 2, so concurrent spawns never leak
// one command's pipes into another.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "lizard/workspace/types.h"

namespace lizard::workspace::internal {

struct ProcessSpec {
  std::string program;            // the file to execute; relative paths resolve from `cwd`
  std::vector<std::string> argv;  // what the program sees as argv (argv[0] included)
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string cwd;                // absolute
};

struct ProcessControl {
  std::optional<Seconds> timeout;
  std::stop_token stop;
  // An eventfd the caller owns; a write to it wakes the poll loop, which then
  // consults `destroyed` and `stop`.
  int wake_fd = -1;
  // Called once the child runs, with its process group id. Returning false
  // means the environment is being destroyed: the group is killed at once.
  std::function<bool(pid_t)> started;
  // True once the environment has been destroyed.
  std::function<bool()> destroyed;
};

struct ProcessOutcome {
  CommandResult result;  // output already repaired to UTF-8
  pid_t group = 0;
  // Members of the process group (background children) were still running
  // when the direct child had been reaped.
  bool group_lingers = false;
};

// How long output is still collected after the direct child exited, for
// descendants that hold the pipes (a background child keeps them open).
inline constexpr std::chrono::milliseconds kDrainGrace{200};
// Between SIGTERM and SIGKILL when a command is stopped.
inline constexpr std::chrono::milliseconds kTerminateGrace{500};

// Spawns and waits. When posix_spawn fails (before anything ran) returns
// std::nullopt and sets *spawn_error to its errno.
// Throws WorkspaceTimeoutError, WorkspaceOutputLimitError,
// WorkspaceCancelledError, WorkspaceUnavailableError (destroyed meanwhile),
// WorkspaceError (a system call failed). Whenever it throws, the command's
// process group has been killed and the child reaped.
std::optional<ProcessOutcome> run_process(const ProcessSpec& spec, const ProcessControl& control,
                                          int* spawn_error);

// Sends `signal` to process group `group` only when a process of this
// process's session is still in it, so that a group id recycled by an
// unrelated program is never signalled. Returns true when it signalled.
bool signal_own_group(pid_t group, int signal);

// One process for good: its pid and its start time (clock ticks after boot,
// /proc/PID/stat field 22); a pid alone may be reused.
struct ProcessIdentity {
  pid_t pid = 0;
  unsigned long long start = 0;
};

// The members of process group `group` in this process's session, now.
std::vector<ProcessIdentity> own_group_members(pid_t group);

// Sends `signal` to group `group` only when one of `members` is still in it
// with its start time: the group then was never empty, so its id was never
// free for another program's group (a group left by a command whose
// background children all ended may be reused after the pids wrap). Returns
// true when it signalled.
bool signal_group_of(pid_t group, const std::vector<ProcessIdentity>& members, int signal);

}  // namespace lizard::workspace::internal
