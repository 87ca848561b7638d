#include "command_start.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "init_protocol.h"

namespace lizard::mock::init {
namespace {

namespace proto = lizard::mock::internal::init_protocol;

// Docker's default capability set: what root in a container keeps.
constexpr int kKeptCapabilities[] = {
    CAP_CHOWN,      CAP_DAC_OVERRIDE, CAP_FOWNER,      CAP_FSETID,           CAP_KILL,
    CAP_SETGID,     CAP_SETUID,       CAP_SETPCAP,     CAP_NET_BIND_SERVICE, CAP_NET_RAW,
    CAP_SYS_CHROOT, CAP_MKNOD,        CAP_AUDIT_WRITE, CAP_SETFCAP};

[[noreturn]] void quit(int code) { ::_exit(code); }

void say(int fd, std::uint32_t type, std::int32_t value) {
  const proto::Record r{type, value};
  (void)::send(fd, &r, sizeof r, MSG_NOSIGNAL);
}

void complain(const std::string& text) {
  const std::string line = "lizard-mock: " + text + "\n";
  (void)::write(2, line.data(), line.size());
}

bool read_all(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool kept(int cap) {
  for (int k : kKeptCapabilities) {
    if (k == cap) return true;
  }
  return false;
}

// The capabilities of the started command: none outside Docker's set,
// effective, permitted or inheritable (the bounding set was cut once, in the
// init: confine_init), and no ambient ones.
bool drop_capabilities() {
  (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  for (int cap = 0; cap < 64; ++cap) {
    if (kept(cap)) continue;
    const auto bit = 1u << (cap % 32);
    data[cap / 32].effective &= ~bit;
    data[cap / 32].permitted &= ~bit;
  }
  data[0].inheritable = data[1].inheritable = 0;
  return ::syscall(SYS_capset, &header, data) == 0;
}

void set_limit(int resource, long long value) {
  if (value < 0) return;
  const rlimit rl{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  (void)::setrlimit(resource, &rl);
}

// The candidates for argv[0]: itself when it holds '/', else each PATH entry.
std::vector<std::string> candidates(const std::string& prog, const std::vector<std::string>& env) {
  if (prog.find('/') != std::string::npos) return {prog};
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    out.push_back((dir.empty() ? "." : dir) + "/" + prog);
    start = end + 1;
  }
  return out;
}

constexpr int kSock = 3;  // the exec socket, once in place

// The exec spec (init_protocol.h) read from the exec socket.
struct Spec {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string workdir = "/";
  long uid = 0;
  long gid = 0;
};

Spec read_spec() {
  std::uint32_t length = 0;
  if (!read_all(kSock, &length, sizeof length) || length > proto::kMaxSpecBytes) quit(125);
  std::string bytes(length, '\0');
  if (!read_all(kSock, bytes.data(), length)) quit(125);
  std::vector<std::string> fields;
  if (!proto::read_fields(bytes, fields)) quit(125);
  bytes.clear();
  bytes.shrink_to_fit();
  Spec spec;
  for (auto& f : fields) {
    if (f.empty()) quit(125);
    const char tag = f[0];
    std::string value = f.substr(1);
    if (tag == proto::kArg) {
      spec.argv.push_back(std::move(value));
    } else if (tag == proto::kEnv) {
      spec.env.push_back(std::move(value));
    } else if (tag == proto::kWorkdir) {
      spec.workdir = std::move(value);
    } else if (tag == proto::kUid) {
      spec.uid = std::atol(value.c_str());
    } else if (tag == proto::kGid) {
      spec.gid = std::atol(value.c_str());
    }
  }
  if (spec.argv.empty()) quit(125);
  return spec;
}

// What the command may not have: more than Docker's capabilities, a way to
// gain privileges (setuid files, file capabilities). The bounding set,
// no_new_privs and the system-call filter are the init's already, and a
// fork inherits them (confine_init); no_new_privs is asked again here so
// that a command never runs without it.
void give_up_privileges(const Spec& spec, const CommandPolicy& policy) {
  set_limit(RLIMIT_NPROC, policy.limits.nproc);
  set_limit(RLIMIT_NOFILE, policy.limits.nofile);
  set_limit(RLIMIT_FSIZE, policy.limits.fsize);
  set_limit(RLIMIT_CORE, 0);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !drop_capabilities()) {
    complain("cannot drop privileges");
    quit(125);
  }
  if (spec.gid != 0 || spec.uid != 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(spec.gid, spec.gid, spec.gid) != 0 ||
        ::setresuid(spec.uid, spec.uid, spec.uid) != 0) {
      complain("cannot switch to the requested user");
      quit(125);
    }
  }
}

// execve along PATH; reports why none ran and exits 126 or 127.
[[noreturn]] void exec_command(Spec& spec) {
  std::vector<char*> argv, envp;
  for (auto& a : spec.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& v : spec.env) envp.push_back(v.data());
  envp.push_back(nullptr);
  bool denied = false;
  int first_other = 0;
  for (const auto& p : candidates(spec.argv[0], spec.env)) {
    ::execve(p.c_str(), argv.data(), envp.data());
    if (errno == EACCES || errno == ENOEXEC || errno == EPERM || errno == EISDIR) {
      denied = true;
    } else if (errno != ENOENT && errno != ENOTDIR && first_other == 0) {
      first_other = errno;
    }
  }
  if (first_other != 0) {
    say(kSock, proto::kExecFailed, first_other);
    complain("cannot execute " + spec.argv[0] + ": " + std::strerror(first_other));
    quit(126);
  }
  say(kSock, proto::kExecFailed, denied ? EACCES : ENOENT);
  quit(denied ? 126 : 127);
}

}  // namespace

void start_command(int exec_sock, int out_w, int err_w, int devnull, const CommandPolicy& policy) {
  // Every descriptor out of the way of 0..3 first, then in place.
  const int s = ::fcntl(exec_sock, F_DUPFD_CLOEXEC, 10);
  const int o = ::fcntl(out_w, F_DUPFD_CLOEXEC, 10);
  const int e = ::fcntl(err_w, F_DUPFD_CLOEXEC, 10);
  const int n = ::fcntl(devnull, F_DUPFD_CLOEXEC, 10);
  if (s < 0 || o < 0 || e < 0 || n < 0) quit(125);
  if (::dup2(n, 0) < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::dup3(s, kSock, O_CLOEXEC) < 0)
    quit(125);
  ::close_range(4, ~0u, 0);
  Spec spec = read_spec();

  // A process group of its own (a timeout, a cancellation or a signal kills
  // the group), in the init's session, which has no controlling terminal.
  // Not a session of its own: setsid() moves the caller into a new
  // scheduler autogroup, and the kernel then reschedules it, which on a
  // busy machine parks every command start for a time slice of the other
  // loads (docs/performance.md, "Where the time goes").
  (void)::setpgid(0, 0);
  say(kSock, proto::kStarted, static_cast<std::int32_t>(::getpid()));
  give_up_privileges(spec, policy);
  if (::chdir(spec.workdir.c_str()) != 0) {
    complain("cannot enter the working directory");
    quit(1);
  }
  // The init blocks SIGCHLD (it reads it from a signalfd) and ignores
  // SIGPIPE; a command starts with neither.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  exec_command(spec);
}

std::string confine_init(const std::vector<sock_filter>& filter) {
  int last = CAP_LAST_CAP;
  if (FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "re")) {
    if (std::fscanf(f, "%d", &last) != 1) last = CAP_LAST_CAP;
    std::fclose(f);
  }
  for (int cap = 0; cap <= last; ++cap) {
    if (!kept(cap) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return std::string("cannot drop a capability from the bounding set: ") + std::strerror(errno);
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("cannot set no_new_privs: ") + std::strerror(errno);
  if (filter.empty() || filter.size() > BPF_MAXINSNS)
    return "the system-call filter is empty or too long";
  sock_fprog prog{static_cast<unsigned short>(filter.size()),
                  const_cast<sock_filter*>(filter.data())};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
    return std::string("cannot install the system-call filter: ") + std::strerror(errno);
  return {};
}

}  // namespace lizard::mock::init
