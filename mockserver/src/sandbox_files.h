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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace lizard::mock::internal {

// Throws what every function here throws: std::system_error with `err` (a
// POSIX errno), saying `what`.
[[noreturn]] inline void fail_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// Owns a DIR* (closedir on destruction), so that an exception between
// opendir and the end of a scan never leaks the handle and its descriptor.
struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// How a sandbox's user and group ids map to the host's (sandbox_runtime.h).
struct IdMap {
  std::uint32_t uid_base = 0;  // the host uid of sandbox uid 0
  std::uint32_t gid_base = 0;
  std::uint32_t count = 1;  // sandbox ids 0 .. count-1 exist
  // The mock runs as host root: what it creates is handed to the sandbox
  // user `owner` (else it already belongs to the sandbox's root).
  bool chown = false;
  std::uint32_t owner = 0;  // a sandbox uid (and gid)
  // The sandbox's id for a host id, or 65534 (nobody) when it is not mapped.
  std::uint32_t sandbox_uid(std::uint32_t host) const {
    return host - uid_base < count ? host - uid_base : 65534;
  }
  std::uint32_t sandbox_gid(std::uint32_t host) const {
    return host - gid_base < count ? host - gid_base : 65534;
  }
  // Hands a descriptor's file to the sandbox's root (when `chown`).
  void give(int fd) const;
};

// While alive, the calling thread acts on files as sandbox user
// `ids.owner` on the host (when `ids.chown`, i.e. the mock is host root;
// otherwise it does nothing): its file-system uid and gid are that user's
// host ids and it has no supplementary group. An fsuid other than 0 also
// drops the file capabilities, so the kernel checks every access as it
// would for that unprivileged id, never as host root. Throws
// std::system_error(EPERM) when the ids cannot be taken. Affects this
// thread only (raw system calls: glibc's setgroups applies to all threads).
class ScopedFsIdentity {
 public:
  explicit ScopedFsIdentity(const IdMap& ids);
  ~ScopedFsIdentity();
  ScopedFsIdentity(const ScopedFsIdentity&) = delete;
  ScopedFsIdentity& operator=(const ScopedFsIdentity&) = delete;

 private:
  void restore() noexcept;
  bool active_ = false;
  long old_uid_ = 0;
  long old_gid_ = 0;
  std::vector<gid_t> old_groups_;
};

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
// through to its target. A file of /proc or /sys is EINVAL, never opened
// for writing when it can be seen first.
void write_file(int root_fd, const std::string& path, std::string_view bytes, const IdMap& ids);
// An open regular file to read (links followed), and its size. A directory
// is EISDIR; a FIFO, device, socket, or a file of /proc or /sys is EINVAL
// (opened without blocking, never read).
struct OpenedFile {
  int fd = -1;  // owned by the caller
  std::uint64_t size = 0;
};
OpenedFile open_for_read(int root_fd, const std::string& path);
// The whole content of a regular file (as open_for_read).
std::string read_file(int root_fd, const std::string& path);
// lstat semantics: a link is reported as a link, with its target.
FileInfo stat_path(int root_fd, const std::string& path, const IdMap& ids);
// One level, sorted by name; entries with lstat semantics.
// A directory of more than this many entries is refused (E2BIG, an
// answer of 400 saying so) rather than listed.
inline constexpr std::size_t kMaxListEntries = 100'000;
std::vector<FileInfo> list_dir(int root_fd, const std::string& path, const IdMap& ids);
// Removes a file, a link (never its target) or a directory with its
// contents (links inside are removed, not followed). A mount point of the
// sandbox (/dev/null, /tmp, ...), or a tree holding one, is EBUSY and
// nothing is removed.
void remove_path(int root_fd, const std::string& path);
// True when `path` resolves (links followed) to a directory. Never throws.
bool is_directory(int root_fd, const std::string& path);
// Renames `from` to `to`, creating the parents of `to`.
void move_path(int root_fd, const std::string& from, const std::string& to, const IdMap& ids);

}  // namespace lizard::mock::internal
