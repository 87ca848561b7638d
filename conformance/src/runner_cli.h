// lizard-conformance's command line (CLI11): what main.cc does is decided
// here, once, with validation and the generated --help.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace lizard::conformance::cli {

struct CliOptions {
  // Which backend, and how it is reached.
  std::string backend = "lizard";  // lizard | local | command
  std::string era;                 // kubernetes | firecracker; "" for the default
  bool live = false;
  std::vector<std::string> command;  // after "--": the adapter's command line
  bool empty_command = false;        // "--" with nothing after it
  bool check_protocol = false;
  double answer_deadline = 0;  // 0: the default
  double start_deadline = 0;   // 0: the default
  // What to do instead of a run.
  bool list_rules = false;
  bool mutation_report = false;
  bool gtest = false;
  std::vector<std::string> gtest_args;  // after --gtest
  bool merge = false;
  std::vector<std::string> merge_inputs;  // merge's JSON reports
  // The run.
  std::string filter;
  int jobs = 4;
  int rule_timeout = 150;
  int shard_index = -1;  // --shard-index or GTEST_SHARD_INDEX; -1: not given
  int shard_count = -1;  // --shard-count or GTEST_TOTAL_SHARDS; -1: not given
  std::string report_md;
  std::string report_json;
  std::string junit;
  std::string expectations;
  std::string write_expectations;
  std::string compare;
  int max_sandboxes = 0;           // 0: no limit
  double max_sandbox_seconds = 0;  // 0: no limit
};

// Parses the command line. Returns the exit status when the process should
// end now (0 after --help, 2 after a usage error, with the message on `err`),
// nullopt when `options` holds what to do. Also checks the combinations
// CLI11 cannot express (a shard index without a count, an index past the
// count, --max-* without --live, '--' with another backend than command).
std::optional<int> parse(int argc, const char* const* argv, CliOptions& options, std::ostream& out,
                         std::ostream& err);

}  // namespace lizard::conformance::cli
