// The fixtures of LizardSandboxBackend's tests against the embedded mock
// (lizard_backend_test.cc, lizard_command_test.cc, lizard_files_test.cc),
// on lizard::testing::MockFixture: the mock's request journal shows what
// went over the wire.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "lizard/testing/eventually.h"
#include "lizard/testing/faults.h"
#include "lizard/testing/matchers.h"
#include "lizard/testing/mock_fixture.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::workspace::lizard_test {

using namespace std::chrono_literals;
using lizard::testing::Eventually;
using lizard::testing::is_create;
using lizard::testing::is_delete;
using lizard::testing::is_exec;
using lizard::testing::ThrowsInvalidArgument;
using lizard::testing::ThrowsPathError;
using lizard::testing::ThrowsTransient;
using lizard::testing::ThrowsUnavailable;
using mock::MockOptions;
namespace fault = lizard::testing::fault;

// A fresh mock and no backend yet.
using LizardBackendTest = lizard::testing::MockFixture;

// A backend whose sandbox exists, and a clean journal.
class LizardCommandTest : public lizard::testing::MockFixture {
 protected:
  void SetUp() override {
    backend_ = make_backend();
    backend_->run(Shell{"true"});  // creates the sandbox
    server_.clear_journal();
  }
  std::size_t execs() const { return count(is_exec); }
  std::unique_ptr<LizardSandboxBackend> backend_;
};

}  // namespace lizard::workspace::lizard_test
