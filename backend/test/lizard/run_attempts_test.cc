// RunAttempts: the decisions of a run's exec loop over a fake clock (time
// points handed in), so every branch is tested without a server.
#include "lizard/run_attempts.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace lizard::workspace::internal {
namespace {

using namespace std::chrono_literals;
using Clock = RunAttempts::Clock;
using Next = RunAttempts::Next;
using Ms = RunAttempts::Ms;

const Clock::time_point kStart = Clock::time_point() + 1000h;

TEST(RunAttemptsTest, WithoutATimeoutEveryExecWaitsTheApiLimitAndAMinute) {
  const RunAttempts attempts(std::nullopt, kStart);
  EXPECT_EQ(attempts.next_wait(kStart), Ms(660000));
  EXPECT_EQ(attempts.next_wait(kStart + 24h), Ms(660000));
  EXPECT_FALSE(attempts.started());
}

TEST(RunAttemptsTest, WithATimeoutTheRunHasOneDeadline) {
  // 10 s + 2 s kill grace + 3 s margin + a tenth of the timeout.
  const RunAttempts attempts(Ms(10000), kStart);
  EXPECT_EQ(attempts.deadline_text(), "16.0 s");
  EXPECT_EQ(attempts.next_wait(kStart), Ms(16000));
  EXPECT_EQ(attempts.next_wait(kStart + 15s), Ms(1000));
  EXPECT_EQ(attempts.next_wait(kStart + 16s), std::nullopt);
  // The API's 600 s limit caps what counts.
  EXPECT_EQ(RunAttempts(Ms(3600000), kStart).next_wait(kStart), Ms(600000 + 2000 + 3000 + 60000));
}

TEST(RunAttemptsTest, ARefusalBeforeAnythingRanIsRethrown) {
  RunAttempts attempts(Ms(10000), kStart);
  EXPECT_EQ(attempts.after_transport_failure(false, std::nullopt, "refused", kStart).next,
            Next::kRethrow);
  EXPECT_FALSE(attempts.started());
  EXPECT_EQ(attempts.last_problem(), "");
}

TEST(RunAttemptsTest, AdmittedFailuresPauseLongerEachTimeThenGiveUp) {
  RunAttempts attempts(std::nullopt, kStart);
  for (int i = 1; i <= RunAttempts::kMaxBlindRetries; ++i) {
    const auto step = attempts.after_transport_failure(true, std::nullopt, "reset", kStart);
    EXPECT_EQ(step.next, Next::kPause) << i;
    EXPECT_EQ(step.pause, Ms(200 * i)) << i;
  }
  EXPECT_TRUE(attempts.started());
  EXPECT_EQ(attempts.last_problem(), "reset");
  EXPECT_EQ(attempts.after_transport_failure(true, std::nullopt, "reset", kStart).next,
            Next::kGiveUpRepeated);
}

TEST(RunAttemptsTest, ARefusedReattachWaitsAShortRetryAfterAndGivesUpOnALongOne) {
  RunAttempts attempts(std::nullopt, kStart);
  attempts.note_answered();
  const auto short_wait = attempts.after_transport_failure(false, Ms(1500), "429", kStart);
  EXPECT_EQ(short_wait.next, Next::kPause);
  EXPECT_EQ(short_wait.pause, Ms(1500));
  const auto tiny_wait = attempts.after_transport_failure(false, Ms(10), "429", kStart);
  EXPECT_EQ(tiny_wait.pause, Ms(400)) << "never shorter than the attempt's own pause";
  EXPECT_EQ(attempts.after_transport_failure(false, Ms(2001), "429", kStart).next,
            Next::kGiveUpRefused);
}

TEST(RunAttemptsTest, NoPauseOrAttemptPassesTheDeadline) {
  RunAttempts attempts(Ms(1000), kStart);  // deadline: 1 + 2 + 3 + 0.1 s
  EXPECT_EQ(attempts.after_transport_failure(true, std::nullopt, "x", kStart + 5000ms).next,
            Next::kPause);
  EXPECT_EQ(attempts.after_transport_failure(true, std::nullopt, "x", kStart + 5800ms).next,
            Next::kOutOfTime)
      << "a 400 ms pause would end past the deadline";
  RunAttempts late(Ms(1000), kStart);
  EXPECT_EQ(late.after_transport_failure(true, std::nullopt, "x", kStart + 6100ms).next,
            Next::kOutOfTime);
}

TEST(RunAttemptsTest, TheServersOwnLimitReattachesWithoutCountingAsAFailure) {
  RunAttempts attempts(std::nullopt, kStart);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(attempts.after_missing_envelope(true, "", 400ms).next, Next::kReattach);
  }
  EXPECT_TRUE(attempts.started());
  for (int i = 1; i <= RunAttempts::kMaxBlindRetries; ++i) {
    EXPECT_EQ(attempts.after_missing_envelope(false, "killed", 400ms).next, Next::kReattach) << i;
  }
  EXPECT_EQ(attempts.after_missing_envelope(false, "killed", 400ms).next, Next::kGiveUpRepeated);
  EXPECT_EQ(attempts.last_problem(), "killed");
}

// A server that answers "timed out" at once, every time, is no limit: a run
// without a timeout re-sent its exec without a pause, for ever. Such answers
// pause and count as failures without progress.
TEST(RunAttemptsTest, TimedOutAnswersFasterThanAnyServerLimitPauseAndGiveUp) {
  RunAttempts attempts(std::nullopt, kStart);
  for (int i = 1; i <= RunAttempts::kMaxBlindRetries; ++i) {
    const auto step = attempts.after_missing_envelope(true, "", 3ms);
    EXPECT_EQ(step.next, Next::kPause) << i;
    EXPECT_EQ(step.pause, Ms(200 * i));
  }
  EXPECT_EQ(attempts.after_missing_envelope(true, "", 3ms).next, Next::kGiveUpRepeated);
  EXPECT_NE(attempts.last_problem().find("sooner than any per-request limit"), std::string::npos);
}

}  // namespace
}  // namespace lizard::workspace::internal
