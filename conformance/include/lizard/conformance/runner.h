// The conformance runner as a library: runs the rules against a factory,
// in parallel, and reports each rule as PASS, FAIL or SKIP with its time and
// a one-line reason. The binary lizard-conformance is a thin main around it;
// the mutants test calls run_rules() once per broken backend.
//
// Rule bodies use GoogleTest assertions. The runner runs each rule on a
// worker thread and captures its assertions with a per-thread
// TestPartResultReporter, so no GoogleTest main is needed.
//
// For CI: a run can hold expectations (known FAILs and SKIPs, expectations.h),
// be one shard of several (ShardSpec), and be compared with an earlier report
// (report_tools.h, which also merges the shards' JSON reports).
#pragma once

#include <chrono>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/rules.h"

namespace lizard::conformance {

enum class Status { kPass, kFail, kSkip };

// "PASS", "FAIL", "SKIP".
const char* status_name(Status status);
// The inverse of status_name(); nullopt for anything else.
std::optional<Status> parse_status(std::string_view text);

// How a result compares with its expectation (a run without expectations
// has every result kAsExpected unless it FAILed: see RuleResult::verdict()).
enum class Verdict { kAsExpected, kUnexpectedFail, kUnexpectedPass, kUnexpectedSkip };

// "as expected", "UNEXPECTED FAIL", "UNEXPECTED PASS", "UNEXPECTED SKIP".
const char* verdict_name(Verdict verdict);

struct RuleResult {
  std::string id;
  Status status = Status::kPass;
  double seconds = 0;
  std::string reason;  // one line: the first failure or the skip reason; empty on PASS
  // The waits the rule cannot avoid (timeouts it sets, sleeps it must outlast,
  // drain graces), as the rule declared them with RuleContext::note_wait.
  double wait_seconds = 0;
  // With expectations (RunnerOptions::expectations): what was expected (PASS
  // for a rule the file does not name) and the entry's reason and link.
  // nullopt: the run had no expectations.
  std::optional<Status> expected;
  std::string expected_reason;
  std::string expected_link;

  // Without expectations: kUnexpectedFail for a FAIL, else kAsExpected.
  // With them: kAsExpected when status == *expected, else UNEXPECTED
  // followed by the status that was not expected.
  Verdict verdict() const;
};

// One shard of a run split over `count` machines: the rules whose position
// among the selected rules (table order, after --filter) is `index` modulo
// `count`, as GoogleTest shards (GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS).
struct ShardSpec {
  int index = 0;
  int count = 1;
  bool sharded() const { return count > 1; }
};

// A rule's status in an earlier report and now (--compare OLD.json).
struct StatusChange {
  std::string id;
  Status before = Status::kPass;
  Status now = Status::kPass;
  std::string reason;  // now's reason
};

// This run against an earlier report: regressions (PASS then, FAIL now),
// fixes (FAIL then, PASS now), every other status change, and the rules of
// this run the earlier report does not have.
struct Comparison {
  std::string old_source;  // the earlier report's file name
  std::string old_suite_version;
  std::vector<StatusChange> regressions;
  std::vector<StatusChange> fixes;
  std::vector<StatusChange> other_changes;
  std::vector<std::string> new_rules;
  int unchanged = 0;
};

struct RunReport {
  std::string suite_version;
  std::string backend;
  std::vector<RuleResult> rules;  // table order
  double wall_seconds = 0;
  int jobs = 1;                    // rules that ran at once
  std::vector<std::string> notes;  // BackendFactory::report_notes()
  ShardSpec shard;                 // count 1: the whole selection (or a merge of shards)
  std::vector<int> merged_shards;  // a merged report: the shard indexes it combines
  std::string expectations;        // the expectations file applied, "" for none
  std::optional<Comparison> comparison;

  int count(Status status) const;
  int count(Verdict verdict) const;
  // Sums over the rules: their wall times, and their unavoidable waits. With
  // jobs > 1 these add up the rules' own times, which overlap in wall time;
  // compare overhead as rule_seconds_sum() - unavoidable_wait_seconds()
  // (at jobs 1, wall_seconds is about rule_seconds_sum()).
  double rule_seconds_sum() const;
  double unavoidable_wait_seconds() const;
  // The result for a rule ID, or nullptr when the rule was filtered out.
  const RuleResult* find(std::string_view id) const;
  // The exit status the report stands for: 0 when every result is as
  // expected (without expectations: when no rule FAILed), 1 otherwise.
  int exit_status() const;
};

class Expectations;  // expectations.h

struct RunnerOptions {
  // Rule IDs to run: ':'-separated globs ('*' any run of characters, '?' one);
  // a pattern starting with '-' excludes. Empty: every rule.
  std::string filter;
  // Of the rules the filter selects, only this shard's.
  ShardSpec shard;
  // Rules running at once (>= 1). The rules that wait by design (a timeout,
  // a sleep: RuleInfo::wait_seconds) start longest wait first, in at most
  // half the slots (rounded up) while rules that do not wait are left; those
  // start in table order.
  int jobs = 4;
  // A rule still running after this long is reported FAIL; its thread is
  // abandoned (the process should exit soon after the run).
  std::chrono::seconds rule_deadline{150};
  // Where per-rule lines and the summary table go; nullptr: silent.
  std::ostream* out = nullptr;
  // Where run_conformance's errors go (a failed preflight, an unwritable
  // path); nullptr: std::cerr.
  std::ostream* err = nullptr;
  // Known FAILs and SKIPs; nullptr: none (a FAIL fails the run). Not owned;
  // must outlive the run.
  const Expectations* expectations = nullptr;
  // An earlier report to compare with (--compare); not owned.
  const RunReport* compare_with = nullptr;
  std::string compare_source;  // its file name, for the reports
  // Report files; empty: not written.
  std::string report_md;
  std::string report_json;
  std::string junit;
  // Writes the expectations this run's results make (--write-expectations).
  std::string write_expectations;
};

// True when `id` passes the filter (see RunnerOptions::filter).
bool filter_matches(std::string_view filter, std::string_view id);

// The rules a run with this filter and shard runs, in table order.
std::vector<const RuleInfo*> select_rules(std::string_view filter, ShardSpec shard = {});

// Runs the selected rules and returns their results. Prints one line per rule
// as it finishes to options.out. Writes no report files. Does not throw for a
// failing rule or a factory that throws (those rules FAIL). A rule of another
// profile than the factory's SKIPs without a session being opened; once the
// factory's budget is spent (BackendFactory::exhausted_budget()), the rules
// not yet started FAIL with that reason and open no session.
RunReport run_rules(BackendFactory& factory, const RunnerOptions& options);

// Checks that every output file of `options` can be written (without
// truncating an existing one) and that no two name one file; one line per
// problem, empty when all can.
std::vector<std::string> unwritable_outputs(const RunnerOptions& options);

// unwritable_outputs() (exit 2 when one fails), factory.preflight(), then
// the reports of an earlier run at the given paths removed (a run killed
// before its end leaves none, not a stale PASS), run_rules(), the
// comparison, then the summary table on options.out and the report files. Returns
// RunReport::exit_status(): 0 when every result is as expected, 1 otherwise; 2 when an output path
// cannot be written or the preflight fails (before any rule), or a report cannot be written.
int run_conformance(BackendFactory& factory, const RunnerOptions& options);

// Fills report.comparison from `old` (see Comparison).
void compare_reports(RunReport& report, const RunReport& old, const std::string& old_source);

// Report writers (the formats of --report-md, --report-json, --junit).
void write_markdown(const RunReport& report, std::ostream& out);
void write_json(const RunReport& report, std::ostream& out);
void write_junit(const RunReport& report, std::ostream& out);
void write_summary_table(const RunReport& report, std::ostream& out);
// The comparison as console lines ("regressed", "fixed", ...); nothing without one.
void write_comparison(const RunReport& report, std::ostream& out);

// Writes the report files named in options (report_md, report_json, junit,
// write_expectations), each whole or not at all (written beside, checked,
// then renamed over the path; a path that is not a regular file, such as
// /dev/stdout, in place); returns false, with one line per failure and its
// reason on `err`, when one could not be written.
bool write_report_files(const RunReport& report, const RunnerOptions& options, std::ostream& err);

}  // namespace lizard::conformance
