#include "file_trees.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <map>
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

// Copies the regular file `name` of `from_dir` into `to_dir`, its holes
// kept as holes: a sandbox's `truncate -s 1T` is not a terabyte written to
// the host's disk. True when the copy is whole.
bool copy_file_at(int from_dir, int to_dir, const char* name, mode_t mode, const IdMap& owner) {
  ScopedFd in(::openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (in.get() < 0) return false;
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // swapped meanwhile
  ScopedFd outf(
      ::openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777));
  if (outf.get() < 0) return false;
  if (owner.chown) (void)::fchown(outf.get(), st.st_uid, st.st_gid);
  (void)::fchmod(outf.get(), mode & 07777);
  std::vector<char> buf(1 << 16);
  off_t at = 0;
  for (;;) {
    // The next stretch of data, and where it ends (a file system without
    // SEEK_DATA answers the whole file as one stretch).
    const off_t data = ::lseek(in.get(), at, SEEK_DATA);
    if (data < 0) break;  // ENXIO: only a hole (or nothing) is left
    const off_t hole = ::lseek(in.get(), data, SEEK_HOLE);
    if (hole < 0) return false;
    for (off_t pos = data; pos < hole;) {
      const auto want =
          static_cast<std::size_t>(std::min<off_t>(hole - pos, static_cast<off_t>(buf.size())));
      const ssize_t n = ::pread(in.get(), buf.data(), want, pos);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      if (::pwrite(outf.get(), buf.data(), static_cast<std::size_t>(n), pos) != n) return false;
      pos += n;
    }
    at = hole;
  }
  return ::ftruncate(outf.get(), st.st_size) == 0;  // a hole at the end
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
  struct stat top {};
  if (src.get() < 0 || dst.get() < 0 || ::fstat(src.get(), &top) != 0) return;
  // Files with more than one name are copied once and linked after: a
  // sandbox's 1,000 links to one file are not 1,000 copies. Their first
  // copy's path below `to` (when it is short enough to link by).
  std::map<std::pair<dev_t, ino_t>, std::string> copied;
  TreeWalk walk(src.get(), TreeWalk::Deep::kClimb);
  walk.mirror_into(dst.get(), [](int mirror_dir, const std::string& name, const struct stat&) {
    if (::mkdirat(mirror_dir, name.c_str(), 0700) != 0 && errno != EEXIST) return -1;
    return ::openat(mirror_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  });
  try {
    walk.run(
        [&](int dir, const std::string& name, const struct stat& st) {
          // Another file system is not the sandbox's files.
          if (S_ISDIR(st.st_mode)) return st.st_dev == top.st_dev;
          const int to_dir = walk.mirror();
          if (S_ISREG(st.st_mode)) {
            const auto key = std::make_pair(st.st_dev, st.st_ino);
            if (st.st_nlink > 1) {
              const auto first = copied.find(key);
              if (first != copied.end() &&
                  ::linkat(dst.get(), first->second.c_str(), to_dir, name.c_str(), 0) == 0)
                return false;
            }
            if (copy_file_at(dir, to_dir, name.c_str(), st.st_mode, owner) && st.st_nlink > 1) {
              std::string path = walk.path(name);
              if (path.size() < PATH_MAX) copied.emplace(key, std::move(path));
            }
          } else if (S_ISLNK(st.st_mode)) {
            std::string target(PATH_MAX, '\0');
            const ssize_t len = ::readlinkat(dir, name.c_str(), target.data(), target.size());
            if (len < 0) return false;
            target.resize(static_cast<std::size_t>(len));
            if (::symlinkat(target.c_str(), to_dir, name.c_str()) == 0 && owner.chown)
              (void)::fchownat(to_dir, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
          }
          return false;
        },
        [&](int dir, const std::string& name) {
          // A directory's owner and mode once its entries are in (a mode
          // without write would have kept them out).
          struct stat st {};
          if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
          const int to_dir = walk.mirror();
          if (owner.chown) (void)::fchownat(to_dir, name.c_str(), st.st_uid, st.st_gid, 0);
          (void)::fchmodat(to_dir, name.c_str(), st.st_mode & 07777, 0);
        });
  } catch (const std::system_error&) {
    // What the walk could not reach (the sandbox moved it meanwhile) is left out.
  }
  (void)::fchmod(dst.get(), top.st_mode & 07777);
  if (owner.chown) (void)::fchown(dst.get(), top.st_uid, top.st_gid);
}

}  // namespace lizard::mock::internal
