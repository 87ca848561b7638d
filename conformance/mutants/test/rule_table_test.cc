// The rule table itself (ctest `suite.rule-table`): every row is complete and
// unique, and docs/contract.md's rule tables are exactly what the rows
// produce. LIZARD_UPDATE_DOCS=1 rewrites those tables from the rows.
// ctest `suite.wait-hints`: every row's wait_seconds is what its body waited
// in a run of the suite on the embedded mock (the report conformance_lizard
// writes, named by LIZARD_WAIT_HINTS_REPORT).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "lizard/conformance/report_tools.h"
#include "lizard/conformance/rules.h"

namespace lizard::conformance {
namespace {

constexpr const char* kContractDoc = LIZARD_SOURCE_DIR "/docs/contract.md";
constexpr const char* kFirstTable = "## Environment and ref\n";
constexpr const char* kAfterTables = "## What the suite cannot show here\n";

TEST(RuleTable, EveryRowIsCompleteAndUnique) {
  std::set<std::string_view> ids;
  std::set<std::string> gtest_names;
  for (const RuleInfo& rule : all_rules()) {
    EXPECT_TRUE(ids.insert(rule.id).second) << rule.id << " appears twice";
    EXPECT_TRUE(gtest_names.insert(gtest_name(rule.id)).second)
        << rule.id << ": its gtest name is taken";
    EXPECT_FALSE(rule.summary.empty()) << rule.id << ": no summary";
    EXPECT_FALSE(rule.why.empty()) << rule.id << ": no why";
    EXPECT_NE(rule.body, nullptr) << rule.id << ": no body";
    EXPECT_EQ(find_rule(rule.id), &rule);
    EXPECT_EQ(find_rule_by_gtest_name(gtest_name(rule.id)), &rule);
    const bool lizard = rule.id.substr(0, 7) == "lizard.";
    EXPECT_EQ(rule.profile == "lizard", lizard) << rule.id << ": profile and ID prefix disagree";
  }
}

TEST(RuleTable, ContractDocMatchesTheRows) {
  std::ifstream in(kContractDoc, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << kContractDoc;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  const auto begin = doc.find(kFirstTable);
  const auto end = doc.find(kAfterTables);
  ASSERT_NE(begin, std::string::npos) << "docs/contract.md has no \"" << kFirstTable << "\"";
  ASSERT_NE(end, std::string::npos) << "docs/contract.md has no \"" << kAfterTables << "\"";
  ASSERT_LT(begin, end);
  const std::string want = rule_tables_markdown() + "\n";
  const std::string have = doc.substr(begin, end - begin);
  if (have != want && std::getenv("LIZARD_UPDATE_DOCS") != nullptr) {
    std::ofstream out(kContractDoc, std::ios::binary | std::ios::trunc);
    out << doc.substr(0, begin) << want << doc.substr(end);
    SUCCEED() << "rewrote the rule tables of " << kContractDoc;
    return;
  }
  EXPECT_EQ(have, want) << "docs/contract.md's rule tables differ from the rule table; run "
                           "LIZARD_UPDATE_DOCS=1 build/bin/mutants_test --gtest_filter=RuleTable.*";
}

TEST(RuleTable, WaitHintsAreWhatTheRulesWaited) {
  const char* path = std::getenv("LIZARD_WAIT_HINTS_REPORT");
  if (path == nullptr) GTEST_SKIP() << "run as ctest suite.wait-hints (it names the report)";
  const RunReport report = read_json_report(path);
  ASSERT_GE(report.rules.size(), all_rules().size() - 1) << path << " is not a whole run";
  for (const RuleResult& r : report.rules) {
    const RuleInfo* rule = find_rule(r.id);
    ASSERT_NE(rule, nullptr) << r.id << " in " << path << " is no rule";
    if (r.status == Status::kSkip) continue;
    EXPECT_NEAR(rule->wait_seconds, r.wait_seconds, 0.01)
        << r.id << ": its row says it waits " << rule->wait_seconds << " s, it waited "
        << r.wait_seconds << " s (set .wait_seconds in its row)";
  }
}

}  // namespace
}  // namespace lizard::conformance
