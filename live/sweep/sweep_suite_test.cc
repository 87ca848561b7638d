// lizard-sweep against what a killed live run leaves behind, on the
// kubernetes-era mock, which drops create metadata as that era's platform
// does: the leftovers are made by the live factory itself (one session per
// rule, each sandbox used once, no session closed), so the only marks they
// carry are the ones the suite really writes. The sweep deletes exactly
// the run's leftovers; another run's, untagged sandboxes and sandboxes
// whose tags file is someone else's are kept.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "lizard/conformance/lizard_factory.h"
#include "lizard/mock/mock_server.h"
#include "sweep.h"

namespace lizard::sweep {
namespace {

class SweepSuiteLeftovers : public ::testing::Test {
 protected:
  SweepSuiteLeftovers() : server_(mock::MockOptions{.era = mock::Era::kKubernetes}) {
    client_options_.api_url = server_.url();
    client_options_.api_key = server_.api_key();
    client_options_.project = server_.project_id();
    client_ = std::make_unique<api::Client>(client_options_);
  }

  // The sandboxes run `run_id` leaves behind when it is killed while these
  // rules run: each rule's session made one sandbox and was never closed.
  std::set<std::string> leave_behind(const std::string& run_id,
                                     const std::vector<std::string_view>& rules) {
    conformance::LizardLiveFactoryOptions options;
    options.base.api_url = server_.url();
    options.base.api_key = server_.api_key();
    options.base.project = server_.project_id();
    options.run_id = run_id;
    options.lifetime = std::chrono::hours(3);  // outlives the clock jump below
    auto factory = conformance::make_lizard_live_factory(options);
    std::set<std::string> ids;
    for (auto id : rules) {
      const conformance::RuleInfo* rule = conformance::find_rule(id);
      EXPECT_NE(rule, nullptr) << id;
      if (rule == nullptr) continue;
      auto session = factory->open(*rule);
      auto backend = session->make();
      backend->filesystem()->exists("/workspace");  // creates the sandbox (and its tags file)
      ids.insert(backend->ref()->id);
      // Killed: the session never cleans up. It is kept where it stays
      // reachable (so LeakSanitizer does not count it) and never destroyed.
      static auto* const killed = new std::vector<std::unique_ptr<conformance::BackendSession>>();
      killed->push_back(std::move(session));
    }
    return ids;
  }

  // A sandbox the suite did not make: no tags, or a tags file of its own.
  std::string foreign(const std::string& tags_file) {
    api::CreateSandboxRequest request;
    request.template_name = "interpreter";
    request.project_id = client_->resolve_project(client_options_.project);
    request.timeout_ms = 3 * 3600 * 1000;
    request.metadata = {{"team", "someone else"}};
    const std::string id = client_->create_sandbox(request).sandbox_id;
    if (!tags_file.empty()) client_->write_text_file(id, workspace::kTagsFile, tags_file);
    return id;
  }

  bool alive(const std::string& id) {
    try {
      client_->get_sandbox(id);
      return true;
    } catch (const api::NotFoundError&) {
      return false;
    }
  }

  static std::set<std::string> ids(const std::vector<SweptSandbox>& list) {
    std::set<std::string> out;
    for (const auto& s : list) out.insert(s.id);
    return out;
  }

  mock::MockServer server_;
  api::ClientOptions client_options_;
  std::unique_ptr<api::Client> client_;
};

TEST_F(SweepSuiteLeftovers, DeletesExactlyTheSuitesLeftoversOnAPlatformThatDropsMetadata) {
  const auto mine = leave_behind("lc-mine", {"env.ref-stable", "cmd.timeout", "lizard.destroy"});
  const auto theirs = leave_behind("lc-theirs", {"fs.exists"});
  const std::string untagged = foreign("");
  const std::string other_tags = foreign("owner=someone\nlizard-conformance-rule=cmd.timeout\n");
  for (const auto& id : mine) {
    EXPECT_TRUE(client_->get_sandbox(id).metadata.empty())
        << "this era should have dropped the run's metadata";
  }
  server_.advance_clock(std::chrono::minutes(45));
  const auto young = leave_behind("lc-mine", {"fs.make-dir"});

  SweepOptions options;
  options.client = client_options_;
  options.older_than = std::chrono::minutes(30);
  options.now = parse_time(client_->get_sandbox(*young.begin()).started_at).value();
  options.run_id = "lc-mine";
  std::ostringstream log;
  const SweepResult result = sweep(options, &log);
  EXPECT_EQ(ids(result.deleted), mine) << log.str();
  EXPECT_EQ(ids(result.kept_young), young) << log.str();
  EXPECT_EQ(result.other_runs, 1) << log.str();
  EXPECT_EQ(result.untagged, 2) << log.str();
  EXPECT_TRUE(result.failed.empty());
  for (const auto& id : mine) EXPECT_FALSE(alive(id)) << id;
  for (const auto& id : theirs) EXPECT_TRUE(alive(id)) << "another run's sandbox was deleted";
  EXPECT_TRUE(alive(untagged)) << "an untagged sandbox was deleted";
  EXPECT_TRUE(alive(other_tags)) << "a sandbox with someone else's tags file was deleted";
  EXPECT_NE(log.str().find("(run lc-mine, rule cmd.timeout"), std::string::npos) << log.str();

  // Every run: the other run's leftover too, still never the others.
  options.run_id.clear();
  const SweepResult all = sweep(options, &log);
  EXPECT_EQ(ids(all.deleted), theirs) << log.str();
  EXPECT_TRUE(alive(untagged));
  EXPECT_TRUE(alive(other_tags));
  for (const auto& id : young) EXPECT_TRUE(alive(id)) << "a young sandbox was deleted";
}

}  // namespace
}  // namespace lizard::sweep
