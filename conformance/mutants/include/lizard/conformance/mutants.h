// The mutants: deliberately broken backends that prove the conformance suite
// catches defects. Each mutant is a working backend (LocalWorkspaceBackend or
// LizardSandboxBackend on the embedded mock) with one behaviour broken, and
// names the rules it must FAIL. A rule proven by no mutant is listed in
// unprovable_rules() with the reason; the test mutants_test checks that every
// rule of the table is one or the other.
//
//   for (const auto& m : all_mutants()) {
//     auto outcome = run_mutant(m);
//     // outcome.failed_targets == m.targets when the suite caught the defect
//   }
//   print_mutation_report(std::cout);           // per rule: the mutants that prove it
//
// Thread safety: the catalogue is immutable; run_mutant() may be called from
// several threads at once (each call makes its own factory).
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/runner.h"

namespace lizard::conformance {

struct Mutant {
  std::string name;         // "drops-stderr"
  std::string description;  // the defect, in one sentence
  // Rule IDs the mutant must FAIL (at least one; all in the rule table).
  std::vector<std::string> targets;
  std::string base;  // "local" or "lizard" (the embedded mock)
  // A fresh factory of broken backends (a new temporary base directory or new
  // embedded mocks). Thread-safe; each call is independent.
  std::function<std::unique_ptr<BackendFactory>()> make_factory;
};

// Every mutant, grouped by base, in rule-table order of their first target.
const std::vector<Mutant>& all_mutants();

// The mutant with this name, or nullptr.
const Mutant* find_mutant(std::string_view name);

// A rule that no mutant proves, and why.
struct UnprovableRule {
  std::string id;
  std::string reason;
};

// The rules that cannot be proven by a mutant (kept next to the catalogue).
const std::vector<UnprovableRule>& unprovable_rules();

struct MutantRunOptions {
  // Rules of the mutant's run running at once.
  int jobs = 4;
  // Also run these rules (a RunnerOptions::filter) to list what else the
  // mutant breaks; empty: only its targets.
  std::string extra_filter;
  std::chrono::seconds rule_deadline{120};
};

struct MutantOutcome {
  std::string mutant;
  std::vector<std::string> failed_targets;  // the targets it FAILed: the suite caught it
  std::vector<std::string> missed_targets;  // targets that PASSed or SKIPped: not proven
  std::vector<std::string> other_failures;  // non-target rules that FAILed (extra_filter)
  RunReport report;                         // every rule that ran
  std::string error;                        // the factory could not be made (all missed)
  bool proven() const { return missed_targets.empty() && error.empty(); }
};

// Runs the mutant's target rules (plus options.extra_filter) with run_rules()
// and sorts the results. Never throws for a failing rule or a throwing
// factory (that becomes `error`). Thread-safe.
MutantOutcome run_mutant(const Mutant& mutant, const MutantRunOptions& options = {});

// Runs every mutant, `parallel` mutants at once, and returns their outcomes in
// catalogue order. `progress` (may be null) gets one line per finished mutant.
std::vector<MutantOutcome> run_all_mutants(int parallel = 6, const MutantRunOptions& options = {},
                                           std::ostream* progress = nullptr);

// Rule IDs that are neither the target of a mutant nor listed in
// unprovable_rules(), plus targets and unprovable entries naming no rule of
// the table. Empty when the catalogue covers the table.
std::vector<std::string> coverage_problems();
// The same check for any table, catalogue and list of reasons.
std::vector<std::string> coverage_problems(const std::vector<RuleInfo>& rules,
                                           const std::vector<Mutant>& mutants,
                                           const std::vector<UnprovableRule>& unprovable);

// The mutation report: for every rule of the table, the mutants that prove
// it, or the reason it cannot be proven. Without `outcomes` it lists the
// catalogue; with them it marks each mutant "caught" or "MISSED" by what its
// run showed. Returns 0 when every rule is covered (and, with outcomes, every
// mutant was caught on every target), 1 otherwise.
int print_mutation_report(std::ostream& out, const std::vector<MutantOutcome>* outcomes = nullptr);

}  // namespace lizard::conformance
