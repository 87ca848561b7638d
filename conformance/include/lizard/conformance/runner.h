// The conformance runner as a library: runs the rules against a factory,
// in parallel, and reports each rule as PASS, FAIL or SKIP with its time and
// a one-line reason. The binary lizard-conformance is a thin main around it;
// the mutants test calls run_rules() once per broken backend.
//
// Rule bodies use GoogleTest assertions. The runner runs each rule on a
// worker thread and captures its assertions with a per-thread
// TestPartResultReporter, so no GoogleTest main is needed.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/rules.h"

namespace lizard::conformance {

enum class Status { kPass, kFail, kSkip };

// "PASS", "FAIL", "SKIP".
const char* status_name(Status status);

struct RuleResult {
  std::string id;
  Status status = Status::kPass;
  double seconds = 0;
  std::string reason;  // one line: the first failure or the skip reason; empty on PASS
  // The waits the rule cannot avoid (timeouts it sets, sleeps it must outlast,
  // drain graces), as the rule declared them with RuleContext::note_wait.
  double wait_seconds = 0;
};

struct RunReport {
  std::string suite_version;
  std::string backend;
  std::vector<RuleResult> rules;  // table order
  double wall_seconds = 0;
  int jobs = 1;                    // rules that ran at once
  std::vector<std::string> notes;  // BackendFactory::report_notes()
  int count(Status status) const;
  // Sums over the rules: their wall times, and their unavoidable waits. With
  // jobs > 1 these add up the rules' own times, which overlap in wall time;
  // compare overhead as rule_seconds_sum() - unavoidable_wait_seconds()
  // (at jobs 1, wall_seconds is about rule_seconds_sum()).
  double rule_seconds_sum() const;
  double unavoidable_wait_seconds() const;
  // The result for a rule ID, or nullptr when the rule was filtered out.
  const RuleResult* find(std::string_view id) const;
};

struct RunnerOptions {
  // Rule IDs to run: ':'-separated globs ('*' any run of characters, '?' one);
  // a pattern starting with '-' excludes. Empty: every rule.
  std::string filter;
  // Rules running at once (>= 1).
  int jobs = 4;
  // A rule still running after this long is reported FAIL; its thread is
  // abandoned (the process should exit soon after the run).
  std::chrono::seconds rule_deadline{150};
  // Where per-rule lines and the summary table go; nullptr: silent.
  std::ostream* out = nullptr;
  // Report files; empty: not written.
  std::string report_md;
  std::string report_json;
  std::string junit;
};

// True when `id` passes the filter (see RunnerOptions::filter).
bool filter_matches(std::string_view filter, std::string_view id);

// Runs the matching rules and returns their results. Prints one line per rule
// as it finishes to options.out. Writes no report files. Does not throw for a
// failing rule or a factory that throws (those rules FAIL).
RunReport run_rules(BackendFactory& factory, const RunnerOptions& options);

// factory.preflight(), run_rules(), then the summary table on options.out
// and the report files. Returns 0 when no rule FAILed, 1 otherwise (2 when
// the preflight fails, before any rule, or a report cannot be written).
int run_conformance(BackendFactory& factory, const RunnerOptions& options);

// Report writers (the formats of --report-md, --report-json, --junit).
void write_markdown(const RunReport& report, std::ostream& out);
void write_json(const RunReport& report, std::ostream& out);
void write_junit(const RunReport& report, std::ostream& out);
void write_summary_table(const RunReport& report, std::ostream& out);

}  // namespace lizard::conformance
