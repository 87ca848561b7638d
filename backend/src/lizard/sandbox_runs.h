// How LizardSandboxBackend runs a command (docs/backend.md, "How a command
// runs"): encode the run for the guest helper (guest_helpers.h, the run
// protocol), send its exec until the envelope comes back (re-attaching as
// RunAttempts decides), and turn the envelope into the contract's result or
// error. Finished runs' files are removed in batches by later runs.
//
// Thread-safe: runs share only the cleanup queue (under its mutex) and the
// session.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/guest_helpers.h"
#include "lizard/run_attempts.h"
#include "lizard/sandbox_session.h"
#include "lizard/workspace/types.h"

namespace lizard::workspace::internal {

class SandboxRuns {
 public:
  explicit SandboxRuns(SandboxSession& session) : session_(session) {}

  // LizardSandboxBackend::run.
  CommandResult run(const Command& command, const RunOptions& options);

 private:
  RunSpec spec_of(const Command& command, const RunOptions& options) const;
  Envelope run_until_answered(const std::string& sandbox_id, const RunSpec& spec,
                              std::stop_token stop);
  // One exec of the run: its answer, or none after a transport failure
  // that calls for a re-attach (after the pause RunAttempts chose).
  std::optional<api::ExecResult> attempt(const std::string& sandbox_id, const RunSpec& spec,
                                         const api::ExecRequest& request,
                                         std::chrono::milliseconds wait, std::stop_token stop,
                                         RunAttempts& attempts);
  void after_transport_failure(const WorkspaceTransientError& error, const std::string& sandbox_id,
                               const RunSpec& spec, std::stop_token stop, RunAttempts& attempts);
  void after_missing_envelope(const api::ExecResult& answer, bool answered_before,
                              std::chrono::milliseconds took, const std::string& sandbox_id,
                              std::stop_token stop, RunAttempts& attempts);
  WorkspaceTransientError out_of_time(const RunSpec& spec, const RunAttempts& attempts);

  CommandResult result_of(const std::string& sandbox_id, const RunSpec& spec, Envelope envelope,
                          const RunOptions& options);
  [[noreturn]] void throw_over_limit(const RunSpec& spec, const Envelope& envelope);
  std::string read_run_file(const std::string& sandbox_id, const std::string& run_id,
                            const char* name, std::uint64_t size);
  void cancel_run(const std::string& sandbox_id, const std::string& run_id);

  // Finished runs' ids, removed by a later run's helper: one rm per
  // kCleanupBatch runs, at once when one of them holds large output.
  std::vector<std::string> take_cleanup();
  void add_cleanup_later(const std::string& run_id, bool urgent = false);

  SandboxSession& session_;
  std::mutex cleanup_mutex_;
  std::vector<std::string> cleanup_;
  bool cleanup_urgent_ = false;
};

}  // namespace lizard::workspace::internal
