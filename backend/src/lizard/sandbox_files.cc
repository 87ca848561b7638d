#include "lizard/sandbox_files.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "lizard/guest_helpers.h"
#include "lizard/workspace/checks.h"
#include "lizard/workspace/errors.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace::internal {

namespace {

std::string base_name(const std::string& normal) {
  if (normal == "/") return "/";
  return normal.substr(normal.rfind('/') + 1);
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::errc errc_of_errno(int e) { return static_cast<std::errc>(e); }

bool is_dir_type(const std::string& type) { return type == "dir" || type == "directory"; }

// The Lizard API's JSON carries UTF-8 only: a path with other bytes cannot
// reach the sandbox intact.
void require_carriable_path(const std::string& path) {
  require_absolute_path(path);
  if (!is_valid_utf8(path)) {
    throw std::invalid_argument("the Lizard API carries UTF-8 paths only; this path is not UTF-8");
  }
}

std::string parent_of(const std::string& normal) {
  const auto slash = normal.rfind('/');
  return slash == 0 ? "/" : normal.substr(0, slash);
}

FileEntry entry_of(const api::FileInfo& info, const std::string& path) {
  FileEntry entry;
  entry.path = path;
  entry.name = base_name(path);
  entry.is_dir = is_dir_type(info.type);
  if (!entry.is_dir) entry.size = info.size;
  return entry;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    lines.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return lines;
}

// One line of probe.sh's answer applied to its entry.
void apply_probe(const std::string& line, FileEntry& entry, bool strict) {
  if (line == "d") {
    entry.is_dir = true;
    entry.size.reset();
    return;
  }
  entry.is_dir = false;
  if (line.rfind("f ", 0) == 0) {
    entry.size = std::strtoull(line.c_str() + 2, nullptr, 10);
    return;
  }
  entry.size.reset();
  if (!strict) return;
  if (line == "l") {
    throw make_path_error("too many levels of symbolic links", entry.path,
                          std::errc::too_many_symbolic_link_levels);
  }
  throw make_path_error("no such file or directory (dangling link)", entry.path,
                        std::errc::no_such_file_or_directory);
}

}  // namespace

std::string SandboxFiles::read_bytes(const std::string& path) {
  require_carriable_path(path);
  if (names_a_directory(path)) {
    // The files API reads "file/" as the file: one stat instead of the read,
    // which raises ENOENT or ENOTDIR itself; a directory is EISDIR.
    stat(path);
    throw make_path_error("is a directory", path, std::errc::is_a_directory);
  }
  return session_.call(session_.sandbox(),
                       [&](api::Client& client, const std::string& sandbox) {
                         return client.read_file(sandbox, path);
                       },
                       {.path = path});
}

// UTF-8 content: one files-API request. Other bytes: write_non_utf8. Either
// way a failed write leaves the old content whole, and a link is written
// through.
void SandboxFiles::write_bytes(const std::string& path, const std::string& data) {
  require_carriable_path(path);
  if (names_a_directory(path)) {
    // Never a file: what the parent's walk finds first (ENOENT, ENOTDIR),
    // else EISDIR, as open(2) with O_CREAT says. Nothing is written.
    const std::string normal = normalize_path(path);
    if (normal != "/" && !stat(parent_of(normal)).is_dir) {
      throw make_path_error("not a directory", path, std::errc::not_a_directory);
    }
    throw make_path_error("is a directory", path, std::errc::is_a_directory);
  }
  const std::string sandbox_id = session_.sandbox();
  if (!is_valid_utf8(data)) return write_non_utf8(sandbox_id, path, data);
  session_.call(sandbox_id,
                [&](api::Client& client, const std::string& sandbox) {
                  client.write_text_file(sandbox, path, data);
                },
                {.path = path});
}

// Their base64 as a UTF-8 file, then write.sh decodes it next to the target
// and renames it into place (two requests; the kubernetes era takes UTF-8
// uploads only, so nothing else works on every era).
void SandboxFiles::write_non_utf8(const std::string& sandbox_id, const std::string& path,
                                  const std::string& data) {
  const std::string staged = run_file(kRunRoot, random_run_id(), "w64");
  session_.call(sandbox_id,
                [&](api::Client& client, const std::string& sandbox) {
                  client.write_base64_text_file(sandbox, staged, data);
                },
                {.path = path});
  const auto answer = session_.run_helper(sandbox_id, write_command(staged, path));
  const auto err = parse_write_answer(answer.out);
  if (!err) {
    throw WorkspaceError("could not write the file in the sandbox: " + answer.err.substr(0, 300));
  }
  if (*err != 0) throw make_path_error("cannot write the file", path, errc_of_errno(*err));
}

void SandboxFiles::resolve_links(const std::string& sandbox_id,
                                 const std::vector<FileEntry*>& entries, bool strict) {
  if (entries.empty()) return;
  std::vector<std::string> paths;
  for (const auto* entry : entries) paths.push_back(entry->path);
  const auto answer = session_.run_helper(sandbox_id, probe_command(paths));
  const std::vector<std::string> lines = lines_of(answer.out);
  if (answer.exit_code != 0 || lines.size() != entries.size()) {
    throw WorkspaceError("could not resolve symbolic links in the sandbox");
  }
  for (std::size_t i = 0; i < entries.size(); ++i) apply_probe(lines[i], *entries[i], strict);
}

FileEntry SandboxFiles::stat(const std::string& path) {
  require_carriable_path(path);
  const std::string sandbox_id = session_.sandbox();
  const api::FileInfo info = session_.call(sandbox_id,
                                           [&](api::Client& client, const std::string& sandbox) {
                                             return client.stat_file(sandbox, path);
                                           },
                                           {.path = path});
  FileEntry entry = entry_of(info, normalize_path(path));
  if (info.type == "symlink") resolve_links(sandbox_id, {&entry}, true);
  // The files API stats "file/" as the file; stat(2) says ENOTDIR.
  if (!entry.is_dir && names_a_directory(path)) {
    throw make_path_error("not a directory", path, std::errc::not_a_directory);
  }
  return entry;
}

std::vector<FileEntry> SandboxFiles::list_dir(const std::string& path) {
  require_carriable_path(path);
  const std::string sandbox_id = session_.sandbox();
  const std::string normal = normalize_path(path);
  const std::vector<api::FileInfo> infos =
      session_.call(sandbox_id,
                    [&](api::Client& client, const std::string& sandbox) {
                      return client.list_files(sandbox, path);
                    },
                    {.path = path});
  std::vector<FileEntry> entries;
  entries.reserve(infos.size());
  for (const auto& info : infos) {
    entries.push_back(entry_of(info, join(normal, info.name)));
    entries.back().name = info.name;
  }
  std::vector<FileEntry*> links;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (infos[i].type == "symlink") links.push_back(&entries[i]);
  }
  resolve_links(sandbox_id, links, false);
  std::sort(entries.begin(), entries.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
  return entries;
}

bool SandboxFiles::exists(const std::string& path) {
  try {
    stat(path);
    return true;
  } catch (const std::filesystem::filesystem_error&) {
    return false;
  }
}

void SandboxFiles::make_dir(const std::string& path) {
  require_carriable_path(path);
  const auto answer = session_.run_helper(session_.sandbox(), mkdir_command(path));
  if (answer.exit_code == 0) return;
  if (const auto e = errno_of_helper_exit(answer.exit_code)) {
    throw make_path_error("cannot create directory", path, errc_of_errno(*e));
  }
  throw WorkspaceError("mkdir failed in the sandbox (exit " + std::to_string(answer.exit_code) +
                       ")");
}

void SandboxFiles::remove(const std::string& path) {
  require_carriable_path(path);
  refuse_remove_of_working_dir(path, kLizardWorkingDir);
  session_.call(
      session_.sandbox(),
      [&](api::Client& client, const std::string& sandbox) { client.remove_file(sandbox, path); },
      {.path = path});
}

std::string SandboxFiles::realpath(const std::string& path) {
  require_carriable_path(path);
  const auto answer = session_.run_helper(session_.sandbox(), realpath_command(path));
  if (answer.exit_code == 40) {
    throw make_path_error("too many levels of symbolic links", path,
                          std::errc::too_many_symbolic_link_levels);
  }
  if (answer.exit_code != 0 || answer.out.empty()) {
    throw WorkspaceError("realpath failed in the sandbox: " + answer.err.substr(0, 300));
  }
  std::string out = answer.out;
  if (out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace lizard::workspace::internal
