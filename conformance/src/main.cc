// lizard-conformance: runs the conformance suite against a backend and
// reports every rule (see --help).
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lizard/conformance/runner.h"
#include "lizard/conformance/suite.h"
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

constexpr const char* kUsage = R"(usage: lizard-conformance [options] [--gtest [gtest flags...]]
       lizard-conformance --backend command [options] -- PROGRAM [ARGS...]

Runs the workspace conformance suite: one test per rule of the contract
(docs/contract.md), each reported PASS, FAIL or SKIP with its time and reason.
Exit status: 0 when no rule FAILs, 1 when one does, 2 on a usage error.

  --backend lizard   the reference backend on an embedded mock of the Lizard API (default)
  --backend local    LocalWorkspaceBackend
  --backend command -- PROGRAM [ARGS...]
                     a backend in any language: PROGRAM is its adapter, which speaks the
                     backend protocol (docs/protocol.md) on its stdin and stdout; one adapter
                     process per rule. When the adapter says it is a Lizard backend, each
                     rule gets an embedded mock, passed in LIZARD_API_URL, LIZARD_API_KEY and
                     LIZARD_PROJECT_ID
  --check-protocol   with --backend command: also check every message against the protocol's
                     JSON Schemas (a message that does not match FAILs the rule)
  --answer-deadline S  with --backend command: an adapter that answers no ping for S seconds
                     while requests are in flight is hung (default 20)
  --era ERA          with the embedded mock: the platform era it plays, kubernetes (default:
                     exec envs, workdir and user and create metadata are ignored, uploads are
                     UTF-8 only) or firecracker (docs/mockserver.md, "Eras")
  --live             with --backend lizard: the real API; credentials from LIZARD_API_KEY and
                     LIZARD_PROJECT_ID, LIZARD_API_URL overrides the endpoint
  --list-rules       print the rule table (ID, gtest name, profile, summary) and exit
  --filter PATTERN   rule IDs to run: ':'-separated globs, '-' excludes ('fs.*:-fs.large-*')
  --jobs N           rules running at once (default 4)
  --rule-timeout S   a rule running longer FAILs (default 150)
  --report-md FILE   write a Markdown report
  --report-json FILE write the JSON report
  --junit FILE       write a JUnit XML report
  --mutation-report  run every mutant (deliberately broken backend) against the rules it targets
                     and print, per rule, the mutants that prove it (exit 1 if one is missed)
  --gtest ...        run the rules as GoogleTest tests (sequential) with the given gtest flags
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "lizard-conformance: " << message << "\n\n" << kUsage;
  std::exit(2);
}

struct CommandSettings {
  std::vector<std::string> argv;  // after "--"
  bool check_protocol = false;
  double answer_deadline = 0;  // 0: the default
};

#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
lizard::conformance::LizardMockFactoryOptions mock_options(const std::string& era) {
  lizard::conformance::LizardMockFactoryOptions options;
  if (era == "firecracker") {
    options.era = lizard::mock::Era::kFirecracker;
  } else if (!era.empty() && era != "kubernetes") {
    usage_error("unknown era '" + era + "' (kubernetes or firecracker)");
  }
  return options;
}
#endif

std::unique_ptr<BackendFactory> make_factory(const std::string& backend, bool live,
                                             const std::string& era,
                                             const CommandSettings& command) {
  if (backend != "command" &&
      (!command.argv.empty() || command.check_protocol || command.answer_deadline > 0)) {
    usage_error("'-- PROGRAM', --check-protocol and --answer-deadline apply to --backend command");
  }
  if (backend == "command") {
    if (live) usage_error("--live applies to --backend lizard only");
    if (command.argv.empty()) usage_error("--backend command needs '-- PROGRAM [ARGS...]'");
#ifdef LIZARD_CONFORMANCE_HAVE_COMMAND
    lizard::conformance::CommandFactoryOptions options;
    options.adapter.argv = command.argv;
    options.adapter.check_schemas = command.check_protocol;
    if (command.answer_deadline > 0) {
      options.adapter.answer_deadline =
          std::chrono::milliseconds(static_cast<long long>(command.answer_deadline * 1000));
    }
#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
    options.platforms["lizard"] =
        lizard::conformance::make_mock_platform_provider(mock_options(era));
#else
    if (!era.empty()) usage_error("this build has no embedded mock");
#endif
    return lizard::conformance::make_command_factory(std::move(options));
#else
    usage_error("this build has no command backend");
#endif
  }
  if (!era.empty() && (backend != "lizard" || live)) {
    usage_error("--era applies to the embedded mock only (--backend lizard or command)");
  }
  if (backend == "local") {
    if (live) usage_error("--live applies to --backend lizard only");
#ifdef LIZARD_CONFORMANCE_HAVE_LOCAL
    return lizard::conformance::make_local_factory();
#else
    usage_error("this build has no LocalWorkspaceBackend");
#endif
  }
  if (backend == "lizard") {
#ifdef LIZARD_CONFORMANCE_HAVE_LIZARD
    if (live) {
      lizard::conformance::LizardLiveFactoryOptions options;
      options.base = lizard::workspace::LizardOptions::from_environment();
      if (options.base.api_key.empty() || options.base.project.empty()) {
        usage_error("--live needs LIZARD_API_KEY and LIZARD_PROJECT_ID");
      }
      return lizard::conformance::make_lizard_live_factory(std::move(options));
    }
    return lizard::conformance::make_lizard_mock_factory(mock_options(era));
#else
    usage_error("this build has no LizardSandboxBackend or no embedded mock");
#endif
  }
  usage_error("unknown backend '" + backend + "' (lizard, local or command)");
}

void list_rules() {
  for (const auto& rule : lizard::conformance::all_rules()) {
    std::cout << rule.id << "\t" << lizard::conformance::gtest_name(rule.id) << "\t"
              << (rule.profile.empty() ? "common" : std::string(rule.profile)) << "\t"
              << rule.summary << "\n";
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

}  // namespace

int main(int argc, char** argv) {
  handle_interrupts();
  std::string backend = "lizard";
  std::string era;
  bool live = false;
  bool gtest_mode = false;
  CommandSettings command;
  lizard::conformance::RunnerOptions options;
  options.out = &std::cout;
  std::vector<char*> gtest_args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--") {
      // The adapter's command line, also after --gtest and its flags.
      for (++i; i < argc; ++i) command.argv.emplace_back(argv[i]);
      if (command.argv.empty()) usage_error("'--' needs PROGRAM [ARGS...]");
    } else if (gtest_mode) {
      gtest_args.push_back(argv[i]);
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--backend") {
      backend = value();
    } else if (arg == "--era") {
      era = value();
    } else if (arg == "--live") {
      live = true;
    } else if (arg == "--check-protocol") {
      command.check_protocol = true;
    } else if (arg == "--answer-deadline") {
      command.answer_deadline = std::atof(value().c_str());
      if (command.answer_deadline <= 0) usage_error("--answer-deadline needs a positive number");
    } else if (arg == "--list-rules") {
      list_rules();
      return 0;
    } else if (arg == "--filter") {
      options.filter = value();
    } else if (arg == "--jobs" || arg == "-j") {
      const std::string v = value();
      options.jobs = std::atoi(v.c_str());
      if (options.jobs < 1) usage_error("--jobs needs a positive number");
    } else if (arg == "--rule-timeout") {
      const int seconds = std::atoi(value().c_str());
      if (seconds < 1) usage_error("--rule-timeout needs a positive number of seconds");
      options.rule_deadline = std::chrono::seconds(seconds);
    } else if (arg == "--report-md") {
      options.report_md = value();
    } else if (arg == "--report-json") {
      options.report_json = value();
    } else if (arg == "--junit") {
      options.junit = value();
#ifdef LIZARD_CONFORMANCE_HAVE_MUTANTS
    } else if (arg == "--mutation-report") {
      const auto outcomes = lizard::conformance::run_all_mutants(6, {}, &std::cerr);
      const int status = lizard::conformance::print_mutation_report(std::cout, &outcomes);
      std::cout.flush();
      std::_Exit(status);  // broken backends may leave abandoned threads behind
#endif
    } else if (arg == "--gtest") {
      gtest_mode = true;
    } else {
      usage_error("unknown option '" + arg + "'");
    }
  }
  if (!gtest_mode) {
    bool any = false;
    for (const auto& rule : lizard::conformance::all_rules()) {
      any = any || lizard::conformance::filter_matches(options.filter, rule.id);
    }
    if (!any) usage_error("no rule matches --filter '" + options.filter + "' (see --list-rules)");
  }
  std::shared_ptr<BackendFactory> factory = make_factory(backend, live, era, command);
  {
    std::lock_guard lock(g_factory_mutex);
    g_factory = factory;
  }
  if (gtest_mode) {
    try {
      factory->preflight();
    } catch (const std::exception& e) {
      std::cerr << "lizard-conformance: cannot run the suite against " << factory->name() << ": "
                << e.what() << "\n";
      return 2;
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
    int gtest_argc = static_cast<int>(gtest_args.size());
    gtest_args.push_back(nullptr);  // argv[argc] is NULL: gtest shifts it along with the flags
    testing::InitGoogleTest(&gtest_argc, gtest_args.data());
    const int status = RUN_ALL_TESTS();
    std::cout.flush();
    std::_Exit(status);
  }
  const int status = lizard::conformance::run_conformance(*factory, options);
  std::cout.flush();
  std::cerr.flush();
  // A rule abandoned past its deadline still holds its session.
  factory->abandon();
  // A rule abandoned past its deadline may still hold a thread; do not wait for it.
  std::_Exit(status);
}
