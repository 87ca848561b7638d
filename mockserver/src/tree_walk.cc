#include "tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "sandbox_files.h"

namespace lizard::mock::internal {
namespace {

// The names in the directory `dir`, read through a descriptor of their own
// (the caller's keeps its offset). False, with errno, when it cannot be read.
bool read_names(int dir, std::vector<std::string>& out) {
  const int own = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) return false;
  DirPtr d(::fdopendir(own));
  if (!d) {
    const int err = errno;
    ::close(own);
    errno = err;
    return false;
  }
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d.get());
    if (e == nullptr) return errno == 0;
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.emplace_back(e->d_name);
  }
}

std::string joined(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

}  // namespace

void make_walkable(int dir, const std::string& name, const struct stat& st) {
  const auto fsuid = static_cast<uid_t>(::syscall(SYS_setfsuid, -1L));  // -1: only asks
  if ((st.st_mode & S_IRWXU) == S_IRWXU || st.st_uid != fsuid) return;
  const int fd = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat now {};
  if (::fstat(fd, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    (void)::chmod(self.c_str(), (st.st_mode & 07777) | S_IRWXU);
  }
  ::close(fd);
}

TreeWalk::~TreeWalk() { close_all(); }

void TreeWalk::close_all() noexcept {
  for (std::size_t i = 1; i < levels_.size(); ++i) {
    if (levels_[i].fd >= 0) ::close(levels_[i].fd);
    if (levels_[i].mirror >= 0) ::close(levels_[i].mirror);
    levels_[i].fd = -1;
    levels_[i].mirror = -1;
  }
}

void TreeWalk::mirror_into(int mirror_top, OpenMirror open) {
  mirror_top_ = mirror_top;
  open_mirror_ = std::move(open);
}

std::string TreeWalk::path(const std::string& name) const {
  std::string whole;
  for (std::size_t i = 1; i < levels_.size(); ++i) whole = joined(whole, levels_[i].name);
  return name.empty() ? whole : joined(whole, name);
}

std::string TreeWalk::where(const std::string& name) const {
  // Deep trees are shown by their first and last levels: a message of a
  // tree 100,000 levels deep would otherwise be longer than the tree's names.
  constexpr std::size_t kShown = 4;
  const std::size_t depth = levels_.size() - 1;
  std::string path;
  for (std::size_t i = 1; i < levels_.size(); ++i) {
    if (depth > 2 * kShown && i == kShown + 1) {
      path += "/...(" + std::to_string(depth - 2 * kShown) + " levels)...";
      i = depth - kShown;
      continue;
    }
    path = joined(path, levels_[i].name);
  }
  if (!name.empty()) return joined(path, name);
  return path.empty() ? "." : path;
}

void TreeWalk::push(int fd, const struct stat& st, std::string name, int mirror) {
  Level level;
  level.fd = fd;
  level.dev = st.st_dev;
  level.ino = st.st_ino;
  level.name = std::move(name);
  level.mirror = mirror;
  levels_.push_back(std::move(level));
  Level& added = levels_.back();
  if (mirror >= 0) {
    struct stat mst {};
    if (::fstat(mirror, &mst) != 0) fail_errno(errno, "Cannot read the copy of " + where());
    added.mirror_dev = mst.st_dev;
    added.mirror_ino = mst.st_ino;
  }
  if (!read_names(fd, added.names)) fail_errno(errno, "Cannot read " + where());
  if (levels_.size() - first_open_ > kHeldDirs) {
    Level& far = levels_[first_open_];
    ::close(far.fd);
    far.fd = -1;
    if (far.mirror >= 0) ::close(far.mirror);
    far.mirror = -1;
    ++first_open_;
  }
}

namespace {

// The parent of `child` (closed here) when it is the directory `dev`/`ino`,
// else -1.
int reopen_parent(int child, dev_t dev, ino_t ino) {
  const int up = ::openat(child, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  const bool same = up >= 0 && ::fstat(up, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
  ::close(child);
  if (same) return up;
  if (up >= 0) ::close(up);
  return -1;
}

}  // namespace

void TreeWalk::pop(const Leave& leave) {
  Level done = std::move(levels_.back());
  levels_.pop_back();
  Level& parent = levels_.back();
  if (parent.fd < 0) {
    // Closed on the way down: its child's ".." must be it still.
    parent.fd = reopen_parent(done.fd, parent.dev, parent.ino);
    if (done.mirror >= 0) {
      parent.mirror = reopen_parent(done.mirror, parent.mirror_dev, parent.mirror_ino);
    }
    if (parent.fd < 0 || (done.mirror >= 0 && parent.mirror < 0))
      fail_errno(EAGAIN,
                 "Lost the way back up to " + where() + ": the tree was moved while walked");
    first_open_ = levels_.size() - 1;
  } else {
    ::close(done.fd);
    if (done.mirror >= 0) ::close(done.mirror);
  }
  leave(parent.fd, done.name);
}

std::string TreeWalk::move_up(int dir, const std::string& name) {
  for (;;) {
    std::string fresh = ".lizard-removing-" + std::to_string(moved_up_++);
    if (::renameat2(dir, name.c_str(), top_, fresh.c_str(), RENAME_NOREPLACE) == 0) return fresh;
    if (errno != EEXIST) fail_errno(errno, "Cannot move " + where(name) + " up to remove it");
  }
}

void TreeWalk::run(const Enter& enter, const Leave& leave) {
  close_all();
  levels_.clear();
  first_open_ = 1;
  struct stat top {};
  if (::fstat(top_, &top) != 0) fail_errno(errno, "Cannot read the directory");
  Level root;
  root.fd = top_;
  root.dev = top.st_dev;
  root.ino = top.st_ino;
  root.mirror = mirror_top_;
  levels_.push_back(std::move(root));
  if (!read_names(top_, levels_.back().names)) fail_errno(errno, "Cannot read the directory");
  for (;;) {
    Level& cur = levels_.back();
    if (cur.next == cur.names.size()) {
      if (levels_.size() == 1) return;
      pop(leave);
      continue;
    }
    const std::string name = std::move(cur.names[cur.next++]);
    const int dir = cur.fd;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // gone meanwhile
      fail_errno(errno, "Cannot read " + where(name));
    }
    if (!enter(dir, name, st) || !S_ISDIR(st.st_mode)) continue;
    if (deep_ == Deep::kFlatten && levels_.size() > kHeldDirs) {
      levels_.front().names.push_back(move_up(dir, name));
      continue;
    }
    int mirror = -1;
    if (open_mirror_) {
      mirror = open_mirror_(cur.mirror, name, st);
      if (mirror < 0) continue;
    }
    const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat got {};
    if (fd < 0 || ::fstat(fd, &got) != 0 || got.st_dev != st.st_dev || got.st_ino != st.st_ino) {
      const int err = fd < 0 ? errno : EAGAIN;
      if (fd >= 0) ::close(fd);
      if (mirror >= 0) ::close(mirror);
      fail_errno(
          err, fd < 0 ? "Cannot open " + where(name) : where(name) + " was replaced while walked");
    }
    push(fd, got, name, mirror);
  }
}

}  // namespace lizard::mock::internal
