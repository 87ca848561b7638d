// The rule table itself (ctest `suite.rule-table`): every row is complete and
// unique, and docs/contract.md's rule tables are exactly what the rows
// produce. LIZARD_UPDATE_DOCS=1 rewrites those tables from the rows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

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

}  // namespace
}  // namespace lizard::conformance
