#include "lizard/sandbox_session.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "lizard/workspace/utf8.h"

namespace lizard::workspace::internal {

namespace {

// The errno codes the files API names, as the contract's std::errc.
std::optional<std::errc> errc_of_code(std::string_view code) {
  static constexpr std::pair<std::string_view, std::errc> kTable[] = {
      {"ENOENT", std::errc::no_such_file_or_directory},
      {"EISDIR", std::errc::is_a_directory},
      {"ENOTDIR", std::errc::not_a_directory},
      {"EACCES", std::errc::permission_denied},
      {"EPERM", std::errc::permission_denied},
      {"EEXIST", std::errc::file_exists},
      {"ELOOP", std::errc::too_many_symbolic_link_levels},
      {"EINVAL", std::errc::invalid_argument},
      {"ENAMETOOLONG", std::errc::filename_too_long},
      {"EROFS", std::errc::read_only_file_system},
      {"ENOTEMPTY", std::errc::directory_not_empty},
  };
  for (const auto& [name, errc] : kTable) {
    if (name == code) return errc;
  }
  return std::nullopt;
}

// True when the kernel refuses `path` for its length: a name over 255 bytes
// (NAME_MAX) or the whole over 4,095 (PATH_MAX). The files API has no code
// for it and answers EINVAL, where a local call says ENAMETOOLONG.
bool too_long_for_the_kernel(std::string_view path) {
  if (path.size() >= 4096) return true;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end - start > 255) return true;
    start = end + 1;
  }
  return false;
}

// A sandbox ID as a ref may hold it: the characters the API's IDs use. An
// empty ID, "." or "..", or one with '/', '?', '#' or '%' would make the URL
// name another route (curl folds "/api/sandboxes/." into the list route).
bool valid_sandbox_id(const std::string& id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

void validate(const LizardOptions& options) {
  if (options.size != "small" && options.size != "medium" && options.size != "large") {
    throw std::invalid_argument("size must be small, medium or large, not \"" + options.size +
                                "\"");
  }
  if (options.lifetime.count() < 1000 || options.lifetime.count() > 2147483647) {
    throw std::invalid_argument("lifetime must be between 1 s and about 24.8 days");
  }
  if (options.api_key.empty())
    throw std::invalid_argument("an API key is required (LIZARD_API_KEY)");
  if (!options.ref && options.project.empty()) {
    throw std::invalid_argument("a project is required to create a sandbox (LIZARD_PROJECT_ID)");
  }
  if (options.request_timeout.count() <= 0) {
    throw std::invalid_argument("request_timeout must be positive");
  }
  for (const auto& [name, value] : options.tags) {
    if (name.empty() || name.find_first_of("=\n") != std::string::npos ||
        value.find('\n') != std::string::npos || !is_valid_utf8(name) || !is_valid_utf8(value)) {
      throw std::invalid_argument("a tag is UTF-8 \"name=value\" without newlines: " + name);
    }
  }
  if (options.ref) require_lizard_ref(*options.ref);
}

api::ClientOptions client_options(const LizardOptions& options) {
  validate(options);
  api::ClientOptions client;
  client.api_key = options.api_key;
  client.api_url = options.api_url;
  client.project = options.project;
  client.request_timeout = options.request_timeout;
  client.log = options.log;
  return client;
}

// Whether a create that failed with `error` may still have made a sandbox.
// Refusals (4xx, 401/403, 501, and failures before the request could be
// admitted) made none; a 2xx that cannot be decoded (or names no sandbox),
// or a transfer stopped mid-answer, may well have.
bool may_have_created(const WorkspaceError& error) {
  if (const auto* transient = dynamic_cast<const WorkspaceTransientError*>(&error)) {
    return transient->may_have_been_admitted();
  }
  return dynamic_cast<const api::ApiError*>(&error) == nullptr &&
         dynamic_cast<const WorkspaceUnavailableError*>(&error) == nullptr &&
         dynamic_cast<const WorkspaceNotSupportedError*>(&error) == nullptr;
}

}  // namespace

std::string random_run_id() {
  static std::mutex mutex;
  static std::mt19937_64 generator{std::random_device{}()};
  std::lock_guard lock(mutex);
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(generator()),
                static_cast<unsigned long long>(generator()));
  return text;
}

void require_lizard_ref(const WorkspaceRef& ref) {
  if (ref.provider != kLizardProvider || !valid_sandbox_id(ref.id)) {
    throw std::invalid_argument(
        "a Lizard ref has the form lizard:<sandboxId> (letters, digits, '_', '-', '.'; not \".\" "
        "or \"..\")");
  }
}

void throw_contract_error(const api::ApiError& error, std::string_view sandbox_id,
                          const RequestSubject& subject) {
  const std::string sandbox(sandbox_id);
  if (!sandbox.empty() && error.status() == 409) {
    // Paused (firecracker era) or otherwise not usable as it is: retrying
    // will not help until someone resumes it.
    if (error.code() == "SANDBOX_PAUSED") {
      throw WorkspaceUnavailableError("the Lizard sandbox " + sandbox +
                                      " is paused; resume it (POST /api/sandboxes/" + sandbox +
                                      "/resume) before using it");
    }
    throw WorkspaceUnavailableError(
        "the Lizard sandbox " + sandbox + " cannot be used now: " +
        (error.api_message().empty() ? error.code() : error.api_message()));
  }
  if (!subject.path.empty()) {
    const std::string path(subject.path);
    if (error.status() == 404) {
      throw make_path_error("no such file or directory", path,
                            std::errc::no_such_file_or_directory);
    }
    if (auto code = errc_of_code(error.code())) {
      if (*code == std::errc::invalid_argument && too_long_for_the_kernel(path)) {
        code = std::errc::filename_too_long;
      }
      throw make_path_error(error.api_message().empty() ? error.code() : error.api_message(), path,
                            *code);
    }
  }
  if (error.status() == 404 && !subject.missing.empty()) {
    throw WorkspaceError(std::string(subject.missing));
  }
  throw WorkspaceError(error.what());
}

SandboxSession::SandboxSession(LizardOptions options)
    : options_(std::move(options)), client_(client_options(options_)) {
  if (options_.ref) sandbox_id_ = options_.ref->id;
}

std::optional<WorkspaceRef> SandboxSession::ref() const {
  std::lock_guard lock(ref_mutex_);
  if (sandbox_id_.empty()) return std::nullopt;
  return WorkspaceRef{kLizardProvider, sandbox_id_};
}

std::string SandboxSession::id() const {
  std::lock_guard lock(ref_mutex_);
  return sandbox_id_;
}

std::string SandboxSession::gone_message() const {
  return "the Lizard sandbox " + id() + " is gone (unknown, killed or expired)";
}

std::string SandboxSession::sandbox() {
  std::lock_guard lock(state_mutex_);
  if (destroyed_) throw WorkspaceUnavailableError("the Lizard sandbox was destroyed");
  if (gone_) throw WorkspaceUnavailableError(gone_message());
  if (ready_) return id();
  if (options_.ref) {
    attach();
    ready_ = true;
    return id();
  }
  const std::string sandbox_id = create();
  ready_ = true;
  write_tags(sandbox_id);
  return sandbox_id;
}

void SandboxSession::attach() {
  try {
    client_.get_sandbox(options_.ref->id);
  } catch (const api::NotFoundError&) {
    gone_ = true;
    throw WorkspaceUnavailableError(gone_message());
  } catch (const api::ApiError& error) {
    throw_contract_error(error, options_.ref->id, {});
  }
}

api::CreateSandboxRequest SandboxSession::create_request() {
  api::CreateSandboxRequest request;
  try {
    request.project_id = client_.resolve_project(options_.project);
  } catch (const api::ApiError& error) {
    throw_contract_error(error, {}, {});  // an unknown or ambiguous project
  }
  request.template_name = options_.template_name;
  request.timeout_ms = options_.lifetime.count();
  request.size = options_.size;
  request.envs = options_.env;
  request.metadata = options_.metadata;
  for (const auto& [name, value] : options_.tags) request.metadata[name] = value;
  return request;
}

std::string SandboxSession::create() {
  if (create_outcome_unknown_) {
    throw WorkspaceUnavailableError(
        "an earlier sandbox create may have been admitted; not creating a second sandbox");
  }
  const api::CreateSandboxRequest request = create_request();
  api::SandboxInfo info;
  try {
    info = client_.create_sandbox(request);
  } catch (const WorkspaceError& error) {
    if (may_have_created(error)) create_outcome_unknown_ = true;
    // A refusal (a 4xx answer): nothing was created.
    if (const auto* refusal = dynamic_cast<const api::ApiError*>(&error)) {
      throw_contract_error(*refusal, {}, {});
    }
    throw;
  }
  if (!valid_sandbox_id(info.sandbox_id)) {
    create_outcome_unknown_ = true;
    throw WorkspaceError("the create answer names no usable sandbox ID");
  }
  std::lock_guard ref_lock(ref_mutex_);
  sandbox_id_ = info.sandbox_id;
  return info.sandbox_id;
}

// The tags file (LizardOptions::tags), best effort: the sandbox exists
// whether or not it is written, and the operation that created it goes on.
void SandboxSession::write_tags(const std::string& sandbox_id) {
  if (options_.tags.empty()) return;
  std::string text;
  for (const auto& [name, value] : options_.tags) text += name + "=" + value + "\n";
  try {
    client_.write_text_file(sandbox_id, kTagsFile, text);
  } catch (const std::exception& e) {
    if (options_.log) {
      options_.log(std::string("could not write the sandbox's tags file: ") +
                   api::redact(e.what(), options_.api_key));
    }
  }
}

void SandboxSession::destroy() {
  std::lock_guard lock(state_mutex_);
  if (destroyed_) return;
  const std::string sandbox_id = id();
  if (!sandbox_id.empty()) {
    try {
      client_.kill_sandbox(sandbox_id);
    } catch (const api::ApiError& error) {
      throw_contract_error(error, sandbox_id, {});
    }
  }
  destroyed_ = true;
}

void SandboxSession::raise(const api::ApiError& error, const std::string& sandbox_id,
                           const RequestSubject& subject) {
  if (error.status() == 404 && !sandbox_id.empty() &&
      (is_destroyed() || confirm_gone(sandbox_id, error.code()))) {
    throw_unavailable();
  }
  throw_contract_error(error, sandbox_id, subject);
}

void SandboxSession::throw_unavailable() const {
  if (destroyed_) throw WorkspaceUnavailableError("the Lizard sandbox was destroyed");
  throw WorkspaceUnavailableError(gone_message());
}

bool SandboxSession::confirm_gone(const std::string& sandbox_id, std::string_view code) {
  if (code == "ENOENT") return false;
  bool gone = code == "SANDBOX_NOT_FOUND";
  if (!gone) {
    try {
      client_.get_sandbox(sandbox_id);
    } catch (const api::NotFoundError&) {
      gone = true;
    } catch (const api::ApiError& error) {
      throw_contract_error(error, sandbox_id, {});
    }
  }
  if (gone) gone_ = true;
  return gone;
}

api::ExecResult SandboxSession::exec(const std::string& sandbox_id, const api::ExecRequest& request,
                                     const api::CallOptions& call) {
  return this->call(sandbox_id, [&](api::Client& client, const std::string& sandbox) {
    return client.exec(sandbox, request, call);
  });
}

api::ExecResult SandboxSession::run_helper(const std::string& sandbox_id,
                                           std::vector<std::string> argv) {
  api::ExecRequest request;
  request.cmd = std::move(argv);
  request.timeout_ms = 60000;
  return exec(sandbox_id, request, {.timeout = std::chrono::milliseconds(90000)});
}

}  // namespace lizard::workspace::internal
