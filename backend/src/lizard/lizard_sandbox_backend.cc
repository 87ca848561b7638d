// LizardSandboxBackend: the contract's operations over one sandbox. The
// work is in three parts: SandboxSession (the sandbox's lifecycle and the
// mapping of API errors to the contract's), SandboxRuns (commands) and
// SandboxFiles (files).
#include "lizard/workspace/lizard_sandbox_backend.h"

#include <utility>

#include "lizard/api/client.h"
#include "lizard/sandbox_files.h"
#include "lizard/sandbox_runs.h"
#include "lizard/sandbox_session.h"
#include "lizard/workspace/checks.h"

namespace lizard::workspace {

// The client's variables, read in one place (ClientOptions::from_environment).
LizardOptions LizardOptions::from_environment() {
  api::ClientOptions client = api::ClientOptions::from_environment();
  LizardOptions options;
  options.api_key = std::move(client.api_key);
  options.project = std::move(client.project);
  options.api_url = std::move(client.api_url);
  return options;
}

namespace {

// The backend's env reaches every command (and the create's envs): checked
// as a call's env is, once, before anything is sent.
LizardOptions checked(LizardOptions options) {
  validate_env(options.env, "LizardOptions::env");
  return options;
}

}  // namespace

class LizardSandboxBackend::Impl {
 public:
  explicit Impl(LizardOptions options) : session_(checked(std::move(options))) {}

  internal::SandboxSession session_;
  internal::SandboxRuns runs_{session_};
  internal::SandboxFiles files_{session_};
};

LizardSandboxBackend::LizardSandboxBackend(LizardOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

LizardSandboxBackend::~LizardSandboxBackend() = default;

std::optional<WorkspaceRef> LizardSandboxBackend::ref() const { return impl_->session_.ref(); }

std::string LizardSandboxBackend::working_dir() const { return internal::kLizardWorkingDir; }

void LizardSandboxBackend::destroy() { impl_->session_.destroy(); }

CommandResult LizardSandboxBackend::run(const Command& command, const RunOptions& options) {
  return impl_->runs_.run(command, options);
}

std::string LizardSandboxBackend::read_bytes(const std::string& path) {
  return impl_->files_.read_bytes(path);
}

void LizardSandboxBackend::write_bytes(const std::string& path, const std::string& data) {
  impl_->files_.write_bytes(path, data);
}

FileEntry LizardSandboxBackend::stat(const std::string& path) { return impl_->files_.stat(path); }

std::vector<FileEntry> LizardSandboxBackend::list_dir(const std::string& path) {
  return impl_->files_.list_dir(path);
}

void LizardSandboxBackend::make_dir(const std::string& path) { impl_->files_.make_dir(path); }

void LizardSandboxBackend::remove(const std::string& path) { impl_->files_.remove(path); }

bool LizardSandboxBackend::exists(const std::string& path) { return impl_->files_.exists(path); }

std::string LizardSandboxBackend::realpath(const std::string& path) {
  return impl_->files_.realpath(path);
}

LizardSandbox::LizardSandbox(LizardOptions options) : options_(std::move(options)) {}

std::unique_ptr<LizardSandboxBackend> LizardSandbox::attach(const WorkspaceRef& ref) const {
  LizardOptions options = options_;
  options.ref = ref;
  return std::make_unique<LizardSandboxBackend>(std::move(options));
}

void LizardSandbox::destroy(const WorkspaceRef& ref) const {
  internal::require_lizard_ref(ref);
  api::ClientOptions client_options;
  client_options.api_key = options_.api_key;
  client_options.api_url = options_.api_url;
  client_options.request_timeout = options_.request_timeout;
  client_options.log = options_.log;
  api::Client client(std::move(client_options));
  try {
    client.kill_sandbox(ref.id);
  } catch (const api::ApiError& error) {
    internal::throw_contract_error(error, ref.id, {});
  }
}

}  // namespace lizard::workspace
