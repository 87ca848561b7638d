// The conformance suite as GoogleTest tests: one test per rule of the table,
// named after the rule in CamelCase (cmd.output-limit -> CmdOutputLimit),
// with the rule ID recorded as the test property "rule".
//
//   #include "lizard/conformance/suite.h"
//   std::unique_ptr<lizard::conformance::BackendFactory> make_my_factory();
//   LIZARD_CONFORMANCE_SUITE(MyBackend, make_my_factory);
//   // then link GTest::gtest_main (or your own main) and run: MyBackend.CmdOutputLimit ...
//
// The factory is made once, on the first test that runs, and lives until the
// program ends. The rules run sequentially under the GoogleTest main; use
// run_conformance() (runner.h) to run them in parallel with reports.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/rules.h"

namespace lizard::conformance {

using FactoryMaker = std::function<std::unique_ptr<BackendFactory>()>;

// Registers one GoogleTest test per rule under `suite_name`. Call before
// RUN_ALL_TESTS (the macro does it during static initialization). Returns true.
bool register_suite(const std::string& suite_name, FactoryMaker make_factory);

// Runs one rule against a session of `factory` inside the current thread,
// reporting through GoogleTest (GTEST_SKIP for unmet needs, assertions for
// failures). `in_gtest_test` records the "rule" property (only valid inside
// a running test). Used by both the registered tests and the runner.
void execute_rule(BackendFactory& factory, const RuleInfo& rule, bool in_gtest_test);

}  // namespace lizard::conformance

#define LIZARD_CONFORMANCE_SUITE(SuiteName, make_factory)                        \
  [[maybe_unused]] static const bool lizard_conformance_registered_##SuiteName = \
      ::lizard::conformance::register_suite(#SuiteName, (make_factory))
