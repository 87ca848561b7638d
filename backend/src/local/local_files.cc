#include "local/local_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <system_error>
#include <utility>

#include "lizard/workspace/checks.h"
#include "lizard/workspace/errors.h"
#include "local/fd.h"

namespace lizard::workspace::internal {

namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int error) {
  // std::errc is defined from the errno constants, so the cast is the POSIX mapping.
  throw make_path_error(what, path, static_cast<std::errc>(error));
}

// Owns one DIR stream.
class Dir {
 public:
  explicit Dir(DIR* dir) : dir_(dir) {}
  ~Dir() {
    if (dir_ != nullptr) ::closedir(dir_);
  }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  DIR* get() const { return dir_; }

 private:
  DIR* dir_;
};

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j;
  }
  return parts;
}

FileEntry entry_from(std::string name, std::string path, const struct stat& st) {
  FileEntry entry;
  entry.name = std::move(name);
  entry.path = std::move(path);
  entry.is_dir = S_ISDIR(st.st_mode);
  if (!entry.is_dir) entry.size = static_cast<std::uint64_t>(st.st_size);
  return entry;
}

std::string join(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

// Follows links; a link that cannot be followed (dangling, looping) is
// described by lstat. Returns the errno of stat when neither works.
int stat_or_link(int dir_fd, const char* name, struct stat* st) {
  if (::fstatat(dir_fd, name, st, 0) == 0) return 0;
  const int error = errno;
  if (error == ENOENT || error == ELOOP) {
    if (::fstatat(dir_fd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st->st_mode)) return 0;
  }
  return error;
}

// Opens a DIR stream that owns `fd` (closing it when fdopendir fails).
Dir open_dir_stream(int fd) {
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int error = errno;
    ::close(fd);
    errno = error;
  }
  return Dir(dir);
}

// Removes `name` in `parent_fd` without following links; returns 0 or an
// errno. `force`: a directory we may not read or search is made so first
// (only the owner or root can, which is who destroys an environment).
int remove_at(int parent_fd, const char* name, bool force) {
  struct stat st {};
  if (::fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ::unlinkat(parent_fd, name, 0) == 0 ? 0 : errno;
  // O_NOFOLLOW: if the directory was swapped for a link since fstatat, fail
  // rather than descend into the link's target.
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(parent_fd, name, kFlags);
  if (fd < 0 && errno == EACCES && force && ::fchmodat(parent_fd, name, 0700, 0) == 0) {
    fd = ::openat(parent_fd, name, kFlags);
  }
  if (fd < 0) return errno;
  {
    Dir dir = open_dir_stream(fd);
    if (dir.get() == nullptr) return errno;
    std::vector<std::string> names;
    while (const dirent* item = ::readdir(dir.get())) {
      const std::string_view child = item->d_name;
      if (child != "." && child != "..") names.emplace_back(child);
    }
    for (const auto& child : names) {
      int error = remove_at(::dirfd(dir.get()), child.c_str(), force);
      if (error == EACCES && force && ::fchmodat(parent_fd, name, 0700, 0) == 0) {
        error = remove_at(::dirfd(dir.get()), child.c_str(), force);
      }
      if (error != 0 && error != ENOENT) return error;
    }
  }
  return ::unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 ? 0 : errno;
}

}  // namespace

std::string clean_path(std::string_view path) {
  std::string out;
  for (const auto part : components(path)) {
    if (part == ".") continue;
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

std::pair<std::string, std::string> split_last(const std::string& cleaned) {
  if (cleaned == "/") return {"/", ""};
  const auto slash = cleaned.rfind('/');
  std::string parent = slash == 0 ? "/" : cleaned.substr(0, slash);
  return {std::move(parent), cleaned.substr(slash + 1)};
}

std::string read_file(const std::string& path) {
  // O_NONBLOCK so that opening a FIFO never waits for a writer.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) throw_errno("read_bytes", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("read_bytes", path, errno);
  if (S_ISDIR(st.st_mode)) throw_errno("read_bytes", path, EISDIR);
  if (!S_ISREG(st.st_mode)) throw_errno("read_bytes: not a regular file", path, EINVAL);
  std::string data;
  // st_size is a hint only: files under /proc report 0 and still have content.
  data.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      data.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      throw_errno("read_bytes", path, errno);
    }
  }
  return data;
}

void write_file(const std::string& path, std::string_view data) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int raw = ::open(path.c_str(), kFlags, 0666);
  if (raw < 0 && errno == ENOENT) {
    const auto [parent, name] = split_last(clean_path(path));
    if (parent != "/") {
      try {
        make_directories(parent);
      } catch (const std::filesystem::filesystem_error& error) {
        // A file where a parent should be is not_a_directory for the write.
        if (error.code() == std::errc::file_exists) throw_errno("write_bytes", path, ENOTDIR);
        throw;
      }
    }
    raw = ::open(path.c_str(), kFlags, 0666);
  }
  if (raw < 0) throw_errno("write_bytes", path, errno);
  Fd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("write_bytes", path, errno);
  if (!S_ISREG(st.st_mode)) throw_errno("write_bytes: not a regular file", path, EINVAL);
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      throw_errno("write_bytes", path, errno);
    }
  }
}

FileEntry stat_entry(const std::string& path) {
  const std::string cleaned = clean_path(path);
  struct stat st {};
  const int error = stat_or_link(AT_FDCWD, cleaned.c_str(), &st);
  if (error != 0) throw_errno("stat", path, error);
  // "file/" is ENOTDIR to stat(2) (and so to exists()); the cleaned path lost the "/".
  if (!S_ISDIR(st.st_mode) && names_a_directory(path)) throw_errno("stat", path, ENOTDIR);
  auto [parent, name] = split_last(cleaned);
  return entry_from(name.empty() ? "/" : std::move(name), cleaned, st);
}

std::vector<FileEntry> list_directory(const std::string& path) {
  const std::string cleaned = clean_path(path);
  const int fd = ::open(cleaned.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("list_dir", path, errno);
  Dir dir = open_dir_stream(fd);
  if (dir.get() == nullptr) throw_errno("list_dir", path, errno);
  std::vector<FileEntry> entries;
  for (;;) {
    errno = 0;
    const dirent* item = ::readdir(dir.get());
    if (item == nullptr) {
      if (errno != 0) throw_errno("list_dir", path, errno);
      break;
    }
    const std::string_view name = item->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    const int error = stat_or_link(::dirfd(dir.get()), item->d_name, &st);
    if (error == ENOENT) continue;  // removed while we list
    if (error != 0) {
      // Not stat'able (a directory we may read but not search): still listed,
      // with what the directory itself says.
      FileEntry entry{std::string(name), join(cleaned, name), item->d_type == DT_DIR, {}};
      entries.push_back(std::move(entry));
      continue;
    }
    entries.push_back(entry_from(std::string(name), join(cleaned, name), st));
  }
  std::sort(entries.begin(), entries.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
  return entries;
}

void make_directories(const std::string& path) {
  const auto parts = components(path);
  std::string current;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    current += '/';
    current += parts[i];
    if (::mkdir(current.c_str(), 0777) == 0) continue;
    const int error = errno;
    const bool last = i + 1 == parts.size();
    if (error == EEXIST) {
      // Something is there: a directory (or a link to one) is fine; a link
      // that loops or dangles is what stat says (ELOOP, ENOENT), as mkdir
      // of a path through it would; anything else is in the way.
      struct stat st {};
      if (::stat(current.c_str(), &st) != 0) throw_errno("make_dir", path, errno);
      if (S_ISDIR(st.st_mode)) continue;
      throw_errno("make_dir", path, last ? EEXIST : ENOTDIR);
    }
    throw_errno("make_dir", path, error);
  }
}

void remove_path(const std::string& path, bool force) {
  const auto [parent, name] = split_last(clean_path(path));
  Fd parent_fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent_fd.get() < 0) throw_errno("remove", path, errno);
  const int error = remove_at(parent_fd.get(), name.c_str(), force);
  if (error != 0) throw_errno("remove", path, error);
}

bool path_exists(const std::string& path) noexcept {
  struct stat st {};
  return stat_or_link(AT_FDCWD, path.c_str(), &st) == 0;
}

std::string resolve_path(const std::string& path) {
  // `pending` holds the components still to walk, last component first, so
  // that a link's target can be pushed in front of what follows it.
  std::vector<std::string> pending;
  for (const auto part : components(path)) pending.emplace_back(part);
  std::reverse(pending.begin(), pending.end());
  std::string resolved = "/";
  int hops = 0;
  while (!pending.empty()) {
    // swap, not a move-construction: gcc 12 -O3 reports the moved-from
    // string as maybe-uninitialized (a false positive) and -Werror stops.
    std::string part;
    part.swap(pending.back());
    pending.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      resolved = split_last(resolved).first;
      continue;
    }
    std::string candidate = join(resolved, part);
    struct stat st {};
    // Any lstat failure means "missing": like realpath -m, keep it as written.
    if (::lstat(candidate.c_str(), &st) != 0) {
      resolved = std::move(candidate);
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      resolved = std::move(candidate);
      continue;
    }
    if (++hops > kMaxSymlinkHops) throw_errno("realpath", path, ELOOP);
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(candidate.c_str(), target.data(), target.size());
    if (n < 0) throw_errno("realpath", path, errno);
    target.resize(static_cast<std::size_t>(n));
    // assign(1, '/') rather than = "/": gcc 12 warns (-Wrestrict) falsely on the latter.
    if (!target.empty() && target.front() == '/') resolved.assign(1, '/');
    const auto target_parts = components(target);
    for (auto it = target_parts.rbegin(); it != target_parts.rend(); ++it) {
      pending.emplace_back(*it);
    }
  }
  return resolved;
}

}  // namespace lizard::workspace::internal
