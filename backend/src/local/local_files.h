// Host file operations behind LocalWorkspaceBackend's SupportsFilesystem and
// SupportsRealpath. Every function takes an absolute host path (checked by the
// caller) and reports failures as std::filesystem::filesystem_error carrying
// the errno of the failing call as std::errc (on Linux the two coincide).
//
// Thread safety: the functions keep no state; concurrent calls on unrelated
// paths are safe, concurrent mutations of one path race as the syscalls do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lizard/workspace/types.h"

namespace lizard::workspace::internal {

// `path` without repeated slashes, "." components and a trailing slash; ".."
// is kept because only the kernel knows what it means after a symlink.
std::string clean_path(std::string_view path);

// The whole content of a regular file (symlinks followed). A directory is
// is_a_directory; any other non-regular file (FIFO, device, socket) is
// invalid_argument at once, so a FIFO without a writer never blocks.
std::string read_file(const std::string& path);

// Replaces (O_TRUNC, mode kept) or creates `path`, following symlinks, and
// creates missing parent directories. A directory is is_a_directory; a file
// where a parent should be is not_a_directory; a non-regular target is
// invalid_argument (a FIFO without a reader would otherwise block).
void write_file(const std::string& path, std::string_view data);

// What stat(2) reports, following links. A dangling or looping link is
// reported as itself (a non-directory whose size is the link's own), so that
// everything list_directory() returns can be stat'ed.
FileEntry stat_entry(const std::string& path);

// The entries of a directory (links followed), one level, sorted by name.
std::vector<FileEntry> list_directory(const std::string& path);

// mkdir -p. An existing directory (or link to one) is a no-op; a
// non-directory at `path` is file_exists, one at a parent is not_a_directory.
void make_directories(const std::string& path);

// Removes a file, a symlink (not its target) or a directory tree, never
// following links inside the tree. The caller has refused protected paths;
// `path`'s last component must not be "." or "..". `force` (for destroy):
// directories inside that cannot be read or searched are chmod'ed 0700 first.
void remove_path(const std::string& path, bool force = false);

// True when stat_entry() would succeed. Never throws.
bool path_exists(const std::string& path) noexcept;

// realpath(1) -m: resolves links component by component (relative targets
// from the link's directory, `link/..` from the link's target), keeps missing
// components as written, and fails with too_many_symbolic_link_levels after
// kMaxSymlinkHops links.
inline constexpr int kMaxSymlinkHops = 40;
std::string resolve_path(const std::string& path);

// Splits a cleaned absolute path into its parent and last component
// ("/a/b" -> {"/a", "b"}, "/a" -> {"/", "a"}, "/" -> {"/", ""}).
std::pair<std::string, std::string> split_last(const std::string& cleaned);

}  // namespace lizard::workspace::internal
