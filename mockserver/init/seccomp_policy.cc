#include "seccomp_policy.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lizard::mock::init {
namespace {

constexpr const char* kRefused[] = {
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "nfsservctl",
    "iopl",
    "ioperm",
    "lookup_dcookie",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "vhangup",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    // io_uring: a large kernel attack surface of its own, whose operations
    // (opens, sends, ...) a seccomp filter on the other calls never sees.
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "setns",
    "unshare",
};

constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWUSER,   CLONE_NEWNS,  CLONE_NEWPID,
                                             CLONE_NEWNET,    CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWCGROUP, CLONE_NEWTIME};

struct Context {
  scmp_filter_ctx ctx = nullptr;
  ~Context() {
    if (ctx) seccomp_release(ctx);
  }
};

}  // namespace

std::vector<sock_filter> build_command_filter(std::string& error) {
  Context c;
  c.ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!c.ctx) {
    error = "seccomp_init failed";
    return {};
  }
  for (const char* name : kRefused) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (int rc = seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(EPERM), nr, 0); rc != 0) {
      error = std::string("seccomp rule for ") + name + ": " + std::strerror(-rc);
      return {};
    }
  }
  for (unsigned long flag : kNamespaceFlags) {
    // clone's first argument with `flag` set. Spelled out rather than with
    // SCMP_A0(), whose compound literal is C99, not C++ (clang -Werror).
    const scmp_arg_cmp has_flag{0, SCMP_CMP_MASKED_EQ, flag, flag};
    if (int rc = seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, has_flag);
        rc != 0) {
      error = std::string("seccomp rule for clone: ") + std::strerror(-rc);
      return {};
    }
  }
  if (int rc = seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0) {
    error = std::string("seccomp rule for clone3: ") + std::strerror(-rc);
    return {};
  }
  // The filter as BPF, through a memory file (libseccomp 2.5 exports to an fd).
  const int fd = ::memfd_create("seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return {};
  }
  std::vector<sock_filter> program;
  if (int rc = seccomp_export_bpf(c.ctx, fd); rc != 0) {
    error = std::string("seccomp_export_bpf: ") + std::strerror(-rc);
  } else {
    const off_t size = ::lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
      error = "the exported filter has an odd size";
    } else {
      program.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
      if (::pread(fd, program.data(), static_cast<std::size_t>(size), 0) != size) {
        error = "cannot read the exported filter back";
        program.clear();
      }
    }
  }
  ::close(fd);
  return program;
}

}  // namespace lizard::mock::init
