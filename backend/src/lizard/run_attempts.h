// The attempts of one run: how long each exec of it may wait for its
// answer, and what to do when one ends without the run's envelope. Pure
// logic over time points, so it is tested without a server
// (backend/test/lizard/run_attempts_test.cc); LizardSandboxBackend does the
// I/O and turns each decision into a call or an exception.
//
// A run's exec is idempotent (the helper claims the run id), so after a
// failure that may have reached the server, only a re-attach (the same
// exec again) may follow; it never starts the command twice.
//
// Not thread-safe: one per run.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace lizard::workspace::internal {

class RunAttempts {
 public:
  using Clock = std::chrono::steady_clock;
  using Ms = std::chrono::milliseconds;

  // How many times a run is re-attached after failures that made no progress.
  static constexpr int kMaxBlindRetries = 3;
  // The API's largest per-request exec limit; without a timeout each exec
  // waits for it plus a minute.
  static constexpr Ms kUntimedExecWait{600000 + 60000};
  // The helper's watchdog sends TERM at the timeout and KILL this much later.
  static constexpr Ms kKillGrace{2000};
  // What a run with a timeout waits beyond timeout + grace for its answer
  // (plus a tenth of the timeout): the helper's polling, the round trip.
  static constexpr Ms kAnswerMargin{3000};
  // The longest Retry-After honoured before re-attaching to a started run.
  static constexpr Ms kMaxReattachRetryAfter{2000};

  // `timeout`: the run's own (nullopt: none). With one, every exec of the
  // run (the first and each re-attach) waits at most until the run's
  // deadline, so a server that stops answering cannot hold it for the API's
  // ten minutes.
  RunAttempts(std::optional<Ms> timeout, Clock::time_point now);

  // How long the next exec may wait; nullopt once the deadline has passed.
  std::optional<Ms> next_wait(Clock::time_point now) const;

  // Whether any exec of the run was answered or may have been admitted:
  // from then on the command may exist in the sandbox.
  bool started() const { return started_; }
  // The last problem seen (for messages).
  const std::string& last_problem() const { return last_problem_; }
  // "12.3 s": the longest the run waits for its answer (with a timeout).
  std::string deadline_text() const;

  enum class Next {
    kRethrow,         // a refusal before anything could run: the caller may retry
    kPause,           // wait `pause`, then re-attach
    kReattach,        // re-attach at once
    kOutOfTime,       // the deadline passed: the outcome is unknown
    kGiveUpRepeated,  // too many failures without progress: outcome unknown (admitted)
    kGiveUpRefused,   // the server refuses re-attaching for longer than we wait
  };
  struct Step {
    Next next;
    Ms pause{0};
  };

  // An exec failed in transit (connection, 5xx, 429, ...). `admitted`: the
  // server may have acted on it.
  Step after_transport_failure(bool admitted, std::optional<Ms> retry_after,
                               const std::string& problem, Clock::time_point now);
  // An exec was answered with the helper's output but no envelope, because
  // the server's per-request limit cut it (`server_limit`: re-attach) or the
  // helper was killed. `took`: how long the exec was out. A cut faster than
  // kMinServerLimit is no server's limit (a server answering "timedOut" at
  // once, for ever): it counts as a failure without progress, with a pause.
  Step after_missing_envelope(bool server_limit, const std::string& problem, Ms took);
  // Shorter than any server's per-request exec limit (the tests' mocks use 400 ms).
  static constexpr Ms kMinServerLimit{250};
  // An exec was answered: the run exists.
  void note_answered() { started_ = true; }

 private:
  std::optional<Clock::time_point> deadline_;
  Ms wait_{0};
  bool started_ = false;
  int blind_ = 0;
  std::string last_problem_;
};

}  // namespace lizard::workspace::internal
