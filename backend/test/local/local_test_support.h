// Shared helpers of the LocalWorkspaceBackend tests: a fixture with a fresh
// backend, and whether a process is gone. Waiting and the error matchers are
// lizard::testing's (Eventually, ThrowsPathError, ...).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <fstream>
#include <memory>
#include <string>

#include "lizard/testing/eventually.h"
#include "lizard/testing/matchers.h"
#include "lizard/workspace/local_workspace_backend.h"

namespace lizard::workspace::local_test {

using lizard::testing::Eventually;
using lizard::testing::ThrowsPathError;

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

}  // namespace lizard::workspace::local_test
