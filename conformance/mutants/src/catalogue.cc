#include <algorithm>
#include <atomic>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "lizard/conformance/mutants.h"
#include "lizard/conformance/rules.h"
#include "mutant_support.h"

namespace lizard::conformance {

const std::vector<Mutant>& all_mutants() {
  static const std::vector<Mutant> catalogue = [] {
    std::vector<Mutant> out;
    mutants::add_env_and_command_mutants(out);
    mutants::add_file_and_realpath_mutants(out);
    mutants::add_hostile_mutants(out);
    mutants::add_lizard_mutants(out);
    return out;
  }();
  return catalogue;
}

const Mutant* find_mutant(std::string_view name) {
  for (const auto& m : all_mutants()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const std::vector<UnprovableRule>& unprovable_rules() {
  // Every rule of the table has a mutant today. A rule that gets none must be
  // listed here with the reason (coverage_problems() insists on one or the other).
  static const std::vector<UnprovableRule> reasons = {};
  return reasons;
}

std::vector<std::string> coverage_problems(const std::vector<RuleInfo>& rules,
                                           const std::vector<Mutant>& mutants,
                                           const std::vector<UnprovableRule>& unprovable) {
  std::vector<std::string> problems;
  std::set<std::string> ids;
  for (const auto& r : rules) ids.insert(std::string(r.id));
  std::set<std::string> targeted;
  std::set<std::string> names;
  for (const auto& m : mutants) {
    if (!names.insert(m.name).second) problems.push_back("mutant " + m.name + ": name used twice");
    if (m.targets.empty()) problems.push_back("mutant " + m.name + ": no target rule");
    if (m.base != "local" && m.base != "lizard") {
      problems.push_back("mutant " + m.name + ": unknown base '" + m.base + "'");
    }
    if (!m.make_factory) problems.push_back("mutant " + m.name + ": no factory");
    for (const auto& t : m.targets) {
      if (!ids.count(t)) problems.push_back("mutant " + m.name + ": target " + t + " is no rule");
      targeted.insert(t);
    }
  }
  std::set<std::string> explained;
  for (const auto& u : unprovable) {
    if (!ids.count(u.id)) problems.push_back("unprovable " + u.id + ": no such rule");
    if (u.reason.empty()) problems.push_back("unprovable " + u.id + ": no reason given");
    if (targeted.count(u.id)) {
      problems.push_back("unprovable " + u.id + ": listed as unprovable but a mutant targets it");
    }
    explained.insert(u.id);
  }
  for (const auto& r : rules) {
    const std::string id(r.id);
    if (!targeted.count(id) && !explained.count(id)) {
      problems.push_back("rule " + id + ": no mutant proves it and no reason says why");
    }
  }
  return problems;
}

std::vector<std::string> coverage_problems() {
  return coverage_problems(all_rules(), all_mutants(), unprovable_rules());
}

MutantOutcome run_mutant(const Mutant& mutant, const MutantRunOptions& options) {
  MutantOutcome outcome;
  outcome.mutant = mutant.name;
  std::string filter;
  for (const auto& t : mutant.targets) filter += (filter.empty() ? "" : ":") + t;
  if (!options.extra_filter.empty()) filter += ":" + options.extra_filter;
  try {
    auto factory = mutant.make_factory();
    RunnerOptions runner;
    runner.filter = filter;
    runner.jobs = std::max(1, options.jobs);
    runner.rule_deadline = options.rule_deadline;
    outcome.report = run_rules(*factory, runner);
  } catch (const std::exception& e) {
    outcome.error = e.what();
  }
  for (const auto& t : mutant.targets) {
    const RuleResult* r = outcome.report.find(t);
    if (r != nullptr && r->status == Status::kFail) {
      outcome.failed_targets.push_back(t);
    } else {
      outcome.missed_targets.push_back(t);
    }
  }
  for (const auto& r : outcome.report.rules) {
    if (r.status != Status::kFail) continue;
    if (std::find(mutant.targets.begin(), mutant.targets.end(), r.id) == mutant.targets.end()) {
      outcome.other_failures.push_back(r.id);
    }
  }
  return outcome;
}

std::vector<MutantOutcome> run_all_mutants(int parallel, const MutantRunOptions& options,
                                           std::ostream* progress) {
  const auto& catalogue = all_mutants();
  std::vector<MutantOutcome> outcomes(catalogue.size());
  std::atomic<std::size_t> next{0};
  std::mutex out_mutex;
  std::size_t done = 0;
  auto worker = [&] {
    for (std::size_t i = next++; i < catalogue.size(); i = next++) {
      outcomes[i] = run_mutant(catalogue[i], options);
      if (progress == nullptr) continue;
      std::lock_guard<std::mutex> lock(out_mutex);
      ++done;
      const auto& o = outcomes[i];
      *progress << "[" << done << "/" << catalogue.size() << "] " << std::left << std::setw(32)
                << o.mutant << (o.proven() ? " caught  " : " MISSED  ") << std::fixed
                << std::setprecision(1) << o.report.wall_seconds << " s";
      if (!o.proven()) {
        for (const auto& t : o.missed_targets) {
          const RuleResult* r = o.report.find(t);
          *progress << "  " << t << ": "
                    << (r ? std::string(status_name(r->status)) + " " + r->reason : o.error);
        }
      }
      *progress << "\n" << std::flush;
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(parallel, static_cast<int>(catalogue.size())));
  for (int i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return outcomes;
}

namespace {

using OutcomesByName = std::map<std::string, const MutantOutcome*>;

std::string join(const std::vector<std::string>& items) {
  std::string list;
  for (const auto& item : items) list += (list.empty() ? "" : ", ") + item;
  return list;
}

// The mutants that target a rule, each marked with its verdict when the
// mutants ran.
struct Provers {
  std::vector<std::string> entries;
  bool any_caught = false;  // one of them ran and was caught by the rule
  bool any_missed = false;  // one of them ran and was not
};

Provers provers_of(const std::string& id, bool ran, const OutcomesByName& by_name) {
  Provers provers;
  for (const auto& m : all_mutants()) {
    if (std::find(m.targets.begin(), m.targets.end(), id) == m.targets.end()) continue;
    std::string entry = m.name;
    if (ran) {
      auto it = by_name.find(m.name);
      const bool caught = it != by_name.end() && std::find(it->second->failed_targets.begin(),
                                                           it->second->failed_targets.end(),
                                                           id) != it->second->failed_targets.end();
      entry += caught ? " [caught]" : (it == by_name.end() ? " [not run]" : " [MISSED]");
      if (caught) provers.any_caught = true;
      if (it != by_name.end() && !caught) provers.any_missed = true;
    }
    provers.entries.push_back(entry);
  }
  return provers;
}

// The MUTANT / BASE / DEFECT table; under each mutant that ran, what went wrong.
void print_mutant_table(std::ostream& out, const OutcomesByName& by_name) {
  out << "\n"
      << std::setw(32) << "MUTANT" << std::setw(8) << "BASE"
      << "DEFECT\n";
  for (const auto& m : all_mutants()) {
    out << std::setw(32) << m.name << std::setw(8) << m.base << m.description << "\n";
    auto it = by_name.find(m.name);
    if (it == by_name.end()) continue;
    const MutantOutcome& o = *it->second;
    if (!o.error.empty())
      out << std::setw(40) << ""
          << "error: " << o.error << "\n";
    for (const auto& t : o.missed_targets) {
      const RuleResult* r = o.report.find(t);
      out << std::setw(40) << ""
          << "MISSED " << t << ": "
          << (r ? std::string(status_name(r->status)) + (r->reason.empty() ? "" : " " + r->reason)
                : "not run")
          << "\n";
    }
    if (!o.other_failures.empty()) {
      out << std::setw(40) << ""
          << "also fails: " << join(o.other_failures) << "\n";
    }
  }
}

}  // namespace

int print_mutation_report(std::ostream& out, const std::vector<MutantOutcome>* outcomes) {
  const auto& catalogue = all_mutants();
  OutcomesByName by_name;
  if (outcomes != nullptr) {
    for (const auto& o : *outcomes) by_name[o.mutant] = &o;
  }
  std::map<std::string, std::string> reasons;
  for (const auto& u : unprovable_rules()) reasons[u.id] = u.reason;
  int status = 0;
  std::size_t proven_rules = 0;
  out << "Mutation report: " << all_rules().size() << " rules, " << catalogue.size() << " mutants"
      << (outcomes ? " (run)" : " (catalogue; not run)") << "\n\n";
  out << std::left << std::setw(40) << "RULE"
      << "PROVEN BY\n";
  for (const auto& rule : all_rules()) {
    const std::string id(rule.id);
    const Provers provers = provers_of(id, outcomes != nullptr, by_name);
    if (provers.any_missed) status = 1;
    out << std::setw(40) << id;
    if (!provers.entries.empty()) {
      out << join(provers.entries) << "\n";
      if (outcomes == nullptr || provers.any_caught) ++proven_rules;
    } else if (reasons.count(id)) {
      out << "cannot be proven: " << reasons[id] << "\n";
    } else {
      out << "NOT COVERED: no mutant and no reason\n";
      status = 1;
    }
  }
  print_mutant_table(out, by_name);
  out << "\n"
      << proven_rules << " of " << all_rules().size() << " rules proven by a mutant"
      << (outcomes ? " that was caught" : "") << ", " << reasons.size()
      << " listed as unprovable\n";
  for (const auto& p : coverage_problems()) {
    out << "coverage problem: " << p << "\n";
    status = 1;
  }
  return status;
}

}  // namespace lizard::conformance
