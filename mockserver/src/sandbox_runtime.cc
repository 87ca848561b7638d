#include "sandbox_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "sandbox_files.h"

namespace lizard::mock::internal {
namespace {

using Clock = std::chrono::steady_clock;

// How long the answer waits for the pipes after the direct process exited:
// a background child that inherited them must not hold the answer.
constexpr auto kDrainGrace = std::chrono::milliseconds(200);

// Host directories bound read-only into every sandbox (links are recreated
// as links, so usr-merged systems keep /bin -> usr/bin).
constexpr const char* kHostDirs[] = {"/usr",   "/etc",   "/bin",    "/sbin", "/lib",
                                     "/lib32", "/lib64", "/libx32", "/opt"};
constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

std::string errno_text(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

int sys_pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The children of this multithreaded process (the holder, the relay and the
// namespace probe) run from fork-style clone(2) to execve(2) or exit on
// code that is async-signal-safe in the strictest sense: only raw system
// calls through syscall(2), only memory prepared before the clone, no
// allocation, no lock, no std::string or container member. Another thread
// may have held any lock (the C library's, the allocator's, or a
// sanitizer runtime's) at the moment of the clone, and its owner does not
// exist in the child. The C library's wrappers (fork, clone, open, write,
// _exit, signal, ...) are avoided because sanitizers intercept them; a
// ThreadSanitizer build left a holder waiting on a futex forever. For the
// same reason these functions are not instrumented (LIZARD_CHILD_CODE),
// and they call nothing but each other: an inline library function that
// is not inlined would be.
#if defined(__clang__) || defined(__GNUC__)
#define LIZARD_CHILD_CODE __attribute__((no_sanitize("thread", "address", "undefined"), noinline))
#else
#define LIZARD_CHILD_CODE
#endif

// fork(2) (or, with namespace flags, clone(2)) as a bare system call: the
// child goes on on a copy of the caller's stack and returns 0.
LIZARD_CHILD_CODE long raw_clone(unsigned long flags) {
  return ::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
}

[[noreturn]] LIZARD_CHILD_CODE void child_exit(int code) {
  for (;;) ::syscall(SYS_exit_group, code);
}

LIZARD_CHILD_CODE int child_open(const char* path, int flags, int mode = 0) {
  return static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}

LIZARD_CHILD_CODE void child_close(int fd) { (void)::syscall(SYS_close, fd); }

// dup2(2) that also works when from == to (the descriptor then loses its
// close-on-exec flag, as it would have by a real duplicate).
LIZARD_CHILD_CODE int child_dup2(int from, int to) {
  if (from == to) return ::syscall(SYS_fcntl, from, F_SETFD, 0) == 0 ? to : -1;
  return static_cast<int>(::syscall(SYS_dup3, from, to, 0));
}

LIZARD_CHILD_CODE int child_dup_at_least(int fd, int lowest) {
  return static_cast<int>(::syscall(SYS_fcntl, fd, F_DUPFD, lowest));
}

LIZARD_CHILD_CODE void child_write(int fd, const void* data, std::size_t size) {
  (void)::syscall(SYS_write, fd, data, size);
}

LIZARD_CHILD_CODE long child_mount(const char* source, const char* target, const char* fstype,
                                   unsigned long flags, const char* data) {
  return ::syscall(SYS_mount, source, target, fstype, flags, data);
}

// The kernel's sigset_t for rt_sig* calls: one bit per signal, 64 signals.
using KernelSigset = std::uint64_t;
constexpr KernelSigset sigbit(int sig) { return KernelSigset{1} << (sig - 1); }

// Everything the holder does between clone() and its reap loop, computed
// before clone. HolderPlan owns the strings; HolderSteps is the flat view
// of them that the child reads (plain arrays and pointers only).
struct Mount {
  std::string source;
  std::string target;
  std::string fstype;
  unsigned long flags = 0;
  std::string data;
  bool make_file = false;  // create an empty file as the mount point
  bool remount_ro = false;
};
struct HolderPlan {
  std::string root;
  std::vector<Mount> mounts;
  std::vector<std::pair<std::string, std::string>> links;       // target, link path
  std::vector<std::pair<std::string, std::string>> late_links;  // made after the mounts
};
struct RawMount {
  const char* source = nullptr;  // null: none
  const char* target = nullptr;
  const char* fstype = nullptr;  // null: none
  unsigned long flags = 0;
  const char* data = nullptr;  // null: none
  bool make_file = false;
  bool remount_ro = false;
};
struct RawLink {
  const char* target = nullptr;
  const char* link = nullptr;
};
struct HolderSteps {
  const char* root = nullptr;
  const RawMount* mounts = nullptr;
  std::size_t mount_count = 0;
  const RawLink* links = nullptr;
  std::size_t link_count = 0;
  const RawLink* late_links = nullptr;
  std::size_t late_link_count = 0;
  int ready_fd = -1;
};

[[noreturn]] LIZARD_CHILD_CODE void holder_fail(int fd, int step) {
  int err = errno;
  unsigned char msg[2] = {static_cast<unsigned char>(step), static_cast<unsigned char>(err)};
  child_write(fd, msg, sizeof msg);
  child_exit(1);
}

[[noreturn]] LIZARD_CHILD_CODE void holder_main(const HolderSteps* plan) {
  (void)::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // Keep only the ready pipe: the holder lives long and must not hold the
  // mock's sockets or other commands' pipes open.
  int hi = child_dup_at_least(plan->ready_fd, 1000);
  if (hi < 0 || child_dup2(hi, 3) < 0) child_exit(1);
  int devnull = child_open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    child_dup2(devnull, 0);
    child_dup2(devnull, 1);
    child_dup2(devnull, 2);
  }
  ::syscall(SYS_close_range, 4u, ~0u, 0u);
  const int fd = 3;
  if (child_mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) holder_fail(fd, 1);
  if (child_mount(plan->root, plan->root, nullptr, MS_BIND | MS_REC, nullptr) != 0)
    holder_fail(fd, 2);
  for (std::size_t i = 0; i < plan->link_count; ++i) {
    const RawLink& l = plan->links[i];
    if (::syscall(SYS_symlinkat, l.target, AT_FDCWD, l.link) != 0 && errno != EEXIST)
      holder_fail(fd, 3);
  }
  for (std::size_t i = 0; i < plan->mount_count; ++i) {
    const RawMount& m = plan->mounts[i];
    if (m.make_file) {
      int f = child_open(m.target, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
      if (f < 0) holder_fail(fd, 4);
      child_close(f);
    }
    if (child_mount(m.source, m.target, m.fstype, m.flags, m.data) != 0) holder_fail(fd, 5);
    if (m.remount_ro &&
        child_mount(nullptr, m.target, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0)
      holder_fail(fd, 6);
  }
  for (std::size_t i = 0; i < plan->late_link_count; ++i) {
    const RawLink& l = plan->late_links[i];
    if (::syscall(SYS_symlinkat, l.target, AT_FDCWD, l.link) != 0 && errno != EEXIST)
      holder_fail(fd, 12);
  }
  if (::syscall(SYS_chdir, plan->root) != 0) holder_fail(fd, 7);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) holder_fail(fd, 8);
  if (::syscall(SYS_umount2, ".", MNT_DETACH) != 0) holder_fail(fd, 9);
  if (::syscall(SYS_chdir, "/") != 0) holder_fail(fd, 10);
  // The root itself is read-only: a command can write only to its own trees.
  if (child_mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0)
    holder_fail(fd, 11);
  // Signals stay blocked so that SIGCHLD is collected by sigwaitinfo, and
  // the orphans of the sandbox (PID 1 inherits them) never pile up.
  constexpr KernelSigset set = sigbit(SIGCHLD);
  (void)::syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, nullptr, sizeof set);
  child_write(fd, "K", 1);
  child_close(fd);
  for (;;) {
    while (::syscall(SYS_wait4, -1, nullptr, WNOHANG | __WALL, nullptr) > 0) {
    }
    siginfo_t info;
    (void)::syscall(SYS_rt_sigtimedwait, &set, &info, nullptr, sizeof set);
  }
}

// Clones the holder into new mount and PID namespaces. Returns its PID, or
// -1 (errno set).
LIZARD_CHILD_CODE pid_t spawn_holder(const HolderSteps* steps) {
  long pid = raw_clone(CLONE_NEWNS | CLONE_NEWPID);
  if (pid == 0) holder_main(steps);
  return static_cast<pid_t>(pid);
}

// Relay: joins the sandbox's namespaces, forks the command (which lands in
// the sandbox's PID namespace), reports its PIDs and exits with the
// command's exit code (128+N for a signal). Plain arrays only, like
// HolderSteps.
struct RelayPlan {
  int mnt_fd = -1;
  int pid_fd = -1;
  int out_w = -1;
  int err_w = -1;
  int info_w = -1;
  const char* workdir = nullptr;
  const char* const* candidates = nullptr;  // full paths to try, in order
  std::size_t candidate_count = 0;
  char* const* argv = nullptr;  // null-terminated
  char* const* envp = nullptr;  // null-terminated
};

[[noreturn]] LIZARD_CHILD_CODE void relay_main(const RelayPlan& p) {
  (void)::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  int devnull = child_open("/dev/null", O_RDONLY);
  if (devnull < 0 || child_dup2(devnull, 0) < 0 || child_dup2(p.out_w, 1) < 0 ||
      child_dup2(p.err_w, 2) < 0)
    child_exit(125);
  int top = 3;
  if (p.mnt_fd > top) top = p.mnt_fd;
  if (p.pid_fd > top) top = p.pid_fd;
  if (p.info_w > top) top = p.info_w;
  ++top;
  int m = p.mnt_fd >= 0 ? child_dup_at_least(p.mnt_fd, top) : -1;
  int q = p.pid_fd >= 0 ? child_dup_at_least(p.pid_fd, top) : -1;
  int i = child_dup_at_least(p.info_w, top);
  if (i < 0 || child_dup2(i, 3) < 0) child_exit(125);
  if (m >= 0 && child_dup2(m, 4) < 0) child_exit(125);
  if (q >= 0 && child_dup2(q, 5) < 0) child_exit(125);
  ::syscall(SYS_close_range, 6u, ~0u, 0u);
  if (m >= 0) {
    if (::syscall(SYS_setns, 4, CLONE_NEWNS) != 0 || ::syscall(SYS_setns, 5, CLONE_NEWPID) != 0)
      child_exit(125);
    child_close(4);
    child_close(5);
  }
  long child = raw_clone(0);
  if (child < 0) child_exit(125);
  if (child == 0) {
    (void)::syscall(SYS_setsid);
    std::int32_t rec[2] = {'N', static_cast<std::int32_t>(::syscall(SYS_getpid))};
    child_write(3, rec, sizeof rec);
    child_close(3);
    if (::syscall(SYS_chdir, p.workdir) != 0) {
      const char msg[] = "lizard-mock: cannot enter the working directory\n";
      child_write(2, msg, sizeof msg - 1);
      child_exit(1);
    }
    // SIGPIPE back to its default (the mock ignores it, and an ignored
    // signal stays ignored across execve); all zeros is SIG_DFL, no flags.
    unsigned char dfl[64] = {};
    (void)::syscall(SYS_rt_sigaction, SIGPIPE, dfl, nullptr, sizeof(KernelSigset));
    constexpr KernelSigset none = 0;
    (void)::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
    bool denied = false;
    for (std::size_t k = 0; k < p.candidate_count; ++k) {
      ::syscall(SYS_execve, p.candidates[k], p.argv, p.envp);
      if (errno == EACCES || errno == ENOEXEC || errno == EPERM || errno == EISDIR) denied = true;
    }
    child_exit(denied ? 126 : 127);
  }
  std::int32_t rec[2] = {'H', static_cast<std::int32_t>(child)};
  child_write(3, rec, sizeof rec);
  child_close(3);
  child_close(0);
  child_close(1);
  child_close(2);
  int status = 0;
  while (::syscall(SYS_wait4, child, &status, 0, nullptr) < 0) {
    if (errno != EINTR) child_exit(125);
  }
  if (WIFEXITED(status)) child_exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) child_exit(128 + WTERMSIG(status));
  child_exit(125);
}

// Forks the relay. Returns its PID, or -1 (errno set).
LIZARD_CHILD_CODE pid_t spawn_relay(const RelayPlan* plan) {
  long pid = raw_clone(0);
  if (pid == 0) relay_main(*plan);
  return static_cast<pid_t>(pid);
}

// The namespace probe's child: true when mount(2) works in the new namespaces.
LIZARD_CHILD_CODE pid_t spawn_namespace_probe() {
  long pid = raw_clone(CLONE_NEWNS | CLONE_NEWPID);
  if (pid == 0) {
    bool ok = child_mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
              child_mount("proc", "/proc", "proc", 0, nullptr) == 0;
    child_exit(ok ? 0 : 1);
  }
  return static_cast<pid_t>(pid);
}

std::string read_link(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::read_symlink(path, ec);
  return ec ? std::string() : t.string();
}

}  // namespace

bool namespaces_available(std::string* why_not) {
  pid_t pid = spawn_namespace_probe();
  if (pid < 0) {
    if (why_not) *why_not = errno_text("clone(CLONE_NEWNS|CLONE_NEWPID)", errno);
    return false;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok && why_not) *why_not = "mount(2) refused inside a new mount namespace";
  return ok;
}

SandboxRuntime::SandboxRuntime(std::string base_dir, std::string workspace_dir, bool isolate)
    : base_dir_(std::move(base_dir)),
      workspace_dir_(std::move(workspace_dir)),
      isolate_(isolate),
      external_workspace_(!workspace_dir_.empty()) {
  namespace fs = std::filesystem;
  // Isolated: base/root is the skeleton the holder mounts over, base/home
  // is bound at /root. Degraded: the files API resolves inside base itself,
  // whose workspace, tmp and root directories are the sandbox's trees.
  root_dir_ = isolate_ ? base_dir_ + "/root" : base_dir_;
  home_dir_ = isolate_ ? base_dir_ + "/home" : base_dir_ + "/root";
  if (workspace_dir_.empty()) workspace_dir_ = base_dir_ + "/workspace";
  fs::create_directories(root_dir_);
  fs::create_directories(workspace_dir_);
  fs::create_directories(base_dir_ + "/tmp");
  fs::create_directories(home_dir_);
  ::chmod((base_dir_ + "/tmp").c_str(), 01777);
  ::chmod(home_dir_.c_str(), 0700);
  if (isolate_) {
    start_holder();
  } else {
    root_fd_ = ::open(root_dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
}

SandboxRuntime::~SandboxRuntime() { stop(); }

void SandboxRuntime::start_holder() {
  namespace fs = std::filesystem;
  HolderPlan plan;
  plan.root = root_dir_;
  for (const char* dir : kHostDirs) {
    struct stat st {};
    if (::lstat(dir, &st) != 0) continue;
    std::string inside = root_dir_ + dir;
    if (S_ISLNK(st.st_mode)) {
      plan.links.emplace_back(read_link(dir), inside);
    } else if (S_ISDIR(st.st_mode)) {
      fs::create_directories(inside);
      plan.mounts.push_back({dir, inside, "", MS_BIND | MS_REC, "", false, true});
    }
  }
  for (const char* d : {"/dev", "/proc", "/workspace", "/tmp", "/root"})
    fs::create_directories(root_dir_ + d);
  plan.mounts.push_back(
      {"tmpfs", root_dir_ + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=1m"});
  for (const char* node : kDevNodes) {
    std::string host = std::string("/dev/") + node;
    if (::access(host.c_str(), F_OK) != 0) continue;
    plan.mounts.push_back({host, root_dir_ + "/dev/" + node, "", MS_BIND, "", true, false});
  }
  plan.links.emplace_back("/proc/self/fd", root_dir_ + "/dev/fd");
  plan.links.emplace_back("/proc/self/fd/0", root_dir_ + "/dev/stdin");
  plan.links.emplace_back("/proc/self/fd/1", root_dir_ + "/dev/stdout");
  plan.links.emplace_back("/proc/self/fd/2", root_dir_ + "/dev/stderr");
  plan.mounts.push_back(
      {"proc", root_dir_ + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, ""});
  plan.mounts.push_back({workspace_dir_, root_dir_ + "/workspace", "", MS_BIND, ""});
  plan.mounts.push_back({base_dir_ + "/tmp", root_dir_ + "/tmp", "", MS_BIND, ""});
  plan.mounts.push_back({home_dir_, root_dir_ + "/root", "", MS_BIND, ""});
  // The /dev links go on the namespace's private /dev, once it is mounted.
  plan.late_links.assign(plan.links.end() - 4, plan.links.end());
  plan.links.resize(plan.links.size() - 4);

  auto none_if_empty = [](const std::string& text) {
    return text.empty() ? nullptr : text.c_str();
  };
  std::vector<RawMount> raw_mounts;
  for (const auto& m : plan.mounts) {
    raw_mounts.push_back({none_if_empty(m.source), m.target.c_str(), none_if_empty(m.fstype),
                          m.flags, none_if_empty(m.data), m.make_file, m.remount_ro});
  }
  std::vector<RawLink> raw_links, raw_late_links;
  for (const auto& [target, link] : plan.links) raw_links.push_back({target.c_str(), link.c_str()});
  for (const auto& [target, link] : plan.late_links)
    raw_late_links.push_back({target.c_str(), link.c_str()});
  HolderSteps steps;
  steps.root = plan.root.c_str();
  steps.mounts = raw_mounts.data();
  steps.mount_count = raw_mounts.size();
  steps.links = raw_links.data();
  steps.link_count = raw_links.size();
  steps.late_links = raw_late_links.data();
  steps.late_link_count = raw_late_links.size();

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe2", errno));
  steps.ready_fd = pipefd[1];
  pid_t pid = spawn_holder(&steps);
  int clone_err = errno;
  ::close(pipefd[1]);
  if (pid < 0) {
    ::close(pipefd[0]);
    throw std::runtime_error(errno_text("clone", clone_err));
  }
  unsigned char msg[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(pipefd[0], msg, sizeof msg);
  } while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n != 1 || msg[0] != 'K') {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("sandbox setup failed at step " + std::to_string(msg[0]) + ": " +
                             std::strerror(msg[1]));
  }
  holder_ = pid;
  std::string proc = "/proc/" + std::to_string(pid);
  mnt_ns_fd_ = ::open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  pid_ns_fd_ = ::open((proc + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC);
  root_fd_ = ::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (mnt_ns_fd_ < 0 || pid_ns_fd_ < 0 || root_fd_ < 0) {
    int err = errno;
    stop();
    throw std::runtime_error(errno_text("open the sandbox namespaces", err));
  }
}

void SandboxRuntime::kill_all_groups() {
  for (const auto& p : running_) ::kill(-p.host_pid, SIGKILL);
}

void SandboxRuntime::stop() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  // Killing PID 1 of the namespace kills every process in it; in degraded
  // mode only the exec groups can be reached.
  kill_all_groups();
  if (holder_ > 0) {
    ::kill(holder_, SIGKILL);
    while (::waitpid(holder_, nullptr, 0) < 0 && errno == EINTR) {
    }
    holder_ = -1;
  }
  close_fd(root_fd_);
  close_fd(mnt_ns_fd_);
  close_fd(pid_ns_fd_);
}

void SandboxRuntime::destroy() {
  stop();
  if (!external_workspace_) {
    remove_tree(base_dir_);
  } else {
    for (const char* d : {"/root", "/tmp", "/home"}) remove_tree(base_dir_ + d);
    ::unlink((base_dir_ + "/workspace").c_str());
    ::rmdir(base_dir_.c_str());
  }
}

int SandboxRuntime::dup_root_fd() const {
  std::lock_guard lock(mu_);
  if (stopped_ || root_fd_ < 0) return -1;
  return ::fcntl(root_fd_, F_DUPFD_CLOEXEC, 0);
}

std::vector<ProcessInfo> SandboxRuntime::processes() const {
  std::lock_guard lock(mu_);
  return running_;
}

std::size_t SandboxRuntime::process_count() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

bool SandboxRuntime::signal(pid_t pid, int sig) {
  std::lock_guard lock(mu_);
  for (const auto& p : running_) {
    if (p.pid == pid) {
      ::kill(-p.host_pid, sig);
      return true;
    }
  }
  return false;
}

ExecOutcome SandboxRuntime::run(const ExecSpec& spec, std::chrono::milliseconds timeout,
                                std::size_t cap,
                                const std::function<void(int, std::string_view)>& on_output,
                                const std::function<void(pid_t)>& on_pid,
                                const std::function<bool()>& should_stop,
                                std::int64_t started_at_ms,
                                const std::vector<std::string>& display_cmd) {
  ExecOutcome out;
  // Everything the children need is built before the clone: after it, a
  // child of this multithreaded process may only make system calls.
  std::string workdir = spec.workdir;
  std::vector<std::string> candidates;
  const std::string& prog = spec.argv.at(0);
  if (prog.find('/') != std::string::npos) {
    candidates.push_back(prog);
  } else if (!prog.empty()) {
    std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const auto& e : spec.env) {
      if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
    }
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string dir = path.substr(start, end - start);
      if (dir.empty()) dir = ".";
      candidates.push_back(dir + "/" + prog);
      start = end + 1;
    }
  }
  if (!isolate_) {
    // Degraded mode: sandbox paths map onto the sandbox's own directories.
    auto map = [&](const std::string& p) -> std::string {
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"/workspace", workspace_dir_},
            {"/tmp", base_dir_ + "/tmp"},
            {"/root", base_dir_ + "/home"}}) {
        if (p == from || p.rfind(from + "/", 0) == 0) return to + p.substr(from.size());
      }
      return p;
    };
    workdir = map(workdir);
  }

  std::vector<const char*> candidate_ptrs;
  for (const auto& c : candidates) candidate_ptrs.push_back(c.c_str());
  std::vector<char*> argv_ptrs;
  for (const auto& a : spec.argv) argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> envp_ptrs;
  for (const auto& e : spec.env) envp_ptrs.push_back(const_cast<char*>(e.c_str()));
  envp_ptrs.push_back(nullptr);
  RelayPlan plan;
  plan.workdir = workdir.c_str();
  plan.candidates = candidate_ptrs.data();
  plan.candidate_count = candidate_ptrs.size();
  plan.argv = argv_ptrs.data();
  plan.envp = envp_ptrs.data();

  int out_p[2], err_p[2], info_p[2];
  if (::pipe2(out_p, O_CLOEXEC) != 0) return out;
  if (::pipe2(err_p, O_CLOEXEC) != 0) {
    ::close(out_p[0]);
    ::close(out_p[1]);
    return out;
  }
  if (::pipe2(info_p, O_CLOEXEC) != 0) {
    for (int f : {out_p[0], out_p[1], err_p[0], err_p[1]}) ::close(f);
    return out;
  }
  plan.out_w = out_p[1];
  plan.err_w = err_p[1];
  plan.info_w = info_p[1];

  pid_t relay;
  {
    std::lock_guard lock(mu_);
    if (stopped_) {
      for (int f : {out_p[0], out_p[1], err_p[0], err_p[1], info_p[0], info_p[1]}) ::close(f);
      return out;
    }
    plan.mnt_fd = mnt_ns_fd_;
    plan.pid_fd = pid_ns_fd_;
    relay = spawn_relay(&plan);
  }
  ::close(out_p[1]);
  ::close(err_p[1]);
  ::close(info_p[1]);
  if (relay < 0) {
    for (int f : {out_p[0], err_p[0], info_p[0]}) ::close(f);
    return out;
  }
  pid_t host_pid = 0, ns_pid = 0;
  for (;;) {
    std::int32_t rec[2];
    ssize_t n = ::read(info_p[0], rec, sizeof rec);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof rec)) break;
    if (rec[0] == 'H') host_pid = rec[1];
    if (rec[0] == 'N') ns_pid = rec[1];
  }
  ::close(info_p[0]);
  int relay_fd = sys_pidfd_open(relay);
  out.started = host_pid > 0;
  if (host_pid > 0) {
    std::lock_guard lock(mu_);
    running_.push_back({ns_pid > 0 ? ns_pid : host_pid, host_pid, display_cmd, started_at_ms});
    if (stopped_) ::kill(-host_pid, SIGKILL);
  }
  if (host_pid > 0 && on_pid) on_pid(ns_pid > 0 ? ns_pid : host_pid);

  auto deadline = Clock::now() + timeout;
  std::optional<Clock::time_point> grace_end;
  bool relay_done = false;
  int relay_status = 0;
  int fds[2] = {out_p[0], err_p[0]};
  std::string* bufs[2] = {&out.stdout_bytes, &out.stderr_bytes};
  bool* truncs[2] = {&out.stdout_truncated, &out.stderr_truncated};
  std::vector<char> chunk(64 * 1024);
  auto kill_group = [&] {
    if (host_pid > 0) ::kill(-host_pid, SIGKILL);
  };
  auto reap_relay = [&] {
    while (::waitpid(relay, &relay_status, 0) < 0 && errno == EINTR) {
    }
    relay_done = true;
    grace_end = Clock::now() + kDrainGrace;
  };
  for (;;) {
    if (relay_done && fds[0] < 0 && fds[1] < 0) break;
    auto now = Clock::now();
    if (relay_done && now >= *grace_end) break;
    if (!relay_done && !out.timed_out && !out.cancelled && now >= deadline) {
      out.timed_out = true;
      kill_group();
    }
    if (!relay_done && !out.cancelled && should_stop && should_stop()) {
      out.cancelled = true;
      kill_group();
    }
    auto wake = relay_done
                    ? *grace_end
                    : (out.timed_out ? now + std::chrono::milliseconds(100)
                                     : std::min(deadline, now + std::chrono::milliseconds(250)));
    int wait_ms = static_cast<int>(
        std::max<std::int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count()) +
        1);
    pollfd pfds[3];
    int n = 0;
    int idx[3];
    for (int s = 0; s < 2; ++s) {
      if (fds[s] >= 0) {
        pfds[n] = {fds[s], POLLIN, 0};
        idx[n++] = s;
      }
    }
    if (!relay_done) {
      if (relay_fd >= 0) {
        pfds[n] = {relay_fd, POLLIN, 0};
        idx[n++] = 2;
      } else {
        // No pidfd: fall back to polling the relay's state.
        int st;
        pid_t r = ::waitpid(relay, &st, WNOHANG);
        if (r == relay) {
          relay_status = st;
          relay_done = true;
          grace_end = Clock::now() + kDrainGrace;
          continue;
        }
        wait_ms = std::min(wait_ms, 20);
      }
    }
    int rc = ::poll(pfds, static_cast<nfds_t>(n), wait_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    for (int k = 0; k < n; ++k) {
      if (pfds[k].revents == 0) continue;
      if (idx[k] == 2) {
        reap_relay();
        continue;
      }
      int s = idx[k];
      ssize_t got = ::read(fds[s], chunk.data(), chunk.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        ::close(fds[s]);
        fds[s] = -1;
        continue;
      }
      std::string_view data(chunk.data(), static_cast<std::size_t>(got));
      if (on_output) on_output(s + 1, data);
      std::string& b = *bufs[s];
      if (b.size() < cap) {
        std::size_t take = std::min(cap - b.size(), data.size());
        b.append(data.substr(0, take));
        if (take < data.size()) *truncs[s] = true;
      } else {
        *truncs[s] = true;
      }
    }
  }
  for (int f : fds) {
    if (f >= 0) ::close(f);
  }
  if (!relay_done) {
    kill_group();
    reap_relay();
  }
  if (relay_fd >= 0) ::close(relay_fd);
  {
    std::lock_guard lock(mu_);
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [&](const ProcessInfo& p) { return p.host_pid == host_pid; }),
                   running_.end());
  }
  if (WIFEXITED(relay_status)) {
    out.exit_code = WEXITSTATUS(relay_status);
  } else if (WIFSIGNALED(relay_status)) {
    out.exit_code = 128 + WTERMSIG(relay_status);
  }
  if (!out.started) out.exit_code = -1;
  if (out.timed_out) out.exit_code = 124;
  return out;
}

void remove_tree(const std::string& path) {
  struct stat top {};
  if (::lstat(path.c_str(), &top) != 0) return;
  if (!S_ISDIR(top.st_mode)) {
    ::unlink(path.c_str());
    return;
  }
  std::function<void(int, dev_t)> clear = [&](int dirfd, dev_t dev) {
    DirPtr d(::fdopendir(dirfd));
    if (!d) {
      ::close(dirfd);
      return;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d.get())) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    for (const auto& n : names) {
      struct stat st {};
      if (::fstatat(::dirfd(d.get()), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        if (st.st_dev != dev) continue;  // a mount point: never descend
        int sub =
            ::openat(::dirfd(d.get()), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) clear(sub, dev);
        ::unlinkat(::dirfd(d.get()), n.c_str(), AT_REMOVEDIR);
      } else {
        ::unlinkat(::dirfd(d.get()), n.c_str(), 0);
      }
    }
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  clear(fd, top.st_dev);
  ::rmdir(path.c_str());
}

void copy_tree(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(to, ec);
  fs::copy(from, to,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks |
               fs::copy_options::overwrite_existing,
           ec);
}

}  // namespace lizard::mock::internal
