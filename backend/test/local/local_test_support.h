// Shared helpers of the LocalWorkspaceBackend tests.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "lizard/workspace/local_workspace_backend.h"

namespace lizard::workspace::testing {

// Waits for `condition` with a deadline; true when it became true in time.
template <class Condition>
bool wait_for(Condition condition, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// True when no live process has this pid (a zombie awaiting a reaper counts
// as gone: it no longer runs).
inline bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// A fresh backend in its own temporary directory, destroyed after the test.
class LocalBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<LocalWorkspaceBackend>();
    root_ = backend_->working_dir();
  }
  void TearDown() override {
    if (backend_) backend_->destroy();
  }

  std::string at(const std::string& relative) const { return root_ + "/" + relative; }

  // The pid a command wrote (as decimal text) into `relative`.
  pid_t pid_in(const std::string& relative) {
    return static_cast<pid_t>(std::stol(backend_->read_bytes(at(relative))));
  }

  std::unique_ptr<LocalWorkspaceBackend> backend_;
  std::string root_;
};

}  // namespace lizard::workspace::testing
