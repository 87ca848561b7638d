// mutants_test (ctest label `mutants`): the conformance suite must FAIL every
// mutant on each rule it targets, and every rule of the table must be proven
// by a mutant or listed with the reason it cannot be.
//
// All mutants run once, several at a time, when the first mutant test needs
// its outcome; each test then reads its own. LIZARD_MUTANTS (a rule-filter
// style list of globs over mutant names) restricts which mutants run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "lizard/conformance/local_factory.h"
#include "lizard/conformance/mutants.h"
#include "lizard/conformance/rules.h"

namespace lizard::conformance {
namespace {

std::string selection() {
  const char* s = std::getenv("LIZARD_MUTANTS");
  return s ? s : "";
}

// The outcomes of every selected mutant, computed once.
const std::vector<MutantOutcome>& outcomes() {
  static std::once_flag once;
  static std::vector<MutantOutcome> results;
  std::call_once(once, [] {
    MutantRunOptions options;
    if (const char* extra = std::getenv("LIZARD_MUTANTS_EXTRA")) options.extra_filter = extra;
    const std::string filter = selection();
    if (filter.empty()) {
      results = run_all_mutants(6, options, &std::cerr);
      return;
    }
    for (const auto& m : all_mutants()) {
      if (filter_matches(filter, m.name)) results.push_back(run_mutant(m, options));
    }
  });
  return results;
}

bool outcomes_ran = false;

TEST(MutantCatalogue, EveryRuleIsProvenOrExplained) {
  const auto problems = coverage_problems();
  for (const auto& p : problems) ADD_FAILURE() << p;
  EXPECT_TRUE(problems.empty());
}

TEST(MutantCatalogue, CoverageCheckFlagsAnUncoveredRule) {
  std::vector<RuleInfo> rules = all_rules();
  rules.push_back({.id = "fake.new-rule", .summary = "a rule added without a mutant"});
  const auto problems = coverage_problems(rules, all_mutants(), unprovable_rules());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("fake.new-rule"), std::string::npos) << problems[0];
}

TEST(MutantCatalogue, CoverageCheckFlagsStaleEntries) {
  const Mutant& first = all_mutants().front();
  std::vector<UnprovableRule> unprovable = {{first.targets.front(), "said to be unprovable"},
                                            {"no.such-rule", "gone"}};
  std::vector<Mutant> mutants = all_mutants();
  Mutant stray = first;
  stray.name = "stray";
  stray.targets = {"no.such-target"};
  mutants.push_back(stray);
  const auto problems = coverage_problems(all_rules(), mutants, unprovable);
  auto mentions = [&](const std::string& text) {
    for (const auto& p : problems) {
      if (p.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(mentions("listed as unprovable but a mutant targets it"));
  EXPECT_TRUE(mentions("no.such-rule"));
  EXPECT_TRUE(mentions("no.such-target"));
}

// The harness must be able to say "not caught": a "mutant" that breaks nothing
// is reported as missing its target.
TEST(MutantHarness, ReportsAnUnbrokenBackendAsMissed) {
  Mutant unbroken;
  unbroken.name = "unbroken";
  unbroken.description = "the working local backend";
  unbroken.targets = {"cmd.result-fields", "fs.exists"};
  unbroken.base = "local";
  unbroken.make_factory = [] { return make_local_factory(); };
  const MutantOutcome outcome = run_mutant(unbroken);
  EXPECT_FALSE(outcome.proven());
  EXPECT_TRUE(outcome.failed_targets.empty());
  EXPECT_EQ(outcome.missed_targets, unbroken.targets);
  EXPECT_EQ(outcome.report.rules.size(), 2u) << "only the targets run";
}

class MutantIsCaught : public testing::TestWithParam<std::size_t> {};

TEST_P(MutantIsCaught, FailsEveryTarget) {
  const Mutant& mutant = all_mutants().at(GetParam());
  const std::string filter = selection();
  if (!filter.empty() && !filter_matches(filter, mutant.name)) {
    GTEST_SKIP() << "not selected by LIZARD_MUTANTS";
  }
  outcomes_ran = true;
  const MutantOutcome* outcome = nullptr;
  for (const auto& o : outcomes()) {
    if (o.mutant == mutant.name) outcome = &o;
  }
  ASSERT_NE(outcome, nullptr) << mutant.name << " did not run";
  ASSERT_EQ(outcome->error, "") << mutant.name << ": the factory failed";
  for (const auto& target : mutant.targets) {
    const RuleResult* r = outcome->report.find(target);
    ASSERT_NE(r, nullptr) << mutant.name << ": " << target << " did not run";
    EXPECT_EQ(r->status, Status::kFail)
        << "mutant " << mutant.name << " (" << mutant.description << ") was not caught by rule "
        << target << ": " << status_name(r->status) << (r->reason.empty() ? "" : " — ")
        << r->reason;
    if (r->status == Status::kFail) {
      std::cout << "  " << target << " FAIL: " << r->reason.substr(0, 200) << "\n";
    }
  }
  if (!outcome->other_failures.empty()) {
    std::string list;
    for (const auto& f : outcome->other_failures) list += " " + f;
    std::cout << "  also fails:" << list << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, MutantIsCaught,
                         testing::Range<std::size_t>(0, all_mutants().size()),
                         [](const testing::TestParamInfo<std::size_t>& param) {
                           return gtest_name(all_mutants().at(param.param).name);
                         });

}  // namespace
}  // namespace lizard::conformance

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  if (lizard::conformance::outcomes_ran) {
    std::cout << "\n";
    lizard::conformance::print_mutation_report(std::cout, &lizard::conformance::outcomes());
  }
  std::cout.flush();
  std::cerr.flush();
  // Rules of broken backends may leave abandoned threads behind; do not wait for them.
  std::_Exit(status);
}
