#include "sandbox_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <system_error>

#include "lizard/workspace/checks.h"
#include "scoped_fd.h"
#include "tree_walk.h"

namespace lizard::mock::internal {
namespace {

// What is left to read of `fd`; `what` names it in the error.
std::string read_to_end(int fd, const std::string& what, std::size_t expected = 0) {
  std::string out;
  out.reserve(expected);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(errno, "Cannot read " + what);
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

int open_in_root(int root_fd, const std::string& path, int flags, mode_t mode = 0) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  // The sandbox path is made relative so that the root fd is the start.
  std::string rel = path.size() > 1 ? path.substr(1) : std::string(".");
  for (;;) {
    long fd = ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EAGAIN && errno != EINTR) return -1;
  }
}

std::string checked(const std::string& path) {
  try {
    lizard::workspace::require_absolute_path(path);
  } catch (const std::invalid_argument&) {
    fail_errno(EINVAL, "Path must be absolute and must not contain NUL");
  }
  return lizard::workspace::normalize_path(path);
}

std::vector<std::string> components(const std::string& normalized) {
  std::vector<std::string> out;
  std::size_t i = 1;
  while (i < normalized.size()) {
    std::size_t j = normalized.find('/', i);
    if (j == std::string::npos) j = normalized.size();
    out.push_back(normalized.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string parent_of(const std::string& normalized) {
  auto pos = normalized.rfind('/');
  return pos == 0 ? "/" : normalized.substr(0, pos);
}

std::string base_of(const std::string& normalized) {
  if (normalized == "/") return "/";
  return normalized.substr(normalized.rfind('/') + 1);
}

// Opens the parent directory of `normalized`, creating it and its
// ancestors (0755) as `mkdir -p` would.
ScopedFd ensure_parent(int root_fd, const std::string& normalized, const IdMap& ids) {
  auto comps = components(normalized);
  ScopedFd cur(open_in_root(root_fd, "/", O_PATH | O_DIRECTORY));
  if (cur.get() < 0) fail_errno(errno, "Cannot open the sandbox root");
  std::string prefix;
  for (std::size_t i = 0; i + 1 < comps.size(); ++i) {
    prefix += "/" + comps[i];
    ScopedFd next(open_in_root(root_fd, prefix, O_PATH | O_DIRECTORY));
    if (next.get() < 0 && errno == ENOENT) {
      const bool made = ::mkdirat(cur.get(), comps[i].c_str(), 0755) == 0;
      if (!made && errno != EEXIST) fail_errno(errno, "Cannot create directory " + prefix);
      next.reset(open_in_root(root_fd, prefix, O_RDONLY | O_DIRECTORY));
      if (made && next.get() >= 0) ids.give(next.get());
    }
    if (next.get() < 0) fail_errno(errno, "Cannot open directory " + prefix);
    cur = std::move(next);
  }
  return cur;
}

std::string permissions_of(mode_t m) {
  std::string s = "?rwxrwxrwx";
  if (S_ISREG(m)) s[0] = '-';
  if (S_ISDIR(m)) s[0] = 'd';
  if (S_ISLNK(m)) s[0] = 'l';
  if (S_ISFIFO(m)) s[0] = 'p';
  if (S_ISCHR(m)) s[0] = 'c';
  if (S_ISBLK(m)) s[0] = 'b';
  if (S_ISSOCK(m)) s[0] = 's';
  const mode_t bits[9] = {S_IRUSR, S_IWUSR, S_IXUSR, S_IRGRP, S_IWGRP,
                          S_IXGRP, S_IROTH, S_IWOTH, S_IXOTH};
  for (int i = 0; i < 9; ++i) {
    if (!(m & bits[i])) s[static_cast<std::size_t>(i) + 1] = '-';
  }
  if (m & S_ISUID) s[3] = (m & S_IXUSR) ? 's' : 'S';
  if (m & S_ISGID) s[6] = (m & S_IXGRP) ? 's' : 'S';
  if (m & S_ISVTX) s[9] = (m & S_IXOTH) ? 't' : 'T';
  return s;
}

// A sandbox id's name, as the sandbox's /etc (the host's) has it.
std::string user_name(uid_t uid) {
  passwd pw{};
  passwd* res = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return res->pw_name;
  return std::to_string(uid);
}

std::string group_name(gid_t gid) {
  group gr{};
  group* res = nullptr;
  char buf[4096];
  if (::getgrgid_r(gid, &gr, buf, sizeof buf, &res) == 0 && res) return res->gr_name;
  return std::to_string(gid);
}

std::string read_link_at(int dirfd, const char* name) {
  std::string buf(4096, '\0');
  ssize_t n = ::readlinkat(dirfd, name, buf.data(), buf.size());
  if (n < 0) return {};
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

// The names of the ids seen in one listing: a directory of many files by
// one owner looks the owner up once, not once a file.
struct NameCache {
  std::map<uid_t, std::string> users;
  std::map<gid_t, std::string> groups;
};

FileInfo info_from(const struct stat& st, std::string name, std::string path, const IdMap& ids,
                   NameCache* names = nullptr) {
  FileInfo fi;
  fi.name = std::move(name);
  fi.path = std::move(path);
  fi.type = S_ISDIR(st.st_mode)   ? "dir"
            : S_ISLNK(st.st_mode) ? "symlink"
            : S_ISREG(st.st_mode) ? "file"
                                  : "other";
  fi.is_link = S_ISLNK(st.st_mode);
  fi.size = static_cast<std::uint64_t>(st.st_size);
  fi.mode = st.st_mode & 07777;
  fi.permissions = permissions_of(st.st_mode);
  const uid_t uid = ids.sandbox_uid(st.st_uid);
  const gid_t gid = ids.sandbox_gid(st.st_gid);
  if (names == nullptr) {
    fi.owner = user_name(uid);
    fi.group = group_name(gid);
  } else {
    auto user = names->users.find(uid);
    if (user == names->users.end()) user = names->users.emplace(uid, user_name(uid)).first;
    auto group = names->groups.find(gid);
    if (group == names->groups.end()) group = names->groups.emplace(gid, group_name(gid)).first;
    fi.owner = user->second;
    fi.group = group->second;
  }
  fi.mod_time_ms =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  return fi;
}

// True when `name` in `dirfd` is the root of a mount (a bind such as
// /dev/null or /workspace, the /proc of the sandbox, ...).
bool is_mount_root(int dirfd, const char* name) {
  struct statx sx {};
  if (::statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) != 0)
    return false;
  return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
         (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

// Empties the directory `dirfd` (taking the descriptor), however deep.
void clear_dir(int dirfd) {
  const ScopedFd own(dirfd);
  TreeWalk walk(dirfd, TreeWalk::Deep::kFlatten);
  walk.run(
      [&](int dir, const std::string& name, const struct stat& st) {
        if (S_ISDIR(st.st_mode)) {
          if (is_mount_root(dir, name.c_str()))  // checked before; never crossed
            fail_errno(EBUSY,
                       "Refusing to remove a mount point of the sandbox: " + walk.where(name));
          make_walkable(dir, name, st);
          return true;
        }
        if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT)
          fail_errno(errno, "Cannot remove " + walk.where(name));
        return false;
      },
      [&](int dir, const std::string& name) {
        if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
          fail_errno(errno, "Cannot remove " + walk.where(name));
      });
}

// The mount points of the sandbox as its processes see them: field 5 of
// its init's mountinfo, with the kernel's octal escapes (\040 for a space,
// \011, \012, \134) decoded.
std::vector<std::string> sandbox_mount_points(int root_fd) {
  ScopedFd fd(open_in_root(root_fd, "/proc/1/mountinfo", O_RDONLY));
  if (fd.get() < 0) fail_errno(errno, "Cannot read the sandbox's mount points");
  const std::string text = read_to_end(fd.get(), "the sandbox's mount points");
  const auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::vector<std::string> points;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    // Fields are single words (the kernel escapes spaces): the fifth.
    std::istringstream fields(line);
    std::string field;
    for (int n = 0; n < 5; ++n) fields >> field;
    if (!fields) continue;
    std::string point;
    for (std::size_t k = 0; k < field.size(); ++k) {
      if (field[k] == '\\' && k + 3 < field.size() && octal(field[k + 1]) && octal(field[k + 2]) &&
          octal(field[k + 3])) {
        point += static_cast<char>((field[k + 1] - '0') * 64 + (field[k + 2] - '0') * 8 +
                                   (field[k + 3] - '0'));
        k += 3;
      } else {
        point += field[k];
      }
    }
    points.push_back(point);
  }
  return points;
}

// Fails with EBUSY when a mount point of the sandbox lies below the
// directory `dirfd` (the path `shown`). Not a walk of the tree, which may be
// deeper than a walk can afford (tree_walk.h): each mount point (commands
// cannot mount, so they are the sandbox's own few) is opened and climbed
// with ".." to the sandbox's root, and none may pass `dirfd`.
void refuse_mounts_below(int root_fd, int dirfd, const std::string& shown) {
  struct stat dir {};
  struct stat root {};
  if (::fstat(dirfd, &dir) != 0 || ::fstat(root_fd, &root) != 0)
    fail_errno(errno, "Cannot stat " + shown);
  for (const std::string& point : sandbox_mount_points(root_fd)) {
    if (point == "/") continue;
    ScopedFd cur(open_in_root(root_fd, point, O_PATH | O_NOFOLLOW));
    for (int up = 0; cur.get() >= 0 && up < 4096; ++up) {
      struct stat st {};
      if (::fstat(cur.get(), &st) != 0) break;
      if (st.st_dev == dir.st_dev && st.st_ino == dir.st_ino)
        fail_errno(EBUSY, "Refusing to remove a mount point of the sandbox: " + point + " (in " +
                              shown + ")");
      if (st.st_dev == root.st_dev && st.st_ino == root.st_ino) break;
      cur.reset(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    }
  }
}

// Files of /proc and /sys look regular but are not: some block (kmsg),
// most report size 0, they describe processes rather than hold data, and
// writing one configures the kernel.
void refuse_pseudo_file(int fd, const std::string& p) {
  struct statfs sf {};
  if (::fstatfs(fd, &sf) != 0) fail_errno(errno, "Cannot stat " + p);
  if (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC)
    fail_errno(EINVAL, "Not a regular file (a file of /proc or /sys)");
}

}  // namespace

void IdMap::give(int fd) const {
  if (chown) (void)::fchown(fd, uid_base + owner, gid_base + owner);
}

ScopedFsIdentity::ScopedFsIdentity(const IdMap& ids) : active_(ids.chown) {
  if (!active_) return;
  const long n = ::syscall(SYS_getgroups, 0, nullptr);
  if (n < 0) fail_errno(errno, "Cannot read the supplementary groups");
  old_groups_.resize(static_cast<std::size_t>(n));
  if (n > 0 && ::syscall(SYS_getgroups, n, old_groups_.data()) != n)
    fail_errno(EPERM, "Cannot read the supplementary groups");
  // Host root's groups (0 among them, often) would open group-readable
  // host files to the sandbox.
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) fail_errno(errno, "Cannot drop the groups");
  const long uid = ids.uid_base + ids.owner;
  const long gid = ids.gid_base + ids.owner;
  old_gid_ = ::syscall(SYS_setfsgid, gid);
  old_uid_ = ::syscall(SYS_setfsuid, uid);
  // Both calls answer the old id whether or not they changed it: ask again
  // (an id of -1 changes nothing and answers the current one).
  if (::syscall(SYS_setfsuid, -1L) != uid || ::syscall(SYS_setfsgid, -1L) != gid) {
    restore();
    fail_errno(EPERM, "Cannot take the sandbox user's file-system ids");
  }
}

ScopedFsIdentity::~ScopedFsIdentity() {
  if (active_) restore();
}

void ScopedFsIdentity::restore() noexcept {
  ::syscall(SYS_setfsuid, old_uid_);
  ::syscall(SYS_setfsgid, old_gid_);
  ::syscall(SYS_setgroups, old_groups_.size(), old_groups_.data());
}

void write_file(int root_fd, const std::string& path, std::string_view bytes, const IdMap& ids) {
  std::string p = checked(path);
  if (p == "/") fail_errno(EISDIR, "Is a directory");
  // Seen before opening, so that even the open of a kernel file is not
  // attempted; checked again on the opened file (a link may have moved).
  ScopedFd existing(open_in_root(root_fd, p, O_PATH));
  if (existing.get() >= 0) refuse_pseudo_file(existing.get(), p);
  (void)ensure_parent(root_fd, p, ids);
  ScopedFd fd(open_in_root(root_fd, p, O_WRONLY | O_CREAT | O_NONBLOCK, 0644));
  if (fd.get() < 0) {
    if (errno == ENXIO) fail_errno(EINVAL, "Not a regular file");
    fail_errno(errno, "Cannot open " + p);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno(errno, "Cannot stat " + p);
  if (!S_ISREG(st.st_mode)) fail_errno(EINVAL, "Not a regular file");
  refuse_pseudo_file(fd.get(), p);
  // A file the mock made (host root's) becomes the sandbox user's.
  if (ids.chown && st.st_uid == 0) ids.give(fd.get());
  // Truncate after the type check, in place: the inode and its mode stay.
  if (::ftruncate(fd.get(), 0) != 0) fail_errno(errno, "Cannot truncate " + p);
  ::fcntl(fd.get(), F_SETFL, 0);
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, "Cannot write " + p);
    }
    done += static_cast<std::size_t>(n);
  }
}

OpenedFile open_for_read(int root_fd, const std::string& path) {
  std::string p = checked(path);
  ScopedFd fd(open_in_root(root_fd, p, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) fail_errno(errno, "Cannot open " + p);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno(errno, "Cannot stat " + p);
  if (S_ISDIR(st.st_mode)) fail_errno(EISDIR, "Is a directory");
  if (!S_ISREG(st.st_mode)) fail_errno(EINVAL, "Not a regular file");
  refuse_pseudo_file(fd.get(), p);
  ::fcntl(fd.get(), F_SETFL, 0);
  OpenedFile out;
  out.size = static_cast<std::uint64_t>(st.st_size);
  out.fd = fd.release();
  return out;
}

std::string read_file(int root_fd, const std::string& path) {
  OpenedFile f = open_for_read(root_fd, path);
  ScopedFd fd(f.fd);
  return read_to_end(fd.get(), path, static_cast<std::size_t>(f.size));
}

FileInfo stat_path(int root_fd, const std::string& path, const IdMap& ids) {
  std::string p = checked(path);
  ScopedFd fd(open_in_root(root_fd, p, O_PATH | O_NOFOLLOW));
  if (fd.get() < 0) fail_errno(errno, "Cannot stat " + p);
  struct stat st {};
  if (::fstatat(fd.get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
    fail_errno(errno, "Cannot stat " + p);
  FileInfo fi = info_from(st, base_of(p), p, ids);
  if (fi.is_link) fi.symlink_target = read_link_at(fd.get(), "");
  return fi;
}

std::vector<FileInfo> list_dir(int root_fd, const std::string& path, const IdMap& ids) {
  std::string p = checked(path);
  int raw = open_in_root(root_fd, p, O_RDONLY | O_DIRECTORY);
  if (raw < 0) fail_errno(errno, "Cannot list " + p);
  DirPtr d(::fdopendir(raw));
  if (!d) {
    int err = errno;
    ::close(raw);
    fail_errno(err, "Cannot list " + p);
  }
  std::vector<FileInfo> out;
  NameCache names;
  while (dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    // A command can make a directory of millions of files; the answer for
    // it would be hundreds of MB, built in the mock's memory (a client
    // refuses answers over 64 MiB anyway).
    if (out.size() == kMaxListEntries) {
      fail_errno(E2BIG, "Cannot list " + p + ": it has more than " +
                            std::to_string(kMaxListEntries) + " entries");
    }
    struct stat st {};
    if (::fstatat(::dirfd(d.get()), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    FileInfo fi = info_from(st, n, (p == "/" ? "" : p) + "/" + n, ids, &names);
    if (fi.is_link) fi.symlink_target = read_link_at(::dirfd(d.get()), n.c_str());
    out.push_back(std::move(fi));
  }
  d.reset();
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  return out;
}

void remove_path(int root_fd, const std::string& path) {
  std::string p = checked(path);
  if (p == "/") fail_errno(EINVAL, "Refusing to remove /");
  std::string parent = parent_of(p);
  std::string name = base_of(p);
  ScopedFd pfd(open_in_root(root_fd, parent, O_PATH | O_DIRECTORY));
  if (pfd.get() < 0) fail_errno(errno, "Cannot open " + parent);
  struct stat st {};
  if (::fstatat(pfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    fail_errno(errno, "Cannot remove " + p);
  if (is_mount_root(pfd.get(), name.c_str()))
    fail_errno(EBUSY, "Refusing to remove a mount point of the sandbox: " + p);
  if (S_ISDIR(st.st_mode)) {
    make_walkable(pfd.get(), name, st);
    int sub = ::openat(pfd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) fail_errno(errno, "Cannot open " + p);
    try {
      refuse_mounts_below(root_fd, sub, p);
    } catch (...) {
      ::close(sub);
      throw;
    }
    clear_dir(sub);
    if (::unlinkat(pfd.get(), name.c_str(), AT_REMOVEDIR) != 0)
      fail_errno(errno, "Cannot remove " + p);
  } else if (::unlinkat(pfd.get(), name.c_str(), 0) != 0) {
    fail_errno(errno, "Cannot remove " + p);
  }
}

bool is_directory(int root_fd, const std::string& path) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) return false;
  ScopedFd fd(open_in_root(root_fd, lizard::workspace::normalize_path(path), O_PATH | O_DIRECTORY));
  return fd.get() >= 0;
}

void move_path(int root_fd, const std::string& from, const std::string& to, const IdMap& ids) {
  std::string f = checked(from);
  std::string t = checked(to);
  if (f == "/" || t == "/") fail_errno(EINVAL, "Cannot move /");
  ScopedFd fpfd(open_in_root(root_fd, parent_of(f), O_PATH | O_DIRECTORY));
  if (fpfd.get() < 0) fail_errno(errno, "Cannot open " + parent_of(f));
  struct stat st {};
  if (::fstatat(fpfd.get(), base_of(f).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    fail_errno(errno, "Cannot move " + f);
  if (is_mount_root(fpfd.get(), base_of(f).c_str()))
    fail_errno(EBUSY, "Refusing to move a mount point of the sandbox: " + f);
  ScopedFd tpfd = ensure_parent(root_fd, t, ids);
  if (::renameat(fpfd.get(), base_of(f).c_str(), tpfd.get(), base_of(t).c_str()) != 0)
    fail_errno(errno, "Cannot move " + f);
}

}  // namespace lizard::mock::internal
