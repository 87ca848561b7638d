// The fixtures of LizardSandboxBackend's tests against the embedded mock
// (lizard_backend_test.cc, lizard_command_test.cc, lizard_files_test.cc);
// the mock's request journal shows what went over the wire.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lizard/mock/mock_server.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::workspace::lizard_test {

using namespace std::chrono_literals;
using mock::FaultRule;
using mock::JournalEntry;
using mock::MockOptions;
using mock::MockServer;

inline bool is_exec(const JournalEntry& e) {
  return e.method == "POST" && e.path.size() > 5 && e.path.substr(e.path.size() - 5) == "/exec";
}
inline bool is_create(const JournalEntry& e) {
  return e.method == "POST" && e.path == "/api/sandboxes";
}

template <typename Pred>
std::size_t count_if(const std::vector<JournalEntry>& journal, Pred pred) {
  return static_cast<std::size_t>(std::count_if(journal.begin(), journal.end(), pred));
}

// Waits for `condition` with a deadline (no fixed sleeps).
template <typename Cond>
bool eventually(Cond condition, std::chrono::milliseconds deadline = 20s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

inline std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(gen() & 0xFF);
  return out;
}

class LizardBackendTest : public ::testing::Test {
 protected:
  explicit LizardBackendTest(MockOptions mock_options = {}) : server_(std::move(mock_options)) {}

  LizardOptions options() const {
    LizardOptions o;
    o.api_key = server_.api_key();
    o.project = server_.project_id();
    o.api_url = server_.url();
    return o;
  }

  std::vector<JournalEntry> journal() const { return server_.requests(); }

  MockServer server_;
};

// A backend whose sandbox exists, and a clean journal.
class LizardCommandTest : public LizardBackendTest {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<LizardSandboxBackend>(options());
    backend_->run(Shell{"true"});  // creates the sandbox
    server_.clear_journal();
  }
  std::size_t execs() const { return count_if(journal(), is_exec); }
  std::unique_ptr<LizardSandboxBackend> backend_;
};

}  // namespace lizard::workspace::lizard_test
