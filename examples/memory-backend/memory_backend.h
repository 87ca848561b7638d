// MemoryBackend: a third party's toy workspace backend. Files only, kept in
// memory: it offers the filesystem capability and nothing else, so the
// suite SKIPs every rule that needs commands or realpath, with the reason.
//
// Environments live in a process-wide registry by ID, so a backend can be
// attached by ref and an environment outlives the backend object until
// destroy().
//
// Thread safety: every member function may be called from many threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lizard/workspace/backend.h"

namespace memory_backend {

class MemoryBackend final
    : public lizard::workspace::BackendBase<lizard::workspace::SupportsFilesystem> {
 public:
  // A new, empty environment.
  MemoryBackend();
  // The environment `ref` names ({"memory", id}); when it does not exist
  // (any more), every operation raises WorkspaceUnavailableError.
  // Throws std::invalid_argument for another provider.
  explicit MemoryBackend(const lizard::workspace::WorkspaceRef& ref);
  ~MemoryBackend() override;  // keeps the environment

  std::optional<lizard::workspace::WorkspaceRef> ref() const override;
  std::string working_dir() const override { return "/work"; }
  void destroy() override;

  std::string read_bytes(const std::string& path) override;
  void write_bytes(const std::string& path, const std::string& data) override;
  lizard::workspace::FileEntry stat(const std::string& path) override;
  std::vector<lizard::workspace::FileEntry> list_dir(const std::string& path) override;
  void make_dir(const std::string& path) override;
  void remove(const std::string& path) override;
  bool exists(const std::string& path) override;

  struct Store;

 private:
  std::string id_;
};

}  // namespace memory_backend
