#include "sandbox_launch.h"

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

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

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

constexpr unsigned long kNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                      CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP;

std::string errno_text(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

// The code of the clone child of this multithreaded process, from clone(2)
// to execveat(2), is async-signal-safe in the strictest sense: only raw
// system calls through syscall(2), only memory prepared before the clone,
// no allocation, no lock. Another thread may have held any lock (the C
// library's, the allocator's, a sanitizer runtime's) at the moment of the
// clone, and its owner does not exist in the child. These functions are
// not instrumented (LIZARD_CHILD_CODE) and call nothing but each other.
#if defined(__clang__) || defined(__GNUC__)
#define LIZARD_CHILD_CODE __attribute__((no_sanitize("thread", "address", "undefined"), noinline))
#else
#define LIZARD_CHILD_CODE
#endif

struct InitChildPlan {
  int control = -1;  // the child's end of the control socket
  int image = -1;    // the init program (a memory file)
  const char* const* argv = nullptr;
  const char* const* envp = nullptr;
  // The sandbox's workspace, tmp and home on the host, bound at the staged
  // paths of init_protocol.h.
  const char* sources[3] = {nullptr, nullptr, nullptr};
};

[[noreturn]] LIZARD_CHILD_CODE void child_exit(int code) {
  for (;;) ::syscall(SYS_exit_group, code);
}

// Reports "F<what>: errno N" on the control socket and exits.
[[noreturn]] LIZARD_CHILD_CODE void child_fail(const char* what) {
  const int err = errno;
  char msg[256];
  std::size_t n = 0;
  msg[n++] = proto::kFailed;
  for (std::size_t i = 0; what[i] != '\0' && n < 200; ++i) msg[n++] = what[i];
  const char mid[] = ": errno ";
  for (std::size_t i = 0; mid[i] != '\0'; ++i) msg[n++] = mid[i];
  char digits[12];
  std::size_t d = 0;
  unsigned value = static_cast<unsigned>(err);
  do {
    digits[d++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && d < sizeof digits);
  while (d > 0) msg[n++] = digits[--d];
  (void)::syscall(SYS_sendto, 3, msg, n, MSG_NOSIGNAL, nullptr, 0);
  child_exit(1);
}

[[noreturn]] LIZARD_CHILD_CODE void init_child(const InitChildPlan* p) {
  // The control socket becomes fd 3, the image fd 4 (closed by the exec);
  // nothing else of this process survives.
  const long c = ::syscall(SYS_fcntl, p->control, F_DUPFD, 10);
  const long i = ::syscall(SYS_fcntl, p->image, F_DUPFD_CLOEXEC, 10);
  if (c < 0 || i < 0) child_exit(1);
  if (::syscall(SYS_dup3, c, 3, 0) < 0 || ::syscall(SYS_dup3, i, 4, O_CLOEXEC) < 0) child_exit(1);
  const long devnull = ::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR, 0);
  if (devnull >= 0) {
    for (int fd = 0; fd <= 2; ++fd) (void)::syscall(SYS_dup3, devnull, fd, 0);
  }
  (void)::syscall(SYS_close_range, 5u, ~0u, 0u);
  // Wait for the mock to write the ID maps.
  char go = 0;
  if (::syscall(SYS_read, 3, &go, 1) != 1 || go != proto::kGo) child_exit(1);
  // With the mock's own file-system identity, open the sandbox's trees
  // for the init (init_protocol.h): it never walks the mock's state
  // directory itself. Opened here, in the new mount namespace, so that the
  // init may bind them.
  for (int k = 0; k < 3; ++k) {
    const long fd = ::syscall(SYS_openat, AT_FDCWD, p->sources[k],
                              O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) child_fail("open the sandbox's directories");
    const int want = proto::kSandboxDirFds[k];
    const long placed =
        fd == want ? ::syscall(SYS_fcntl, fd, F_SETFD, 0) : ::syscall(SYS_dup3, fd, want, 0);
    if (placed < 0) child_fail("place a directory");
    if (fd != want) (void)::syscall(SYS_close, fd);
  }
  // Become the namespace's root: the clone kept the mock's host ids, which
  // a root mock's map does not contain (and exec would drop every
  // capability of an unmapped user).
  (void)::syscall(SYS_setgroups, 0, nullptr);  // refused (and moot) with setgroups "deny"
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setresuid, 0, 0, 0) != 0)
    child_fail("become root of the sandbox's user namespace");
  ::syscall(SYS_execveat, 4, "", p->argv, p->envp, AT_EMPTY_PATH);
  child_fail("execute the sandbox init");
}

LIZARD_CHILD_CODE pid_t spawn_init_child(const InitChildPlan* plan) {
  const long pid = ::syscall(SYS_clone, kNamespaces | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid == 0) init_child(plan);
  return static_cast<pid_t>(pid);
}

// As host root, the namespaces of a sandbox are made by a host uid of its
// own (SandboxSettings::owner_id_base). The kernel (5.14 and later) counts a process against
// RLIMIT_NPROC at every level of user namespaces: in the sandbox's namespace per uid (the limit
// each command gets), and in the host's under the namespace's owner, held to the RLIMIT_NPROC the
// maker had. A sandbox made by root would have no limit at that level, so its root could fork
// max_processes processes under each of 65,536 uids (setpriv, su) and use up the host's PIDs; made
// by a uid of its own with the limit lowered, all its processes, whatever
// their uid inside, count against max_processes together.
//
// While alive, the calling thread has that uid as its real and effective
// uid (raw system calls: they change this thread only), keeps a saved uid
// and file-system uid of 0 (the clone child opens the sandbox's trees as
// the mock, and the thread must get back) and its effective capabilities
// (raised again from the permitted set, which a saved uid of 0 keeps), so
// the clone is as privileged as a root one; and the process's soft
// RLIMIT_NPROC is max_processes, which the kernel copies into the new
// namespace. One window at a time (the limit is the process's). Another
// thread of a root process is not held by that soft limit (root passes it),
// nor is any process that stays root.
class OwnerWindow {
 public:
  explicit OwnerWindow(const SandboxSettings& settings) {
    if (settings.owner_id_base == 0) return;
    static std::mutex one_at_a_time;
    static std::atomic<std::uint32_t> next_slot{0};
    lock_ = std::unique_lock<std::mutex>(one_at_a_time);
    const auto pid = static_cast<std::uint32_t>(::getpid()) % (1u << 22);
    const std::uint32_t owner = settings.owner_id_base + pid * SandboxSettings::kOwnerSlots +
                                next_slot++ % SandboxSettings::kOwnerSlots;
    if (::getrlimit(RLIMIT_NPROC, &old_limit_) != 0)
      throw std::runtime_error(errno_text("read the process limit", errno));
    rlimit lowered = old_limit_;
    const auto cap = static_cast<rlim_t>(settings.limits.max_processes);
    if (lowered.rlim_max == RLIM_INFINITY || cap < lowered.rlim_max)
      lowered.rlim_cur = cap;
    else
      lowered.rlim_cur = lowered.rlim_max;
    if (::setrlimit(RLIMIT_NPROC, &lowered) != 0)
      throw std::runtime_error(errno_text("set the process limit", errno));
    limit_set_ = true;
    __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2]{};
    if (::syscall(SYS_capget, &head, caps) != 0) fail("read the capabilities");
    old_fsuid_ = ::syscall(SYS_setfsuid, -1L);  // -1 changes nothing and answers it
    // A root with only some ids (a container's user namespace) may not have
    // the owner ids: then every sandbox is made by the top id of the
    // sandboxes' own range (which the ID map needs anyway), and the limit
    // holds for all sandboxes together, not each (docs/mockserver.md).
    static std::atomic<bool> shared_owner{false};
    const auto shared = static_cast<long>(settings.ids.uid_base + settings.ids.count - 1);
    const long uid = shared_owner ? shared : static_cast<long>(owner);
    if (::syscall(SYS_setresuid, uid, uid, -1L) != 0) {
      if (errno != EINVAL || uid == shared || ::syscall(SYS_setresuid, shared, shared, -1L) != 0)
        fail("take the sandbox's owner id");
      shared_owner = true;
    }
    uid_set_ = true;
    (void)::syscall(SYS_setfsuid, 0L);
    for (auto& c : caps) c.effective = c.permitted;
    head = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (::syscall(SYS_capset, &head, caps) != 0 || ::syscall(SYS_setfsuid, -1L) != 0)
      fail("keep the capabilities under the owner id");
  }
  ~OwnerWindow() { restore(); }
  OwnerWindow(const OwnerWindow&) = delete;
  OwnerWindow& operator=(const OwnerWindow&) = delete;

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
};

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

// Sandbox root is the mock's own user, or (as root) an unprivileged range.
void write_id_maps(pid_t pid, const IdMap& ids) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (ids.count == 1 && !write_file_text(proc + "/setgroups", "deny"))
    give_up(pid, errno_text("write setgroups", errno));
  if (!write_file_text(proc + "/uid_map",
                       "0 " + std::to_string(ids.uid_base) + " " + std::to_string(ids.count)))
    give_up(pid, errno_text("write the uid map", errno));
  if (!write_file_text(proc + "/gid_map",
                       "0 " + std::to_string(ids.gid_base) + " " + std::to_string(ids.count)))
    give_up(pid, errno_text("write the gid map", errno));
}

// Sends "go" and the plan, then waits for "ready" (or the init's sentence).
void build_sandbox(pid_t pid, int control, const std::string& setup) {
  if (::send(control, &proto::kGo, 1, MSG_NOSIGNAL) != 1 ||
      ::send(control, setup.data(), setup.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(setup.size()))
    give_up(pid, errno_text("send the sandbox plan", errno));
  pollfd p{control, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(kSetupTimeout.count() * 1000));
  std::string answer(4096, '\0');
  const ssize_t n = ready > 0 ? ::recv(control, answer.data(), answer.size(), 0) : -1;
  if (n <= 0) give_up(pid, "the sandbox init did not answer");
  answer.resize(static_cast<std::size_t>(n));
  if (answer[0] != proto::kReady) give_up(pid, "sandbox setup failed: " + answer.substr(1));
}

}  // namespace

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
  const InitChildPlan child{theirs.get(),
                            image,
                            kArgv,
                            kEnvp,
                            {trees.workspace.c_str(), trees.tmp.c_str(), trees.home.c_str()}};
  pid_t pid = -1;
  int clone_err = 0;
  {
    const OwnerWindow owner(settings);
    pid = spawn_init_child(&child);
    clone_err = errno;
  }
  theirs.reset();
  if (pid < 0) throw std::runtime_error(errno_text("clone into new namespaces", clone_err));
  write_id_maps(pid, settings.ids);
  build_sandbox(pid, mine.get(), setup);
  const std::string root_path = "/proc/" + std::to_string(pid) + "/root";
  const int root = ::open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) give_up(pid, errno_text("open the sandbox root", errno));
  return LaunchedInit{pid, mine.release(), root};
}

}  // namespace lizard::mock::internal
