// SandboxRuntime::run: one command, from the request to the init to its
// exit status, with its output collected under the API's rules.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "init_protocol.h"
#include "sandbox_runtime.h"
#include "scoped_fd.h"

namespace lizard::mock::internal {
namespace {

namespace proto = init_protocol;
using Clock = std::chrono::steady_clock;

// How long the answer waits for the pipes after the command exited: a
// background child that inherited them must not hold the answer.
constexpr auto kDrainGrace = std::chrono::milliseconds(200);
// A command that never announced itself cannot be killed: after a timeout
// or a cancellation, the answer waits this long for it at most.
constexpr auto kUnannouncedGrace = std::chrono::seconds(5);
// The longest poll while a command runs: should_stop is asked at least
// this often (and every 100 ms once it timed out).
constexpr auto kStopCheck = std::chrono::milliseconds(250);
constexpr auto kKilledCheck = std::chrono::milliseconds(100);

// Sends one message with descriptors over a SOCK_SEQPACKET socket.
bool send_with_fds(int sock, const std::string& message, const std::vector<int>& fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  iovec iov{const_cast<char*>(message.data()), message.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
  cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  ssize_t n;
  do {
    n = ::sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(message.size());
}

// Sends all of it, but gives up at `deadline` or when `should_stop` says so: the
// process of the init that reads it is in the sandbox, where a command can
// stop it (SIGSTOP), and a spec larger than the socket's buffer then
// blocked the request's thread for as long as the sandbox lived.
bool send_all_until(int fd, const char* data, std::size_t size, Clock::time_point deadline,
                    const std::function<bool()>& should_stop) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    const auto now = Clock::now();
    if (now >= deadline || (should_stop && should_stop())) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{fd, POLLOUT, 0};
    (void)::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 250)));
  }
  return true;
}

std::string encode_spec(const ExecSpec& spec) {
  proto::FieldWriter w;
  const auto tagged = [](char tag, std::string_view v) {
    std::string f(1, tag);
    f.append(v);
    return f;
  };
  for (const auto& a : spec.argv) w.add(tagged(proto::kArg, a));
  for (const auto& e : spec.env) w.add(tagged(proto::kEnv, e));
  w.add(tagged(proto::kWorkdir, spec.workdir));
  w.add(tagged(proto::kUid, std::to_string(spec.uid)));
  w.add(tagged(proto::kGid, std::to_string(spec.gid)));
  const auto length = static_cast<std::uint32_t>(w.bytes().size());
  std::string frame(sizeof length, '\0');
  std::memcpy(frame.data(), &length, sizeof length);
  frame += w.bytes();
  return frame;
}

// Reads what the exec socket has: records, and the sender's host pid of
// the record that announced the start.
class ExecChannel {
 public:
  explicit ExecChannel(int fd) : fd_(fd) {}

  // Reads once. False at end of stream or on an error.
  bool read_some() {
    char buf[256];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof buf};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) return false;
    pid_t sender = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred{};
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        sender = cred.pid;
      }
    }
    pending_.append(buf, static_cast<std::size_t>(n));
    while (pending_.size() >= sizeof(proto::Record)) {
      proto::Record r{};
      std::memcpy(&r, pending_.data(), sizeof r);
      pending_.erase(0, sizeof r);
      if (r.type == proto::kStarted && !started) {
        started = true;
        sandbox_pid = r.value;
        host_pid = sender;
      } else if (r.type == proto::kWaitStatus) {
        exited = true;
        wait_status = r.value;
      } else if (r.type == proto::kExecFailed) {
        exec_errno = r.value;
      }
    }
    return true;
  }

  bool started = false;
  pid_t sandbox_pid = 0;
  pid_t host_pid = 0;
  bool exited = false;
  int wait_status = 0;
  int exec_errno = 0;

 private:
  int fd_;
  std::string pending_;
};

// One command's descriptors: the exec socket and the output pipes (our ends,
// and theirs until they are handed to the init).
struct CommandFds {
  ScopedFd exec_sock, exec_theirs, out_r, out_w, err_r, err_w;

  bool open() {
    int sp[2], op[2], ep[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) return false;
    exec_sock.reset(sp[0]);
    exec_theirs.reset(sp[1]);
    if (::pipe2(op, O_CLOEXEC) != 0) return false;
    out_r.reset(op[0]);
    out_w.reset(op[1]);
    if (::pipe2(ep, O_CLOEXEC) != 0) return false;
    err_r.reset(ep[0]);
    err_w.reset(ep[1]);
    // The kernel adds the sender's credentials: the command's host pid.
    const int on = 1;
    (void)::setsockopt(exec_sock.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    return true;
  }
};

// Keeps up to `cap` bytes of a stream (0: no cap, nothing kept) and notes
// whether more came.
void keep(std::string& kept, bool& truncated, std::string_view data, std::size_t cap) {
  if (cap == 0) return;
  if (kept.size() < cap) {
    const std::size_t take = std::min(cap - kept.size(), data.size());
    kept.append(data.substr(0, take));
    if (take < data.size()) truncated = true;
  } else {
    truncated = true;
  }
}

// Reads a command's exec socket and output pipes until it exited and the
// pipes closed (or a short grace passed), enforcing its timeout and the
// caller's should_stop by killing its process group.
class RunLoop {
 public:
  struct Hooks {
    const std::function<void(int, std::string_view)>& on_output;
    const std::function<bool()>& should_stop;
    // Once, when the command announced itself (sandbox pid, host pid).
    std::function<void(pid_t, pid_t)> on_start;
  };

  RunLoop(CommandFds& fds, ExecOutcome& out, std::size_t cap, Hooks hooks,
          Clock::time_point deadline)
      : fds_(fds),
        channel_(fds.exec_sock.get()),
        out_(out),
        cap_(cap),
        hooks_(std::move(hooks)),
        deadline_(deadline),
        streams_{fds.out_r.get(), fds.err_r.get()} {}

  const ExecChannel& channel() const { return channel_; }

  void run() {
    for (;;) {
      const auto now = Clock::now();
      if (over(now)) break;
      enforce(now);
      if (!poll_and_read(timeout_ms(now))) break;
    }
    if (!done()) kill_group();
  }

 private:
  bool done() const { return !channel_open_ || channel_.exited; }
  bool announced() const { return channel_.started && channel_.host_pid > 0; }
  void kill_group() const {
    if (announced()) ::kill(-channel_.host_pid, SIGKILL);
  }

  bool over(Clock::time_point now) {
    if (done() && streams_[0] < 0 && streams_[1] < 0) return true;
    if (gave_up_at_ && !announced() && now - *gave_up_at_ > kUnannouncedGrace) return true;
    if (done()) {
      if (!grace_end_) grace_end_ = now + kDrainGrace;
      if (now >= *grace_end_) return true;
    }
    return false;
  }

  void enforce(Clock::time_point now) {
    if (!done() && !out_.timed_out && !out_.cancelled && now >= deadline_) {
      out_.timed_out = true;
      gave_up_at_ = now;
      kill_group();
    }
    if (!done() && !out_.cancelled && hooks_.should_stop && hooks_.should_stop()) {
      out_.cancelled = true;
      if (!gave_up_at_) gave_up_at_ = now;
      kill_group();
    }
  }

  int timeout_ms(Clock::time_point now) const {
    const auto wake = done()           ? *grace_end_
                      : out_.timed_out ? now + kKilledCheck
                                       : std::min(deadline_, now + kStopCheck);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    return static_cast<int>(std::max<std::int64_t>(0, ms) + 1);
  }

  // False when poll failed.
  bool poll_and_read(int wait_ms) {
    // The exec socket first: its start record precedes any output, and must
    // be handled first when both are ready (the pid event comes first).
    pollfd pfds[3];
    int which[3];
    int n = 0;
    if (!done()) {
      pfds[n] = {fds_.exec_sock.get(), POLLIN, 0};
      which[n++] = kExecSocket;
    }
    for (int s = 0; s < 2; ++s) {
      if (streams_[s] >= 0) {
        pfds[n] = {streams_[s], POLLIN, 0};
        which[n++] = s;
      }
    }
    const int rc = ::poll(pfds, static_cast<nfds_t>(n), wait_ms);
    if (rc < 0 && errno != EINTR) return false;
    for (int k = 0; k < n && rc > 0; ++k) {
      if (pfds[k].revents == 0) continue;
      if (which[k] == kExecSocket) {
        read_channel();
      } else {
        read_stream(which[k]);
      }
    }
    return true;
  }

  void read_channel() {
    channel_open_ = channel_.read_some() && channel_open_;
    if (started_ || !announced()) return;
    started_ = true;
    hooks_.on_start(channel_.sandbox_pid, channel_.host_pid);
    if (out_.timed_out || out_.cancelled) kill_group();
  }

  void read_stream(int s) {
    const ssize_t got = ::read(streams_[s], chunk_.data(), chunk_.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (got <= 0) {
      streams_[s] = -1;
      (s == 0 ? fds_.out_r : fds_.err_r).reset();
      return;
    }
    const std::string_view data(chunk_.data(), static_cast<std::size_t>(got));
    if (hooks_.on_output) hooks_.on_output(s + 1, data);
    if (s == 0) {
      keep(out_.stdout_bytes, out_.stdout_truncated, data, cap_);
    } else {
      keep(out_.stderr_bytes, out_.stderr_truncated, data, cap_);
    }
  }

  static constexpr int kExecSocket = 2;

  CommandFds& fds_;
  ExecChannel channel_;
  ExecOutcome& out_;
  std::size_t cap_;
  Hooks hooks_;
  Clock::time_point deadline_;
  int streams_[2];
  bool channel_open_ = true;
  bool started_ = false;
  std::optional<Clock::time_point> grace_end_;
  std::optional<Clock::time_point> gave_up_at_;  // timed out or cancelled
  std::vector<char> chunk_ = std::vector<char>(64 * 1024);
};

// The exit code the API reports, from what the exec socket said.
void finish(const ExecChannel& channel, ExecOutcome& out) {
  out.started = channel.started || channel.exited;
  if (channel.exited) {
    const int st = channel.wait_status;
    if (WIFEXITED(st)) out.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) out.exit_code = 128 + WTERMSIG(st);
  } else if (channel.exec_errno != 0 && !channel.started) {
    // The init could not even fork it (the sandbox's process limit).
    out.stderr_bytes += std::string("lizard-mock: cannot start the command: ") +
                        std::strerror(channel.exec_errno) + "\n";
    out.exit_code = 126;
  } else {
    out.started = false;  // the sandbox went away under it
  }
  if (out.timed_out) out.exit_code = 124;
}

}  // namespace

bool SandboxRuntime::hand_over(int exec_sock, int out_w, int err_w) {
  std::lock_guard lock(mu_);
  if (stopped_ || control_ < 0) return false;
  return send_with_fds(control_, std::string(1, proto::kExec), {exec_sock, out_w, err_w});
}

void SandboxRuntime::note_running(const ProcessInfo& process) {
  std::lock_guard lock(mu_);
  running_.push_back(process);
  if (stopped_) ::kill(-process.host_pid, SIGKILL);
}

void SandboxRuntime::forget(pid_t host_pid) {
  std::lock_guard lock(mu_);
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [&](const ProcessInfo& p) { return p.host_pid == host_pid; }),
                 running_.end());
}

ExecOutcome SandboxRuntime::run(const ExecSpec& spec, std::chrono::milliseconds timeout,
                                std::size_t cap,
                                const std::function<void(int, std::string_view)>& on_output,
                                const std::function<void(pid_t)>& on_pid,
                                const std::function<bool()>& should_stop,
                                std::int64_t started_at_ms,
                                const std::vector<std::string>& display_cmd) {
  ExecOutcome out;
  CommandFds fds;
  if (!fds.open()) return out;
  if (!hand_over(fds.exec_theirs.get(), fds.out_w.get(), fds.err_w.get())) return out;
  fds.exec_theirs.reset();
  fds.out_w.reset();
  fds.err_w.reset();
  const std::string frame = encode_spec(spec);
  const auto deadline = Clock::now() + timeout;
  // A failed send means the command is gone already (its records say why),
  // or never took its spec before the deadline (it then times out below).
  (void)send_all_until(fds.exec_sock.get(), frame.data(), frame.size(), deadline, should_stop);

  // Once the command announced itself: it is listed, and can be killed.
  pid_t host_pid = 0;
  const auto on_start = [&](pid_t sandbox_pid, pid_t host) {
    host_pid = host;
    note_running({sandbox_pid, host, display_cmd, started_at_ms});
    if (on_pid) on_pid(sandbox_pid);
  };
  RunLoop loop(fds, out, cap, {on_output, should_stop, on_start}, deadline);
  loop.run();
  if (host_pid > 0) forget(host_pid);
  finish(loop.channel(), out);
  return out;
}

}  // namespace lizard::mock::internal
