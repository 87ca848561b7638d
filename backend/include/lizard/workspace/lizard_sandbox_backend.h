// LizardSandboxBackend: the reference workspace backend, one Lizard cloud
// sandbox per backend object (see docs/backend.md).
//
//   auto options = lizard::workspace::LizardOptions::from_environment();
//   lizard::workspace::LizardSandboxBackend backend(options);   // no request yet
//   auto result = backend.run(lizard::workspace::Argv{{"uname", "-a"}});  // creates the sandbox
//   auto ref = backend.ref();                                   // {"lizard", sandboxId}
//
// Thread safety: every member function may be called from many threads at
// once; concurrent first use creates exactly one sandbox.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lizard/workspace/backend.h"

namespace lizard::workspace {

// Where LizardOptions::tags live inside a sandbox.
inline constexpr const char* kTagsFile = "/root/.lizard/tags";

struct LizardOptions {
  std::string api_key;  // LIZARD_API_KEY; never sent anywhere but the auth header
  std::string project;  // LIZARD_PROJECT_ID: project ID, slug or name
  std::string api_url = "https://lizard.build";  // LIZARD_API_URL
  std::string template_name = "interpreter";
  std::string size = "medium";  // "small", "medium" or "large"; anything else: invalid_argument
  std::chrono::milliseconds lifetime{std::chrono::hours(1)};
  // Every command gets these (then per-call env); a name that is empty or
  // holds '=' or NUL, or a value with NUL: invalid_argument from the constructor.
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> metadata;  // create metadata (some platforms drop it)
  // Labels that find the sandbox later whatever the platform keeps: sent as
  // create metadata too, and written right after the create (one files-API
  // request) to kTagsFile inside the sandbox, one "name=value" line each.
  // Names and values must be UTF-8 without '=' (in names) or newlines.
  std::map<std::string, std::string> tags;
  std::optional<WorkspaceRef> ref;  // attach to this sandbox instead of creating one
  // Per-HTTP-request deadline for requests that are not command execution.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(60)};
  // Receives one line per request (method, path, status, time), key redacted. Off by default.
  std::function<void(std::string_view)> log;

  // Reads LIZARD_API_KEY, LIZARD_PROJECT_ID and LIZARD_API_URL (the only
  // place the environment is read). Missing variables stay empty/default.
  static LizardOptions from_environment();
};

class LizardSandboxBackend final
    : public BackendBase<SupportsCommands, SupportsFilesystem, SupportsRealpath> {
 public:
  // Validates the options (size, lifetime, the key always, the project unless
  // a ref is given: std::invalid_argument) and sends nothing.
  explicit LizardSandboxBackend(LizardOptions options);
  ~LizardSandboxBackend() override;  // deletes nothing
  LizardSandboxBackend(const LizardSandboxBackend&) = delete;
  LizardSandboxBackend& operator=(const LizardSandboxBackend&) = delete;

  std::optional<WorkspaceRef> ref() const override;
  std::string working_dir() const override;  // "/workspace"
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

// Builds backends for saved refs without I/O, and destroys sandboxes by ref.
// Thread-safe.
class LizardSandbox {
 public:
  explicit LizardSandbox(LizardOptions options);
  // A backend attached to `ref` (no request until its first operation).
  std::unique_ptr<LizardSandboxBackend> attach(const WorkspaceRef& ref) const;
  // Deletes the sandbox; an already gone sandbox is not an error.
  void destroy(const WorkspaceRef& ref) const;

 private:
  LizardOptions options_;
};

}  // namespace lizard::workspace
