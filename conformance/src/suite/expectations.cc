// Expectations files (expectations.h): parsing, matching, writing.
#include "lizard/conformance/expectations.h"

#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "report_text.h"
#include "rule_context.h"

namespace lizard::conformance {

namespace {

bool is_glob(std::string_view pattern) {
  return pattern.find_first_of("*?") != std::string_view::npos;
}

bool is_link(std::string_view word) {
  return word.rfind("http://", 0) == 0 || word.rfind("https://", 0) == 0;
}

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return "";
  const auto end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

// Splits off the first whitespace-separated word of `rest`.
std::string next_word(std::string_view& rest) {
  const auto begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    rest = {};
    return "";
  }
  auto end = rest.find_first_of(" \t", begin);
  if (end == std::string_view::npos) end = rest.size();
  std::string word(rest.substr(begin, end - begin));
  rest = rest.substr(end);
  return word;
}

// One entry from a line that is not blank or a comment; "" in `problem` when it parses.
Expectation parse_line(std::string_view line, int number, std::string& problem) {
  Expectation e;
  e.line = number;
  std::string_view rest = line;
  e.pattern = next_word(rest);
  const std::string status = next_word(rest);
  const auto parsed = parse_status(status);
  if (status.empty()) {
    problem = "'" + e.pattern + "' needs a status (FAIL or SKIP) and a reason";
    return e;
  }
  if (!parsed || *parsed == Status::kPass) {
    problem = "the status must be FAIL or SKIP, not '" + status + "'";
    return e;
  }
  e.status = *parsed;
  std::string reason = trim(rest);
  const auto last_space = reason.find_last_of(" \t");
  const std::string last = last_space == std::string::npos ? reason : reason.substr(last_space + 1);
  if (is_link(last)) {
    e.link = last;
    reason = trim(last_space == std::string::npos ? "" : reason.substr(0, last_space));
  }
  if (reason.empty()) problem = "'" + e.pattern + "' needs a reason after " + status;
  e.reason = reason;
  return e;
}

bool names_a_rule(const Expectation& e, const std::vector<RuleInfo>& rules) {
  for (const RuleInfo& rule : rules) {
    if (is_glob(e.pattern) ? internal::glob_match(e.pattern, rule.id) : rule.id == e.pattern) {
      return true;
    }
  }
  return false;
}

}  // namespace

ExpectationsError::ExpectationsError(const std::vector<std::string>& problems)
    : std::runtime_error([&] {
        std::string text;
        for (const auto& p : problems) text += (text.empty() ? "" : "\n") + p;
        return text;
      }()),
      problems_(problems) {}

Expectations::Expectations(std::vector<Expectation> entries, std::string source)
    : entries_(std::move(entries)), source_(std::move(source)) {}

const Expectation* Expectations::find(std::string_view rule_id) const {
  for (const auto& e : entries_) {
    if (!is_glob(e.pattern) && e.pattern == rule_id) return &e;
  }
  for (const auto& e : entries_) {
    if (is_glob(e.pattern) && internal::glob_match(e.pattern, rule_id)) return &e;
  }
  return nullptr;
}

void Expectations::apply(RuleResult& result) const {
  const Expectation* e = find(result.id);
  result.expected = e ? e->status : Status::kPass;
  result.expected_reason = e ? e->reason : "";
  result.expected_link = e ? e->link : "";
}

Expectations parse_expectations(std::string_view text, const std::string& source,
                                const std::vector<RuleInfo>& rules) {
  std::vector<Expectation> entries;
  std::vector<std::string> problems;
  std::map<std::string, int> seen;
  int number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string line = trim(text.substr(at, end - at));
    at = end + 1;
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    std::string problem;
    Expectation e = parse_line(line, number, problem);
    if (!problem.empty()) {
      problems.push_back(where + problem);
      continue;
    }
    if (auto it = seen.find(e.pattern); it != seen.end()) {
      problems.push_back(where + "'" + e.pattern + "' is already listed on line " +
                         std::to_string(it->second));
      continue;
    }
    seen[e.pattern] = number;
    if (!names_a_rule(e, rules)) {
      problems.push_back(where + "stale entry: '" + e.pattern + "' " +
                         (is_glob(e.pattern) ? "matches no rule" : "names no rule") + " of suite " +
                         kSuiteVersion + " (remove it, or see --list-rules)");
      continue;
    }
    entries.push_back(std::move(e));
  }
  if (!problems.empty()) throw ExpectationsError(problems);
  return Expectations(std::move(entries), source);
}

Expectations read_expectations(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExpectationsError({path + ": cannot be read"});
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_expectations(buffer.str(), path);
}

void write_expectations(const RunReport& report, std::ostream& out) {
  out << "# lizard-conformance expectations: the rules " << report.backend
      << " is known to FAIL or SKIP\n"
      << "# (suite " << report.suite_version << "; format: docs/contract.md, \"Expectations\").\n"
      << "# RULE-OR-GLOB  FAIL|SKIP  reason [link]\n";
  for (const auto& r : report.rules) {
    if (r.status == Status::kPass) continue;
    std::string reason = internal::one_line(r.reason, 300);
    std::string link;
    if (r.expected && *r.expected == r.status && !r.expected_reason.empty()) {
      reason = r.expected_reason;
      link = r.expected_link;
    }
    if (reason.empty()) reason = "(no reason given)";
    // A reason ending in a URL would read back as the link: keep it in the reason.
    if (link.empty() && reason.find_last_of(" \t") != std::string::npos &&
        is_link(reason.substr(reason.find_last_of(" \t") + 1))) {
      reason += " (as reported)";
    }
    out << r.id << "  " << status_name(r.status) << "  " << reason;
    if (!link.empty()) out << "  " << link;
    out << "\n";
  }
}

}  // namespace lizard::conformance
