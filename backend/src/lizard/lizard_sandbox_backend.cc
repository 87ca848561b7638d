#include "lizard/workspace/lizard_sandbox_backend.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>

#include "lizard/api/client.h"
#include "lizard/guest_helpers.h"
#include "lizard/run_attempts.h"
#include "lizard/workspace/checks.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace {

namespace {

constexpr const char* kWorkingDir = "/workspace";
constexpr const char* kProvider = "lizard";
// The API's largest per-request exec timeout; the server may cut it shorter
// (its own limit), and the run is then re-attached.
constexpr std::int64_t kExecTimeoutMs = 600000;
// Finished runs whose files are removed together by a later run.
constexpr std::size_t kCleanupBatch = 16;

std::string random_run_id() {
  static std::mutex mutex;
  static std::mt19937_64 generator{std::random_device{}()};
  std::lock_guard lock(mutex);
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(generator()),
                static_cast<unsigned long long>(generator()));
  return text;
}

std::string base_name(const std::string& normal) {
  if (normal == "/") return "/";
  return normal.substr(normal.rfind('/') + 1);
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::optional<std::errc> errc_of_code(const std::string& code) {
  if (code == "ENOENT") return std::errc::no_such_file_or_directory;
  if (code == "EISDIR") return std::errc::is_a_directory;
  if (code == "ENOTDIR") return std::errc::not_a_directory;
  if (code == "EACCES" || code == "EPERM") return std::errc::permission_denied;
  if (code == "EEXIST") return std::errc::file_exists;
  if (code == "ELOOP") return std::errc::too_many_symbolic_link_levels;
  if (code == "EINVAL") return std::errc::invalid_argument;
  if (code == "ENAMETOOLONG") return std::errc::filename_too_long;
  if (code == "EROFS") return std::errc::read_only_file_system;
  if (code == "ENOTEMPTY") return std::errc::directory_not_empty;
  return std::nullopt;
}

std::errc errc_of_errno(int e) { return static_cast<std::errc>(e); }

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

void require_lizard_ref(const WorkspaceRef& ref) {
  if (ref.provider != kProvider || !valid_sandbox_id(ref.id)) {
    throw std::invalid_argument(
        "a Lizard ref has the form lizard:<sandboxId> (letters, digits, '_', '-', '.'; not \".\" "
        "or \"..\")");
  }
}

// The Lizard API's JSON carries UTF-8 only: a path with other bytes cannot
// reach the sandbox intact.
void require_carriable_path(const std::string& path) {
  require_absolute_path(path);
  if (!is_valid_utf8(path)) {
    throw std::invalid_argument("the Lizard API carries UTF-8 paths only; this path is not UTF-8");
  }
}

// Pauses a run between attempts; the stop token cuts it short.
void pause_for(std::chrono::milliseconds wait, std::stop_token stop) {
  std::mutex pause_mutex;
  std::condition_variable_any pause;
  std::unique_lock pause_lock(pause_mutex);
  pause.wait_for(pause_lock, stop, wait, [] { return false; });
}

bool is_dir_type(const std::string& type) { return type == "dir" || type == "directory"; }

}  // namespace

LizardOptions LizardOptions::from_environment() {
  LizardOptions options;
  if (const char* v = std::getenv("LIZARD_API_KEY")) options.api_key = v;
  if (const char* v = std::getenv("LIZARD_PROJECT_ID")) options.project = v;
  if (const char* v = std::getenv("LIZARD_API_URL"); v != nullptr && *v != '\0') {
    options.api_url = v;
  }
  return options;
}

class LizardSandboxBackend::Impl {
 public:
  explicit Impl(LizardOptions options) : options_(std::move(options)), client_(client_options()) {
    if (options_.ref) {
      require_lizard_ref(*options_.ref);
      std::lock_guard lock(ref_mutex_);
      sandbox_id_ = options_.ref->id;
    }
  }

  api::ClientOptions client_options() const {
    if (options_.size != "small" && options_.size != "medium" && options_.size != "large") {
      throw std::invalid_argument("size must be small, medium or large, not \"" + options_.size +
                                  "\"");
    }
    if (options_.lifetime.count() < 1000 || options_.lifetime.count() > 2147483647) {
      throw std::invalid_argument("lifetime must be between 1 s and about 24.8 days");
    }
    if (options_.api_key.empty()) {
      throw std::invalid_argument("an API key is required (LIZARD_API_KEY)");
    }
    if (!options_.ref && options_.project.empty()) {
      throw std::invalid_argument("a project is required to create a sandbox (LIZARD_PROJECT_ID)");
    }
    if (options_.request_timeout.count() <= 0) {
      throw std::invalid_argument("request_timeout must be positive");
    }
    for (const auto& [name, value] : options_.tags) {
      if (name.empty() || name.find_first_of("=\n") != std::string::npos ||
          value.find('\n') != std::string::npos || !is_valid_utf8(name) || !is_valid_utf8(value)) {
        throw std::invalid_argument("a tag is UTF-8 \"name=value\" without newlines: " + name);
      }
    }
    api::ClientOptions c;
    c.api_key = options_.api_key;
    c.api_url = options_.api_url;
    c.project = options_.project;
    c.request_timeout = options_.request_timeout;
    c.log = options_.log;
    return c;
  }

  std::optional<WorkspaceRef> ref() const {
    std::lock_guard lock(ref_mutex_);
    if (sandbox_id_.empty()) return std::nullopt;
    return WorkspaceRef{kProvider, sandbox_id_};
  }

  // The sandbox to talk to: created (once) or attached (once) on first use.
  std::string sandbox() {
    std::lock_guard lock(state_mutex_);
    if (destroyed_) throw WorkspaceUnavailableError("the Lizard sandbox was destroyed");
    if (gone_) throw WorkspaceUnavailableError(gone_message());
    if (ready_) return id();
    if (options_.ref) {
      try {
        client_.get_sandbox(options_.ref->id);
      } catch (const api::NotFoundError&) {
        gone_ = true;
        throw WorkspaceUnavailableError(gone_message());
      }
      ready_ = true;
      return id();
    }
    if (create_outcome_unknown_) {
      throw WorkspaceUnavailableError(
          "an earlier sandbox create may have been admitted; not creating a second sandbox");
    }
    api::CreateSandboxRequest request;
    request.template_name = options_.template_name;
    request.project_id = client_.resolve_project(options_.project);
    request.timeout_ms = options_.lifetime.count();
    request.size = options_.size;
    request.envs = options_.env;
    request.metadata = options_.metadata;
    for (const auto& [name, value] : options_.tags) request.metadata[name] = value;
    api::SandboxInfo info;
    try {
      info = client_.create_sandbox(request);
    } catch (const WorkspaceTransientError& e) {
      if (e.may_have_been_admitted()) create_outcome_unknown_ = true;
      throw;
    } catch (const api::ApiError&) {
      throw;  // a 4xx answer: the server refused, nothing was created
    } catch (const WorkspaceUnavailableError&) {
      throw;  // 401/403: refused
    } catch (const WorkspaceNotSupportedError&) {
      throw;  // 501: refused
    } catch (const WorkspaceError&) {
      // A 2xx whose body cannot be decoded (or names no sandbox), or a
      // transfer stopped mid-answer: the server may well have created the
      // sandbox, so a second create could leave two.
      create_outcome_unknown_ = true;
      throw;
    }
    if (!valid_sandbox_id(info.sandbox_id)) {
      create_outcome_unknown_ = true;
      throw WorkspaceError("the create answer names no usable sandbox ID");
    }
    {
      std::lock_guard ref_lock(ref_mutex_);
      sandbox_id_ = info.sandbox_id;
    }
    ready_ = true;
    write_tags(info.sandbox_id);
    return info.sandbox_id;
  }

  std::string id() const {
    std::lock_guard lock(ref_mutex_);
    return sandbox_id_;
  }

  // The tags file (LizardOptions::tags), best effort: the sandbox exists
  // whether or not it is written, and the operation that created it goes on.
  void write_tags(const std::string& sandbox_id) {
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

  std::string gone_message() const {
    return "the Lizard sandbox " + id() + " is gone (unknown, killed or expired)";
  }

  // After a 404 on a sandbox route: is the sandbox itself gone? A server may
  // answer a missing sandbox without SANDBOX_NOT_FOUND, so ask when unsure.
  bool confirm_gone(const std::string& sandbox_id, const std::string& code) {
    if (code == "ENOENT") return false;
    bool gone = code == "SANDBOX_NOT_FOUND";
    if (!gone) {
      try {
        client_.get_sandbox(sandbox_id);
      } catch (const api::NotFoundError&) {
        gone = true;
      }
    }
    if (gone) {
      std::lock_guard lock(state_mutex_);
      gone_ = true;
    }
    return gone;
  }

  // A 409 on a sandbox route: the sandbox is paused (firecracker era) or
  // otherwise not usable as it is; retrying will not help until someone
  // resumes it.
  [[noreturn]] void throw_conflict(const api::ConflictError& e) {
    if (e.code() == "SANDBOX_PAUSED") {
      throw WorkspaceUnavailableError("the Lizard sandbox " + id() +
                                      " is paused; resume it (POST /api/sandboxes/" + id() +
                                      "/resume) before using it");
    }
    throw WorkspaceUnavailableError("the Lizard sandbox " + id() + " cannot be used now: " +
                                    (e.api_message().empty() ? e.code() : e.api_message()));
  }

  [[noreturn]] void throw_unavailable() {
    std::lock_guard lock(state_mutex_);
    if (destroyed_) throw WorkspaceUnavailableError("the Lizard sandbox was destroyed");
    throw WorkspaceUnavailableError(gone_message());
  }

  // Maps an API answer about `path` to the contract's error.
  [[noreturn]] void throw_path_error(const api::ApiError& e, const std::string& sandbox_id,
                                     const std::string& path) {
    if (const auto* conflict = dynamic_cast<const api::ConflictError*>(&e))
      throw_conflict(*conflict);
    if (e.status() == 404) {
      if (confirm_gone(sandbox_id, e.code())) throw_unavailable();
      throw make_path_error("no such file or directory", path,
                            std::errc::no_such_file_or_directory);
    }
    if (const auto code = errc_of_code(e.code())) {
      throw make_path_error(e.api_message().empty() ? e.code() : e.api_message(), path, *code);
    }
    throw;
  }

  // Runs a guest helper (guest_helpers.h); it sets no working directory or
  // environment through the API (eras that ignore them would differ).
  api::ExecResult helper(const std::string& sandbox_id, std::vector<std::string> argv,
                         std::stop_token stop = {}) {
    api::ExecRequest request;
    request.cmd = std::move(argv);
    request.timeout_ms = 60000;
    try {
      return client_.exec(sandbox_id, request, {std::chrono::milliseconds(90000), std::move(stop)});
    } catch (const api::NotFoundError& e) {
      if (confirm_gone(sandbox_id, e.code())) throw_unavailable();
      throw;
    } catch (const api::ConflictError& e) {
      throw_conflict(e);
    }
  }

  // Finished runs' files are removed in batches (one rm in the sandbox per
  // kCleanupBatch runs), at once when one of them holds large output.
  std::vector<std::string> take_cleanup() {
    std::lock_guard lock(cleanup_mutex_);
    std::vector<std::string> out;
    if (cleanup_.size() < kCleanupBatch && !cleanup_urgent_) return out;
    cleanup_urgent_ = false;
    while (!cleanup_.empty() && out.size() < 64) {
      out.push_back(std::move(cleanup_.back()));
      cleanup_.pop_back();
    }
    return out;
  }
  void add_cleanup(std::vector<std::string> ids, bool urgent = false) {
    std::lock_guard lock(cleanup_mutex_);
    for (auto& id : ids) cleanup_.push_back(std::move(id));
    if (urgent) cleanup_urgent_ = true;
  }

  std::string read_run_file(const std::string& sandbox_id, const std::string& run_id,
                            const char* name, std::uint64_t size) {
    if (size == 0) return {};
    std::string bytes;
    try {
      bytes = client_.read_file(sandbox_id, internal::run_file(internal::kRunRoot, run_id, name));
    } catch (const api::NotFoundError& e) {
      if (confirm_gone(sandbox_id, e.code())) throw_unavailable();
      throw WorkspaceError("the output of the command is missing from the sandbox");
    }
    // A background child may still be adding to the file; the status is the cut.
    if (bytes.size() > size) bytes.resize(size);
    return bytes;
  }

  CommandResult run(const Command& command, const RunOptions& options) {
    validate_run(command, options);
    if (options.stop.stop_requested()) throw WorkspaceCancelledError("cancelled before it started");
    internal::RunSpec spec = run_spec(command, options);
    // Refused at once, before any request: the kernel would refuse it in
    // the sandbox, and nothing could tell that apart from a lost answer.
    if (auto problem = internal::argument_list_problem(spec); !problem.empty()) {
      throw WorkspaceError(problem);
    }
    const std::string sandbox_id = sandbox();
    spec.cleanup = take_cleanup();
    const internal::Envelope envelope = run_until_answered(sandbox_id, spec, options.stop);
    return result_of(sandbox_id, spec, envelope, options);
  }

  // The run as the helper takes it: the command, its working directory and
  // its exact environment (the backend's, then the run's) travel in the
  // exec's argument list, never in the API's `envs`/`workdir`, which the
  // kubernetes era ignores.
  internal::RunSpec run_spec(const Command& command, const RunOptions& options) const {
    internal::RunSpec spec;
    spec.run_id = random_run_id();
    spec.argv = command.is_shell() ? std::vector<std::string>{"/bin/sh", "-c", command.script()}
                                   : command.argv();
    std::map<std::string, std::string> env = options_.env;
    for (const auto& [k, v] : options.env) env[k] = v;
    spec.env.assign(env.begin(), env.end());
    spec.workdir = kWorkingDir;
    if (options.timeout) {
      const double ms = std::ceil(options.timeout->count() * 1000.0);
      spec.timeout_ms = static_cast<std::uint64_t>(std::max(1.0, std::min(ms, 1e15)));
    }
    spec.limit_bytes = kOutputLimitBytes;
    return spec;
  }

  // Sends the run's exec until its envelope comes back: the first exec
  // starts the command, every later one re-attaches to it (internal::
  // RunAttempts decides when).
  internal::Envelope run_until_answered(const std::string& sandbox_id,
                                        const internal::RunSpec& spec, std::stop_token stop) {
    using internal::RunAttempts;
    using Clock = RunAttempts::Clock;
    api::ExecRequest request;
    request.cmd = internal::run_command(spec);
    request.timeout_ms = kExecTimeoutMs;
    std::optional<std::chrono::milliseconds> timeout;
    if (spec.timeout_ms > 0) timeout = std::chrono::milliseconds(spec.timeout_ms);
    RunAttempts attempts(timeout, Clock::now());
    const auto out_of_time = [&] {
      add_cleanup_later(spec.run_id);
      return WorkspaceTransientError(
          "the command's outcome is unknown: no answer within " + attempts.deadline_text() +
              " (its timeout, the kill grace and a margin)" +
              (attempts.last_problem().empty() ? "" : ": " + attempts.last_problem()),
          true);
    };
    for (;;) {
      if (is_destroyed()) throw_unavailable();
      const auto wait = attempts.next_wait(Clock::now());
      if (!wait) throw out_of_time();
      const bool answered_before = attempts.started();
      api::ExecResult answer;
      try {
        answer = client_.exec(sandbox_id, request, {*wait, stop});
      } catch (const WorkspaceCancelledError&) {
        cancel_run(sandbox_id, spec.run_id);
        throw WorkspaceCancelledError("the command was cancelled; its process group was stopped");
      } catch (const api::NotFoundError& e) {
        if (is_destroyed() || confirm_gone(sandbox_id, e.code())) throw_unavailable();
        throw;
      } catch (const api::ConflictError& e) {
        throw_conflict(e);
      } catch (const WorkspaceTransientError& e) {
        if (is_destroyed()) throw_unavailable();
        const auto step = attempts.after_transport_failure(e.may_have_been_admitted(),
                                                           e.retry_after(), e.what(), Clock::now());
        if (step.next == RunAttempts::Next::kRethrow) throw;
        if (step.next == RunAttempts::Next::kOutOfTime) throw out_of_time();
        if (e.may_have_been_admitted() && confirm_gone(sandbox_id, "")) throw_unavailable();
        if (step.next != RunAttempts::Next::kPause) {
          // A refusal of a re-attach (429, 408) still leaves the run going:
          // the error says so (admitted), with the server's Retry-After.
          add_cleanup_later(spec.run_id);
          throw WorkspaceTransientError(
              std::string("the command's outcome is unknown (it was started, ") +
                  (step.next == RunAttempts::Next::kGiveUpRefused
                       ? "then re-attaching was refused for longer than the backend waits"
                       : "then repeated failures") +
                  "): " + e.what(),
              true, e.http_status(), e.retry_after());
        }
        pause_for(step.pause, stop);
        continue;
      }
      attempts.note_answered();
      try {
        if (auto envelope = internal::parse_envelope(answer.out)) return *envelope;
      } catch (const std::runtime_error& e) {
        throw WorkspaceError(std::string("could not run the command: ") + e.what());
      }
      // No envelope and no output at all, at the first answer, with the
      // shell's "cannot execute" status: the helper never started (the
      // sandbox has no usable /bin/sh or setsid, or refused the arguments).
      if (!answered_before && !answer.timed_out && answer.out.empty() &&
          (answer.exit_code == 126 || answer.exit_code == 127)) {
        throw WorkspaceError("could not start the run helper in the sandbox (exit " +
                             std::to_string(answer.exit_code) + "): " + answer.err.substr(0, 300));
      }
      // The server's per-request limit cut the exec: re-attach. Otherwise the
      // helper died without an answer: the sandbox was killed, or something
      // killed the helper. Either way, ask.
      if (!answer.timed_out && (is_destroyed() || confirm_gone(sandbox_id, ""))) {
        throw_unavailable();
      }
      const auto step =
          attempts.after_missing_envelope(answer.timed_out, answer.err.substr(0, 300));
      if (step.next == RunAttempts::Next::kGiveUpRepeated) {
        throw WorkspaceError("the command's outcome is unknown (the run helper gave no answer: " +
                             attempts.last_problem() + ")");
      }
    }
  }

  // The contract's answer for an envelope: the result, or the error it says.
  CommandResult result_of(const std::string& sandbox_id, const internal::RunSpec& spec,
                          internal::Envelope envelope, const RunOptions& options) {
    if (envelope.start_errno != 0) {
      add_cleanup_later(spec.run_id);
      if (envelope.start_errno == E2BIG) {
        throw WorkspaceError(
            "Argument list too long (E2BIG): the sandbox refused to start a command with this "
            "much argument and environment text");
      }
      throw WorkspaceError("could not start the command: " +
                           std::generic_category().message(envelope.start_errno));
    }
    if (envelope.over_limit) {
      // A head cut at 64 KiB may end inside a character; drop that partial
      // character rather than report it as invalid.
      const auto head = [](std::string raw, std::uint64_t stream_size) {
        if (stream_size > raw.size()) raw.resize(utf8_complete_prefix(raw));
        return repair_utf8(raw);
      };
      const std::string out = head(envelope.out.value_or(""), envelope.out_size);
      const std::string err = head(envelope.err.value_or(""), envelope.err_size);
      add_cleanup_later(spec.run_id, true);
      throw WorkspaceOutputLimitError(
          "the command wrote more than " + std::to_string(kOutputLimitBytes) +
              " bytes on a stream; its process group was stopped",
          kOutputLimitBytes, std::string(utf8_truncate(out, kOutputHeadBytes)),
          std::string(utf8_truncate(err, kOutputHeadBytes)));
    }
    const std::string raw_out =
        envelope.out ? std::move(*envelope.out)
                     : read_run_file(sandbox_id, spec.run_id, "o", envelope.out_size);
    const std::string raw_err =
        envelope.err ? std::move(*envelope.err)
                     : read_run_file(sandbox_id, spec.run_id, "e", envelope.err_size);
    add_cleanup_later(spec.run_id, !envelope.out || !envelope.err);
    std::string out = repair_utf8(raw_out);
    std::string err = repair_utf8(raw_err);
    if (envelope.timed_out) {
      throw WorkspaceTimeoutError(
          "the command outlived its timeout of " + std::to_string(options.timeout->count()) + " s",
          std::move(out), std::move(err), *options.timeout);
    }
    return CommandResult{envelope.exit_code, std::move(out), std::move(err)};
  }

  void add_cleanup_later(const std::string& run_id, bool urgent = false) {
    add_cleanup({run_id}, urgent);
  }

  void cancel_run(const std::string& sandbox_id, const std::string& run_id) {
    // Best effort, with a fresh (unstoppable) token: the caller's is triggered.
    try {
      helper(sandbox_id, internal::kill_command(internal::kRunRoot, run_id));
    } catch (const std::exception&) {
      // The sandbox may be gone or unreachable; cancellation still returns.
    }
    add_cleanup_later(run_id);
  }

  bool is_destroyed() {
    std::lock_guard lock(state_mutex_);
    return destroyed_;
  }

  void destroy() {
    std::lock_guard lock(state_mutex_);
    if (destroyed_) return;
    const std::string sandbox_id = id();
    if (!sandbox_id.empty()) client_.kill_sandbox(sandbox_id);
    destroyed_ = true;
  }

  // --- files -----------------------------------------------------------------

  std::string read_bytes(const std::string& path) {
    require_carriable_path(path);
    const std::string sandbox_id = sandbox();
    try {
      return client_.read_file(sandbox_id, path);
    } catch (const api::ApiError& e) {
      throw_path_error(e, sandbox_id, path);
    }
  }

  // UTF-8 content: one files-API request. Other bytes: their base64 as a
  // UTF-8 file, then write.sh decodes it next to the target and renames it
  // into place (two requests; the kubernetes era takes UTF-8 uploads only,
  // so nothing else works on every era). Either way a failed write leaves
  // the old content whole, and a link is written through.
  void write_bytes(const std::string& path, const std::string& data) {
    require_carriable_path(path);
    const std::string sandbox_id = sandbox();
    if (is_valid_utf8(data)) {
      try {
        client_.write_text_file(sandbox_id, path, data);
      } catch (const api::ApiError& e) {
        throw_path_error(e, sandbox_id, path);
      }
      return;
    }
    const std::string staged = internal::run_file(internal::kRunRoot, random_run_id(), "w64");
    try {
      client_.write_base64_text_file(sandbox_id, staged, data);
    } catch (const api::ApiError& e) {
      throw_path_error(e, sandbox_id, path);
    }
    const auto answer = helper(sandbox_id, internal::write_command(staged, path));
    const auto err = internal::parse_write_answer(answer.out);
    if (!err) {
      throw WorkspaceError("could not write the file in the sandbox: " + answer.err.substr(0, 300));
    }
    if (*err != 0) throw make_path_error("cannot write the file", path, errc_of_errno(*err));
  }

  // Resolves symlink entries with one probe exec for all of them.
  void resolve_links(const std::string& sandbox_id, std::vector<FileEntry*>& entries, bool strict) {
    if (entries.empty()) return;
    std::vector<std::string> paths;
    for (const auto* e : entries) paths.push_back(e->path);
    const auto answer = helper(sandbox_id, internal::probe_command(paths));
    std::vector<std::string> lines;
    std::size_t at = 0;
    while (at < answer.out.size()) {
      const auto end = answer.out.find('\n', at);
      lines.push_back(
          answer.out.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (answer.exit_code != 0 || lines.size() != entries.size()) {
      throw WorkspaceError("could not resolve symbolic links in the sandbox");
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
      FileEntry& e = *entries[i];
      const std::string& line = lines[i];
      if (line == "d") {
        e.is_dir = true;
        e.size.reset();
      } else if (line.rfind("f ", 0) == 0) {
        e.is_dir = false;
        e.size = std::strtoull(line.c_str() + 2, nullptr, 10);
      } else {
        e.is_dir = false;
        e.size.reset();
        if (strict) {
          throw make_path_error(line == "l" ? "too many levels of symbolic links"
                                            : "no such file or directory (dangling link)",
                                e.path,
                                line == "l" ? std::errc::too_many_symbolic_link_levels
                                            : std::errc::no_such_file_or_directory);
        }
      }
    }
  }

  FileEntry entry_of(const api::FileInfo& info, const std::string& path) {
    FileEntry e;
    e.path = path;
    e.name = base_name(path);
    e.is_dir = is_dir_type(info.type);
    if (!e.is_dir) e.size = info.size;
    return e;
  }

  FileEntry stat(const std::string& path) {
    require_carriable_path(path);
    const std::string sandbox_id = sandbox();
    const std::string normal = normalize_path(path);
    api::FileInfo info;
    try {
      info = client_.stat_file(sandbox_id, path);
    } catch (const api::ApiError& e) {
      throw_path_error(e, sandbox_id, path);
    }
    FileEntry entry = entry_of(info, normal);
    if (info.type == "symlink") {
      std::vector<FileEntry*> links{&entry};
      resolve_links(sandbox_id, links, true);
    }
    return entry;
  }

  std::vector<FileEntry> list_dir(const std::string& path) {
    require_carriable_path(path);
    const std::string sandbox_id = sandbox();
    const std::string normal = normalize_path(path);
    std::vector<api::FileInfo> infos;
    try {
      infos = client_.list_files(sandbox_id, path);
    } catch (const api::ApiError& e) {
      throw_path_error(e, sandbox_id, path);
    }
    std::vector<FileEntry> entries;
    std::vector<bool> is_link;
    entries.reserve(infos.size());
    for (const auto& info : infos) {
      entries.push_back(entry_of(info, join(normal, info.name)));
      entries.back().name = info.name;
      is_link.push_back(info.type == "symlink");
    }
    std::vector<FileEntry*> links;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (is_link[i]) links.push_back(&entries[i]);
    }
    resolve_links(sandbox_id, links, false);
    std::sort(entries.begin(), entries.end(),
              [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
    return entries;
  }

  bool exists(const std::string& path) {
    try {
      stat(path);
      return true;
    } catch (const std::filesystem::filesystem_error&) {
      return false;
    }
  }

  void make_dir(const std::string& path) {
    require_carriable_path(path);
    const std::string sandbox_id = sandbox();
    const auto answer = helper(sandbox_id, internal::mkdir_command(path));
    if (answer.exit_code == 0) return;
    if (const auto e = internal::errno_of_helper_exit(answer.exit_code)) {
      throw make_path_error("cannot create directory", path, errc_of_errno(*e));
    }
    throw WorkspaceError("mkdir failed in the sandbox (exit " + std::to_string(answer.exit_code) +
                         ")");
  }

  void remove(const std::string& path) {
    require_carriable_path(path);
    refuse_remove_of_working_dir(path, kWorkingDir);
    const std::string sandbox_id = sandbox();
    try {
      client_.remove_file(sandbox_id, path);
    } catch (const api::ApiError& e) {
      throw_path_error(e, sandbox_id, path);
    }
  }

  std::string realpath(const std::string& path) {
    require_carriable_path(path);
    const std::string sandbox_id = sandbox();
    const auto answer = helper(sandbox_id, internal::realpath_command(path));
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

 private:
  LizardOptions options_;
  api::Client client_;

  mutable std::mutex ref_mutex_;  // guards sandbox_id_ only; never held over I/O
  std::string sandbox_id_;

  std::mutex state_mutex_;  // held over create/attach so that first use happens once
  bool ready_ = false;
  bool destroyed_ = false;
  bool gone_ = false;
  bool create_outcome_unknown_ = false;

  std::mutex cleanup_mutex_;
  std::vector<std::string> cleanup_;
  bool cleanup_urgent_ = false;
};

LizardSandboxBackend::LizardSandboxBackend(LizardOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

LizardSandboxBackend::~LizardSandboxBackend() = default;

Capabilities LizardSandboxBackend::capabilities() const {
  return {Capability::kCommands, Capability::kFilesystem, Capability::kRealpath};
}

std::optional<WorkspaceRef> LizardSandboxBackend::ref() const { return impl_->ref(); }

std::string LizardSandboxBackend::working_dir() const { return kWorkingDir; }

void LizardSandboxBackend::destroy() { impl_->destroy(); }

CommandResult LizardSandboxBackend::run(const Command& command, const RunOptions& options) {
  return impl_->run(command, options);
}

std::string LizardSandboxBackend::read_bytes(const std::string& path) {
  return impl_->read_bytes(path);
}

void LizardSandboxBackend::write_bytes(const std::string& path, const std::string& data) {
  impl_->write_bytes(path, data);
}

FileEntry LizardSandboxBackend::stat(const std::string& path) { return impl_->stat(path); }

std::vector<FileEntry> LizardSandboxBackend::list_dir(const std::string& path) {
  return impl_->list_dir(path);
}

void LizardSandboxBackend::make_dir(const std::string& path) { impl_->make_dir(path); }

void LizardSandboxBackend::remove(const std::string& path) { impl_->remove(path); }

bool LizardSandboxBackend::exists(const std::string& path) { return impl_->exists(path); }

std::string LizardSandboxBackend::realpath(const std::string& path) {
  return impl_->realpath(path);
}

LizardSandbox::LizardSandbox(LizardOptions options) : options_(std::move(options)) {}

std::unique_ptr<LizardSandboxBackend> LizardSandbox::attach(const WorkspaceRef& ref) const {
  LizardOptions options = options_;
  options.ref = ref;
  return std::make_unique<LizardSandboxBackend>(std::move(options));
}

void LizardSandbox::destroy(const WorkspaceRef& ref) const {
  require_lizard_ref(ref);
  api::ClientOptions c;
  c.api_key = options_.api_key;
  c.api_url = options_.api_url;
  c.request_timeout = options_.request_timeout;
  c.log = options_.log;
  api::Client client(std::move(c));
  client.kill_sandbox(ref.id);
}

}  // namespace lizard::workspace
