// The runner's CI features (ctest `suite.runner-ci`): expectations (match,
// UNEXPECTED FAIL / PASS / SKIP, stale entries), sharding (the union of N
// shards is the selection, without overlap), merge and compare, the report
// formats' verdicts, output paths checked before any rule, and rules of
// another profile decided without a session, and a backend whose
// capabilities() disagrees with its own accessors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "lizard/conformance/expectations.h"
#include "lizard/conformance/forwarding_backend.h"
#include "lizard/conformance/local_factory.h"
#include "lizard/conformance/report_tools.h"
#include "lizard/conformance/runner.h"
#include "lizard/workspace/utf8.h"

namespace lizard::conformance {
namespace {

RuleResult result(const std::string& id, Status status, const std::string& reason = "") {
  RuleResult r;
  r.id = id;
  r.status = status;
  r.reason = reason;
  return r;
}

std::string expectations_problem(const std::string& text) {
  try {
    parse_expectations(text, "exp.txt");
  } catch (const ExpectationsError& e) {
    return e.what();
  }
  return "";
}

TEST(Expectations, ParsesEntriesWithReasonsAndLinks) {
  const Expectations e = parse_expectations(
      "# known problems\n"
      "\n"
      "fs.permission-denied  SKIP  commands run as root\n"
      "cmd.timeout*\tFAIL\tthe runtime kills only the parent https://tracker.example/12\n",
      "exp.txt");
  ASSERT_EQ(e.entries().size(), 2u);
  EXPECT_EQ(e.entries()[0].reason, "commands run as root");
  EXPECT_EQ(e.entries()[0].line, 3);
  EXPECT_EQ(e.entries()[1].reason, "the runtime kills only the parent");
  EXPECT_EQ(e.entries()[1].link, "https://tracker.example/12");
  ASSERT_NE(e.find("cmd.timeout-partial-output"), nullptr);
  EXPECT_EQ(e.find("cmd.timeout-partial-output")->status, Status::kFail);
  EXPECT_EQ(e.find("cmd.result-fields"), nullptr);
}

TEST(Expectations, AnExactIdWinsOverAGlob) {
  const Expectations e =
      parse_expectations("fs.*  SKIP  no filesystem\nfs.exists  FAIL  exists() lies\n", "exp.txt");
  ASSERT_NE(e.find("fs.exists"), nullptr);
  EXPECT_EQ(e.find("fs.exists")->status, Status::kFail);
  EXPECT_EQ(e.find("fs.make-dir")->status, Status::kSkip);
}

TEST(Expectations, StaleEntriesAreAClearErrorNamingEachLine) {
  const std::string problem = expectations_problem(
      "cmd.result-fields  FAIL  fine\n"
      "cmd.no-such-rule  FAIL  renamed long ago\n"
      "nothing.*  SKIP  a glob that matches nothing\n");
  EXPECT_NE(problem.find("exp.txt:2: stale entry: 'cmd.no-such-rule' names no rule"),
            std::string::npos)
      << problem;
  EXPECT_NE(problem.find("exp.txt:3: stale entry: 'nothing.*' matches no rule"), std::string::npos)
      << problem;
  EXPECT_EQ(problem.find("exp.txt:1"), std::string::npos) << problem;
}

TEST(Expectations, MalformedLinesAndDuplicatesAreErrors) {
  EXPECT_NE(expectations_problem("cmd.result-fields PASS fine\n").find("must be FAIL or SKIP"),
            std::string::npos);
  EXPECT_NE(expectations_problem("cmd.result-fields FAIL\n").find("needs a reason"),
            std::string::npos);
  EXPECT_NE(expectations_problem("cmd.result-fields\n").find("needs a status"), std::string::npos);
  EXPECT_NE(expectations_problem("cmd.result-fields FAIL a\ncmd.result-fields SKIP b\n")
                .find("already listed on line 1"),
            std::string::npos);
}

TEST(Expectations, VerdictsOfEveryCombination) {
  const Expectations e = parse_expectations(
      "cmd.result-fields  FAIL  known\ncmd.stdin-at-eof  SKIP  known\n", "exp.txt");
  struct Case {
    std::string id;
    Status status;
    Verdict verdict;
  };
  const Case cases[] = {
      {"cmd.result-fields", Status::kFail, Verdict::kAsExpected},
      {"cmd.result-fields", Status::kPass, Verdict::kUnexpectedPass},
      {"cmd.result-fields", Status::kSkip, Verdict::kUnexpectedSkip},
      {"cmd.stdin-at-eof", Status::kSkip, Verdict::kAsExpected},
      {"cmd.stdin-at-eof", Status::kPass, Verdict::kUnexpectedPass},
      {"cmd.stdin-at-eof", Status::kFail, Verdict::kUnexpectedFail},
      {"cmd.timeout", Status::kPass, Verdict::kAsExpected},
      {"cmd.timeout", Status::kFail, Verdict::kUnexpectedFail},
      {"cmd.timeout", Status::kSkip, Verdict::kUnexpectedSkip},
  };
  for (const auto& c : cases) {
    RuleResult r = result(c.id, c.status);
    e.apply(r);
    EXPECT_EQ(r.verdict(), c.verdict) << c.id << " " << status_name(c.status);
  }
  // Without expectations a SKIP is fine and a FAIL is not.
  EXPECT_EQ(result("x", Status::kSkip).verdict(), Verdict::kAsExpected);
  EXPECT_EQ(result("x", Status::kFail).verdict(), Verdict::kUnexpectedFail);
}

RunReport judged_report() {
  const Expectations e = parse_expectations(
      "cmd.result-fields  FAIL  known bug https://tracker.example/1\n"
      "cmd.stdin-at-eof  FAIL  known bug\n",
      "exp.txt");
  RunReport report;
  report.suite_version = kSuiteVersion;
  report.backend = "fake";
  report.expectations = "exp.txt";
  report.rules = {result("cmd.result-fields", Status::kFail, "still broken"),
                  result("cmd.stdin-at-eof", Status::kPass),
                  result("cmd.timeout", Status::kFail, "a new failure")};
  for (auto& r : report.rules) e.apply(r);
  return report;
}

TEST(Expectations, EveryReportFormatSaysUnexpected) {
  const RunReport report = judged_report();
  EXPECT_EQ(report.exit_status(), 1);
  std::ostringstream console, md, json, junit;
  write_summary_table(report, console);
  write_markdown(report, md);
  write_json(report, json);
  write_junit(report, junit);
  for (const std::string& text : {console.str(), md.str(), json.str(), junit.str()}) {
    EXPECT_NE(text.find("UNEXPECTED FAIL"), std::string::npos) << text;
    EXPECT_NE(text.find("UNEXPECTED PASS"), std::string::npos) << text;
  }
  EXPECT_NE(junit.str().find("<skipped message=\"expected FAIL: still broken\"/>"),
            std::string::npos)
      << junit.str();
  EXPECT_NE(junit.str().find("failures=\"2\""), std::string::npos) << junit.str();
  EXPECT_NE(md.str().find("[link](https://tracker.example/1)"), std::string::npos) << md.str();
  // The JSON reads back with its verdicts.
  const RunReport back = parse_json_report(json.str(), "r.json");
  ASSERT_EQ(back.rules.size(), 3u);
  EXPECT_EQ(back.rules[1].verdict(), Verdict::kUnexpectedPass);
  EXPECT_EQ(back.rules[0].expected_link, "https://tracker.example/1");
  EXPECT_EQ(back.expectations, "exp.txt");
}

// A backend's name and a rule's reason come from the backend (an adapter
// in any language): bytes that are not UTF-8, or line breaks, must not make
// a report unreadable or inject Markdown.
TEST(Reports, TextThatIsNotUtf8OrSpansLinesStaysInItsPlace) {
  RunReport report;
  report.suite_version = kSuiteVersion;
  report.backend = "bad\xff\xfe name\n# injected";
  report.rules.push_back(result("cmd.result-fields", Status::kFail, "why\xc3\n## also injected"));
  report.notes.push_back("note\n# third");
  std::ostringstream md, json, junit;
  write_markdown(report, md);
  write_json(report, json);
  write_junit(report, junit);
  for (const std::string& text : {md.str(), json.str(), junit.str()}) {
    EXPECT_TRUE(workspace::is_valid_utf8(text)) << text;
  }
  EXPECT_EQ(md.str().find("\n# injected"), std::string::npos) << md.str();
  EXPECT_EQ(md.str().find("\n## also injected"), std::string::npos) << md.str();
  EXPECT_EQ(md.str().find("\n# third"), std::string::npos) << md.str();
  const RunReport back = parse_json_report(json.str(), "r.json");
  EXPECT_EQ(back.backend, "bad\xef\xbf\xbd\xef\xbf\xbd name\n# injected");
}

// Characters XML 1.0 has none for (an adapter sends them as \ufffe, \uffff,
// \u0001) make a JUnit consumer reject the whole file; a terminal's escape
// sequences in a backend's name must not reach a console or a Markdown
// heading.
TEST(Reports, JunitHasOnlyXmlCharactersAndMarkdownNoControlCharacters) {
  RunReport report;
  report.suite_version = kSuiteVersion;
  report.backend = "evil \xef\xbf\xbe\xef\xbf\xbf \x1b]0;pwned\x07\x1b[2J\x7f end";
  report.rules.push_back(
      result("cmd.result-fields", Status::kFail, "msg \xef\xbf\xbe\x01 \xef\xbf\xbf end"));
  std::ostringstream md, junit;
  write_markdown(report, md);
  write_junit(report, junit);
  for (const char* bad : {"\xef\xbf\xbe", "\xef\xbf\xbf", "\x01", "\x1b", "\x07"}) {
    EXPECT_EQ(junit.str().find(bad), std::string::npos) << junit.str();
  }
  EXPECT_NE(junit.str().find("msg ?? ? end"), std::string::npos) << junit.str();
  for (const char* bad : {"\x1b", "\x07", "\x7f"}) {
    EXPECT_EQ(md.str().find(bad), std::string::npos) << md.str();
  }
  // U+FFFD and other characters stay.
  report.backend = "caf\xc3\xa9 \xef\xbf\xbd";
  std::ostringstream junit2;
  write_junit(report, junit2);
  EXPECT_NE(junit2.str().find("caf\xc3\xa9 \xef\xbf\xbd"), std::string::npos) << junit2.str();
}

TEST(Expectations, AllMatchedIsExitZeroAndWrittenExpectationsReadBack) {
  RunReport report = judged_report();
  report.rules.pop_back();
  report.rules[1].status = Status::kFail;
  report.rules[1].reason = "as before";
  EXPECT_EQ(report.exit_status(), 0);
  std::ostringstream written;
  write_expectations(report, written);
  const Expectations again = parse_expectations(written.str(), "written.txt");
  ASSERT_EQ(again.entries().size(), 2u) << written.str();
  EXPECT_EQ(again.find("cmd.result-fields")->link, "https://tracker.example/1");
  EXPECT_EQ(again.find("cmd.stdin-at-eof")->reason, "known bug");
}

TEST(Sharding, TheShardsOfAnySelectionAreDisjointAndCoverIt) {
  for (const std::string filter : {"", "cmd.*", "fs.*:-fs.large-*", "lizard.one-create"}) {
    const auto whole = select_rules(filter);
    for (int count = 1; count <= 7; ++count) {
      std::multiset<std::string_view> seen;
      for (int index = 0; index < count; ++index) {
        const auto shard = select_rules(filter, {index, count});
        EXPECT_LE(shard.size(), whole.size() / count + 1) << "unbalanced shard";
        for (const auto* rule : shard) seen.insert(rule->id);
        EXPECT_EQ(select_rules(filter, {index, count}), shard) << "not stable";
      }
      std::multiset<std::string_view> want;
      for (const auto* rule : whole) want.insert(rule->id);
      EXPECT_EQ(seen, want) << "filter '" << filter << "', " << count << " shards";
    }
  }
}

RunReport shard_report(int index, int count, const std::string& version = kSuiteVersion) {
  RunReport r;
  r.suite_version = version;
  r.backend = "fake";
  r.shard = {index, count};
  r.wall_seconds = 1 + index;
  for (const auto* rule : select_rules("cmd.*", r.shard)) {
    r.rules.push_back(result(std::string(rule->id), Status::kPass));
  }
  r.notes = {"note of " + std::to_string(index)};
  return r;
}

std::string merge_problem(const std::vector<NamedReport>& reports) {
  try {
    merge_reports(reports);
  } catch (const ReportError& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, CombinesShardsInTableOrderAndRoundTripsThroughJson) {
  std::vector<NamedReport> reports;
  for (int i : {2, 0, 1}) {
    std::ostringstream json;
    write_json(shard_report(i, 3), json);
    reports.push_back({"s" + std::to_string(i) + ".json", parse_json_report(json.str(), "s")});
  }
  const RunReport merged = merge_reports(reports);
  const auto whole = select_rules("cmd.*");
  ASSERT_EQ(merged.rules.size(), whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(merged.rules[i].id, whole[i]->id);
  EXPECT_EQ(merged.merged_shards, (std::vector<int>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(merged.wall_seconds, 3);
  EXPECT_EQ(merged.notes.size(), 3u);
  std::ostringstream md;
  write_markdown(merged, md);
  EXPECT_NE(md.str().find("merged from shards 0, 1, 2"), std::string::npos) << md.str();
}

TEST(Merge, RefusesOtherVersionsOverlapsAndMissingShards) {
  EXPECT_NE(merge_problem({{"a.json", shard_report(0, 2)}, {"b.json", shard_report(1, 2, "0.9")}})
                .find("different suite versions: a.json is suite 1.0.0, b.json is suite 0.9"),
            std::string::npos);
  EXPECT_NE(merge_problem({{"a.json", shard_report(0, 2)}, {"b.json", shard_report(0, 2)}})
                .find("overlapping shards: a.json and b.json are both shard 0 of 2"),
            std::string::npos);
  EXPECT_NE(merge_problem({{"a.json", shard_report(0, 3)}, {"b.json", shard_report(2, 3)}})
                .find("shard 1 of 3 is missing"),
            std::string::npos);
  EXPECT_NE(merge_problem({{"a.json", shard_report(0, 2)}, {"b.json", shard_report(0, 3)}})
                .find("different shard counts"),
            std::string::npos);
  // Unsharded reports that share a rule overlap too.
  RunReport one = shard_report(0, 1);
  EXPECT_NE(merge_problem({{"a.json", one}, {"b.json", one}}).find("overlapping shards: cmd."),
            std::string::npos);
  RunReport other = one;
  other.backend = "another";
  EXPECT_NE(merge_problem({{"a.json", one}, {"b.json", other}}).find("different backends"),
            std::string::npos);
}

TEST(Compare, ListsRegressionsFixesAndOtherChanges) {
  RunReport old;
  old.suite_version = "0.9";
  old.rules = {result("a", Status::kPass), result("b", Status::kFail), result("c", Status::kPass),
               result("d", Status::kSkip)};
  RunReport now;
  now.suite_version = kSuiteVersion;
  now.rules = {result("a", Status::kFail, "broke"), result("b", Status::kPass),
               result("c", Status::kPass), result("d", Status::kFail), result("e", Status::kPass)};
  compare_reports(now, old, "old.json");
  ASSERT_TRUE(now.comparison.has_value());
  const Comparison& c = *now.comparison;
  ASSERT_EQ(c.regressions.size(), 1u);
  EXPECT_EQ(c.regressions[0].id, "a");
  ASSERT_EQ(c.fixes.size(), 1u);
  EXPECT_EQ(c.fixes[0].id, "b");
  ASSERT_EQ(c.other_changes.size(), 1u);
  EXPECT_EQ(c.other_changes[0].id, "d");
  EXPECT_EQ(c.new_rules, std::vector<std::string>{"e"});
  EXPECT_EQ(c.unchanged, 1);
  std::ostringstream console;
  write_comparison(now, console);
  EXPECT_NE(console.str().find("regressed a: PASS -> FAIL (broke)"), std::string::npos)
      << console.str();
  EXPECT_NE(console.str().find("fixed b: FAIL -> PASS"), std::string::npos) << console.str();
}

// A factory that counts what the runner asks of it; its sessions cannot be
// opened (a rule that gets one FAILs).
class CountingFactory : public BackendFactory {
 public:
  std::string name() const override { return "counting"; }
  std::unique_ptr<BackendSession> open(const RuleInfo&) override {
    ++opened;
    throw std::runtime_error("no sessions here");
  }
  void preflight() override { ++preflights; }
  std::atomic<int> opened{0};
  std::atomic<int> preflights{0};
};

TEST(Runner, RulesOfAnotherProfileSkipWithoutASession) {
  CountingFactory factory;
  RunnerOptions options;
  options.filter = "lizard.*";
  const RunReport report = run_rules(factory, options);
  EXPECT_EQ(factory.opened.load(), 0) << "a session was opened for a rule that SKIPs by profile";
  ASSERT_FALSE(report.rules.empty());
  for (const auto& r : report.rules) {
    EXPECT_EQ(r.status, Status::kSkip) << r.id;
    EXPECT_NE(r.reason.find("profile"), std::string::npos) << r.reason;
  }
}

// An in-process backend may throw anything, not only a std::exception: the
// rule FAILs with what was thrown, and the run (and its reports) goes on.
class ThrowingAnythingFactory : public BackendFactory {
 public:
  std::string name() const override { return "throwing"; }
  std::unique_ptr<BackendSession> open(const RuleInfo&) override { throw 42; }
};

TEST(Runner, AFactoryThatThrowsSomethingElseThanAStdExceptionFailsItsRules) {
  ThrowingAnythingFactory factory;
  RunnerOptions options;
  options.filter = "env.ref-stable:cmd.result-fields";
  const RunReport report = run_rules(factory, options);
  ASSERT_EQ(report.rules.size(), 2u);
  for (const auto& r : report.rules) {
    EXPECT_EQ(r.status, Status::kFail) << r.id;
    EXPECT_NE(r.reason.find("could not open a session"), std::string::npos) << r.reason;
  }
}

// A factory whose sessions take 50 ms to fail to open, and that records
// when each rule asked for one and how many rules that wait by design were
// asking at once.
class SchedulingFactory : public BackendFactory {
 public:
  struct Open {
    const RuleInfo* rule;
    std::chrono::steady_clock::time_point from, to;
  };
  std::string name() const override { return "scheduling"; }
  std::unique_ptr<BackendSession> open(const RuleInfo& rule) override {
    const bool waits = rule.wait_seconds > 0;
    Open o{&rule, std::chrono::steady_clock::now(), {}};
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (waits) most_waiting = std::max(most_waiting, ++waiting);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    o.to = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (waits) --waiting;
      opens.push_back(o);
    }
    throw std::runtime_error("no sessions here");
  }
  std::mutex mutex;
  std::vector<Open> opens;
  int waiting = 0;
  int most_waiting = 0;
};

// The rules that wait start longest wait first, but hold at most half the
// slots while rules that do not wait are left: four long waits in the four
// slots of --jobs 4 left the CPUs idle. (Every rule but the lizard profile's:
// seven wait, about fifty do not, so the rules that wait are done long
// before the others.)
TEST(Runner, RulesThatWaitStartLongestFirstInHalfTheSlots) {
  SchedulingFactory factory;
  RunnerOptions options;
  options.filter = "-lizard.*";
  options.jobs = 4;
  const RunReport report = run_rules(factory, options);
  ASSERT_EQ(report.rules.size(), select_rules(options.filter).size());
  ASSERT_EQ(factory.opens.size(), report.rules.size()) << "every rule asked for one session";
  EXPECT_LE(factory.most_waiting, 2);
  std::size_t waiting = 0;
  for (const auto& a : factory.opens) {
    if (a.rule->wait_seconds <= 0) continue;
    ++waiting;
    // A rule that waits less and was done before a longer one began started first.
    for (const auto& b : factory.opens) {
      if (b.rule->wait_seconds > a.rule->wait_seconds) {
        EXPECT_FALSE(a.to <= b.from)
            << a.rule->id << " (" << a.rule->wait_seconds << " s) ran before " << b.rule->id << " ("
            << b.rule->wait_seconds << " s)";
      }
    }
  }
  EXPECT_GE(waiting, 4u) << "the rules that wait by design";
}

TEST(Runner, AnUnwritableOutputStopsTheRunBeforeAnyRule) {
  CountingFactory factory;
  RunnerOptions options;
  options.filter = "cmd.result-fields";
  options.report_md = ::testing::TempDir() + "/lc-ok-" + std::to_string(::getpid()) + ".md";
  options.report_json = "/nonexistent-lc-dir/r.json";
  options.write_expectations = ::testing::TempDir();  // a directory
  std::ostringstream err;
  options.err = &err;
  EXPECT_EQ(run_conformance(factory, options), 2);
  EXPECT_EQ(factory.preflights.load(), 0);
  EXPECT_EQ(factory.opened.load(), 0);
  EXPECT_NE(err.str().find("--report-json /nonexistent-lc-dir/r.json"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("--write-expectations"), std::string::npos) << err.str();
  EXPECT_EQ(err.str().find("--report-md"), std::string::npos) << err.str();
  EXPECT_FALSE(std::ifstream(options.report_md).good()) << "the check left a file behind";
}

TEST(Runner, ExpectationsDecideTheExitStatusOfARealRun) {
  auto factory = make_local_factory();
  RunnerOptions options;
  options.filter = "cmd.result-fields:cmd.stdin-at-eof:lizard.one-create";
  // Right about the SKIP, wrong about a PASS: exit 1 with one UNEXPECTED PASS.
  const Expectations wrong = parse_expectations(
      "lizard.*  SKIP  not the lizard profile\ncmd.stdin-at-eof  FAIL  believed broken\n", "e.txt");
  options.expectations = &wrong;
  std::ostringstream out;
  options.out = &out;
  const RunReport report = run_rules(*factory, options);
  EXPECT_EQ(report.count(Verdict::kUnexpectedPass), 1) << out.str();
  EXPECT_EQ(report.exit_status(), 1);
  EXPECT_NE(out.str().find("UNEXPECTED PASS (expected FAIL)"), std::string::npos) << out.str();
  const Expectations right =
      parse_expectations("lizard.*  SKIP  not the lizard profile\n", "e.txt");
  options.expectations = &right;
  EXPECT_EQ(run_rules(*factory, options).exit_status(), 0);
}

// A backend whose capabilities are decided at run time, and decided wrong:
// it lists no filesystem, yet filesystem() answers.
class HidesItsFilesystem final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  Capabilities capabilities() const override {
    return {workspace::Capability::kCommands, workspace::Capability::kRealpath};
  }
};

TEST(Runner, ABackendThatDisagreesWithItselfFailsEveryRuleThatMakesOne) {
  std::shared_ptr<BackendFactory> local = make_local_factory();
  auto factory = decorate_factory(local, "disagreeing", [](std::unique_ptr<WorkspaceBackend> b) {
    return std::make_unique<HidesItsFilesystem>(std::move(b));
  });
  RunnerOptions options;
  options.filter = "cmd.result-fields:fs.bytes-round-trip";
  std::ostringstream out;
  options.out = &out;
  const RunReport report = run_rules(*factory, options);
  ASSERT_EQ(report.rules.size(), 2u) << out.str();
  for (const auto& r : report.rules) {
    EXPECT_EQ(r.status, Status::kFail) << r.id << ": " << r.reason;
    EXPECT_NE(r.reason.find("capabilities() omits 'filesystem' but its filesystem accessor"),
              std::string::npos)
        << r.id << ": " << r.reason;
  }
}

}  // namespace
}  // namespace lizard::conformance
