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
#include "lizard/testing/faults.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::sweep {
namespace {

namespace fault = lizard::testing::fault;

class SweepTest : public ::testing::TestWithParam<mock::Era> {
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
                         ::testing::Values(mock::Era::kKubernetes, mock::Era::kFirecracker),
                         [](const ::testing::TestParamInfo<mock::Era>& param) {
                           return param.param == mock::Era::kKubernetes ? "Kubernetes"
                                                                        : "Firecracker";
                         });

// A sandbox's own files cannot tag it where the platform keeps metadata:
// code running in it could write the tags file. Where metadata is dropped
// (kubernetes), the file is all there is.
TEST_P(SweepTest, ATagsFileCountsOnlyWhereThePlatformKeptNoMetadata) {
  const std::string forged = create({{"owner", "alice"}});
  client_->write_text_file(forged, workspace::kTagsFile, std::string(kRunTag) + "=run-a\n");
  server_.advance_clock(std::chrono::minutes(45));
  const std::string fresh = create({{"owner", "alice"}});

  SweepOptions options;
  options.client = client_options_;
  options.now = mock_now(fresh);
  std::ostringstream log;
  const SweepResult result = sweep(options, &log);
  if (GetParam() == mock::Era::kFirecracker) {
    EXPECT_TRUE(result.deleted.empty()) << log.str();
    EXPECT_TRUE(alive(forged)) << "a sandbox with metadata was deleted for a file inside it";
  } else {
    EXPECT_TRUE(has(result.deleted, forged)) << log.str();
  }
}

// A tags file that cannot be read (503 after the retries) is no "untagged":
// the sandbox is left alone, said, and the sweep fails (exit 1). A 429 is
// waited out and the sandbox swept. A delete's transient failure is retried.
TEST_P(SweepTest, UnreadableTagsAndTransientDeletesAreRetriedThenReported) {
  const std::string old_tagged = create({{kRunTag, "run-a"}});
  server_.advance_clock(std::chrono::minutes(45));
  const std::string fresh = create({{kRunTag, "run-b"}});
  SweepOptions options;
  options.client = client_options_;
  options.now = mock_now(fresh);
  options.run_id = "run-a";
  if (GetParam() == mock::Era::kKubernetes) {
    server_.add_fault(fault::respond("GET", "/api/sandboxes/*/files", 503));
    std::ostringstream log;
    const SweepResult result = sweep(options, &log);
    EXPECT_EQ(result.unchecked.size(), 2u) << log.str();
    EXPECT_TRUE(result.deleted.empty()) << log.str();
    EXPECT_TRUE(alive(old_tagged));
    EXPECT_NE(log.str().find("COULD NOT CHECK " + old_tagged), std::string::npos) << log.str();
    EXPECT_NE(log.str().find("could not check 2"), std::string::npos) << log.str();
    server_.clear_faults();
    // One 429 with Retry-After on the read: waited out.
    server_.add_fault(fault::respond("GET", "/api/sandboxes/*/files", 429)
                          .times(1)
                          .body(R"({"error":"slow down","retryAfterS":1})"));
  }
  server_.add_fault(fault::respond("DELETE", "/api/sandboxes/*", 503).times(1));
  std::ostringstream log;
  const SweepResult result = sweep(options, &log);
  EXPECT_TRUE(result.unchecked.empty()) << log.str();
  EXPECT_TRUE(result.failed.empty()) << log.str();
  EXPECT_TRUE(has(result.deleted, old_tagged)) << log.str();
  EXPECT_FALSE(alive(old_tagged));
}

TEST(SweepParseTime, ReadsRfc3339WithItsOffsetAndRejectsAnythingElse) {
  using std::chrono::milliseconds;
  auto ms = [](const std::string& text) -> std::optional<long long> {
    const auto t = parse_time(text);
    if (!t) return std::nullopt;
    return std::chrono::duration_cast<milliseconds>(t->time_since_epoch()).count();
  };
  EXPECT_EQ(ms("1970-01-01T00:01:00.250Z"), 60250);
  EXPECT_EQ(ms("1970-01-01T00:01:00Z"), 60000);
  EXPECT_EQ(ms("1970-01-01t00:01:00.2z"), 60200);
  // An offset: the local time is that far ahead of UTC, at every fraction's length.
  EXPECT_EQ(ms("1970-01-01T02:01:00+02:00"), 60000);
  EXPECT_EQ(ms("1970-01-01T02:01:00.123+02:00"), 60123);
  EXPECT_EQ(ms("1970-01-01T02:01:00.123456+02:00"), 60123);
  EXPECT_EQ(ms("1970-01-01T00:01:00.123456789-00:30"), 60123 + 30 * 60000);
  EXPECT_EQ(ms("1970-01-01T00:01:00+00:00"), 60000);
  EXPECT_EQ(ms("2024-02-29T00:00:00Z"), 1709164800000LL);
  for (const char* bad :
       {"yesterday", "", "2025-01-31T12:34:56", "2025-01-31 12:34:56Z", "2025-01-31T12:34:56ZZ",
        "2025-01-31T12:34:56.Z", "2025-01-31T12:34:56+0200", "2025-01-31T12:34:56+02",
        "2025-01-31T12:34:56+24:00", "2025-02-31T12:34:56Z", "2025-13-01T00:00:00Z",
        "2025-01-31T24:00:00Z", "2025-1-31T12:34:56Z", "2025-01-31T12:34:56Z trailing",
        // A time_point of nanoseconds ends in 2262: a far future must not wrap into the past.
        "9999-12-31T23:59:59.999Z", "2263-01-01T00:00:00Z", "1000-01-01T00:00:00Z"}) {
    EXPECT_FALSE(parse_time(bad).has_value()) << bad;
  }
}

TEST(SweepPrintable, ControlBytesAndNonAsciiAreEscapedAndLongTextCut) {
  EXPECT_EQ(printable("lc-1a2b cmd.timeout"), "lc-1a2b cmd.timeout");
  EXPECT_EQ(printable("a\rdeleted 0\x1b[8m\\ü"), "a\\x0ddeleted 0\\x1b[8m\\x5c\\xc3\\xbc");
  EXPECT_EQ(printable(std::string(500, 'x')).size(), 203u);
}

}  // namespace
}  // namespace lizard::sweep
