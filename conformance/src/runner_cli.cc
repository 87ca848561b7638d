#include "runner_cli.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <string>

namespace lizard::conformance::cli {

namespace {

constexpr const char* kDescription =
    "Runs the workspace conformance suite: one test per rule of the contract\n"
    "(docs/contract.md), each reported PASS, FAIL or SKIP with its time and reason.\n\n"
    "  lizard-conformance [options] [--gtest [gtest flags...]]\n"
    "  lizard-conformance --backend command [options] -- PROGRAM [ARGS...]\n"
    "  lizard-conformance merge [options] SHARD.json...\n";

constexpr const char* kFooter =
    "Exit status: 0 when every result is as expected (without --expectations: when no\n"
    "rule FAILs), 1 otherwise, 2 on a usage error, an output path that cannot be written,\n"
    "a failed preflight (nothing was run) or reports that cannot be merged.\n"
    "GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX stand for --shard-count and --shard-index.\n"
    "Formats of the reports and expectations: docs/contract.md, \"Running the suite\".";

// The arguments after the program name, split at "--" (the adapter's
// command line) and "--gtest" (GoogleTest's flags, up to a "--").
std::vector<std::string> split_off(int argc, const char* const* argv, CliOptions& o) {
  std::vector<std::string> rest;
  bool gtest = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) o.command.emplace_back(argv[i]);
      o.empty_command = o.command.empty();
      break;
    }
    if (gtest) {
      o.gtest_args.push_back(arg);
    } else if (arg == "--gtest") {
      gtest = o.gtest = true;
    } else {
      rest.push_back(arg);
    }
  }
  return rest;
}

// A number of seconds from `low` to `high`: finite (no inf, no nan), so
// that it converts to a duration without overflow.
CLI::Validator seconds_between(double low, double high, const std::string& bounds) {
  return CLI::Validator(
      [low, high, bounds](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
            !std::isfinite(v) || v < low || v > high) {
          return "'" + text + "' is not a number of seconds " + bounds;
        }
        return "";
      },
      "SECONDS", "seconds");
}

void add_backend_options(CLI::App& app, CliOptions& o) {
  app.add_option("--backend", o.backend,
                 "lizard: the reference backend on an embedded mock of the Lizard API\n"
                 "local: LocalWorkspaceBackend\n"
                 "command: a backend in any language; PROGRAM after '--' is its adapter,\n"
                 "which speaks the backend protocol (docs/protocol.md), one process per rule")
      ->check(CLI::IsMember({"lizard", "local", "command"}))
      ->default_str("lizard");
  app.add_option("--era", o.era,
                 "with the embedded mock: the platform era it plays (docs/mockserver.md)")
      ->check(CLI::IsMember({"kubernetes", "firecracker"}));
  app.add_flag("--live", o.live,
               "with --backend lizard: the real API; LIZARD_API_KEY, LIZARD_PROJECT_ID,\n"
               "LIZARD_API_URL (live/README.md)");
  app.add_flag("--check-protocol", o.check_protocol,
               "with --backend command: check every message against the protocol's schemas");
  app.add_option("--answer-deadline", o.answer_deadline,
                 "with --backend command: an adapter silent this many seconds is hung (20);\n"
                 "time it waited for a CPU is not counted")
      ->check(seconds_between(0.001, 86400, "from 0.001 to 86400 (a day)"));
  app.add_option("--start-deadline", o.start_deadline,
                 "with --backend command: an adapter that has not answered initialize this many\n"
                 "seconds after its start is hung (60)")
      ->check(seconds_between(0.001, 86400, "from 0.001 to 86400 (a day)"));
  app.add_option("--max-sandboxes", o.max_sandboxes,
                 "with --live: create at most N sandboxes (the preflight's included); the rules\n"
                 "left then FAIL with 'budget reached'")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--max-sandbox-seconds", o.max_sandbox_seconds,
                 "with --live: past S sandbox-seconds, no new sandbox (as --max-sandboxes)")
      ->check(seconds_between(1, 1e9, "from 1 to 1e9"));
}

// CLI11 takes the next argument as an option's value even when it is another
// option: `--filter $EMPTY --list-rules` would run every rule filtered on
// "--list-rules", `--report-json --junit x` write a file named "--junit".
// No value of these starts with "--" (a filter's exclusions start with one '-').
CLI::Validator not_an_option() {
  return CLI::Validator(
      [](std::string& value) {
        return value.rfind("--", 0) == 0 ? "needs a value, not the option " + value : std::string();
      },
      "", "not an option");
}

void add_run_options(CLI::App& app, CliOptions& o) {
  app.add_flag("--list-rules", o.list_rules,
               "print the rule table (ID, gtest name, profile, summary) of the selection and exit");
  app.add_option("--filter", o.filter,
                 "rule IDs to run: ':'-separated globs, '-' excludes ('fs.*:-fs.large-*')")
      ->check(not_an_option());
  app.add_option("-j,--jobs", o.jobs,
                 "rules running at once (those that wait by design start longest wait first, "
                 "in at most half the slots while rules that do not wait are left)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--rule-timeout", o.rule_timeout, "a rule running longer (seconds) FAILs")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--shard-index", o.shard_index, "run only shard I (0-based) of --shard-count")
      ->envname("GTEST_SHARD_INDEX")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--shard-count", o.shard_count,
                 "split the selected rules over N shards (rule i goes to shard i mod N)")
      ->envname("GTEST_TOTAL_SHARDS")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--expectations", o.expectations,
                 "the rules known to FAIL or SKIP (docs/contract.md, \"Expectations\"); the\n"
                 "exit status is 0 exactly when every result matches")
      ->check(CLI::ExistingFile);
  app.add_option("--write-expectations", o.write_expectations,
                 "write this run's FAILs and SKIPs as an expectations file")
      ->check(not_an_option());
  app.add_option("--compare", o.compare,
                 "an earlier JSON report: list the regressions and fixes against it")
      ->check(CLI::ExistingFile);
  app.add_flag("--mutation-report", o.mutation_report,
               "run every mutant (deliberately broken backend) against the rules it targets\n"
               "and print, per rule, the mutants that prove it (exit 1 if one is missed)");
}

void add_report_options(CLI::App& app, CliOptions& o) {
  app.add_option("--report-md", o.report_md, "write a Markdown report")->check(not_an_option());
  app.add_option("--report-json", o.report_json, "write the JSON report")->check(not_an_option());
  app.add_option("--junit", o.junit, "write a JUnit XML report")->check(not_an_option());
}

void add_merge(CLI::App& app, CliOptions& o) {
  CLI::App* merge = app.add_subcommand(
      "merge",
      "combine the JSON reports of a sharded run into one report (JSON, Markdown, JUnit);\n"
      "refuses reports of different suite versions or backends, overlapping shards and\n"
      "missing shards");
  merge->add_option("reports", o.merge_inputs, "the shards' JSON reports")
      ->required()
      ->check(CLI::ExistingFile);
  add_report_options(*merge, o);
  merge
      ->add_option("--expectations", o.expectations,
                   "judge the merged results against these expectations")
      ->check(CLI::ExistingFile);
  merge
      ->add_option("--write-expectations", o.write_expectations,
                   "write the merged FAILs and SKIPs as an expectations file")
      ->check(not_an_option());
  merge->add_option("--compare", o.compare, "an earlier JSON report to compare with")
      ->check(CLI::ExistingFile);
  merge->callback([&o] { o.merge = true; });
}

// What CLI11 cannot check: "" when the combination is fine.
std::string check_combinations(const CliOptions& o) {
  if ((o.shard_index >= 0) != (o.shard_count >= 0)) {
    return "--shard-index and --shard-count (or GTEST_SHARD_INDEX and GTEST_TOTAL_SHARDS) go "
           "together";
  }
  if (o.shard_index >= 0 && o.shard_index >= o.shard_count) {
    return "--shard-index " + std::to_string(o.shard_index) + " is not below --shard-count " +
           std::to_string(o.shard_count);
  }
  if ((o.max_sandboxes > 0 || o.max_sandbox_seconds > 0) && !o.live) {
    return "--max-sandboxes and --max-sandbox-seconds apply to --live";
  }
  if (o.merge && o.gtest) return "merge takes no --gtest";
  if (o.empty_command) return "'--' needs PROGRAM [ARGS...]";
  return "";
}

}  // namespace

std::optional<int> parse(int argc, const char* const* argv, CliOptions& options, std::ostream& out,
                         std::ostream& err) {
  const std::vector<std::string> rest = split_off(argc, argv, options);
  CLI::App app(kDescription, "lizard-conformance");
  app.footer(kFooter);
  app.get_formatter()->column_width(30);
  add_backend_options(app, options);
  add_run_options(app, options);
  add_report_options(app, options);
  add_merge(app, options);
  std::vector<const char*> args = {argc > 0 ? argv[0] : "lizard-conformance"};
  for (const auto& a : rest) args.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "lizard-conformance: " << e.what() << "\n(see lizard-conformance --help)\n";
    return 2;
  }
  if (options.gtest) {
    // GoogleTest runs the rules then: what only the runner does would be
    // silently left undone (an expectations file not judged, no report).
    for (const char* only_runner :
         {"--filter", "--jobs", "--rule-timeout", "--report-md", "--report-json", "--junit",
          "--expectations", "--write-expectations", "--compare"}) {
      if (app.count(only_runner) > 0) {
        err << "lizard-conformance: " << only_runner
            << " does not apply with --gtest (GoogleTest's own flags do: --gtest_filter, "
               "--gtest_output)\n(see lizard-conformance --help)\n";
        return 2;
      }
    }
  }
  const std::string problem = check_combinations(options);
  if (!problem.empty()) {
    err << "lizard-conformance: " << problem << "\n(see lizard-conformance --help)\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace lizard::conformance::cli
