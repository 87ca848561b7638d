#include "clone_children.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "init_protocol.h"

namespace lizard::mock::internal {
namespace {

namespace proto = init_protocol;

constexpr unsigned long kNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                      CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP;

// The code of the clone children of this multithreaded process, from
// clone(2) to execveat(2) or exit, is async-signal-safe in the strictest
// sense: only raw system calls through syscall(2), only memory prepared
// before the clone, no allocation, no lock. Another thread may have held any
// lock (the C library's, the allocator's, a sanitizer runtime's) at the
// moment of the clone, and its owner does not exist in the child. Both
// children even share this process's memory (CLONE_VM) and thread-local
// storage, up to the init's exec: a copy of the mock's page tables for a
// process that only execs would cost a copy per sandbox and, after it, a
// write fault in the mock for every page it writes again. Each child
// writes only to its own stack, the outer child to one field of its plan
// (the init's pid, read once it is reaped), and both to errno, which is the
// launching thread's (a failure reported might name an errno of that
// thread's instead). Both children start with every signal blocked, so that no
// handler of the mock runs in them; the init unblocks what the launching
// thread had unblocked as it executes. These functions are not
// instrumented (LIZARD_CHILD_CODE) and call nothing but each other.
#if defined(__clang__) || defined(__GNUC__)
#define LIZARD_CHILD_CODE __attribute__((no_sanitize("thread", "address", "undefined"), noinline))
#else
#define LIZARD_CHILD_CODE
#endif

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

// The init (the inner clone): waits for "go", opens the sandbox's trees,
// becomes the inner namespace's root and executes lizard-sandbox-init. Its
// descriptors were placed by the outer child; it runs on the plan's
// init_stack until the exec.
[[noreturn]] LIZARD_CHILD_CODE void init_child(const InitChildPlan* p) {
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
  // the map does not contain (and exec would drop every capability of an
  // unmapped user).
  if (::syscall(SYS_setgroups, 0, nullptr) != 0 && p->drop_groups)
    child_fail("drop the supplementary groups");
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setresuid, 0, 0, 0) != 0)
    child_fail("become root of the sandbox's user namespace");
  (void)::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &p->signal_mask, nullptr, _NSIG / 8);
  ::syscall(SYS_execveat, 4, "", p->argv, p->envp, AT_EMPTY_PATH);
  child_fail("execute the sandbox init");
}

LIZARD_CHILD_CODE int init_entry(void* plan) {
  init_child(static_cast<const InitChildPlan*>(plan));
}

// Writes `text` to /proc/PID/LEAF.
LIZARD_CHILD_CODE bool write_proc_file(long pid, const char* leaf, const char* text) {
  // Built byte by byte: an initialized array may become a call to memset.
  char path[64];
  std::size_t n = 0;
  for (const char* c = "/proc/"; *c != '\0'; ++c) path[n++] = *c;
  char digits[20];
  std::size_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid != 0 && d < sizeof digits);
  while (d > 0) path[n++] = digits[--d];
  path[n++] = '/';
  for (std::size_t i = 0; leaf[i] != '\0' && n + 1 < sizeof path; ++i) path[n++] = leaf[i];
  path[n] = '\0';
  std::size_t len = 0;
  while (text[len] != '\0') ++len;
  const long fd = ::syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  const long written = ::syscall(SYS_write, fd, text, len);
  const int err = errno;
  (void)::syscall(SYS_close, fd);
  errno = err;
  return written == static_cast<long>(len);
}

// Sends the outer child's report (step 0: done; else the step that failed,
// with errno) and exits.
[[noreturn]] LIZARD_CHILD_CODE void outer_finish(OuterReport* report, int step) {
  report->step = step;
  report->err = step == 0 ? 0 : errno;
  (void)::syscall(SYS_sendto, 3, report, sizeof *report, MSG_NOSIGNAL, nullptr, 0);
  child_exit(step == 0 ? 0 : 1);
}

// The outer child, in a user namespace of its own (made by the owner, with
// the limit across sandboxes). It clones the init into the inner user
// namespace and the others (made by itself, with the sandbox's limit) as
// a child of the mock (CLONE_PARENT), writes the inner ID maps, reports
// the init's pid and exits. See launch_sandbox_init.
[[noreturn]] LIZARD_CHILD_CODE void outer_child(const InitChildPlan* p) {
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
  OuterReport report;
  char go = 0;
  if (::syscall(SYS_read, 3, &go, 1) != 1 || go != proto::kGo) outer_finish(&report, 1);
  if (p->outer_gid >= 0 && ::syscall(SYS_setresgid, p->outer_gid, p->outer_gid, p->outer_gid) != 0)
    outer_finish(&report, 2);
  if (::syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &p->sandbox_nproc, nullptr) != 0)
    outer_finish(&report, 3);
  // The plan is not written through: the pointer is clone's argument type.
  const int pid = p->clone(init_entry, p->init_stack, kNamespaces | CLONE_PARENT | CLONE_VM,
                           const_cast<InitChildPlan*>(p));
  if (pid < 0) outer_finish(&report, 4);
  *p->cloned = static_cast<pid_t>(pid);
  report.pid = static_cast<std::int32_t>(pid);
  if (!write_proc_file(pid, "uid_map", p->uid_map)) outer_finish(&report, 5);
  if (!write_proc_file(pid, "gid_map", p->gid_map)) outer_finish(&report, 6);
  outer_finish(&report, 0);
}

}  // namespace

LIZARD_CHILD_CODE int outer_entry(void* plan) {
  outer_child(static_cast<const InitChildPlan*>(plan));
}

}  // namespace lizard::mock::internal
