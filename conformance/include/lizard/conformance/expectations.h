// Expectations: the rules a backend is known to FAIL or SKIP, so CI can gate
// on "no new failures" (lizard-conformance --expectations FILE). The format
// (docs/contract.md, "Expectations"), one entry per line:
//
//   # comments and blank lines are ignored
//   RULE-OR-GLOB  FAIL|SKIP  reason, any text [LINK]
//   fs.permission-denied  SKIP  commands run as root
//   cmd.timeout-*         FAIL  the runtime kills only the parent  https://tracker/issue/12
//
// The first field is a rule ID or a glob over IDs ('*', '?'); the second the
// expected status; the rest the reason, whose last word is the link when it
// starts with http:// or https://. A rule that no entry names is expected to
// PASS. An exact ID wins over globs; among globs the first matching line wins.
// An entry that names no rule of the suite (an ID that does not exist, a glob
// that matches nothing) is stale: parse_expectations() reports it as an error.
//
// Thread safety: an Expectations is immutable once built; reading it from
// many threads at once is safe.
#pragma once

#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lizard/conformance/rules.h"
#include "lizard/conformance/runner.h"

namespace lizard::conformance {

struct Expectation {
  std::string pattern;  // rule ID or glob
  Status status = Status::kFail;
  std::string reason;
  std::string link;  // "" for none
  int line = 0;      // in the file, from 1
};

// A file that cannot be used: one line per problem ("FILE:LINE: ..."), all
// of them, in what().
class ExpectationsError : public std::runtime_error {
 public:
  ExpectationsError(const std::vector<std::string>& problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

class Expectations {
 public:
  Expectations() = default;
  explicit Expectations(std::vector<Expectation> entries, std::string source = {});

  // The entry that applies to `rule_id`, or nullptr (expected PASS).
  const Expectation* find(std::string_view rule_id) const;
  const std::vector<Expectation>& entries() const { return entries_; }
  // The file name it was read from (for reports).
  const std::string& source() const { return source_; }

  // Sets result.expected (and the reason and link) from the entry that applies.
  void apply(RuleResult& result) const;

 private:
  std::vector<Expectation> entries_;
  std::string source_;
};

// Parses the format above. `source` names the file in messages. Throws
// ExpectationsError listing every malformed line, duplicate pattern and
// stale entry (checked against `rules`, by default the suite's table).
Expectations parse_expectations(std::string_view text, const std::string& source,
                                const std::vector<RuleInfo>& rules = all_rules());

// Reads and parses a file; ExpectationsError also when it cannot be read.
Expectations read_expectations(const std::string& path);

// Writes the expectations a report makes: one entry per FAIL or SKIP, in
// table order, with its reason (and, when the report already carried an
// expectation for that rule with the same status, that entry's reason and link).
void write_expectations(const RunReport& report, std::ostream& out);

}  // namespace lizard::conformance
