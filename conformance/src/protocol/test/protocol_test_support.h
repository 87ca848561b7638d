// What the backend protocol's tests share (protocol_test.cc,
// hostile_adapter_test.cc): how to start lizard-workspace-serve and
// bad_adapter.py as adapters.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "lizard/conformance/adapter_client.h"

namespace lizard::conformance::test_support {

// lizard-workspace-serve --backend BACKEND, every message checked against
// the schemas.
inline AdapterOptions serve_options(const std::string& backend) {
  AdapterOptions options;
  options.argv = {LIZARD_SERVE_PATH, "--backend", backend};
  options.check_schemas = true;
  return options;
}

inline AdapterOptions broken_adapter(std::vector<std::string> argv) {
  AdapterOptions options;
  options.argv = std::move(argv);
  // Short, so a hung adapter is found soon. Starting is apart: python3 took
  // 5 to 10 s to start and answer initialize at ctest -j6 on a 2-CPU machine
  // (its start costs 0.3 s of CPU there, and the load was 15 to 30).
  options.answer_deadline = std::chrono::seconds(5);
  options.start_deadline = std::chrono::seconds(90);
  options.exit_grace = std::chrono::seconds(1);
  return options;
}

// bad_adapter.py MODE (its modes are listed at its top).
inline AdapterOptions bad_adapter(const std::string& mode) {
  return broken_adapter({"python3", LIZARD_BAD_ADAPTER_PATH, mode});
}

}  // namespace lizard::conformance::test_support
