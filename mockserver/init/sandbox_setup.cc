#include "sandbox_setup.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "init_protocol.h"

namespace lizard::mock::init {
namespace {

std::string failure(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// Adds read-only (and nosuid, nodev) to a mount and every mount below it,
// keeping the flags it has: a mount inherited from the host may have flags
// locked (noexec, say) that a plain remount would have to repeat.
bool make_read_only(const std::string& path) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), AT_RECURSIVE, &attr, sizeof attr) == 0)
    return true;
  if (errno != ENOSYS) return false;
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return false;
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return ::mount(nullptr, path.c_str(), nullptr, flags, nullptr) == 0;
}

bool set_nosuid_nodev(const std::string& path) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), 0, &attr, sizeof attr) == 0) return true;
  return errno == ENOSYS;
}

bool ensure_dir(const std::string& path) {
  return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

bool ensure_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool loopback_up() {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    ok = ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  }
  ::close(s);
  return ok;
}

// One step of the plan; empty on success.
std::string run_step(const std::string& root, const std::string& step, const std::string& a,
                     const std::string& b, CommandLimits& limits) {
  if (step == "root") {
    if (!ensure_dir(root)) return failure("create the new root", errno);
    if (::mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, a.c_str()) != 0)
      return failure("mount the new root", errno);
    return {};
  }
  if (step == "bind-ro" || step == "bind-rw") {
    const std::string& src = a;
    const std::string dst = root + b;
    struct stat st {};
    if (::stat(src.c_str(), &st) != 0) return failure("stat " + a, errno);
    if (S_ISDIR(st.st_mode) ? !ensure_dir(dst) : !ensure_file(dst))
      return failure("create the mount point " + b, errno);
    if (::mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return failure("bind " + a + " at " + b, errno);
    const bool ok = step == "bind-ro" ? make_read_only(dst) : set_nosuid_nodev(dst);
    if (!ok) return failure("restrict the bind at " + b, errno);
    return {};
  }
  if (step == "link") {
    if (::symlink(a.c_str(), (root + b).c_str()) != 0 && errno != EEXIST)
      return failure("link " + b, errno);
    return {};
  }
  if (step == "tmpfs") {
    const std::string dst = root + a;
    if (!ensure_dir(dst)) return failure("create " + a, errno);
    unsigned long flags = MS_NOSUID | MS_NODEV;
    if (a == "/dev") flags = MS_NOSUID | MS_NOEXEC;
    if (::mount("tmpfs", dst.c_str(), "tmpfs", flags, b.c_str()) != 0)
      return failure("mount a tmpfs at " + a, errno);
    return {};
  }
  if (step == "dev") {
    const std::string host = "/dev/" + a;
    const std::string dst = root + "/dev/" + a;
    if (::access(host.c_str(), F_OK) != 0) return {};  // not on this host: left out
    if (!ensure_file(dst)) return failure("create " + dst.substr(root.size()), errno);
    if (::mount(host.c_str(), dst.c_str(), nullptr, MS_BIND, nullptr) != 0)
      return failure("bind " + host, errno);
    return {};
  }
  if (step == "proc") {
    const std::string dst = root + a;
    if (!ensure_dir(dst)) return failure("create " + a, errno);
    if (::mount("proc", dst.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return failure(
          "mount /proc for the sandbox (a container whose own /proc has masked paths refuses "
          "this; run the mock outside such a container, or in one started with a fully visible "
          "/proc)",
          errno);
    }
    return {};
  }
  if (step == "hostname") {
    if (::sethostname(a.data(), a.size()) != 0) return failure("set the host name", errno);
    return {};
  }
  if (step == "limit") {
    const long long v = std::atoll(b.c_str());
    if (a == "nproc") limits.nproc = v;
    if (a == "nofile") limits.nofile = v;
    if (a == "fsize") limits.fsize = v;
    return {};
  }
  return "unknown plan step " + step;
}

}  // namespace

std::string build_sandbox(const std::vector<std::string>& plan, CommandLimits& limits) {
  if (plan.empty()) return "empty plan";
  const std::string& root = plan[0];
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return failure("make the mounts private", errno);
  std::size_t i = 1;
  while (i < plan.size()) {
    const std::string& step = plan[i];
    const int arity = lizard::mock::internal::init_protocol::plan_arity(step);
    if (arity < 0 || i + static_cast<std::size_t>(arity) >= plan.size())
      return "malformed plan at " + step;
    const std::string& a = plan[i + 1];
    const std::string& b = arity > 1 ? plan[i + 2] : std::string();
    if (std::string err = run_step(root, step, a, b, limits); !err.empty()) return err;
    i += 1 + static_cast<std::size_t>(arity);
  }
  for (int fd : lizard::mock::internal::init_protocol::kSandboxDirFds) ::close(fd);
  if (::chdir(root.c_str()) != 0) return failure("enter the new root", errno);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return failure("pivot_root", errno);
  if (::umount2(".", MNT_DETACH) != 0) return failure("detach the old root", errno);
  if (::chdir("/") != 0) return failure("chdir /", errno);
  // The root itself is read-only: a command can write only to its own trees.
  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &ro, sizeof ro) != 0 &&
      ::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
    return failure("make the root read-only", errno);
  if (!loopback_up()) return failure("bring the loopback interface up", errno);
  return {};
}

}  // namespace lizard::mock::init
