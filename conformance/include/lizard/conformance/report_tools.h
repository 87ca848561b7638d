// Reading JSON reports back (the format write_json writes), merging the
// reports of a sharded run into one, and the `merge` mode of
// lizard-conformance.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "lizard/conformance/runner.h"

namespace lizard::conformance {

// A report that cannot be read or merged; what() says which file and why.
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses a JSON report (write_json's format). `source` names it in errors.
// Throws ReportError when it is not such a report.
RunReport parse_json_report(std::string_view text, const std::string& source);
// Reads and parses a file (ReportError when it cannot be read).
RunReport read_json_report(const std::string& path);

struct NamedReport {
  std::string source;  // the file it came from
  RunReport report;
};

// One report from the reports of a sharded run: the rules of every shard in
// the suite's table order, the notes of each (prefixed with its shard), the
// longest wall time. Throws ReportError, naming the files, when the reports
// come from different suite versions or backends, when two hold the same
// rule or the same shard (overlapping shards), when their shard counts
// differ, or when a shard of the count is missing.
RunReport merge_reports(const std::vector<NamedReport>& reports);

}  // namespace lizard::conformance
