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
  // The environment's directory, created (with parents) by the constructor
  // when missing. Empty: a fresh mkdtemp directory under $TMPDIR. The ref id
  // is its canonical (symlink-free) path.
  std::string root;
  // Variables every command gets, on top of the minimal PATH (system
  // directories), HOME (the working directory) and LANG=C.UTF-8; per-call
  // RunOptions::env comes on top of these.
  std::map<std::string, std::string> env;
  // Attach to an existing environment {"local", <canonical path>}; takes
  // precedence over `root`. Its directory must exist, else every operation
  // raises WorkspaceUnavailableError (and nothing is created).
  std::optional<WorkspaceRef> ref;
};

// Semantics beyond backend.h:
// - Paths are host paths: the working directory is the environment, other
//   absolute paths reach the rest of the host.
// - run(): posix_spawn, own process group, stdin /dev/null, cwd = root.
//   Output is collected until the direct child has exited plus a drain grace
//   of 200 ms, so a background child holding stdout does not hold the result.
//   A timeout or cancellation sends SIGTERM, then SIGKILL, to the group.
// - read_bytes/write_bytes accept regular files only (a FIFO or device is
//   invalid_argument at once, never a hang).
// - stat() of a dangling or looping link describes the link itself as a
//   non-directory, so every entry list_dir() returns can be stat'ed; exists()
//   is true for it.
// - destroy() kills the process groups of commands still running and of
//   background children they left, then removes the directory.
class LocalWorkspaceBackend final
    : public BackendBase<SupportsCommands, SupportsFilesystem, SupportsRealpath> {
 public:
  // Creates the directory (see LocalOptions::root) unless attaching by ref.
  // Throws std::invalid_argument for a ref whose provider is not "local" or
  // whose id is not absolute, or an invalid env entry;
  // WorkspaceUnavailableError when the directory cannot be created.
  explicit LocalWorkspaceBackend(LocalOptions options = {});
  ~LocalWorkspaceBackend() override;  // leaves the directory and background processes in place
  LocalWorkspaceBackend(const LocalWorkspaceBackend&) = delete;
  LocalWorkspaceBackend& operator=(const LocalWorkspaceBackend&) = delete;

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
