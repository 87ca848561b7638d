// LizardSandboxBackend's files: the files API for reads, writes, stat, list
// and remove; guest helper execs where the API has no route (make_dir,
// realpath, resolving links, writing bytes that are not UTF-8). Request
// counts per operation: docs/backend.md, "Files".
//
// Thread-safe (state lives in the session).
#pragma once

#include <string>
#include <vector>

#include "lizard/sandbox_session.h"
#include "lizard/workspace/types.h"

namespace lizard::workspace::internal {

class SandboxFiles {
 public:
  explicit SandboxFiles(SandboxSession& session) : session_(session) {}

  // The SupportsFilesystem and SupportsRealpath operations of the backend.
  std::string read_bytes(const std::string& path);
  void write_bytes(const std::string& path, const std::string& data);
  FileEntry stat(const std::string& path);
  std::vector<FileEntry> list_dir(const std::string& path);
  bool exists(const std::string& path);
  void make_dir(const std::string& path);
  void remove(const std::string& path);
  std::string realpath(const std::string& path);

 private:
  void write_non_utf8(const std::string& sandbox_id, const std::string& path,
                      const std::string& data);
  // Resolves symlink entries with one probe exec for all of them.
  void resolve_links(const std::string& sandbox_id, const std::vector<FileEntry*>& entries,
                     bool strict);

  SandboxSession& session_;
};

}  // namespace lizard::workspace::internal
