// A test fixture with an embedded mock of the Lizard API and backends on it.
//
//   class MyTest : public lizard::testing::MockFixture {};
//   TEST_F(MyTest, X) {
//     auto backend = make_backend();
//     backend->run(Argv{{"true"}});
//     EXPECT_EQ(count(is_create), 1u);
//   }
//
// A fixture for another era passes MockOptions: MockFixture(firecracker()).
// options_for(server) gives the same options for a MockServer of a test's
// own; is_create, is_exec and is_delete pick requests out of the journal.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lizard/mock/mock_server.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::testing {

inline bool is_create(const mock::JournalEntry& e) {
  return e.method == "POST" && e.path == "/api/sandboxes";
}
inline bool is_exec(const mock::JournalEntry& e) {
  return e.method == "POST" && e.path.size() > 5 && e.path.substr(e.path.size() - 5) == "/exec";
}

// A sandbox delete (DELETE /api/sandboxes/{id}; not a file's remove).
inline bool is_delete(const mock::JournalEntry& e) {
  const std::string prefix = "/api/sandboxes/";
  return e.method == "DELETE" && e.path.size() > prefix.size() &&
         e.path.compare(0, prefix.size(), prefix) == 0 &&
         e.path.find('/', prefix.size()) == std::string::npos;
}

inline mock::MockOptions firecracker(mock::MockOptions options = {}) {
  options.era = mock::Era::kFirecracker;
  return options;
}

// Options that reach `server` (its key, first project and URL).
inline workspace::LizardOptions options_for(const mock::MockServer& server) {
  workspace::LizardOptions o;
  o.api_key = server.api_key();
  o.project = server.project_id();
  o.api_url = server.url();
  return o;
}

class MockFixture : public ::testing::Test {
 protected:
  explicit MockFixture(mock::MockOptions options = {}) : server_(std::move(options)) {}

  // Options that reach this mock (key, project, URL).
  workspace::LizardOptions options() const { return options_for(server_); }
  std::unique_ptr<workspace::LizardSandboxBackend> make_backend() const {
    return std::make_unique<workspace::LizardSandboxBackend>(options());
  }
  std::unique_ptr<workspace::LizardSandboxBackend> make_backend(workspace::LizardOptions o) const {
    return std::make_unique<workspace::LizardSandboxBackend>(std::move(o));
  }

  std::vector<mock::JournalEntry> journal() const { return server_.requests(); }
  template <typename Pred>
  std::size_t count(Pred pred) const {
    const auto j = journal();
    return static_cast<std::size_t>(std::count_if(j.begin(), j.end(), pred));
  }

  mock::MockServer server_;
};

}  // namespace lizard::testing
