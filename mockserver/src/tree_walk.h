// A walk over a directory tree on the host that no depth can break: a
// sandbox makes a tree as deep as it likes (mkdir and chdir in a loop, 100,000
// levels in two seconds), and the mock removes, copies and measures such
// trees (file_trees.h, sandbox_files.h). A walk with a descriptor and a stack
// frame per level would run out of descriptors (EMFILE, for every thread of
// the process) or of stack; this one holds at most kHeldDirs + 1 descriptors
// (twice that with a mirror) and keeps its levels in a vector. Thread-safe:
// no shared state.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace lizard::mock::internal {

class TreeWalk {
 public:
  // Called for each entry `name` (never "." or "..") of the open directory
  // `dir`, with its lstat; returns true to walk into it, which only a
  // directory can be. May remove the entry (when it returns false).
  using Enter = std::function<bool(int dir, const std::string& name, const struct stat& st)>;
  // Called when every entry below the directory `name` of `dir` has been
  // visited (and its descriptor closed): where a removal removes it.
  using Leave = std::function<void(int dir, const std::string& name)>;

  static constexpr std::size_t kHeldDirs = 16;

  // What a walk does below kHeldDirs levels.
  enum class Deep {
    // Close the descriptors of levels far above and reopen each, on the way
    // back, as ".." of its child. Reads only; but ".." costs a walk up to the
    // mount's root when the tree is seen through a bind mount (the kernel's
    // path_connected), so a tree N levels deep costs N^2 there.
    kClimb,
    // Move (rename) each directory that is kHeldDirs levels down into the
    // top directory, as ".lizard-removing-N", and walk it from there later:
    // for walks that remove the tree. Linear at any depth; a walk stopped by
    // an error leaves those names in the top directory.
    kFlatten,
  };

  // `top` is an open directory the caller keeps.
  TreeWalk(int top, Deep deep) : top_(top), deep_(deep) {}
  ~TreeWalk();
  TreeWalk(const TreeWalk&) = delete;
  TreeWalk& operator=(const TreeWalk&) = delete;

  // Walks the tree below `top`, depth first, never following a link: every
  // directory is opened relative to its parent with O_NOFOLLOW and must be
  // the one lstat saw. A directory's names are read whole before any is
  // visited. Deeper than kHeldDirs, as `deep` says; with kClimb, when ".."
  // is not the directory that was left (the tree was moved meanwhile), the
  // walk stops. Throws std::system_error, naming where() and what failed,
  // when a directory cannot be opened, read or moved up, or the walk cannot
  // find its way back.
  void run(const Enter& enter, const Leave& leave);

  // The path below `top` of the directory being read ("." at the top, else
  // "a/b/c"), or of its entry `name`, for messages: a deep one is cut to its
  // first and last levels.
  std::string where(const std::string& name = "") const;
  // The same, whole ("" at the top): as long as the tree is deep.
  std::string path(const std::string& name = "") const;

  // A second tree built alongside the walk (a copy; kClimb only): before the
  // walk goes into a directory, `open` is given the mirror directory of its
  // parent and returns a descriptor of the one that stands for it (or -1: it
  // is not walked into). The walk owns those descriptors and keeps, closes
  // and reopens them (as "..", checked) with the walked tree's.
  using OpenMirror =
      std::function<int(int mirror_dir, const std::string& name, const struct stat& st)>;
  void mirror_into(int mirror_top, OpenMirror open);
  // The mirror directory of the directory being read (in Enter), or of the
  // parent of the one just left (in Leave).
  int mirror() const { return levels_.back().mirror; }

 private:
  struct Level {
    int fd = -1;  // -1 when closed to keep within kHeldDirs
    dev_t dev = 0;
    ino_t ino = 0;
    std::string name;  // in its parent ("" for the top)
    std::vector<std::string> names;
    std::size_t next = 0;
    int mirror = -1;  // with mirror_into: its directory in the mirror (-1 when closed)
    dev_t mirror_dev = 0;
    ino_t mirror_ino = 0;
  };
  void push(int fd, const struct stat& st, std::string name, int mirror);
  void pop(const Leave& leave);
  std::string move_up(int dir, const std::string& name);

  void close_all() noexcept;

  int top_;
  Deep deep_;
  int mirror_top_ = -1;
  OpenMirror open_mirror_;
  std::size_t moved_up_ = 0;  // the N of the next ".lizard-removing-N"
  std::vector<Level> levels_;
  // The open levels below the top are levels_[first_open_ ..]: descriptors
  // are closed from the highest down and reopened from the lowest up.
  std::size_t first_open_ = 1;
};

// Lets the calling thread walk into and empty the directory `name` of `dir`
// (lstat `st`) when it owns it (its file-system uid) and the directory lacks
// rwx for its owner: a sandbox's `chmod 000` must not keep its tree from
// being removed by the mock (a user's mock acts as the owner without any
// capability; a root mock's files API as the sandbox's root, without
// capabilities on the host). Through an O_PATH descriptor of the directory
// lstat saw, never a path that a sandbox could swap for a link.
void make_walkable(int dir, const std::string& name, const struct stat& st);

}  // namespace lizard::mock::internal
