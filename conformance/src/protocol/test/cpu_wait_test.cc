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
