// The workspace backend interface: one environment in which an agent runs
// commands and works with files.
//
// A backend is a WorkspaceBackend plus any of three capability interfaces
// (SupportsCommands, SupportsFilesystem, SupportsRealpath). Generic code asks
// at run time: `if (auto* cmd = backend.commands()) cmd->run(...)`. Code that
// knows the concrete type calls `backend.run(...)` directly.
//
// A concrete backend derives from BackendBase<the interfaces it implements>:
// capabilities() and the three accessors are then computed from that list, so
// they cannot disagree with what the class implements. Only a backend whose
// capabilities are decided at run time (one that forwards to another backend)
// derives from WorkspaceBackend directly and keeps them consistent itself.
//
// Thread safety: every backend in this project, and every backend the
// conformance suite accepts, is safe to call from many threads at once
// (`env.concurrent-first-use`, `cmd.concurrent`).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lizard/workspace/errors.h"
#include "lizard/workspace/types.h"

namespace lizard::workspace {

class SupportsCommands {
 public:
  virtual ~SupportsCommands() = default;

  // Runs `command` in the environment and waits for it.
  //
  // - Starts in working_dir(), stdin at EOF, environment = the backend's own
  //   variables + options.env; nothing of the host process's environment.
  // - Returns the exit code (127 missing program, 126 not executable, 128+N
  //   killed by signal N) and both streams, repaired to valid UTF-8.
  // Throws:
  //   std::invalid_argument      empty argv, bad timeout, bad env name/value
  //   WorkspaceTimeoutError      over options.timeout (partial output inside)
  //   WorkspaceOutputLimitError  a stream over kOutputLimitBytes
  //   WorkspaceCancelledError    options.stop was requested
  //   WorkspaceUnavailableError  the environment is gone (incl. destroyed mid-command)
  //   WorkspaceTransientError    the transport failed in a way that may pass
  virtual CommandResult run(const Command& command, const RunOptions& options = {}) = 0;
};

class SupportsFilesystem {
 public:
  virtual ~SupportsFilesystem() = default;

  // All paths are absolute POSIX paths inside the environment; a relative
  // path or one containing NUL is std::invalid_argument. Path failures are
  // std::filesystem::filesystem_error with the POSIX std::errc.

  // The whole file. Follows symlinks. is_a_directory for a directory.
  virtual std::string read_bytes(const std::string& path) = 0;
  // Creates missing parents; replaces the content of an existing file while
  // keeping its mode bits; writes through a symlink to its target.
  virtual void write_bytes(const std::string& path, const std::string& data) = 0;
  // Follows symlinks (a link to a directory is a directory).
  virtual FileEntry stat(const std::string& path) = 0;
  // One level deep, sorted by name (byte order), links to directories
  // reported as directories; a dangling or looping link is a non-directory.
  virtual std::vector<FileEntry> list_dir(const std::string& path) = 0;
  // Creates parents; an existing directory is a no-op; an existing
  // non-directory is file_exists.
  virtual void make_dir(const std::string& path) = 0;
  // Removes a file, a symlink (never its target) or a directory tree.
  // Refuses (std::invalid_argument) the working directory, any ancestor of
  // it and "/", removing nothing.
  virtual void remove(const std::string& path) = 0;
  // True for anything that stat() would find; never throws a path error.
  virtual bool exists(const std::string& path) = 0;
};

class SupportsRealpath {
 public:
  virtual ~SupportsRealpath() = default;

  // Resolves symlinks and "." / ".." like realpath(1) -m: missing components
  // are kept as written; a relative link target resolves from the link's
  // directory; `link/..` climbs from the link's target. A link loop ends
  // within seconds, with too_many_symbolic_link_levels or a path inside the
  // loop's directory.
  virtual std::string realpath(const std::string& path) = 0;
};

class WorkspaceBackend {
 public:
  virtual ~WorkspaceBackend() = default;

  // What this backend offers. A capability listed here must work; the
  // accessors below return non-null exactly for the listed capabilities
  // (BackendBase guarantees it; the suite checks it for every backend).
  virtual Capabilities capabilities() const = 0;
  virtual SupportsCommands* commands() { return nullptr; }
  virtual SupportsFilesystem* filesystem() { return nullptr; }
  virtual SupportsRealpath* realpath_support() { return nullptr; }

  // Empty until the environment exists (or already final when the backend
  // was built from a ref); once set it never changes. Never blocks on I/O.
  virtual std::optional<WorkspaceRef> ref() const = 0;

  // Absolute, normalized, symlink-free; `pwd -P` in a command prints it.
  // Never blocks on I/O.
  virtual std::string working_dir() const = 0;

  // Ends the environment and discards its files. Idempotent. Later
  // operations raise WorkspaceUnavailableError; a command running at the
  // time raises WorkspaceUnavailableError too.
  virtual void destroy() = 0;
};

namespace detail {
template <class Interface>
constexpr Capability capability_of() {
  if constexpr (std::is_same_v<Interface, SupportsCommands>) {
    return Capability::kCommands;
  } else if constexpr (std::is_same_v<Interface, SupportsFilesystem>) {
    return Capability::kFilesystem;
  } else {
    static_assert(std::is_same_v<Interface, SupportsRealpath>,
                  "BackendBase takes only SupportsCommands, SupportsFilesystem, SupportsRealpath");
    return Capability::kRealpath;
  }
}
}  // namespace detail

// The base of a concrete backend: `class Mine final : public
// BackendBase<SupportsFilesystem> { ... }` implements the file operations and
// ref()/working_dir()/destroy(); capabilities() is {kFilesystem},
// filesystem() returns this, commands() and realpath_support() return null.
// Listing an interface twice does not compile.
template <class... Offered>
class BackendBase : public WorkspaceBackend, public Offered... {
  template <class Interface>
  static constexpr bool kOffers = (std::is_same_v<Interface, Offered> || ...);

 public:
  static constexpr Capabilities kCapabilities{detail::capability_of<Offered>()...};

  Capabilities capabilities() const final { return kCapabilities; }
  SupportsCommands* commands() final { return offered<SupportsCommands>(); }
  SupportsFilesystem* filesystem() final { return offered<SupportsFilesystem>(); }
  SupportsRealpath* realpath_support() final { return offered<SupportsRealpath>(); }

 private:
  template <class Interface>
  Interface* offered() {
    if constexpr (kOffers<Interface>) {
      return this;
    } else {
      return nullptr;
    }
  }
};

}  // namespace lizard::workspace
