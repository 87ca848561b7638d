// lizard-sandbox-init: PID 1 of one mock sandbox.
//
// The mock clones a child into new user, mount, PID, network, UTS, IPC and
// cgroup namespaces, writes its ID maps, and the child execs this program
// (from memory, see embedded_init.cc) with an empty environment and the
// control socket as fd 3. It then builds the sandbox (sandbox_setup.h), and
// from then on starts the commands the mock asks for and reports their exit
// status, reaping every other process of the sandbox as an init must.
//
// It holds nothing of the mock: no copy of its memory, arguments or
// environment. It is not dumpable, so a command (root in the sandbox, but
// without CAP_SYS_PTRACE) can neither read its memory nor trace it, and as
// PID 1 it receives no signal from inside the sandbox. When the control
// socket closes (the mock is gone), it exits, and with it every process of
// the sandbox.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "command_start.h"
#include "init_protocol.h"
#include "sandbox_setup.h"
#include "seccomp_policy.h"

namespace {

namespace proto = lizard::mock::internal::init_protocol;
using lizard::mock::init::CommandPolicy;

constexpr int kControl = 3;

void send_text(char kind, const std::string& text) {
  std::string msg(1, kind);
  msg += text;
  (void)::send(kControl, msg.data(), msg.size(), MSG_NOSIGNAL);
}

// One message from the control socket, with up to `max_fds` descriptors.
// False when the socket closed or failed.
bool receive(std::string& msg, std::vector<int>& fds, std::size_t max_fds) {
  // One buffer for every message (the init is single-threaded): no 64 KiB
  // to clear per command.
  static char buffer[1 << 16];
  fds.clear();
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  iovec iov{buffer, sizeof buffer};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(kControl, &mh, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  msg.assign(buffer, static_cast<std::size_t>(n));
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const int* p = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (std::size_t i = 0; i < count; ++i) fds.push_back(p[i]);
  }
  if (fds.size() > max_fds || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    for (int fd : fds) ::close(fd);
    fds.clear();
    msg.clear();
  }
  return true;
}

void write_record(int fd, std::uint32_t type, std::int32_t value) {
  const proto::Record r{type, value};
  (void)::send(fd, &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int serve(const CommandPolicy& policy, int devnull) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) return 1;
  std::map<pid_t, int> running;  // command pid -> its exec socket
  std::string msg;
  std::vector<int> fds;
  for (;;) {
    pollfd p[2] = {{kControl, POLLIN, 0}, {sigfd, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return 1;
    if (p[1].revents) {
      signalfd_siginfo info;
      while (::read(sigfd, &info, sizeof info) > 0) {
      }
      int status = 0;
      pid_t pid;
      while ((pid = ::waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
        if (WIFSTOPPED(status)) {
          // A ptrace stop: a command made this init its tracer
          // (PTRACE_TRACEME), and the init traces nothing. Not an exit: the
          // process is let go, with the signal that stopped it (but not
          // the SIGTRAP of an exec, which an untraced process never gets),
          // and its timeout still holds.
          const int sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
          ::ptrace(PTRACE_DETACH, pid, nullptr,
                   reinterpret_cast<void*>(static_cast<std::intptr_t>(sig)));
          continue;
        }
        auto it = running.find(pid);
        if (it == running.end()) continue;  // an orphan the sandbox left to its init
        write_record(it->second, proto::kWaitStatus, status);
        ::close(it->second);
        running.erase(it);
      }
    }
    if (p[0].revents) {
      if (!receive(msg, fds, 3)) return 0;  // the mock is gone
      if (msg.size() != 1 || msg[0] != proto::kExec || fds.size() != 3) {
        for (int fd : fds) ::close(fd);
        continue;
      }
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(sigfd);
        lizard::mock::init::start_command(fds[0], fds[1], fds[2], devnull, policy);
      }
      ::close(fds[1]);
      ::close(fds[2]);
      if (pid < 0) {
        write_record(fds[0], proto::kExecFailed, errno);
        ::close(fds[0]);
        continue;
      }
      running[pid] = fds[0];
    }
  }
}

}  // namespace

int main() {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // A session of its own, without a controlling terminal (the clone left it
  // in the mock's, which may have one): the commands' process groups live
  // in it, so none of them can ever acquire a terminal of the host.
  if (::setsid() < 0) {
    send_text(proto::kFailed, std::string("setsid: ") + std::strerror(errno));
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);
  ::umask(022);
  std::string msg;
  std::vector<int> fds;
  if (!receive(msg, fds, 0) || msg.empty() || msg[0] != proto::kPlan) return 1;
  std::vector<std::string> plan;
  if (!proto::read_fields(std::string_view(msg).substr(1), plan)) {
    send_text(proto::kFailed, "malformed plan");
    return 1;
  }
  CommandPolicy policy;
  if (std::string err = lizard::mock::init::build_sandbox(plan, policy.limits); !err.empty()) {
    send_text(proto::kFailed, err);
    return 1;
  }
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    send_text(proto::kFailed, std::string("open /dev/null: ") + std::strerror(errno));
    return 1;
  }
  // Compiled and loaded once: every command inherits the filter through the
  // init's fork (the kernel's check and JIT of a filter cost more than the
  // rest of a command's start).
  std::string err;
  const std::vector<sock_filter> filter = lizard::mock::init::build_command_filter(err);
  if (filter.empty()) {
    send_text(proto::kFailed, "system-call filter: " + err);
    return 1;
  }
  if (err = lizard::mock::init::confine_init(filter); !err.empty()) {
    send_text(proto::kFailed, err);
    return 1;
  }
  // Nothing of the plan is needed any more.
  plan.clear();
  msg.clear();
  send_text(proto::kReady, "");
  return serve(policy, devnull);
}
