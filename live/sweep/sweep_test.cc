// lizard-sweep against the embedded mock, on both eras: tagged old
// sandboxes are deleted; untagged ones, young ones and other runs' are kept.
// Tagged sandboxes are made as the live suite makes them (LizardOptions::
// tags): on the kubernetes era, which drops metadata, the sweeper finds the
// tags in the file the backend writes inside the sandbox.
#include "sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "lizard/mock/mock_server.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::sweep {
namespace {

class SweepTest : public testing::TestWithParam<mock::Era> {
 protected:
  SweepTest() : server_(mock::MockOptions{.era = GetParam()}) {
    api::ClientOptions options;
    options.api_url = server_.url();
    options.api_key = server_.api_key();
    options.project = server_.project_id();
    client_options_ = options;
    client_ = std::make_unique<api::Client>(options);
    project_ = client_->resolve_project(options.project);
  }

  // A sandbox with these tags, made by the backend as a live run makes it
  // (no tags: made by the client, with other metadata only).
  std::string create(std::map<std::string, std::string> tags) {
    if (!tags.count(kRunTag)) {
      api::CreateSandboxRequest request;
      request.template_name = "interpreter";
      request.project_id = project_;
      request.timeout_ms = 3 * 3600 * 1000;
      request.metadata = std::move(tags);
      return client_->create_sandbox(request).sandbox_id;
    }
    workspace::LizardOptions options;
    options.api_key = server_.api_key();
    options.api_url = server_.url();
    options.project = server_.project_id();
    options.lifetime = std::chrono::hours(3);  // outlives the clock jump below
    options.tags = std::move(tags);
    workspace::LizardSandboxBackend backend(options);
    backend.exists("/workspace");  // the first operation creates (and tags) it
    return backend.ref()->id;
  }

  bool alive(const std::string& id) {
    try {
      client_->get_sandbox(id);
      return true;
    } catch (const api::NotFoundError&) {
      return false;
    }
  }

  // The mock's "now": the start time of a sandbox made just now.
  std::chrono::system_clock::time_point mock_now(const std::string& fresh_id) {
    auto t = parse_time(client_->get_sandbox(fresh_id).started_at);
    EXPECT_TRUE(t.has_value());
    return t.value_or(std::chrono::system_clock::now());
  }

  static bool has(const std::vector<SweptSandbox>& list, const std::string& id) {
    return std::any_of(list.begin(), list.end(), [&](const SweptSandbox& s) { return s.id == id; });
  }

  mock::MockServer server_;
  api::ClientOptions client_options_;
  std::unique_ptr<api::Client> client_;
  std::string project_;
};

TEST_P(SweepTest, DeletesTaggedOldSandboxesOnly) {
  const std::string old_tagged = create({{kRunTag, "run-a"}, {"lizard-conformance-rule", "cmd.x"}});
  const std::string old_other_run = create({{kRunTag, "run-b"}});
  const std::string old_untagged = create({{"owner", "someone"}});
  server_.advance_clock(std::chrono::minutes(45));
  const std::string young_tagged = create({{kRunTag, "run-a"}});

  SweepOptions options;
  options.client = client_options_;
  options.older_than = std::chrono::minutes(30);
  options.now = mock_now(young_tagged);
  std::ostringstream log;
  const SweepResult result = sweep(options, &log);

  EXPECT_TRUE(has(result.deleted, old_tagged)) << log.str();
  EXPECT_TRUE(has(result.deleted, old_other_run)) << log.str();
  EXPECT_TRUE(has(result.kept_young, young_tagged)) << log.str();
  EXPECT_EQ(result.deleted.size(), 2u) << log.str();
  EXPECT_EQ(result.untagged, 1);
  EXPECT_TRUE(result.failed.empty());
  EXPECT_FALSE(alive(old_tagged));
  EXPECT_FALSE(alive(old_other_run));
  EXPECT_TRUE(alive(old_untagged)) << "an untagged sandbox was deleted";
  EXPECT_TRUE(alive(young_tagged)) << "a young sandbox was deleted";
  EXPECT_NE(log.str().find("deleted " + old_tagged + " (run run-a, rule cmd.x"), std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find(server_.api_key()), std::string::npos) << "the key is in the log";
}

TEST_P(SweepTest, RunFilterAndDryRunDeleteNothingElse) {
  const std::string mine = create({{kRunTag, "run-a"}});
  const std::string theirs = create({{kRunTag, "run-b"}});
  server_.advance_clock(std::chrono::minutes(45));
  const std::string fresh = create({});

  SweepOptions options;
  options.client = client_options_;
  options.older_than = std::chrono::minutes(30);
  options.now = mock_now(fresh);
  options.run_id = "run-a";
  options.dry_run = true;
  SweepResult dry = sweep(options, nullptr);
  EXPECT_TRUE(has(dry.deleted, mine));
  EXPECT_FALSE(has(dry.deleted, theirs));
  EXPECT_EQ(dry.other_runs, 1);
  EXPECT_TRUE(alive(mine)) << "a dry run deleted";

  options.dry_run = false;
  SweepResult real = sweep(options, nullptr);
  EXPECT_TRUE(has(real.deleted, mine));
  EXPECT_FALSE(alive(mine));
  EXPECT_TRUE(alive(theirs)) << "another run's sandbox was deleted";
}

INSTANTIATE_TEST_SUITE_P(Eras, SweepTest,
                         testing::Values(mock::Era::kKubernetes, mock::Era::kFirecracker),
                         [](const testing::TestParamInfo<mock::Era>& param) {
                           return param.param == mock::Era::kKubernetes ? "Kubernetes"
                                                                        : "Firecracker";
                         });

TEST(SweepParseTime, AcceptsTheApiFormatAndRejectsOthers) {
  auto t = parse_time("1970-01-01T00:01:00.250Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count(),
            60250);
  EXPECT_TRUE(parse_time("2025-01-31T12:34:56Z").has_value());
  EXPECT_FALSE(parse_time("yesterday").has_value());
  EXPECT_FALSE(parse_time("2025-01-31T12:34:56+02:00").has_value());
}

}  // namespace
}  // namespace lizard::sweep
