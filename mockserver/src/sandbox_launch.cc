#include "sandbox_launch.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <stdexcept>

#include "clone_children.h"
#include "init_protocol.h"
#include "scoped_fd.h"

// The init program's bytes, embedded at build time (embedded_init.cc).
extern "C" const unsigned char lizard_sandbox_init_image[];
extern "C" const unsigned char lizard_sandbox_init_image_end[];

namespace lizard::mock::internal {
namespace {

namespace proto = init_protocol;

// How long a sandbox's init may take to build the sandbox.
constexpr auto kSetupTimeout = std::chrono::seconds(30);

// Host directories bound read-only into every sandbox (links are recreated
// as links, so usr-merged systems keep /bin -> usr/bin).
constexpr const char* kHostDirs[] = {"/usr",   "/etc",   "/bin",    "/sbin", "/lib",
                                     "/lib32", "/lib64", "/libx32", "/opt"};
constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

std::string errno_text(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

// A clone child's stack. Both children share this process's memory
// (CLONE_VM, clone_children.cc says why), so each runs on a stack of its
// own: the outer child's, unmapped once it is reaped; the init's, once it
// has executed or is reaped (or never, when it may exist unknown: keep()).
class ChildStack {
 public:
  ChildStack() {
    base_ = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                   -1, 0);
    if (base_ == MAP_FAILED) throw std::runtime_error(errno_text("map a stack", errno));
    (void)::mprotect(base_, kGuard, PROT_NONE);  // overflow faults, never writes below
  }
  ~ChildStack() {
    if (base_ != nullptr) ::munmap(base_, kSize);
  }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  void* top() const { return static_cast<char*>(base_) + kSize; }
  // Left mapped for good: a child that may still run on it.
  void keep() { base_ = nullptr; }

 private:
  static constexpr std::size_t kSize = 256 * 1024;
  static constexpr std::size_t kGuard = 4096;
  void* base_ = nullptr;
};

// The process limits, in two user namespaces per sandbox. The kernel (5.14
// and later) counts a process against RLIMIT_NPROC at every level of user
// namespaces: per uid in its own (the limit each command gets); in each
// parent namespace under the uid that made the child one, held to the
// RLIMIT_NPROC that maker had then (none when host root made it). So:
//   - the inner namespace (the sandbox's, 65,536 ids) is made by the outer
//     child with the sandbox's limit: all of the sandbox's processes,
//     whatever their uid inside, count against max_processes together;
//   - the outer namespace (one per sandbox) is made by the owner, one host
//     uid for every sandbox, with max_processes_all_sandboxes: all
//     sandboxes' processes count against that together. As root the owner
//     is root_id_base + 65536, which the outer namespace maps (as its maker
//     needs) as id 65536, outside the ids the sandbox has: no sandbox
//     process or file ever has it. A root whose own user namespace lacks
//     that id (a container's) takes the last id of the sandbox's range
//     instead.
// The kernel counts other things per user the same way (inotify instances
// and watches, user namespaces, pending signals, message queue bytes,
// locked memory): the host's per-user maxima hold for all sandboxes
// together too (docs/mockserver.md, "Limits").
// Made by root, a namespace would have no limit at that level: sandbox
// root could fork max_processes processes under each of 65,536 uids
// (setpriv, su), or many sandboxes their limit each, and use up the host's
// PIDs.
//
// While alive, OwnerWindow makes the calling thread the owner (as root:
// its real and effective uid, through raw system calls that change this
// thread only; it keeps a saved uid and file-system uid of 0, so that the
// children open the sandbox's trees as the mock and the thread gets back,
// and its effective capabilities, raised again from the permitted set,
// which a saved uid of 0 keeps), and the process's soft RLIMIT_NPROC
// max_processes_all_sandboxes, which the kernel copies into the outer
// namespace. One window at a time (the limit is the process's). Another
// thread of a root process is not held by that soft limit (root passes it),
// nor is any process that stays root. A user's mock stays itself.
class OwnerWindow {
 public:
  explicit OwnerWindow(const SandboxSettings& settings) {
    static std::mutex one_at_a_time;
    lock_ = std::unique_lock<std::mutex>(one_at_a_time);
    if (::getrlimit(RLIMIT_NPROC, &old_limit_) != 0)
      throw std::runtime_error(errno_text("read the process limit", errno));
    rlimit lowered = old_limit_;
    lowered.rlim_cur = capped(old_limit_, settings.limits.max_processes_all_sandboxes);
    if (::setrlimit(RLIMIT_NPROC, &lowered) != 0)
      throw std::runtime_error(errno_text("set the process limit", errno));
    limit_set_ = true;
    if (settings.owner_uid == 0) return;
    __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2]{};
    if (::syscall(SYS_capget, &head, caps) != 0) fail("read the capabilities");
    old_fsuid_ = ::syscall(SYS_setfsuid, -1L);  // -1 changes nothing and answers it
    static std::atomic<bool> without_extra_id{false};
    const auto extra = static_cast<long>(settings.owner_uid);
    const long last = extra - 1;
    const long uid = without_extra_id ? last : extra;
    if (::syscall(SYS_setresuid, uid, uid, -1L) != 0) {
      if (errno != EINVAL || uid == last || ::syscall(SYS_setresuid, last, last, -1L) != 0)
        fail("take the sandboxes' owner id");
      without_extra_id = true;
    }
    uid_set_ = true;
    extra_id_ = !without_extra_id;
    (void)::syscall(SYS_setfsuid, 0L);
    for (auto& c : caps) c.effective = c.permitted;
    head = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (::syscall(SYS_capset, &head, caps) != 0 || ::syscall(SYS_setfsuid, -1L) != 0)
      fail("keep the capabilities under the owner id");
  }
  ~OwnerWindow() { restore(); }
  OwnerWindow(const OwnerWindow&) = delete;
  OwnerWindow& operator=(const OwnerWindow&) = delete;

  // As root: whether the owner is the id past the sandbox's range (else
  // the last of it), which the outer namespace's maps must add.
  bool extra_id() const { return extra_id_; }

  // `want` as a soft limit, never above `limit`'s soft one.
  static rlim_t capped(const rlimit& limit, long long want) {
    return std::min(limit.rlim_cur, static_cast<rlim_t>(want));
  }

 private:
  [[noreturn]] void fail(const char* what) {
    const int err = errno;
    restore();
    throw std::runtime_error(errno_text(what, err));
  }
  void restore() noexcept {
    // The saved uid is 0, so this cannot be refused; a thread left with
    // another uid would act wrongly for the rest of the process's life.
    if (uid_set_ && ::syscall(SYS_setresuid, 0L, 0L, -1L) != 0) std::abort();
    // The setresuid set the file-system uid to 0: back to what it was (a
    // ScopedFsIdentity of the caller, if ever there is one, stays in force).
    if (uid_set_) (void)::syscall(SYS_setfsuid, old_fsuid_);
    uid_set_ = false;
    if (limit_set_) (void)::setrlimit(RLIMIT_NPROC, &old_limit_);
    limit_set_ = false;
  }
  std::unique_lock<std::mutex> lock_;
  rlimit old_limit_{};
  long old_fsuid_ = 0;
  bool limit_set_ = false;
  bool uid_set_ = false;
  bool extra_id_ = false;
};

// Blocks every signal of the calling thread while alive (the clone
// children inherit that mask), and says what the mask was.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old_);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;
  const sigset_t& old() const { return old_; }

 private:
  sigset_t old_{};
};

// The C library's clone(3), looked up in the C library itself: a
// sanitizer's interceptor of clone (ThreadSanitizer's treats every clone as
// a fork, with its locks and bookkeeping) must not run for the clone
// children, which share this process's memory but are none of its threads.
using CloneFunction = int (*)(int (*)(void*), void*, int, void*, ...);
CloneFunction libc_clone() {
  static const CloneFunction function = [] {
    void* libc = ::dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void* found = libc != nullptr ? ::dlsym(libc, "clone") : nullptr;
    return found != nullptr ? reinterpret_cast<CloneFunction>(found) : &::clone;
  }();
  return function;
}

// The init program as a memory file, written once per process and sealed.
int init_image_fd(std::string& error) {
  static std::once_flag once;
  static int fd = -1;
  static std::string failure;
  std::call_once(once, [] {
    const int f = ::memfd_create("lizard-sandbox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (f < 0) {
      failure = errno_text("memfd_create", errno);
      return;
    }
    const auto* p = lizard_sandbox_init_image;
    std::size_t left = static_cast<std::size_t>(lizard_sandbox_init_image_end - p);
    while (left > 0) {
      const ssize_t n = ::write(f, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failure = errno_text("write the sandbox init", errno);
        ::close(f);
        return;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    (void)::fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    fd = f;
  });
  error = failure;
  return fd;
}

bool write_file_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::string read_link(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::read_symlink(path, ec);
  return ec ? std::string() : t.string();
}

// The setup message: "P", then where the new root is built (/tmp of the
// init's own mount namespace: mounted over there, the host's /tmp is
// untouched), then the steps (init_protocol.h).
std::string setup_message(const SandboxSettings& settings, const std::string& hostname) {
  proto::FieldWriter plan;
  plan.add(proto::kNewRoot);
  plan.add("root").add("mode=755,size=4m");
  for (const char* dir : kHostDirs) {
    struct stat st {};
    if (::lstat(dir, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      plan.add("link").add(read_link(dir)).add(dir);
    } else if (S_ISDIR(st.st_mode)) {
      plan.add("bind-ro").add(dir).add(dir);
    }
  }
  plan.add("tmpfs").add("/dev").add("mode=755,size=1m");
  for (const char* node : kDevNodes) plan.add("dev").add(node);
  plan.add("link").add("/proc/self/fd").add("/dev/fd");
  plan.add("link").add("/proc/self/fd/0").add("/dev/stdin");
  plan.add("link").add("/proc/self/fd/1").add("/dev/stdout");
  plan.add("link").add("/proc/self/fd/2").add("/dev/stderr");
  plan.add("tmpfs").add("/dev/shm").add("mode=1777,size=64m");
  plan.add("proc").add("/proc");
  const auto fd_path = [](int fd) { return "/proc/self/fd/" + std::to_string(fd); };
  plan.add("bind-rw").add(fd_path(proto::kSandboxDirFds[0])).add("/workspace");
  plan.add("bind-rw").add(fd_path(proto::kSandboxDirFds[1])).add("/tmp");
  plan.add("bind-rw").add(fd_path(proto::kSandboxDirFds[2])).add("/root");
  plan.add("hostname").add(hostname);
  const SandboxLimits& limits = settings.limits;
  plan.add("limit").add("nproc").add(std::to_string(limits.max_processes));
  plan.add("limit").add("nofile").add(std::to_string(limits.max_open_files));
  plan.add("limit").add("fsize").add(std::to_string(limits.max_file_bytes));
  return std::string(1, proto::kPlan) + plan.bytes();
}

// Kills and reaps an init that did not make it, then throws `why`.
[[noreturn]] void give_up(pid_t pid, const std::string& why) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  throw std::runtime_error(why);
}

// The outer namespace's ID maps: sandbox root is the mock's own user, or
// (as root) an unprivileged range. Throws naming what failed.
// With `extra_id`, the id past the range too (the owner's, root's only).
void write_id_maps(pid_t pid, const IdMap& ids, bool extra_id) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (ids.count == 1 && !write_file_text(proc + "/setgroups", "deny"))
    throw std::runtime_error(errno_text("write setgroups", errno));
  const auto map = [&](std::uint32_t base) {
    std::string text = "0 " + std::to_string(base) + " " + std::to_string(ids.count);
    if (extra_id)
      text += "\n" + std::to_string(ids.count) + " " + std::to_string(base + ids.count) + " 1";
    return text;
  };
  if (!write_file_text(proc + "/uid_map", map(ids.uid_base)))
    throw std::runtime_error(errno_text("write the uid map", errno));
  if (!write_file_text(proc + "/gid_map", map(ids.gid_base)))
    throw std::runtime_error(errno_text("write the gid map", errno));
}

// One message from `control` within kSetupTimeout; -1 when none came.
ssize_t receive(int control, void* into, std::size_t size) {
  const auto deadline = std::chrono::steady_clock::now() + kSetupTimeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return -1;
    pollfd p{control, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return -1;
    const ssize_t n = ::recv(control, into, size, 0);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

// Sends "go" and the plan, then waits for "ready" (or the init's sentence).
void build_sandbox(pid_t pid, int control, const std::string& setup) {
  if (::send(control, &proto::kGo, 1, MSG_NOSIGNAL) != 1 ||
      ::send(control, setup.data(), setup.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(setup.size()))
    give_up(pid, errno_text("send the sandbox plan", errno));
  std::string answer(4096, '\0');
  const ssize_t n = receive(control, answer.data(), answer.size());
  if (n <= 0) give_up(pid, "the sandbox init did not answer");
  answer.resize(static_cast<std::size_t>(n));
  if (answer[0] != proto::kReady) give_up(pid, "sandbox setup failed: " + answer.substr(1));
}

// The outer child: killed (it exits after its report anyway) and reaped
// when the launch is over, or sooner with reap().
class OuterChild {
 public:
  explicit OuterChild(pid_t pid) : pid_(pid) {}
  ~OuterChild() { reap(); }
  OuterChild(const OuterChild&) = delete;
  OuterChild& operator=(const OuterChild&) = delete;
  void reap() {
    if (pid_ < 0) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

// Lets the outer child go and takes its report; returns the init's pid.
// Throws (the init, if cloned, killed and reaped) when it failed. `cloned`
// is where the outer child put the init's pid; without it and without a
// report, an init may run unknown on `init_stack`, which is then kept.
pid_t clone_init(OuterChild& outer, int control, const pid_t& cloned, ChildStack& init_stack) {
  if (::send(control, &proto::kGo, 1, MSG_NOSIGNAL) != 1)
    throw std::runtime_error(errno_text("start the sandbox's outer namespace", errno));
  OuterReport report;
  const ssize_t n = receive(control, &report, sizeof report);
  if (n != static_cast<ssize_t>(sizeof report) || report.tag != 'C' || report.step < 0 ||
      report.step >= static_cast<std::int32_t>(std::size(kOuterSteps))) {
    // Dead or stuck: once it is reaped, `cloned` says whether an init
    // exists (it is this process's child).
    outer.reap();
    if (cloned > 0) give_up(cloned, "the sandbox's outer namespace did not answer");
    init_stack.keep();
    throw std::runtime_error("the sandbox's outer namespace did not answer");
  }
  if (report.step == 0 && report.pid > 0) return report.pid;
  if (report.pid > 0) give_up(report.pid, errno_text(kOuterSteps[report.step], report.err));
  throw std::runtime_error(errno_text(kOuterSteps[report.step], report.err));
}

}  // namespace

// Two user namespaces per sandbox (OwnerWindow says why): the mock clones
// an outer child into a user namespace of its own and maps the sandbox's
// ids there; the outer child clones the init, as the mock's child, into an
// inner user namespace that maps the same ids onto the outer ones, and into
// the sandbox's other namespaces, which the inner one owns (so sandbox
// root keeps its capabilities over them: binding port 80, for one).
LaunchedInit launch_sandbox_init(const SandboxSettings& settings, const SandboxTrees& trees,
                                 const std::string& hostname) {
  const std::string setup = setup_message(settings, hostname);
  std::string error;
  const int image = init_image_fd(error);
  if (image < 0) throw std::runtime_error("the sandbox init is not available: " + error);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    throw std::runtime_error(errno_text("socketpair", errno));
  ScopedFd mine(pair[0]);
  ScopedFd theirs(pair[1]);
  static const char* const kArgv[] = {"lizard-sandbox-init", nullptr};
  static const char* const kEnvp[] = {nullptr};
  InitChildPlan child{theirs.get(),
                      image,
                      kArgv,
                      kEnvp,
                      {trees.workspace.c_str(), trees.tmp.c_str(), trees.home.c_str()}};
  const std::uint32_t count = settings.ids.count;
  child.drop_groups = count > 1;
  if (::getrlimit(RLIMIT_NPROC, &child.sandbox_nproc) != 0)
    throw std::runtime_error(errno_text("read the process limit", errno));
  child.sandbox_nproc.rlim_cur =
      OwnerWindow::capped(child.sandbox_nproc, settings.limits.max_processes);
  const std::string inner_map = "0 0 " + std::to_string(count);
  std::memcpy(child.uid_map, inner_map.c_str(), inner_map.size() + 1);
  std::memcpy(child.gid_map, inner_map.c_str(), inner_map.size() + 1);
  pid_t cloned = -1;
  child.cloned = &cloned;
  const ChildStack stack;
  ChildStack init_stack;
  child.clone = libc_clone();
  child.init_stack = init_stack.top();
  pid_t outer = -1;
  int clone_err = 0;
  bool extra_id = false;
  {
    const OwnerWindow owner(settings);
    // As root, the outer child (uid: the owner) takes the owner's gid too:
    // the maker of a user namespace needs a uid and a gid that its own
    // namespace maps. A user's is 0 there already.
    extra_id = owner.extra_id();
    if (settings.owner_uid != 0) child.outer_gid = static_cast<long>(extra_id ? count : count - 1);
    const SignalsBlocked blocked;
    child.signal_mask = blocked.old();
    outer = child.clone(outer_entry, stack.top(), CLONE_VM | CLONE_NEWUSER | SIGCHLD, &child);
    clone_err = errno;
  }
  theirs.reset();
  if (outer < 0) throw std::runtime_error(errno_text("clone into new namespaces", clone_err));
  OuterChild outer_child(outer);
  write_id_maps(outer, settings.ids, extra_id);
  const pid_t pid = clone_init(outer_child, mine.get(), cloned, init_stack);
  // On "ready" the init has executed; on a failure it is reaped: either
  // way nothing runs on init_stack any more.
  build_sandbox(pid, mine.get(), setup);
  const std::string root_path = "/proc/" + std::to_string(pid) + "/root";
  const int root = ::open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) give_up(pid, errno_text("open the sandbox root", errno));
  return LaunchedInit{pid, mine.release(), root};
}

}  // namespace lizard::mock::internal
