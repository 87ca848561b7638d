#include "local/local_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include "lizard/workspace/errors.h"
#include "lizard/workspace/utf8.h"
#include "local/fd.h"

namespace lizard::workspace::internal {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_system(const char* what, int error) {
  throw WorkspaceError(std::string("local backend: ") + what + ": " +
                       std::generic_category().message(error));
}

// One pipe whose read end we poll (non-blocking) and whose write end the
// child gets as stdout or stderr (blocking, as programs expect).
struct Pipe {
  Fd read_end;
  Fd write_end;

  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_system("pipe2", errno);
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    if (::fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) throw_system("fcntl", errno);
  }
};

class SpawnActions {
 public:
  SpawnActions() {
    if (const int rc = ::posix_spawn_file_actions_init(&actions_); rc != 0) {
      throw_system("posix_spawn_file_actions_init", rc);
    }
  }
  ~SpawnActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

class SpawnAttr {
 public:
  SpawnAttr() {
    if (const int rc = ::posix_spawnattr_init(&attr_); rc != 0) {
      throw_system("posix_spawnattr_init", rc);
    }
  }
  ~SpawnAttr() { ::posix_spawnattr_destroy(&attr_); }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
  posix_spawnattr_t* get() { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

void check_spawn(int rc, const char* what) {
  if (rc != 0) throw_system(what, rc);
}

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (const auto& item : items) out.push_back(const_cast<char*>(item.c_str()));
  out.push_back(nullptr);
  return out;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Owns the spawned child until it is reaped: whatever way run_process leaves,
// the process group is killed and the child does not stay a zombie.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (!reaped_) {
      ::kill(-pid_, SIGKILL);
      wait_status(pid_);
    }
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

  pid_t pid() const { return pid_; }
  int reap() {
    reaped_ = true;
    return wait_status(pid_);
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
};

// Raw bytes of one stream as they arrive.
struct Stream {
  Fd* fd;
  std::string data;
  bool open = true;

  // Reads what is available now. Returns false once the stream is over the
  // limit (the caller then gives up on the command).
  bool drain() {
    char buffer[1 << 16];
    while (open) {
      const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
      if (n > 0) {
        data.append(buffer, static_cast<std::size_t>(n));
        if (data.size() > kOutputLimitBytes) return false;
      } else if (n == 0) {
        open = false;
        fd->reset();
      } else if (errno == EINTR) {
        continue;
      } else {
        // EAGAIN: nothing more for now. Any other error ends the stream.
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          open = false;
          fd->reset();
        }
        break;
      }
    }
    return true;
  }
};

std::string head_of(const std::string& raw) {
  std::string_view head = std::string_view(raw).substr(0, kOutputHeadBytes);
  head = head.substr(0, utf8_complete_prefix(head));
  return std::string(utf8_truncate(repair_utf8(head), kOutputHeadBytes));
}

int poll_timeout_ms(Clock::time_point now, std::optional<Clock::time_point> a,
                    std::optional<Clock::time_point> b) {
  std::optional<Clock::time_point> next = a;
  if (b && (!next || *b < *next)) next = b;
  if (!next) return -1;
  if (*next <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return ms > 60000 ? 60000 : static_cast<int>(ms);
}

// SIGTERM to the group, a short grace for the direct child, then SIGKILL to
// the group (always: foreground children may ignore SIGTERM or outlive their
// parent). The unreaped child keeps the group id reserved until reap().
int terminate_group(ChildGuard& child, int pidfd) {
  ::kill(-child.pid(), SIGTERM);
  const auto until = Clock::now() + kTerminateGrace;
  for (;;) {
    pollfd p{pidfd, POLLIN, 0};
    const int timeout = poll_timeout_ms(Clock::now(), until, std::nullopt);
    const int rc = ::poll(&p, 1, timeout);
    if (rc > 0 || timeout == 0) break;
    if (rc < 0 && errno != EINTR) break;
  }
  ::kill(-child.pid(), SIGKILL);
  return child.reap();
}

// stdin /dev/null, the pipes as stdout and stderr, the working directory,
// nothing else inherited.
void add_file_actions(SpawnActions& actions, const ProcessSpec& spec, const Pipe& out_pipe,
                      const Pipe& err_pipe) {
  check_spawn(::posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0),
              "posix_spawn_file_actions_addopen");
  check_spawn(::posix_spawn_file_actions_adddup2(actions.get(), out_pipe.write_end.get(), 1),
              "posix_spawn_file_actions_adddup2");
  check_spawn(::posix_spawn_file_actions_adddup2(actions.get(), err_pipe.write_end.get(), 2),
              "posix_spawn_file_actions_adddup2");
  check_spawn(::posix_spawn_file_actions_addchdir_np(actions.get(), spec.cwd.c_str()),
              "posix_spawn_file_actions_addchdir_np");
  // Descriptors other threads opened without O_CLOEXEC must not reach the child.
  check_spawn(::posix_spawn_file_actions_addclosefrom_np(actions.get(), 3),
              "posix_spawn_file_actions_addclosefrom_np");
}

// Own process group (setpgid(0, 0) in the child); default dispositions and
// an empty mask, whatever this process ignores or blocks.
void set_attributes(SpawnAttr& attr) {
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t all_signals;
  sigfillset(&all_signals);
  check_spawn(
      ::posix_spawnattr_setflags(
          attr.get(), POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
      "posix_spawnattr_setflags");
  check_spawn(::posix_spawnattr_setpgroup(attr.get(), 0), "posix_spawnattr_setpgroup");
  check_spawn(::posix_spawnattr_setsigmask(attr.get(), &no_signals), "posix_spawnattr_setsigmask");
  check_spawn(::posix_spawnattr_setsigdefault(attr.get(), &all_signals),
              "posix_spawnattr_setsigdefault");
}

// Watches a spawned command until it is over: its two streams, its
// deadline, and the wake descriptor (stop token, destroy()). Whatever it
// throws, the group has been stopped and the child reaped.
class CommandWatch {
 public:
  CommandWatch(ChildGuard& child, int pidfd, const ProcessControl& control, Pipe& out_pipe,
               Pipe& err_pipe)
      : child_(child),
        pidfd_(pidfd),
        control_(control),
        out_{&out_pipe.read_end, {}, true},
        err_{&err_pipe.read_end, {}, true} {
    if (control.timeout) {
      // Clamped first: past about 9.2e9 s the clock's nanoseconds overflow
      // (the deadline landed in the past). A billion seconds is 31 years.
      const auto seconds = std::min(control.timeout->count(), 1e9);
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(seconds));
    }
  }

  // Returns once the direct child exited and its streams are drained (or
  // the drain grace passed).
  void wait() {
    for (;;) {
      if (drain_until_ && !out_.open && !err_.open) return;
      const auto now = Clock::now();
      // Once the direct child has exited the command is over; only the drain remains.
      if (deadline_ && !drain_until_ && now >= *deadline_) throw_timeout();
      if (drain_until_ && now >= *drain_until_) return;
      poll_once(now);
    }
  }

  const std::string& out() const { return out_.data; }
  const std::string& err() const { return err_.data; }

 private:
  void poll_once(Clock::time_point now) {
    pollfd fds[4];
    nfds_t count = 0;
    int out_index = -1, err_index = -1, pid_index = -1;
    if (out_.open) {
      out_index = static_cast<int>(count);
      fds[count++] = pollfd{out_.fd->get(), POLLIN, 0};
    }
    if (err_.open) {
      err_index = static_cast<int>(count);
      fds[count++] = pollfd{err_.fd->get(), POLLIN, 0};
    }
    if (!drain_until_) {
      pid_index = static_cast<int>(count);
      fds[count++] = pollfd{pidfd_, POLLIN, 0};
    }
    const int wake_index = static_cast<int>(count);
    fds[count++] = pollfd{control_.wake_fd, POLLIN, 0};

    const int ready = ::poll(
        fds, count, poll_timeout_ms(now, drain_until_ ? std::nullopt : deadline_, drain_until_));
    if (ready < 0) {
      if (errno == EINTR) return;
      throw_system("poll", errno);
    }
    if (out_index >= 0 && fds[out_index].revents != 0 && !out_.drain()) throw_over_limit();
    if (err_index >= 0 && fds[err_index].revents != 0 && !err_.drain()) throw_over_limit();
    if (fds[wake_index].revents != 0) on_wake();
    if (pid_index >= 0 && fds[pid_index].revents != 0) drain_until_ = Clock::now() + kDrainGrace;
  }

  void on_wake() {
    std::uint64_t value = 0;
    [[maybe_unused]] const ssize_t n = ::read(control_.wake_fd, &value, sizeof value);
    if (control_.destroyed()) {
      ::kill(-child_.pid(), SIGKILL);
      child_.reap();
      throw WorkspaceUnavailableError("the local environment was destroyed while the command ran");
    }
    if (control_.stop.stop_requested()) {
      terminate_group(child_, pidfd_);
      throw WorkspaceCancelledError("the command was cancelled");
    }
  }

  [[noreturn]] void throw_timeout() {
    terminate_group(child_, pidfd_);
    // After the group was stopped, what is still in the pipes belongs to the
    // partial output; a descendant outside the group may hold them, so take
    // only what is there now.
    out_.drain();
    err_.drain();
    throw WorkspaceTimeoutError(
        "the command timed out after " + std::to_string(control_.timeout->count()) + " s",
        repair_utf8(out_.data.substr(0, kOutputLimitBytes)),
        repair_utf8(err_.data.substr(0, kOutputLimitBytes)), *control_.timeout);
  }

  [[noreturn]] void throw_over_limit() {
    ::kill(-child_.pid(), SIGKILL);
    child_.reap();
    // The other stream's head includes what the command wrote to it before
    // it went over, still in its pipe: take what is there now (a stream
    // still within the limit reads at most up to it; the one over it keeps
    // its head).
    if (out_.data.size() <= kOutputLimitBytes) out_.drain();
    if (err_.data.size() <= kOutputLimitBytes) err_.drain();
    throw WorkspaceOutputLimitError(
        "output exceeded the limit of " + std::to_string(kOutputLimitBytes) + " bytes per stream",
        kOutputLimitBytes, head_of(out_.data), head_of(err_.data));
  }

  ChildGuard& child_;
  int pidfd_;
  const ProcessControl& control_;
  Stream out_;
  Stream err_;
  std::optional<Clock::time_point> deadline_;
  std::optional<Clock::time_point> drain_until_;  // set once the direct child exited
};

}  // namespace

std::optional<ProcessOutcome> run_process(const ProcessSpec& spec, const ProcessControl& control,
                                          int* spawn_error) {
  Pipe out_pipe;
  Pipe err_pipe;
  SpawnActions actions;
  add_file_actions(actions, spec, out_pipe, err_pipe);
  SpawnAttr attr;
  set_attributes(attr);
  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, spec.program.c_str(), actions.get(), attr.get(), argv.data(),
                               envp.data());
  if (rc != 0) {
    *spawn_error = rc;
    return std::nullopt;
  }
  ChildGuard child(pid);
  out_pipe.write_end.reset();
  err_pipe.write_end.reset();

  // The raw syscall: glibc 2.36's <sys/pidfd.h> lacks extern "C" and does not link from C++.
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0) throw_system("pidfd_open", errno);
  if (!control.started(pid)) {
    throw WorkspaceUnavailableError("the local environment was destroyed");
  }
  // The callback runs on the thread that requests stop; all it may do is wake us.
  const int wake_fd = control.wake_fd;
  std::stop_callback on_stop(control.stop, [wake_fd] {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  });

  CommandWatch watch(child, pidfd.get(), control, out_pipe, err_pipe);
  watch.wait();
  const int status = child.reap();
  ProcessOutcome outcome;
  outcome.group = pid;
  // Members left in the group once the leader is reaped are background
  // children; destroy() still has to stop them.
  outcome.group_lingers = ::kill(-pid, 0) == 0;
  outcome.result.exit_code = exit_code_of(status);
  outcome.result.out = repair_utf8(watch.out());
  outcome.result.err = repair_utf8(watch.err());
  return outcome;
}

namespace {

// Calls fn(pid, group, start time) for every process of this process's
// session (/proc/PID/stat: fields 5, 6 and 22); stops when fn returns true.
template <typename Fn>
void for_each_own_process(Fn&& fn) {
  const pid_t session = ::getsid(0);
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* item = ::readdir(proc)) {
    const std::string_view name = item->d_name;
    if (name.front() < '0' || name.front() > '9') continue;
    const std::string path = "/proc/" + std::string(name) + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buffer[1024];
    const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    if (n <= 0) continue;
    buffer[n] = '\0';
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    const char* rest = std::strrchr(buffer, ')');
    if (rest == nullptr) continue;
    char state = 0;
    int ppid = 0, pgrp = 0, sid = 0;
    unsigned long long start = 0;
    if (std::sscanf(rest + 1,
                    " %c %d %d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                    &state, &ppid, &pgrp, &sid, &start) != 5) {
      continue;
    }
    if (sid == session && fn(static_cast<pid_t>(std::atol(item->d_name)), pgrp, start)) break;
  }
  ::closedir(proc);
}

}  // namespace

bool signal_own_group(pid_t group, int signal) {
  bool found = false;
  for_each_own_process(
      [&](pid_t, pid_t pgrp, unsigned long long) { return found = pgrp == group; });
  if (found) ::kill(-group, signal);
  return found;
}

std::vector<ProcessIdentity> own_group_members(pid_t group) {
  std::vector<ProcessIdentity> members;
  for_each_own_process([&](pid_t pid, pid_t pgrp, unsigned long long start) {
    if (pgrp == group) members.push_back({pid, start});
    return false;
  });
  return members;
}

bool signal_group_of(pid_t group, const std::vector<ProcessIdentity>& members, int signal) {
  bool found = false;
  for_each_own_process([&](pid_t pid, pid_t pgrp, unsigned long long start) {
    found = pgrp == group &&
            std::any_of(members.begin(), members.end(),
                        [&](const ProcessIdentity& m) { return m.pid == pid && m.start == start; });
    return found;
  });
  if (found) ::kill(-group, signal);
  return found;
}

}  // namespace lizard::workspace::internal
