// Waiting for a condition in a test, with a deadline and no fixed sleeps.
//
//   EXPECT_TRUE(lizard::testing::Eventually([&] { return journal().size() == 2; }));
//
// Thread-safe (it only calls `condition`).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

namespace lizard::testing {

using namespace std::chrono_literals;

// Polls `condition` every `poll` until it holds or `limit` passed; checks it
// once more at the end. The failure message says how long it waited. The
// default limit is long: it costs nothing when the condition holds, and a
// starved CI host (2 CPUs, ctest -j6) has taken over 10 s for what takes
// 0.1 s alone.
inline ::testing::AssertionResult Eventually(const std::function<bool()>& condition,
                                             std::chrono::milliseconds limit = 60s,
                                             std::chrono::milliseconds poll = 20ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(poll);
  }
  if (condition()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the condition did not hold within " << limit.count() << " ms";
}

}  // namespace lizard::testing
