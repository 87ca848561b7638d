#include "file_trees.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "scoped_fd.h"
#include "tree_walk.h"

namespace lizard::mock::internal {

void remove_tree(const std::string& path) {
  struct stat top {};
  if (::lstat(path.c_str(), &top) != 0) return;
  if (!S_ISDIR(top.st_mode)) {
    ::unlink(path.c_str());
    return;
  }
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return;
  TreeWalk walk(fd.get(), TreeWalk::Deep::kFlatten);
  try {
    walk.run(
        [&](int dir, const std::string& name, const struct stat& st) {
          if (S_ISDIR(st.st_mode)) {
            if (st.st_dev != top.st_dev) return false;  // a mount point: never descend
            make_walkable(dir, name, st);
            return true;
          }
          ::unlinkat(dir, name.c_str(), 0);
          return false;
        },
        [](int dir, const std::string& name) { ::unlinkat(dir, name.c_str(), AT_REMOVEDIR); });
  } catch (const std::system_error&) {
    // What the walk could not reach stays; the rmdir below then fails too.
  }
  fd.reset();
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
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat top {};
  if (fd.get() < 0 || ::fstat(fd.get(), &top) != 0) return 0;
  std::uint64_t total = 0;
  TreeWalk walk(fd.get(), TreeWalk::Deep::kClimb);
  try {
    walk.run(
        [&](int, const std::string&, const struct stat& st) {
          if (S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
          return S_ISDIR(st.st_mode) && st.st_dev == top.st_dev;
        },
        [](int, const std::string&) {});
  } catch (const std::system_error&) {
    // A part it could not read is not counted.
  }
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

}  // namespace lizard::mock::internal
