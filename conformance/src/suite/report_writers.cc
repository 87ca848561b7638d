// The report formats: the console summary, Markdown, JSON and JUnit XML, and
// what a report says about expectations, shards and a comparison.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "lizard/conformance/expectations.h"
#include "lizard/conformance/runner.h"
#include "lizard/workspace/utf8.h"
#include "report_text.h"
#include "rule_context.h"

namespace lizard::conformance {

namespace internal {

std::string json_escape(const std::string& text) {
  std::string out;
  for (unsigned char c : workspace::repair_utf8(text)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// XML 1.0 text: the five specials escaped, UTF-8 repaired, and what XML 1.0
// has no character for (C0 controls but tab and newline, U+FFFE, U+FFFF)
// as '?': a JUnit consumer rejects the whole file over one of them.
std::string xml_escape(const std::string& text) {
  std::string out;
  const std::string repaired = workspace::repair_utf8(text);
  for (std::size_t i = 0; i < repaired.size(); ++i) {
    const auto c = static_cast<unsigned char>(repaired[i]);
    if (c == 0xEF && i + 2 < repaired.size() &&
        static_cast<unsigned char>(repaired[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(repaired[i + 2]) & 0xFE) == 0xBE) {
      out += '?';  // U+FFFE or U+FFFF
      i += 2;
      continue;
    }
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c < 0x20 && c != '\n' && c != '\t' ? '?' : static_cast<char>(c);
    }
  }
  return out;
}

std::string md_escape(const std::string& text) {
  std::string out;
  for (char c : workspace::repair_utf8(text)) {
    if (c == '|') out += "\\";
    out += c;
  }
  return out;
}

std::string md_line(const std::string& text) {
  std::string out = md_escape(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r') {
      c = ' ';
    } else if (u < 0x20 || u == 0x7f) {
      c = '?';  // an escape sequence of a backend's text must not reach a terminal
    }
  }
  return out;
}

std::string fixed(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

}  // namespace internal

namespace {

using internal::fixed;
using internal::json_escape;
using internal::md_escape;
using internal::md_line;
using internal::xml_escape;

bool has_expectations(const RunReport& report) { return !report.expectations.empty(); }

// "[expected FAIL] ", "[UNEXPECTED PASS] ", or "" (no expectations, or an expected PASS).
std::string verdict_tag(const RuleResult& r) {
  if (!r.expected) return "";
  const Verdict v = r.verdict();
  if (v != Verdict::kAsExpected) return std::string("[") + verdict_name(v) + "] ";
  if (r.status == Status::kPass) return "";
  return std::string("[expected ") + status_name(r.status) + "] ";
}

// The reason a report shows: the result's, or for an UNEXPECTED PASS what was expected.
std::string shown_reason(const RuleResult& r) {
  if (r.expected && r.status == Status::kPass && *r.expected != Status::kPass) {
    return std::string("expected ") + status_name(*r.expected) + ": " + r.expected_reason;
  }
  return r.reason;
}

std::string shard_text(const RunReport& report) {
  if (report.shard.sharded()) {
    return "shard " + std::to_string(report.shard.index) + " of " +
           std::to_string(report.shard.count) + " (0-based)";
  }
  if (report.merged_shards.empty()) return "";
  std::string text = "merged from shards";
  for (std::size_t i = 0; i < report.merged_shards.size(); ++i) {
    text += (i ? ", " : " ") + std::to_string(report.merged_shards[i]);
  }
  return text;
}

std::string expectation_summary(const RunReport& report) {
  return "expectations " + report.expectations + ": " +
         std::to_string(report.count(Verdict::kAsExpected)) + " as expected, " +
         std::to_string(report.count(Verdict::kUnexpectedFail)) + " UNEXPECTED FAIL, " +
         std::to_string(report.count(Verdict::kUnexpectedPass)) + " UNEXPECTED PASS, " +
         std::to_string(report.count(Verdict::kUnexpectedSkip)) + " UNEXPECTED SKIP";
}

void comparison_lines(const Comparison& c, std::ostream& out, const std::string& bullet) {
  auto list = [&](const char* what, const std::vector<StatusChange>& changes) {
    for (const auto& s : changes) {
      out << bullet << what << " " << s.id << ": " << status_name(s.before) << " -> "
          << status_name(s.now) << (s.reason.empty() ? "" : " (" + s.reason + ")") << "\n";
    }
  };
  list("regressed", c.regressions);
  list("fixed", c.fixes);
  list("changed", c.other_changes);
  for (const auto& id : c.new_rules) out << bullet << "new " << id << "\n";
}

std::string comparison_headline(const Comparison& c) {
  return "compared with " + c.old_source + " (suite " + c.old_suite_version +
         "): " + std::to_string(c.regressions.size()) + " regressed, " +
         std::to_string(c.fixes.size()) + " fixed, " + std::to_string(c.other_changes.size()) +
         " other changes, " + std::to_string(c.new_rules.size()) + " new, " +
         std::to_string(c.unchanged) + " unchanged";
}

}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::kPass:
      return "PASS";
    case Status::kFail:
      return "FAIL";
    case Status::kSkip:
      return "SKIP";
  }
  return "?";
}

std::optional<Status> parse_status(std::string_view text) {
  for (Status s : {Status::kPass, Status::kFail, Status::kSkip}) {
    if (text == status_name(s)) return s;
  }
  return std::nullopt;
}

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kAsExpected:
      return "as expected";
    case Verdict::kUnexpectedFail:
      return "UNEXPECTED FAIL";
    case Verdict::kUnexpectedPass:
      return "UNEXPECTED PASS";
    case Verdict::kUnexpectedSkip:
      return "UNEXPECTED SKIP";
  }
  return "?";
}

Verdict RuleResult::verdict() const {
  const Status want = expected.value_or(Status::kPass);
  if (!expected && status == Status::kSkip) return Verdict::kAsExpected;
  if (status == want) return Verdict::kAsExpected;
  switch (status) {
    case Status::kFail:
      return Verdict::kUnexpectedFail;
    case Status::kPass:
      return Verdict::kUnexpectedPass;
    case Status::kSkip:
      return Verdict::kUnexpectedSkip;
  }
  return Verdict::kAsExpected;
}

int RunReport::count(Status status) const {
  return static_cast<int>(std::count_if(rules.begin(), rules.end(),
                                        [&](const RuleResult& r) { return r.status == status; }));
}

int RunReport::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(
      rules.begin(), rules.end(), [&](const RuleResult& r) { return r.verdict() == verdict; }));
}

double RunReport::rule_seconds_sum() const {
  double sum = 0;
  for (const auto& r : rules) sum += r.seconds;
  return sum;
}

double RunReport::unavoidable_wait_seconds() const {
  double sum = 0;
  for (const auto& r : rules) sum += r.wait_seconds;
  return sum;
}

const RuleResult* RunReport::find(std::string_view id) const {
  for (const auto& r : rules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

int RunReport::exit_status() const {
  return std::all_of(rules.begin(), rules.end(),
                     [](const RuleResult& r) { return r.verdict() == Verdict::kAsExpected; })
             ? 0
             : 1;
}

void write_summary_table(const RunReport& report, std::ostream& out) {
  out << "\nConformance of " << report.backend << " (suite " << report.suite_version << ")";
  if (const std::string shard = shard_text(report); !shard.empty()) out << ", " << shard;
  out << "\n\n";
  out << std::left << std::setw(40) << "rule" << std::setw(6) << "result" << std::right
      << std::setw(9) << "seconds"
      << "  reason\n";
  out << std::string(100, '-') << "\n";
  for (const auto& r : report.rules) {
    out << std::left << std::setw(40) << r.id << std::setw(6) << status_name(r.status) << std::right
        << std::setw(9) << fixed(r.seconds, 2) << "  "
        << internal::one_line(verdict_tag(r) + shown_reason(r), 120) << "\n";
  }
  out << std::string(100, '-') << "\n";
  out << report.count(Status::kPass) << " pass, " << report.count(Status::kFail) << " fail, "
      << report.count(Status::kSkip) << " skip, " << report.rules.size() << " rules in "
      << fixed(report.wall_seconds, 1) << " s\n";
  if (has_expectations(report)) out << expectation_summary(report) << "\n";
  for (const auto& note : report.notes) out << note << "\n";
}

void write_comparison(const RunReport& report, std::ostream& out) {
  if (!report.comparison) return;
  out << comparison_headline(*report.comparison) << "\n";
  comparison_lines(*report.comparison, out, "  ");
}

void write_markdown(const RunReport& report, std::ostream& out) {
  out << "# Conformance report: " << md_line(report.backend) << "\n\n";
  out << "Suite " << report.suite_version << ". " << report.count(Status::kPass) << " pass, "
      << report.count(Status::kFail) << " fail, " << report.count(Status::kSkip) << " skip; "
      << fixed(report.wall_seconds, 1) << " s.";
  if (const std::string shard = shard_text(report); !shard.empty()) out << " " << shard << ".";
  out << "\n\n";
  if (has_expectations(report)) out << md_line(expectation_summary(report)) << ".\n\n";
  out << "| rule | result | seconds | reason |\n|---|---|---:|---|\n";
  for (const auto& r : report.rules) {
    std::string result = status_name(r.status);
    if (r.expected && r.verdict() != Verdict::kAsExpected) {
      result = std::string("**") + verdict_name(r.verdict()) + "**";
    } else if (r.expected && r.status != Status::kPass) {
      result += " (expected)";
    }
    std::string reason = md_line(shown_reason(r));
    if (!r.expected_link.empty()) reason += " ([link](" + r.expected_link + "))";
    out << "| `" << r.id << "` | " << result << " | " << fixed(r.seconds, 2) << " | " << reason
        << " |\n";
  }
  if (report.comparison) {
    out << "\n## " << md_line(comparison_headline(*report.comparison)) << "\n\n";
    std::ostringstream lines;
    comparison_lines(*report.comparison, lines, "- ");
    out << md_escape(lines.str());
  }
  if (!report.notes.empty()) {
    out << "\n";
    for (const auto& note : report.notes) out << "- " << md_line(note) << "\n";
  }
}

namespace {

void write_json_rule(const RuleResult& r, std::ostream& out) {
  out << "    {\"id\": \"" << json_escape(r.id) << "\", \"status\": \"" << status_name(r.status)
      << "\", \"seconds\": " << fixed(r.seconds, 3)
      << ", \"wait_seconds\": " << fixed(r.wait_seconds, 3) << ", \"reason\": \""
      << json_escape(r.reason) << "\"";
  if (r.expected) {
    out << ", \"expected\": \"" << status_name(*r.expected) << "\", \"verdict\": \""
        << verdict_name(r.verdict()) << "\", \"expected_reason\": \""
        << json_escape(r.expected_reason) << "\", \"link\": \"" << json_escape(r.expected_link)
        << "\"";
  }
  out << "}";
}

void write_json_changes(const char* name, const std::vector<StatusChange>& changes,
                        std::ostream& out) {
  out << "\"" << name << "\": [";
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const auto& c = changes[i];
    out << (i ? ", " : "") << "{\"id\": \"" << json_escape(c.id) << "\", \"before\": \""
        << status_name(c.before) << "\", \"now\": \"" << status_name(c.now) << "\"}";
  }
  out << "]";
}

void write_json_extras(const RunReport& report, std::ostream& out) {
  if (report.shard.sharded()) {
    out << "  \"shard\": {\"index\": " << report.shard.index
        << ", \"count\": " << report.shard.count << "},\n";
  }
  if (!report.merged_shards.empty()) {
    out << "  \"merged_shards\": [";
    for (std::size_t i = 0; i < report.merged_shards.size(); ++i) {
      out << (i ? ", " : "") << report.merged_shards[i];
    }
    out << "],\n";
  }
  if (has_expectations(report)) {
    out << "  \"expectations\": {\"file\": \"" << json_escape(report.expectations)
        << "\", \"as_expected\": " << report.count(Verdict::kAsExpected)
        << ", \"unexpected_fail\": " << report.count(Verdict::kUnexpectedFail)
        << ", \"unexpected_pass\": " << report.count(Verdict::kUnexpectedPass)
        << ", \"unexpected_skip\": " << report.count(Verdict::kUnexpectedSkip) << "},\n";
  }
  if (const auto& c = report.comparison) {
    out << "  \"comparison\": {\"old\": \"" << json_escape(c->old_source) << "\", ";
    write_json_changes("regressions", c->regressions, out);
    out << ", ";
    write_json_changes("fixes", c->fixes, out);
    out << ", ";
    write_json_changes("other_changes", c->other_changes, out);
    out << ", \"new\": [";
    for (std::size_t i = 0; i < c->new_rules.size(); ++i) {
      out << (i ? ", " : "") << "\"" << json_escape(c->new_rules[i]) << "\"";
    }
    out << "], \"unchanged\": " << c->unchanged << "},\n";
  }
}

}  // namespace

void write_json(const RunReport& report, std::ostream& out) {
  out << "{\n  \"suite_version\": \"" << json_escape(report.suite_version) << "\",\n";
  out << "  \"backend\": \"" << json_escape(report.backend) << "\",\n";
  out << "  \"wall_seconds\": " << fixed(report.wall_seconds, 3) << ",\n";
  out << "  \"jobs\": " << report.jobs << ",\n";
  out << "  \"rule_seconds_sum\": " << fixed(report.rule_seconds_sum(), 3) << ",\n";
  out << "  \"unavoidable_wait_seconds\": " << fixed(report.unavoidable_wait_seconds(), 3) << ",\n";
  write_json_extras(report, out);
  out << "  \"rules\": [\n";
  for (std::size_t i = 0; i < report.rules.size(); ++i) {
    write_json_rule(report.rules[i], out);
    out << (i + 1 < report.rules.size() ? "," : "") << "\n";
  }
  out << "  ],\n";
  out << "  \"summary\": {\"pass\": " << report.count(Status::kPass)
      << ", \"fail\": " << report.count(Status::kFail)
      << ", \"skip\": " << report.count(Status::kSkip) << "},\n";
  out << "  \"notes\": [";
  for (std::size_t i = 0; i < report.notes.size(); ++i) {
    out << (i ? ", " : "") << "\"" << json_escape(report.notes[i]) << "\"";
  }
  out << "]\n}\n";
}

namespace {

// A testcase's outcome element, or "" for a plain pass.
std::string junit_outcome(const RuleResult& r) {
  const Verdict v = r.verdict();
  auto element = [](const char* tag, const std::string& message) {
    return std::string("<") + tag + " message=\"" + xml_escape(message) + "\"/>";
  };
  if (!r.expected) {
    if (r.status == Status::kFail) return element("failure", r.reason);
    if (r.status == Status::kSkip) return element("skipped", r.reason);
    return "";
  }
  if (v != Verdict::kAsExpected) {
    return element("failure", std::string(verdict_name(v)) + ": " + shown_reason(r));
  }
  if (r.status == Status::kFail) return element("skipped", "expected FAIL: " + r.reason);
  if (r.status == Status::kSkip) return element("skipped", r.reason);
  return "";
}

}  // namespace

void write_junit(const RunReport& report, std::ostream& out) {
  int failures = 0;
  int skipped = 0;
  for (const auto& r : report.rules) {
    const std::string outcome = junit_outcome(r);
    failures += outcome.rfind("<failure", 0) == 0;
    skipped += outcome.rfind("<skipped", 0) == 0;
  }
  const std::string counts = "tests=\"" + std::to_string(report.rules.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" skipped=\"" + std::to_string(skipped) +
                             "\" time=\"" + fixed(report.wall_seconds, 3) + "\"";
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites " << counts << ">\n";
  out << "  <testsuite name=\"conformance." << xml_escape(report.backend) << "\" " << counts
      << ">\n";
  for (const auto& r : report.rules) {
    out << "    <testcase classname=\"conformance\" name=\"" << xml_escape(r.id) << "\" time=\""
        << fixed(r.seconds, 3) << "\">" << junit_outcome(r)
        << "<properties><property name=\"rule\" value=\"" << xml_escape(r.id) << "\"/>";
    if (r.expected) {
      out << "<property name=\"verdict\" value=\"" << xml_escape(verdict_name(r.verdict()))
          << "\"/>";
    }
    out << "</properties></testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

namespace {

// Writes `path` whole or not at all: into a file beside it, flushed, closed
// and checked, then renamed over it, so that a full disk or a run killed
// while writing never leaves half a report (or an empty one) under the name
// CI reads. A path that exists and is not a regular file (/dev/stdout, a
// FIFO, a symbolic link) is written in place, its errors checked the same.
// Empty on success, else the reason.
template <typename Writer>
std::string write_whole(const std::string& path, const RunReport& report, const Writer& writer) {
  struct stat st {};
  const bool in_place = ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const std::string target =
      in_place ? path : path + ".lizard-tmp-" + std::to_string(static_cast<long>(::getpid()));
  std::string problem;
  {
    errno = 0;
    std::ofstream file(target, std::ios::binary | std::ios::trunc);
    if (file) writer(report, file);
    if (file) file.close();
    if (!file || file.is_open()) problem = errno != 0 ? std::strerror(errno) : "write failed";
  }
  if (in_place) return problem;
  if (problem.empty() && std::rename(target.c_str(), path.c_str()) != 0) {
    problem = std::strerror(errno);
  }
  if (!problem.empty()) std::remove(target.c_str());
  return problem;
}

}  // namespace

bool write_report_files(const RunReport& report, const RunnerOptions& options, std::ostream& err) {
  bool ok = true;
  auto write = [&](const std::string& path, const auto& writer) {
    if (path.empty()) return;
    const std::string problem = write_whole(path, report, writer);
    if (!problem.empty()) {
      err << "lizard-conformance: cannot write " << path << ": " << problem << "\n";
      ok = false;
    }
  };
  write(options.report_md, write_markdown);
  write(options.report_json, write_json);
  write(options.junit, write_junit);
  write(options.write_expectations, write_expectations);
  return ok;
}

}  // namespace lizard::conformance
