#include "run_attempts.h"

#include <algorithm>

namespace lizard::workspace::internal {

RunAttempts::RunAttempts(std::optional<Ms> timeout, Clock::time_point now) {
  if (!timeout) return;
  const Ms capped = std::min(*timeout, Ms(600000));
  wait_ = capped + kKillGrace + kAnswerMargin + capped / 10;
  deadline_ = now + wait_;
}

std::optional<RunAttempts::Ms> RunAttempts::next_wait(Clock::time_point now) const {
  if (!deadline_) return kUntimedExecWait;
  const auto left = std::chrono::duration_cast<Ms>(*deadline_ - now);
  if (left.count() <= 0) return std::nullopt;
  return left;
}

std::string RunAttempts::deadline_text() const {
  return std::to_string(wait_.count() / 1000) + "." + std::to_string(wait_.count() % 1000 / 100) +
         " s";
}

RunAttempts::Step RunAttempts::after_transport_failure(bool admitted, std::optional<Ms> retry_after,
                                                       const std::string& problem,
                                                       Clock::time_point now) {
  // Refused before anything could run (connect failure, 408, 429): the
  // caller may retry; nothing of this run exists in the sandbox yet.
  if (!admitted && !started_) return {Next::kRethrow};
  started_ = true;
  last_problem_ = problem;
  if (deadline_ && now >= *deadline_) return {Next::kOutOfTime};
  if (++blind_ > kMaxBlindRetries) return {Next::kGiveUpRepeated};
  Ms pause(200 * blind_);
  // A refusal of a re-attach (429, 408) still leaves the run going.
  if (!admitted && retry_after) {
    if (*retry_after > kMaxReattachRetryAfter) return {Next::kGiveUpRefused};
    pause = std::max(pause, *retry_after);
  }
  if (deadline_ && now + pause >= *deadline_) return {Next::kOutOfTime};
  return {Next::kPause, pause};
}

RunAttempts::Step RunAttempts::after_missing_envelope(bool server_limit, const std::string& problem,
                                                      Ms took) {
  started_ = true;
  if (server_limit && took >= kMinServerLimit) return {Next::kReattach};
  if (server_limit) {
    last_problem_ = "the server answered \"timed out\" after " + std::to_string(took.count()) +
                    " ms, sooner than any per-request limit";
    if (++blind_ > kMaxBlindRetries) return {Next::kGiveUpRepeated};
    return {Next::kPause, Ms(200 * blind_)};
  }
  last_problem_ = problem;
  if (++blind_ > kMaxBlindRetries) return {Next::kGiveUpRepeated};
  return {Next::kReattach};
}

}  // namespace lizard::workspace::internal
