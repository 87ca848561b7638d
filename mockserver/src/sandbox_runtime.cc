#include "sandbox_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "init_protocol.h"
#include "sandbox_files.h"

// The init program's bytes, embedded at build time (embedded_init.cc).
extern "C" const unsigned char lizard_sandbox_init_image[];
extern "C" const unsigned char lizard_sandbox_init_image_end[];

namespace lizard::mock::internal {
namespace {

namespace proto = init_protocol;
using Clock = std::chrono::steady_clock;

// How long the answer waits for the pipes after the command exited: a
// background child that inherited them must not hold the answer.
constexpr auto kDrainGrace = std::chrono::milliseconds(200);
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

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Closes a descriptor on scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() { close_fd(fd_); }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int* out() { return &fd_; }
  void reset(int fd = -1) {
    close_fd(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

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

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
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

}  // namespace

SandboxSettings sandbox_settings_for_this_process(const MockOptions& options) {
  SandboxSettings s;
  s.limits = options.sandbox_limits;
  if (::geteuid() == 0) {
    s.ids.uid_base = options.root_id_base;
    s.ids.gid_base = options.root_id_base;
    s.ids.count = 65536;
    s.ids.chown = true;
  } else {
    s.ids.uid_base = ::geteuid();
    s.ids.gid_base = ::getegid();
    s.ids.count = 1;
    s.ids.chown = false;
  }
  return s;
}

SandboxRuntime::SandboxRuntime(std::string base_dir, std::string workspace_dir,
                               const SandboxSettings& settings, const std::string& hostname)
    : base_dir_(std::move(base_dir)),
      workspace_dir_(std::move(workspace_dir)),
      external_workspace_(!workspace_dir_.empty()),
      settings_(settings) {
  namespace fs = std::filesystem;
  home_dir_ = base_dir_ + "/home";
  if (workspace_dir_.empty()) workspace_dir_ = base_dir_ + "/workspace";
  for (const std::string& d : {base_dir_, workspace_dir_, base_dir_ + "/tmp", home_dir_})
    fs::create_directories(d);
  ::chmod(base_dir_.c_str(), 0700);
  ::chmod((base_dir_ + "/tmp").c_str(), 01777);
  ::chmod(home_dir_.c_str(), 0700);
  // The sandbox's root owns its trees.
  if (settings_.ids.chown) {
    for (const std::string& d : {base_dir_, workspace_dir_, base_dir_ + "/tmp", home_dir_})
      (void)::lchown(d.c_str(), settings_.ids.uid_base, settings_.ids.gid_base);
  }
  start_init(hostname);
}

SandboxRuntime::~SandboxRuntime() { stop(); }

void SandboxRuntime::start_init(const std::string& hostname) {
  // The plan: where the new root is built (/tmp of the init's own mount
  // namespace: mounted over there, the host's /tmp is untouched), then the
  // steps (init_protocol.h).
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
  plan.add("limit").add("nproc").add(std::to_string(settings_.limits.max_processes));
  plan.add("limit").add("nofile").add(std::to_string(settings_.limits.max_open_files));
  plan.add("limit").add("fsize").add(std::to_string(settings_.limits.max_file_bytes));

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
  const std::string tmp_dir = base_dir_ + "/tmp";
  InitChildPlan child{theirs.get(),
                      image,
                      kArgv,
                      kEnvp,
                      {workspace_dir_.c_str(), tmp_dir.c_str(), home_dir_.c_str()}};
  const pid_t pid = spawn_init_child(&child);
  const int clone_err = errno;
  theirs.reset();
  if (pid < 0) throw std::runtime_error(errno_text("clone into new namespaces", clone_err));
  const auto give_up = [&](const std::string& why) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error(why);
  };
  // Sandbox root is the mock's own user, or (as root) an unprivileged range.
  const std::string proc = "/proc/" + std::to_string(pid);
  const IdMap& ids = settings_.ids;
  if (ids.count == 1 && !write_file_text(proc + "/setgroups", "deny"))
    give_up(errno_text("write setgroups", errno));
  if (!write_file_text(proc + "/uid_map",
                       "0 " + std::to_string(ids.uid_base) + " " + std::to_string(ids.count)))
    give_up(errno_text("write the uid map", errno));
  if (!write_file_text(proc + "/gid_map",
                       "0 " + std::to_string(ids.gid_base) + " " + std::to_string(ids.count)))
    give_up(errno_text("write the gid map", errno));
  std::string plan_msg(1, proto::kPlan);
  plan_msg += plan.bytes();
  if (::send(mine.get(), &proto::kGo, 1, MSG_NOSIGNAL) != 1 ||
      ::send(mine.get(), plan_msg.data(), plan_msg.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(plan_msg.size()))
    give_up(errno_text("send the sandbox plan", errno));
  pollfd p{mine.get(), POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(kSetupTimeout.count() * 1000));
  std::string answer(4096, '\0');
  const ssize_t n = ready > 0 ? ::recv(mine.get(), answer.data(), answer.size(), 0) : -1;
  if (n <= 0) give_up("the sandbox init did not answer");
  answer.resize(static_cast<std::size_t>(n));
  if (answer[0] != proto::kReady) give_up("sandbox setup failed: " + answer.substr(1));
  const int root = ::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) give_up(errno_text("open the sandbox root", errno));
  std::lock_guard lock(mu_);
  init_ = pid;
  control_ = *mine.out();
  *mine.out() = -1;
  root_fd_ = root;
}

void SandboxRuntime::stop() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  // Killing PID 1 of the namespace kills every process in it, detached ones
  // too; waitpid returns once they are all gone.
  if (init_ > 0) {
    ::kill(init_, SIGKILL);
    while (::waitpid(init_, nullptr, 0) < 0 && errno == EINTR) {
    }
    init_ = -1;
  }
  close_fd(control_);
  close_fd(root_fd_);
}

void SandboxRuntime::destroy() {
  stop();
  if (!external_workspace_) {
    remove_tree(base_dir_);
  } else {
    for (const char* d : {"/root", "/tmp", "/home"}) remove_tree(base_dir_ + d);
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
  int sp[2], op[2], ep[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) return out;
  ScopedFd exec_sock(sp[0]), exec_theirs(sp[1]);
  if (::pipe2(op, O_CLOEXEC) != 0) return out;
  ScopedFd out_r(op[0]), out_w(op[1]);
  if (::pipe2(ep, O_CLOEXEC) != 0) return out;
  ScopedFd err_r(ep[0]), err_w(ep[1]);
  const int on = 1;
  (void)::setsockopt(exec_sock.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
  {
    std::lock_guard lock(mu_);
    if (stopped_ || control_ < 0) return out;
    if (!send_with_fds(control_, std::string(1, proto::kExec),
                       {exec_theirs.get(), out_w.get(), err_w.get()}))
      return out;
  }
  exec_theirs.reset();
  out_w.reset();
  err_w.reset();
  const std::string frame = encode_spec(spec);
  // A failed send means the command is gone already; its records say why.
  (void)send_all(exec_sock.get(), frame.data(), frame.size());

  ExecChannel channel(exec_sock.get());
  bool channel_open = true;
  pid_t host_pid = 0;
  // Once the command announced itself: it is listed, and can be killed.
  const auto kill_group = [&] {
    if (host_pid > 0) ::kill(-host_pid, SIGKILL);
  };
  const auto note_start = [&] {
    if (!channel.started || host_pid > 0 || channel.host_pid <= 0) return;
    host_pid = channel.host_pid;
    {
      std::lock_guard lock(mu_);
      running_.push_back({channel.sandbox_pid, host_pid, display_cmd, started_at_ms});
      if (stopped_) ::kill(-host_pid, SIGKILL);
    }
    if (on_pid) on_pid(channel.sandbox_pid);
    if (out.timed_out || out.cancelled) kill_group();
  };

  const auto deadline = Clock::now() + timeout;
  std::optional<Clock::time_point> grace_end;
  int fds[2] = {out_r.get(), err_r.get()};
  std::string* bufs[2] = {&out.stdout_bytes, &out.stderr_bytes};
  bool* truncs[2] = {&out.stdout_truncated, &out.stderr_truncated};
  std::vector<char> chunk(64 * 1024);
  const auto done = [&] { return !channel_open || channel.exited; };
  std::optional<Clock::time_point> gave_up_at;  // timed out or cancelled
  for (;;) {
    if (done() && fds[0] < 0 && fds[1] < 0) break;
    const auto now = Clock::now();
    // A command that never announced itself cannot be killed: stop waiting.
    if (gave_up_at && host_pid <= 0 && now - *gave_up_at > std::chrono::seconds(5)) break;
    if (done()) {
      if (!grace_end) grace_end = now + kDrainGrace;
      if (now >= *grace_end) break;
    }
    if (!done() && !out.timed_out && !out.cancelled && now >= deadline) {
      out.timed_out = true;
      gave_up_at = now;
      kill_group();
    }
    if (!done() && !out.cancelled && should_stop && should_stop()) {
      out.cancelled = true;
      if (!gave_up_at) gave_up_at = now;
      kill_group();
    }
    const auto wake =
        done() ? *grace_end
               : (out.timed_out ? now + std::chrono::milliseconds(100)
                                : std::min(deadline, now + std::chrono::milliseconds(250)));
    const int wait_ms = static_cast<int>(
        std::max<std::int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count()) +
        1);
    // The exec socket first: its start record precedes any output, and must
    // be handled first when both are ready (the pid event comes first).
    pollfd pfds[3];
    int idx[3];
    int n = 0;
    if (!done()) {
      pfds[n] = {exec_sock.get(), POLLIN, 0};
      idx[n++] = 2;
    }
    for (int s = 0; s < 2; ++s) {
      if (fds[s] >= 0) {
        pfds[n] = {fds[s], POLLIN, 0};
        idx[n++] = s;
      }
    }
    const int rc = ::poll(pfds, static_cast<nfds_t>(n), wait_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    for (int k = 0; k < n; ++k) {
      if (pfds[k].revents == 0) continue;
      if (idx[k] == 2) {
        channel_open = channel.read_some() && channel_open;
        note_start();
        continue;
      }
      const int s = idx[k];
      const ssize_t got = ::read(fds[s], chunk.data(), chunk.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        fds[s] = -1;
        (s == 0 ? out_r : err_r).reset();
        continue;
      }
      const std::string_view data(chunk.data(), static_cast<std::size_t>(got));
      if (on_output) on_output(s + 1, data);
      std::string& b = *bufs[s];
      if (cap == 0) continue;
      if (b.size() < cap) {
        const std::size_t take = std::min(cap - b.size(), data.size());
        b.append(data.substr(0, take));
        if (take < data.size()) *truncs[s] = true;
      } else {
        *truncs[s] = true;
      }
    }
  }
  if (!done()) kill_group();
  out.started = channel.started || channel.exited;
  {
    std::lock_guard lock(mu_);
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [&](const ProcessInfo& p) { return p.host_pid == host_pid; }),
                   running_.end());
  }
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

namespace {

// Copies the regular file `name` of `from_dir` into `to_dir`.
void copy_file_at(int from_dir, int to_dir, const char* name, mode_t mode, const IdMap& owner) {
  ScopedFd in(::openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (in.get() < 0) return;
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // swapped meanwhile
  ScopedFd outf(
      ::openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777));
  if (outf.get() < 0) return;
  if (owner.chown) (void)::fchown(outf.get(), st.st_uid, st.st_gid);
  (void)::fchmod(outf.get(), mode & 07777);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (::write(outf.get(), buf, static_cast<std::size_t>(n)) != n) break;
  }
}

void copy_dir_at(int from, int to, const IdMap& owner, int depth) {
  if (depth > 256) return;
  const int dup = ::openat(from, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) return;
  DirPtr d(::fdopendir(dup));
  if (!d) {
    ::close(dup);
    return;
  }
  struct stat top {};
  if (::fstat(from, &top) != 0) return;
  while (dirent* e = ::readdir(d.get())) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(from, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != top.st_dev) continue;  // another file system: not the sandbox's files
      ScopedFd sub(::openat(from, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.get() < 0) continue;  // swapped for a link meanwhile: left out
      if (::mkdirat(to, n.c_str(), 0700) != 0 && errno != EEXIST) continue;
      ScopedFd dst(::openat(to, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (dst.get() < 0) continue;
      copy_dir_at(sub.get(), dst.get(), owner, depth + 1);
      if (owner.chown) (void)::fchown(dst.get(), st.st_uid, st.st_gid);
      (void)::fchmod(dst.get(), st.st_mode & 07777);
    } else if (S_ISREG(st.st_mode)) {
      copy_file_at(from, to, n.c_str(), st.st_mode, owner);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(4096, '\0');
      const ssize_t len = ::readlinkat(from, n.c_str(), target.data(), target.size());
      if (len < 0) continue;
      target.resize(static_cast<std::size_t>(len));
      if (::symlinkat(target.c_str(), to, n.c_str()) == 0 && owner.chown)
        (void)::fchownat(to, n.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
    }
  }
}

}  // namespace

std::uint64_t tree_bytes(const std::string& path) {
  std::uint64_t total = 0;
  std::function<void(int, dev_t, int)> walk = [&](int dirfd, dev_t dev, int depth) {
    DirPtr d(::fdopendir(dirfd));
    if (!d) {
      ::close(dirfd);
      return;
    }
    while (dirent* e = ::readdir(d.get())) {
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      struct stat st {};
      if (::fstatat(::dirfd(d.get()), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
      if (S_ISDIR(st.st_mode) && st.st_dev == dev && depth < 256) {
        const int sub =
            ::openat(::dirfd(d.get()), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) walk(sub, dev, depth + 1);
      }
    }
  };
  struct stat top {};
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  if (::fstat(fd, &top) != 0) {
    ::close(fd);
    return 0;
  }
  walk(fd, top.st_dev, 0);
  return total;
}

void copy_tree(const std::string& from, const std::string& to, const IdMap& owner) {
  std::error_code ec;
  std::filesystem::create_directories(to, ec);
  ScopedFd src(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  ScopedFd dst(::open(to.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (src.get() < 0 || dst.get() < 0) return;
  copy_dir_at(src.get(), dst.get(), owner, 0);
  struct stat st {};
  if (::fstat(src.get(), &st) == 0) {
    (void)::fchmod(dst.get(), st.st_mode & 07777);
    if (owner.chown) (void)::fchown(dst.get(), st.st_uid, st.st_gid);
  }
}

namespace {

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string diagnose(const std::string& failure) {
  std::string msg =
      "the Lizard mock cannot isolate its sandboxes on this machine (" + failure +
      "). Every sandbox needs its own user, mount, PID and network namespaces, and the mock "
      "refuses to run commands without them.";
  std::string causes;
  if (first_line_of("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    causes +=
        "\n  - AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): run "
        "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or give this program an "
        "AppArmor profile that allows `userns`, or run it as root.";
  }
  if (first_line_of("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
    causes +=
        "\n  - unprivileged user namespaces are switched off: run `sudo sysctl "
        "kernel.unprivileged_userns_clone=1`, or run as root.";
  }
  if (first_line_of("/proc/sys/user/max_user_namespaces") == "0") {
    causes +=
        "\n  - user namespaces are disabled: run `sudo sysctl user.max_user_namespaces=15000`.";
  }
  msg += causes.empty() ? "\nFixes:" : "\nFound:" + causes + "\nOther fixes:";
  msg +=
      "\n  - in a container (Docker, Podman, a CI job's container): start it with "
      "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt "
      "systempaths=unconfined` (their defaults refuse new namespaces and mask /proc), or "
      "`--privileged`;"
      "\n  - or run the suite as root on a machine (or VM) of your own.";
  return msg;
}

}  // namespace

std::optional<std::string> isolation_problem() {
  static std::once_flag once;
  static std::optional<std::string> problem;
  std::call_once(once, [] {
    std::error_code ec;
    std::string tmpl =
        (std::filesystem::temp_directory_path(ec) / "lizard-mock-probe-XXXXXX").string();
    if (ec || !::mkdtemp(tmpl.data())) {
      problem = "cannot create a temporary directory (" + std::string(std::strerror(errno)) +
                "); set TMPDIR to a writable directory";
      return;
    }
    try {
      MockOptions defaults;
      SandboxSettings settings = sandbox_settings_for_this_process(defaults);
      SandboxRuntime probe(tmpl + "/sandbox", "", settings, "probe");
      probe.destroy();
    } catch (const std::exception& e) {
      problem = diagnose(e.what());
    }
    remove_tree(tmpl);
  });
  return problem;
}

}  // namespace lizard::mock::internal
