// The files API, resolved as the sandbox sees its own tree: every path is
// opened with openat2(RESOLVE_IN_ROOT) from the sandbox's root, so absolute
// paths, ".." and symlinks stay inside the sandbox, and read-only mounts
// answer EROFS.
//
// Every function throws std::system_error with the POSIX errno of the
// failure (ENOENT, EISDIR, ENOTDIR, EACCES, EEXIST, ELOOP, EINVAL, EROFS,
// ...). Paths must be absolute and free of NUL (else EINVAL). Thread-safe:
// no shared state.
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lizard::mock::internal {

// Owns a DIR* (closedir on destruction), so that an exception between
// opendir and the end of a scan never leaks the handle and its descriptor.
struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

struct FileInfo {
  std::string name;
  std::string path;
  std::string type;  // "file", "dir", "symlink" (or "other")
  std::uint64_t size = 0;
  std::uint32_t mode = 0;  // permission bits (with setuid/setgid/sticky)
  std::string permissions;
  std::string owner;
  std::string group;
  std::int64_t mod_time_ms = 0;
  bool is_link = false;
  std::string symlink_target;
};

// Writes `bytes` to `path`, creating missing parents (0755). An existing
// file is truncated in place (inode and mode kept); a link is written
// through to its target.
void write_file(int root_fd, const std::string& path, std::string_view bytes);
// The whole content of a regular file (links followed). A directory is
// EISDIR; a FIFO, device or socket is EINVAL (never blocks).
std::string read_file(int root_fd, const std::string& path);
// lstat semantics: a link is reported as a link, with its target.
FileInfo stat_path(int root_fd, const std::string& path);
// One level, sorted by name; entries with lstat semantics.
std::vector<FileInfo> list_dir(int root_fd, const std::string& path);
// Removes a file, a link (never its target) or a directory with its
// contents (links inside are removed, not followed).
void remove_path(int root_fd, const std::string& path);
// True when `path` resolves (links followed) to a directory. Never throws.
bool is_directory(int root_fd, const std::string& path);
// Renames `from` to `to`, creating the parents of `to`.
void move_path(int root_fd, const std::string& from, const std::string& to);

}  // namespace lizard::mock::internal
