// The liveness check's arithmetic (cpu_wait.h): what a silence counts of
// the time that passed, and what the wait counts of a process that waits for
// no CPU. Part of protocol_test (ctest protocol.unit); the adapters that
// starve or spin are in protocol_test.cc.
#include "cpu_wait.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>

namespace lizard::conformance::protocol {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

TEST(Silence, CountsTheTimeThatPassedLessTheWaitSinceItsStart) {
  Silence s;
  const Clock::time_point t0{seconds(1000)};
  EXPECT_EQ(s.length(t0, t0 + seconds(5), seconds(10), seconds(20)), seconds(5));
  EXPECT_EQ(s.waited_text(), "");
  // 3 s of waiting since the silence began (10 s before it are not its own).
  EXPECT_EQ(s.length(t0, t0 + seconds(8), seconds(13), seconds(20)), seconds(5));
  EXPECT_EQ(s.waited_text(), ", not counting 3 s it waited for a CPU");
}

TEST(Silence, CreditsAtMostTheSilenceAndFourDeadlines) {
  Silence s;
  const Clock::time_point t0{seconds(1000)};
  s.length(t0, t0, seconds(0), seconds(1));
  // Waits posted late can exceed the silence: never a negative silence.
  EXPECT_EQ(s.length(t0, t0 + seconds(2), seconds(30), seconds(1)), seconds(0));
  // Starved without end: five deadlines of silence are a hang.
  EXPECT_EQ(s.length(t0, t0 + seconds(10), seconds(10), seconds(1)), seconds(6));
}

TEST(Silence, StartsAgainAtANewSignOfLife) {
  Silence s;
  const Clock::time_point t0{seconds(1000)};
  s.length(t0, t0 + seconds(1), seconds(0), seconds(20));
  EXPECT_EQ(s.length(t0, t0 + seconds(9), seconds(6), seconds(20)), seconds(3));
  // A sign of life at t0 + 9 s: the 6 s waited before it are no credit now.
  EXPECT_EQ(s.length(t0 + seconds(9), t0 + seconds(12), seconds(6), seconds(20)), seconds(3));
  EXPECT_EQ(s.waited_text(), "");
}

// CpuWait::update, fed counts as /proc would show them, a reading every
// 100 ms.
class Readings {
 public:
  using Times = CpuWait::Times;
  static constexpr auto kStep = std::chrono::milliseconds(100);

  // The wait so far after the next reading, at which `threads` are seen.
  Clock::duration next(const std::map<long, Times>& threads) {
    now_ += kStep;
    return wait_.update(threads, now_);
  }

 private:
  CpuWait wait_{0};
  Clock::time_point now_{seconds(1000)};
};

constexpr long long kMs = 1000 * 1000;  // ns

TEST(CpuWait, AWaitStillGoingOnCountsAndItsCountLaterDoesNotCountTwice) {
  Readings r;
  r.next({{1, {50 * kMs, 0, true}}});
  // Runnable, neither running nor waiting as far as the kernel has said: 1 s.
  Clock::duration wait{};
  for (int i = 0; i < 10; ++i) wait = r.next({{1, {50 * kMs, 0, true}}});
  EXPECT_EQ(wait, std::chrono::milliseconds(1000));
  // It ran: the kernel adds the 1.05 s it waited; only the 50 ms not yet counted are new.
  wait = r.next({{1, {60 * kMs, 1050 * kMs, false}}});
  EXPECT_EQ(wait, std::chrono::milliseconds(1050));
}

TEST(CpuWait, ASleepIsNoWait) {
  Readings r;
  for (int i = 0; i < 600; ++i) r.next({{1, {50 * kMs, 0, false}}});  // a minute asleep
  // Woken: runnable at two readings with the same counts is one step of wait.
  r.next({{1, {50 * kMs, 0, true}}});
  EXPECT_EQ(r.next({{1, {50 * kMs, 0, true}}}), std::chrono::milliseconds(100));
}

TEST(CpuWait, ThreadsWaitingSideBySideAreOneWait) {
  Readings r;
  r.next({{1, {10 * kMs, 0, true}}, {2, {10 * kMs, 0, true}}});
  for (int i = 0; i < 30; ++i) r.next({{1, {10 * kMs, 0, true}}, {2, {10 * kMs, 0, true}}});
  // One posts its 3 s, then the other: 3 s, not 6.
  r.next({{1, {20 * kMs, 3000 * kMs, false}}, {2, {10 * kMs, 0, true}}});
  const auto wait =
      r.next({{1, {20 * kMs, 3000 * kMs, false}}, {2, {20 * kMs, 3100 * kMs, false}}});
  EXPECT_LE(wait, std::chrono::milliseconds(3200));
  EXPECT_GE(wait, std::chrono::milliseconds(3000));
}

TEST(CpuWait, AThreadThatEndsKeepsItsCredit) {
  Readings r;
  r.next({{1, {10 * kMs, 0, true}}, {2, {10 * kMs, 0, false}}});
  for (int i = 0; i < 5; ++i) r.next({{1, {10 * kMs, 0, true}}, {2, {10 * kMs, 0, false}}});
  const auto before = r.next({{2, {10 * kMs, 0, false}}});
  EXPECT_EQ(before, std::chrono::milliseconds(500));
  EXPECT_EQ(r.next({{2, {10 * kMs, 0, false}}}), before);
}

TEST(CpuWait, ANewThreadsCountIsAllNewButTheFirstReadingIsTheBaseline) {
  Readings r;
  EXPECT_EQ(r.next({{1, {10 * kMs, 700 * kMs, false}}}), Clock::duration::zero());
  EXPECT_EQ(r.next({{1, {10 * kMs, 700 * kMs, false}}, {2, {5 * kMs, 40 * kMs, false}}}),
            std::chrono::milliseconds(40));
}

TEST(CpuWait, ZerosAreNoCounts) {
  // What a kernel without the counts shows: a runnable thread that never
  // "ran" must not look like one waiting.
  Readings r;
  Clock::duration wait{};
  for (int i = 0; i < 20; ++i) wait = r.next({{1, {0, 0, true}}});
  EXPECT_EQ(wait, Clock::duration::zero());
}

char state_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(") ");
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

TEST(CpuWait, AProcessAsleepWaitsForNoCpu) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  // Asleep first: until then it may wait for a CPU on a loaded host.
  const auto give_up = Clock::now() + seconds(30);
  while (state_of(child) != 'S' && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(state_of(child), 'S');
  CpuWait wait(child);
  const auto start = wait.read(Clock::now());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto later = wait.read(Clock::now());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // A sleeping process is not runnable: whatever it waited was before it
  // slept (its start), never the 300 ms it slept.
  EXPECT_LT(later - start, std::chrono::milliseconds(100));
}

TEST(CpuWait, AProcessThatIsGoneHasNoWait) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  CpuWait wait(child);
  EXPECT_EQ(wait.read(Clock::now()), Clock::duration::zero());
  EXPECT_EQ(wait.read(Clock::now() + seconds(5)), Clock::duration::zero());
}

}  // namespace
}  // namespace lizard::conformance::protocol
