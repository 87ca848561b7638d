// The live factory through the live path, against an embedded mock of the
// kubernetes era (which drops create metadata, as the real platform of that
// era does) (ctest `live.path-in-process`): the preflight's one error and
// zero creates for a wrong key, a wrong project or a missing variable; the
// budget stopping creates at N; at most 8 lizard.* rules skipped live, each
// of the others passing; nothing left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "lizard/conformance/lizard_factory.h"
#include "lizard/conformance/runner.h"
#include "lizard/mock/mock_server.h"

namespace lizard::conformance {
namespace {

class LivePath : public ::testing::Test {
 protected:
  LivePath() : server_(mock::MockOptions{.era = mock::Era::kKubernetes}) {}

  LizardLiveFactoryOptions options() const {
    LizardLiveFactoryOptions o;
    o.base.api_key = server_.api_key();
    o.base.project = server_.project_id();
    o.base.api_url = server_.url();
    o.run_id = "lc-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed());
    return o;
  }

  int creates() const {
    const auto journal = server_.requests();
    return static_cast<int>(std::count_if(journal.begin(), journal.end(), [](const auto& e) {
      return e.method == "POST" && e.path == "/api/sandboxes";
    }));
  }

  // run_conformance on the live factory; its exit status, with stdout and stderr.
  int run(LizardLiveFactoryOptions o, const std::string& filter, std::string& out, std::string& err,
          int jobs = 4) {
    auto factory = make_lizard_live_factory(std::move(o));
    RunnerOptions runner;
    runner.filter = filter;
    runner.jobs = jobs;
    std::ostringstream out_stream, err_stream;
    runner.out = &out_stream;
    runner.err = &err_stream;
    const int status = run_conformance(*factory, runner);
    out = out_stream.str();
    err = err_stream.str();
    return status;
  }

  // The preflight refused: exit 2, one line naming `variable`, no rule run, no create.
  void expect_one_preflight_error(LizardLiveFactoryOptions o, const std::string& variable) {
    std::string out, err;
    EXPECT_EQ(run(std::move(o), "", out, err), 2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(variable), std::string::npos) << err;
    EXPECT_EQ(out.find("PASS"), std::string::npos) << "a rule ran: " << out;
    EXPECT_EQ(creates(), 0) << "the preflight let a create through";
    EXPECT_EQ(err.find(server_.api_key()), std::string::npos) << "the key is in the message";
  }

  mock::MockServer server_;
};

TEST_F(LivePath, AWrongKeyIsOnePreflightErrorAndNoCreate) {
  auto o = options();
  o.base.api_key = "liz_wrong_key_for_this_test";
  expect_one_preflight_error(o, "LIZARD_API_KEY");
}

TEST_F(LivePath, AWrongProjectIsOnePreflightErrorAndNoCreate) {
  auto o = options();
  o.base.project = "no-such-project";
  expect_one_preflight_error(o, "LIZARD_PROJECT_ID");
}

TEST_F(LivePath, AMissingVariableIsOnePreflightErrorAndNoRequest) {
  auto o = options();
  o.base.project.clear();
  expect_one_preflight_error(o, "LIZARD_PROJECT_ID");
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(LivePath, TheBudgetStopsCreatesAtN) {
  auto o = options();
  o.max_sandboxes = 3;
  std::string out, err;
  EXPECT_EQ(run(o, "env.*:cmd.*", out, err, 2), 1) << err;
  EXPECT_EQ(creates(), 3) << "the preflight's probe and two rules' sandboxes, no more\n" << out;
  EXPECT_NE(out.find("FAIL  cmd.concurrent"), std::string::npos) << out;
  std::istringstream lines(out);
  int refused = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind('[', 0) != 0 || line.find("] FAIL") == std::string::npos) continue;
    ++refused;
    EXPECT_NE(line.find("budget reached"), std::string::npos) << line;
  }
  EXPECT_GT(refused, 20) << out;
  EXPECT_NE(out.find("budget: 3 of 3 creates (reached)"), std::string::npos) << out;
  EXPECT_NE(out.find("left behind 0"), std::string::npos) << out;
}

TEST_F(LivePath, AtMostEightLizardRulesSkipLiveAndTheOthersPass) {
  std::string out, err;
  EXPECT_EQ(run(options(), "lizard.*", out, err), 0) << out << err;
  std::set<std::string> skipped;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("] SKIP  ");
    if (line.rfind('[', 0) != 0 || at == std::string::npos) continue;
    std::istringstream words(line.substr(at + 8));
    std::string id;
    words >> id;
    skipped.insert(id);
  }
  EXPECT_LE(skipped.size(), 8u) << out;
  // The rules that need what only the mock can do: request bodies, faults,
  // a short per-request exec limit.
  const std::set<std::string> expected = {"lizard.create-body", "lizard.transient-errors",
                                          "lizard.no-rerun-after-drop", "lizard.long-command",
                                          "lizard.unsupported-501"};
  EXPECT_EQ(skipped, expected) << out;
  EXPECT_NE(out.find("13 pass, 0 fail, 5 skip"), std::string::npos) << out;
  EXPECT_NE(out.find("left behind 0"), std::string::npos) << out;
  // The kubernetes era dropped the run's metadata: the tags file is what marks them.
  EXPECT_GT(creates(), 10);
}

}  // namespace
}  // namespace lizard::conformance
