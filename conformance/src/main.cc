// lizard-conformance: runs the conformance suite against a backend and
// reports every rule (see --help); `merge` combines the reports of shards.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lizard/conformance/expectations.h"
#include "lizard/conformance/report_tools.h"
#include "lizard/conformance/runner.h"
#include "lizard/conformance/suite.h"
#include "runner_cli.h"
#ifdef LIZARD_CONFORMANCE_HAVE_MUTANTS
#include "lizard/conformance/mutants.h"
#endif
#ifdef LIZARD_CONFORMANCE_HAVE_LOCAL
#include "lizard/conformance/local_factory.h"
#endif
#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
#include "lizard/conformance/lizard_factory.h"
#endif
#ifdef LIZARD_CONFORMANCE_HAVE_COMMAND
#include "lizard/conformance/command_factory.h"
#endif

namespace {

using lizard::conformance::BackendFactory;
using lizard::conformance::RunnerOptions;
using lizard::conformance::RunReport;
using lizard::conformance::cli::CliOptions;

// A usage error found after parsing (a combination of a backend and an option).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
lizard::conformance::LizardMockFactoryOptions mock_options(const std::string& era) {
  lizard::conformance::LizardMockFactoryOptions options;
  if (era == "firecracker") options.era = lizard::mock::Era::kFirecracker;
  return options;
}

std::unique_ptr<BackendFactory> make_lizard_factory(const CliOptions& o) {
  if (!o.live) return lizard::conformance::make_lizard_mock_factory(mock_options(o.era));
  lizard::conformance::LizardLiveFactoryOptions options;
  options.base = lizard::workspace::LizardOptions::from_environment();
  options.max_sandboxes = o.max_sandboxes;
  options.max_sandbox_seconds = o.max_sandbox_seconds;
  // Missing variables are the preflight's to report, with the others it checks.
  return lizard::conformance::make_lizard_live_factory(std::move(options));
}
#endif

#ifdef LIZARD_CONFORMANCE_HAVE_COMMAND
std::unique_ptr<BackendFactory> make_command_factory(const CliOptions& o) {
  if (o.command.empty()) throw UsageError("--backend command needs '-- PROGRAM [ARGS...]'");
  lizard::conformance::CommandFactoryOptions options;
  options.adapter.argv = o.command;
  options.adapter.check_schemas = o.check_protocol;
  // Given seconds (0: not given; runner_cli.cc keeps them within a day).
  auto set_seconds = [](double seconds, std::chrono::milliseconds& to) {
    if (seconds > 0) to = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  };
  set_seconds(o.answer_deadline, options.adapter.answer_deadline);
  set_seconds(o.start_deadline, options.adapter.start_deadline);
#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
  options.platforms["lizard"] =
      lizard::conformance::make_mock_platform_provider(mock_options(o.era));
#else
  if (!o.era.empty()) throw UsageError("this build has no embedded mock");
#endif
  return lizard::conformance::make_command_factory(std::move(options));
}
#endif

std::unique_ptr<BackendFactory> make_factory(const CliOptions& o) {
  if (o.backend != "command" &&
      (!o.command.empty() || o.check_protocol || o.answer_deadline > 0 || o.start_deadline > 0)) {
    throw UsageError(
        "'-- PROGRAM', --check-protocol, --answer-deadline and --start-deadline apply to "
        "--backend command");
  }
  if (o.live && o.backend != "lizard") throw UsageError("--live applies to --backend lizard only");
  if (!o.era.empty() && o.backend == "local") {
    throw UsageError("--era applies to the embedded mock only (--backend lizard or command)");
  }
  if (!o.era.empty() && o.live) throw UsageError("--era applies to the embedded mock, not --live");
  if (o.backend == "command") {
#ifdef LIZARD_CONFORMANCE_HAVE_COMMAND
    return make_command_factory(o);
#endif
  } else if (o.backend == "local") {
#ifdef LIZARD_CONFORMANCE_HAVE_LOCAL
    return lizard::conformance::make_local_factory();
#endif
  } else {
#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
    return make_lizard_factory(o);
#endif
  }
  throw UsageError("this build has no --backend " + o.backend);
}

lizard::conformance::ShardSpec shard_of(const CliOptions& o) {
  if (o.shard_count < 1) return {};
  return {o.shard_index, o.shard_count};
}

void list_rules(const CliOptions& o) {
  for (const auto* rule : lizard::conformance::select_rules(o.filter, shard_of(o))) {
    std::cout << rule->id << "\t" << lizard::conformance::gtest_name(rule->id) << "\t"
              << (rule->profile.empty() ? "common" : std::string(rule->profile)) << "\t"
              << rule->summary << "\n";
  }
}

// The factory of this run, for the interrupt handler.
std::shared_ptr<BackendFactory> g_factory;
std::mutex g_factory_mutex;

// SIGINT and SIGTERM end the run at once, releasing what would outlive it
// (the embedded mocks' state directories; their sandboxes end with the
// process). Blocked here, before any thread exists, and taken by sigwait.
void handle_interrupts() {
  static sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::thread([] {
    int sig = 0;
    sigwait(&stop, &sig);
    std::cerr << "\nlizard-conformance: interrupted (" << strsignal(sig) << "), cleaning up\n";
    {
      std::lock_guard lock(g_factory_mutex);
      if (g_factory) g_factory->abandon();
    }
    std::_Exit(128 + sig);
  }).detach();
}

// The inputs a run or a merge reads before anything else: the expectations
// and the report to compare with. Errors end the process (exit 2).
struct Inputs {
  std::unique_ptr<lizard::conformance::Expectations> expectations;
  std::unique_ptr<RunReport> compare;
};

Inputs read_inputs(const CliOptions& o) {
  Inputs in;
  if (!o.expectations.empty()) {
    in.expectations = std::make_unique<lizard::conformance::Expectations>(
        lizard::conformance::read_expectations(o.expectations));
  }
  if (!o.compare.empty()) {
    in.compare = std::make_unique<RunReport>(lizard::conformance::read_json_report(o.compare));
  }
  return in;
}

RunnerOptions runner_options(const CliOptions& o, const Inputs& in) {
  RunnerOptions options;
  options.out = &std::cout;
  options.filter = o.filter;
  options.shard = shard_of(o);
  options.jobs = o.jobs;
  options.rule_deadline = std::chrono::seconds(o.rule_timeout);
  options.report_md = o.report_md;
  options.report_json = o.report_json;
  options.junit = o.junit;
  options.write_expectations = o.write_expectations;
  options.expectations = in.expectations.get();
  options.compare_with = in.compare.get();
  options.compare_source = o.compare;
  return options;
}

int merge(const CliOptions& o) {
  const Inputs in = read_inputs(o);
  const RunnerOptions options = runner_options(o, in);
  const auto problems = lizard::conformance::unwritable_outputs(options);
  for (const auto& p : problems) std::cerr << "lizard-conformance merge: " << p << "\n";
  if (!problems.empty()) return 2;
  std::vector<lizard::conformance::NamedReport> reports;
  for (const auto& path : o.merge_inputs) {
    reports.push_back({path, lizard::conformance::read_json_report(path)});
  }
  RunReport report = lizard::conformance::merge_reports(reports);
  if (in.expectations) {
    for (auto& r : report.rules) in.expectations->apply(r);
    report.expectations = o.expectations;
  }
  if (in.compare) lizard::conformance::compare_reports(report, *in.compare, o.compare);
  lizard::conformance::write_summary_table(report, std::cout);
  lizard::conformance::write_comparison(report, std::cout);
  const int status = report.exit_status();
  return lizard::conformance::write_report_files(report, options, std::cerr) ? status : 2;
}

[[noreturn]] void run_gtest(std::shared_ptr<BackendFactory> factory, const CliOptions& o,
                            const char* argv0) {
  try {
    factory->preflight();
  } catch (const std::exception& e) {
    std::cerr << "lizard-conformance: cannot run the suite against " << factory->name() << ": "
              << e.what() << "\n";
    std::_Exit(2);
  }
  if (o.shard_count >= 1) {
    setenv("GTEST_TOTAL_SHARDS", std::to_string(o.shard_count).c_str(), 1);
    setenv("GTEST_SHARD_INDEX", std::to_string(o.shard_index).c_str(), 1);
  }
  lizard::conformance::register_suite("Conformance", [factory] {
    struct Borrowed : BackendFactory {
      explicit Borrowed(std::shared_ptr<BackendFactory> f) : f_(std::move(f)) {}
      std::string name() const override { return f_->name(); }
      std::string profile() const override { return f_->profile(); }
      std::unique_ptr<lizard::conformance::BackendSession> open(
          const lizard::conformance::RuleInfo& rule) override {
        return f_->open(rule);
      }
      std::shared_ptr<BackendFactory> f_;
    };
    return std::make_unique<Borrowed>(factory);
  });
  std::vector<char*> args = {const_cast<char*>(argv0)};
  for (const auto& a : o.gtest_args) args.push_back(const_cast<char*>(a.c_str()));
  int gtest_argc = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc] is NULL: gtest shifts it along with the flags
  testing::InitGoogleTest(&gtest_argc, args.data());
  const int status = RUN_ALL_TESTS();
  std::cout.flush();
  std::_Exit(status);
}

// GoogleTest's sharding protocol: a runner that shards touches this file.
void acknowledge_sharding() {
  if (const char* file = std::getenv("GTEST_SHARD_STATUS_FILE")) std::ofstream touch(file);
}

// Every pattern of --filter, included or excluded, names at least one rule
// of the suite: a typo in one of them would otherwise pass unnoticed beside
// the others (and an exclusion that excludes nothing runs what it meant to
// leave out).
void check_filter_patterns(const std::string& filter) {
  const auto all = lizard::conformance::select_rules("");
  std::size_t start = 0;
  while (start <= filter.size()) {
    std::size_t end = filter.find_first_of(":,", start);
    if (end == std::string::npos) end = filter.size();
    const std::string pattern = filter.substr(start, end - start);
    const std::string positive =
        !pattern.empty() && pattern[0] == '-' ? pattern.substr(1) : pattern;
    const bool names_one = std::any_of(all.begin(), all.end(), [&](const auto* rule) {
      return lizard::conformance::filter_matches(positive, rule->id);
    });
    if (!positive.empty() && !names_one) {
      throw UsageError("--filter pattern '" + pattern + "' matches no rule (see --list-rules)");
    }
    start = end + 1;
  }
}

int run(const CliOptions& o, const char* argv0) {
  if (!o.gtest && lizard::conformance::select_rules(o.filter).empty()) {
    throw UsageError("no rule matches --filter '" + o.filter + "' (see --list-rules)");
  }
  check_filter_patterns(o.filter);
  const Inputs in = read_inputs(o);
  std::shared_ptr<BackendFactory> factory = make_factory(o);
  {
    std::lock_guard lock(g_factory_mutex);
    g_factory = factory;
  }
  if (o.gtest) run_gtest(factory, o, argv0);
  if (o.shard_count >= 1) acknowledge_sharding();
  const int status = lizard::conformance::run_conformance(*factory, runner_options(o, in));
  std::cout.flush();
  std::cerr.flush();
  // A rule abandoned past its deadline still holds its session.
  factory->abandon();
  return status;
}

int dispatch(const CliOptions& o, const char* argv0) {
  if (o.list_rules) {
    list_rules(o);
    return 0;
  }
  if (o.mutation_report) {
#ifdef LIZARD_CONFORMANCE_HAVE_MUTANTS
    const auto outcomes = lizard::conformance::run_all_mutants(6, {}, &std::cerr);
    const int status = lizard::conformance::print_mutation_report(std::cout, &outcomes);
    std::cout.flush();
    std::_Exit(status);  // broken backends may leave abandoned threads behind
#else
    throw UsageError("this build has no mutants");
#endif
  }
  if (o.merge) return merge(o);
  return run(o, argv0);
}

}  // namespace

int main(int argc, char** argv) {
  handle_interrupts();
  CliOptions options;
  if (auto exit = lizard::conformance::cli::parse(argc, argv, options, std::cout, std::cerr)) {
    return *exit;
  }
  int status = 2;
  try {
    status = dispatch(options, argv[0]);
  } catch (const UsageError& e) {
    std::cerr << "lizard-conformance: " << e.what() << "\n(see lizard-conformance --help)\n";
  } catch (const lizard::conformance::ExpectationsError& e) {
    std::cerr << "lizard-conformance: the expectations cannot be used (nothing was run):\n"
              << e.what() << "\n";
  } catch (const lizard::conformance::ReportError& e) {
    std::cerr << "lizard-conformance: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  // A rule abandoned past its deadline may still hold a thread; do not wait for it.
  std::_Exit(status);
}
