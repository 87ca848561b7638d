// LocalWorkspaceBackend: the workspace contract on this machine. The
// environment is a directory; commands are host processes, each in its own
// process group, started in that directory with a clean environment.
//
// It exists so the conformance suite can prove itself on a backend that is
// not Lizard, and as a local default. It is not a sandbox: commands can
// reach the whole host.
//
// Thread safety: every member function may be called from many threads at once.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lizard/workspace/backend.h"

namespace lizard::workspace {

struct LocalOptions {
  // The environment's directory. Empty: a fresh directory under $TMPDIR
  // (created on first use). The ref id is its canonical path.
  std::string root;
  // Variables every command gets, on top of a minimal PATH/HOME/LANG.
  std::map<std::string, std::string> env;
  // Attach to an existing environment (its directory must exist, else
  // WorkspaceUnavailableError on first use).
  std::optional<WorkspaceRef> ref;
};

class LocalWorkspaceBackend final : public WorkspaceBackend,
                                    public SupportsCommands,
                                    public SupportsFilesystem,
                                    public SupportsRealpath {
 public:
  explicit LocalWorkspaceBackend(LocalOptions options = {});
  ~LocalWorkspaceBackend() override;  // leaves the directory in place

  Capabilities capabilities() const override;
  SupportsCommands* commands() override { return this; }
  SupportsFilesystem* filesystem() override { return this; }
  SupportsRealpath* realpath_support() override { return this; }
  std::optional<WorkspaceRef> ref() const override;
  std::string working_dir() const override;
  void destroy() override;

  CommandResult run(const Command& command, const RunOptions& options = {}) override;

  std::string read_bytes(const std::string& path) override;
  void write_bytes(const std::string& path, const std::string& data) override;
  FileEntry stat(const std::string& path) override;
  std::vector<FileEntry> list_dir(const std::string& path) override;
  void make_dir(const std::string& path) override;
  void remove(const std::string& path) override;
  bool exists(const std::string& path) override;

  std::string realpath(const std::string& path) override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard::workspace
