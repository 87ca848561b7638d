#include "lizard/sandbox_runs.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <map>
#include <system_error>
#include <utility>

#include "lizard/workspace/checks.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace::internal {

namespace {

using Clock = RunAttempts::Clock;

// The API's largest per-request exec timeout; the server may cut it shorter
// (its own limit), and the run is then re-attached.
constexpr std::int64_t kExecTimeoutMs = 600000;
// Finished runs whose files are removed together by a later run.
constexpr std::size_t kCleanupBatch = 16;
// The most finished runs one helper removes.
constexpr std::size_t kMaxCleanupPerRun = 64;

// Pauses a run between attempts; the stop token cuts it short.
void pause_for(std::chrono::milliseconds wait, std::stop_token stop) {
  std::mutex pause_mutex;
  std::condition_variable_any pause;
  std::unique_lock pause_lock(pause_mutex);
  pause.wait_for(pause_lock, stop, wait, [] { return false; });
}

// The envelope in a run exec's answer; nullopt when there is none (yet).
std::optional<Envelope> envelope_of(const api::ExecResult& answer) {
  try {
    return parse_envelope(answer.out);
  } catch (const std::runtime_error& e) {
    throw WorkspaceError(std::string("could not run the command: ") + e.what());
  }
}

// A head cut at 64 KiB may end inside a character; that partial character
// is dropped rather than reported as invalid.
std::string output_head(std::string raw, std::uint64_t stream_size) {
  if (stream_size > raw.size()) raw.resize(utf8_complete_prefix(raw));
  return std::string(utf8_truncate(repair_utf8(raw), kOutputHeadBytes));
}

}  // namespace

CommandResult SandboxRuns::run(const Command& command, const RunOptions& options) {
  validate_run(command, options);
  if (options.stop.stop_requested()) throw WorkspaceCancelledError("cancelled before it started");
  RunSpec spec = spec_of(command, options);
  // Refused at once, before any request: the kernel would refuse it in
  // the sandbox, and nothing could tell that apart from a lost answer.
  if (auto problem = argument_list_problem(spec); !problem.empty()) throw WorkspaceError(problem);
  const std::string sandbox_id = session_.sandbox();
  spec.cleanup = take_cleanup();
  Envelope envelope = run_until_answered(sandbox_id, spec, options.stop);
  return result_of(sandbox_id, spec, std::move(envelope), options);
}

// The run as the helper takes it: the command, its working directory and
// its exact environment (the backend's, then the run's) travel in the
// exec's argument list, never in the API's `envs`/`workdir`, which the
// kubernetes era ignores.
RunSpec SandboxRuns::spec_of(const Command& command, const RunOptions& options) const {
  RunSpec spec;
  spec.run_id = random_run_id();
  spec.argv = command.is_shell() ? std::vector<std::string>{"/bin/sh", "-c", command.script()}
                                 : command.argv();
  std::map<std::string, std::string> env = session_.options().env;
  for (const auto& [name, value] : options.env) env[name] = value;
  spec.env.assign(env.begin(), env.end());
  spec.workdir = kLizardWorkingDir;
  if (options.timeout) {
    const double ms = std::ceil(options.timeout->count() * 1000.0);
    spec.timeout_ms = static_cast<std::uint64_t>(std::max(1.0, std::min(ms, 1e15)));
  }
  spec.limit_bytes = kOutputLimitBytes;
  return spec;
}

// Sends the run's exec until its envelope comes back: the first exec
// starts the command, every later one re-attaches to it (RunAttempts
// decides when and how long each may wait).
Envelope SandboxRuns::run_until_answered(const std::string& sandbox_id, const RunSpec& spec,
                                         std::stop_token stop) {
  api::ExecRequest request;
  request.cmd = run_command(spec);
  request.timeout_ms = kExecTimeoutMs;
  std::optional<std::chrono::milliseconds> timeout;
  if (spec.timeout_ms > 0) timeout = std::chrono::milliseconds(spec.timeout_ms);
  RunAttempts attempts(timeout, Clock::now());
  for (;;) {
    if (session_.is_destroyed()) session_.throw_unavailable();
    const auto wait = attempts.next_wait(Clock::now());
    if (!wait) throw out_of_time(spec, attempts);
    const bool answered_before = attempts.started();
    const auto sent = Clock::now();
    const auto answer = attempt(sandbox_id, spec, request, *wait, stop, attempts);
    if (!answer) continue;
    attempts.note_answered();
    if (auto envelope = envelope_of(*answer)) return std::move(*envelope);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent);
    after_missing_envelope(*answer, answered_before, took, sandbox_id, stop, attempts);
  }
}

std::optional<api::ExecResult> SandboxRuns::attempt(const std::string& sandbox_id,
                                                    const RunSpec& spec,
                                                    const api::ExecRequest& request,
                                                    std::chrono::milliseconds wait,
                                                    std::stop_token stop, RunAttempts& attempts) {
  try {
    return session_.exec(sandbox_id, request, {.timeout = wait, .stop = stop});
  } catch (const WorkspaceCancelledError&) {
    cancel_run(sandbox_id, spec.run_id);
    throw WorkspaceCancelledError("the command was cancelled; its process group was stopped");
  } catch (const WorkspaceTransientError& error) {
    after_transport_failure(error, sandbox_id, spec, stop, attempts);
    return std::nullopt;
  }
}

// An exec of the run failed in transit: raise, or pause before re-attaching.
void SandboxRuns::after_transport_failure(const WorkspaceTransientError& error,
                                          const std::string& sandbox_id, const RunSpec& spec,
                                          std::stop_token stop, RunAttempts& attempts) {
  using Next = RunAttempts::Next;
  if (session_.is_destroyed()) session_.throw_unavailable();
  const auto step = attempts.after_transport_failure(
      error.may_have_been_admitted(), error.retry_after(), error.what(), Clock::now());
  if (step.next == Next::kRethrow) throw error;
  if (step.next == Next::kOutOfTime) throw out_of_time(spec, attempts);
  if (error.may_have_been_admitted() && session_.confirm_gone(sandbox_id, "")) {
    session_.throw_unavailable();
  }
  if (step.next != Next::kPause) {
    // A refusal of a re-attach (429, 408) still leaves the run going: the
    // error says so (admitted), with the server's Retry-After.
    add_cleanup_later(spec.run_id);
    throw WorkspaceTransientError(
        std::string("the command's outcome is unknown (it was started, ") +
            (step.next == Next::kGiveUpRefused
                 ? "then re-attaching was refused for longer than the backend waits"
                 : "then repeated failures") +
            "): " + error.what(),
        true, error.http_status(), error.retry_after());
  }
  pause_for(step.pause, stop);
}

// An exec of the run was answered without an envelope: raise, or re-attach.
void SandboxRuns::after_missing_envelope(const api::ExecResult& answer, bool answered_before,
                                         std::chrono::milliseconds took,
                                         const std::string& sandbox_id, std::stop_token stop,
                                         RunAttempts& attempts) {
  // No output at all, at the first answer, with the shell's "cannot
  // execute" status: the helper never started (the sandbox has no usable
  // /bin/sh or setsid, or refused the arguments).
  if (!answered_before && !answer.timed_out && answer.out.empty() &&
      (answer.exit_code == 126 || answer.exit_code == 127)) {
    throw WorkspaceError("could not start the run helper in the sandbox (exit " +
                         std::to_string(answer.exit_code) + "): " + answer.err.substr(0, 300));
  }
  // The server's per-request limit cut the exec: re-attach. Otherwise the
  // helper died without an answer: the sandbox was killed, or something
  // killed the helper. Either way, ask.
  if (!answer.timed_out && (session_.is_destroyed() || session_.confirm_gone(sandbox_id, ""))) {
    session_.throw_unavailable();
  }
  const auto step =
      attempts.after_missing_envelope(answer.timed_out, answer.err.substr(0, 300), took);
  if (step.next == RunAttempts::Next::kGiveUpRepeated) {
    throw WorkspaceError("the command's outcome is unknown (the run helper gave no answer: " +
                         attempts.last_problem() + ")");
  }
  if (step.next == RunAttempts::Next::kPause) pause_for(step.pause, stop);
}

WorkspaceTransientError SandboxRuns::out_of_time(const RunSpec& spec, const RunAttempts& attempts) {
  add_cleanup_later(spec.run_id);
  return WorkspaceTransientError(
      "the command's outcome is unknown: no answer within " + attempts.deadline_text() +
          " (its timeout, the kill grace and a margin)" +
          (attempts.last_problem().empty() ? "" : ": " + attempts.last_problem()),
      true);
}

// The contract's answer for an envelope: the result, or the error it says.
CommandResult SandboxRuns::result_of(const std::string& sandbox_id, const RunSpec& spec,
                                     Envelope envelope, const RunOptions& options) {
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
  // Over the limit by its own sizes too: the helper's "O" flag is only as
  // sure as its watcher, which a command can kill, and no size past the
  // limit is ever read back as a success.
  if (envelope.over_limit || envelope.out_size > spec.limit_bytes ||
      envelope.err_size > spec.limit_bytes) {
    throw_over_limit(spec, envelope);
  }
  const std::string raw_out = envelope.out
                                  ? std::move(*envelope.out)
                                  : read_run_file(sandbox_id, spec.run_id, "o", envelope.out_size);
  const std::string raw_err = envelope.err
                                  ? std::move(*envelope.err)
                                  : read_run_file(sandbox_id, spec.run_id, "e", envelope.err_size);
  add_cleanup_later(spec.run_id, !envelope.out || !envelope.err);
  std::string out = repair_utf8(raw_out);
  std::string err = repair_utf8(raw_err);
  // (Only a run with a timeout has a watchdog to say it timed out.)
  if (envelope.timed_out && options.timeout) {
    throw WorkspaceTimeoutError(
        "the command outlived its timeout of " + std::to_string(options.timeout->count()) + " s",
        std::move(out), std::move(err), *options.timeout);
  }
  return CommandResult{envelope.exit_code, std::move(out), std::move(err)};
}

void SandboxRuns::throw_over_limit(const RunSpec& spec, const Envelope& envelope) {
  std::string out = output_head(envelope.out.value_or(""), envelope.out_size);
  std::string err = output_head(envelope.err.value_or(""), envelope.err_size);
  add_cleanup_later(spec.run_id, true);
  throw WorkspaceOutputLimitError("the command wrote more than " +
                                      std::to_string(kOutputLimitBytes) +
                                      " bytes on a stream; its process group was stopped",
                                  kOutputLimitBytes, std::move(out), std::move(err));
}

std::string SandboxRuns::read_run_file(const std::string& sandbox_id, const std::string& run_id,
                                       const char* name, std::uint64_t size) {
  if (size == 0) return {};
  std::string bytes = session_.call(
      sandbox_id,
      [&](api::Client& client, const std::string& sandbox) {
        // Only the bytes up to the status's size: a background
        // child may still be adding to the file (up to 1 GiB).
        return client.read_file(sandbox, run_file(kRunRoot, run_id, name),
                                {.max_answer_bytes = size, .cut_at_max_answer = true});
      },
      {.missing = "the output of the command is missing from the sandbox"});
  // Shorter than when the command ended: something cut or replaced the file.
  if (bytes.size() < size) {
    throw WorkspaceError(
        "the output of the command was cut in the sandbox before it could be read (" +
        std::to_string(bytes.size()) + " of " + std::to_string(size) + " bytes)");
  }
  return bytes;
}

void SandboxRuns::cancel_run(const std::string& sandbox_id, const std::string& run_id) {
  // Best effort, with a fresh (unstoppable) token: the caller's is triggered.
  try {
    session_.run_helper(sandbox_id, kill_command(kRunRoot, run_id));
  } catch (const std::exception&) {
    // The sandbox may be gone or unreachable; cancellation still returns.
  }
  add_cleanup_later(run_id);
}

std::vector<std::string> SandboxRuns::take_cleanup() {
  std::lock_guard lock(cleanup_mutex_);
  std::vector<std::string> out;
  if (cleanup_.size() < kCleanupBatch && !cleanup_urgent_) return out;
  cleanup_urgent_ = false;
  while (!cleanup_.empty() && out.size() < kMaxCleanupPerRun) {
    out.push_back(std::move(cleanup_.back()));
    cleanup_.pop_back();
  }
  return out;
}

void SandboxRuns::add_cleanup_later(const std::string& run_id, bool urgent) {
  std::lock_guard lock(cleanup_mutex_);
  cleanup_.push_back(run_id);
  if (urgent) cleanup_urgent_ = true;
}

}  // namespace lizard::workspace::internal
