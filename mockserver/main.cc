// lizard-mock: the embedded mock of the Lizard API as a standalone server.
// A thin main around lizard::mock::MockServer; see docs/mockserver.md.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "lizard/mock/mock_server.h"

namespace {

const char kUsage[] =
    "usage: lizard-mock [--host H] [--port N] [--api-key KEY]... [--project NAME]...\n"
    "                   [--era kubernetes|firecracker] [--exec-limit-ms N]\n"
    "                   [--control-key KEY] [--state-dir DIR] [--verbose]\n";

const char kHelp[] =
    "\n"
    "A mock of the Lizard sandbox API (docs/mockserver.md) that really runs\n"
    "commands, each sandbox in its own user, mount, PID, network, UTS and IPC\n"
    "namespaces with a seccomp filter, as root or as a normal user. Point a\n"
    "client at the URL it prints: LizardSandboxBackend, the official JavaScript\n"
    "SDK, or lizard-conformance --live. It serves until SIGINT or SIGTERM and\n"
    "then removes every sandbox.\n"
    "\n"
    "Options:\n"
    "  --host H              address to listen on (default 127.0.0.1)\n"
    "  --port N              port (default 0: any free port)\n"
    "  --api-key KEY         an accepted API key; repeatable (default: liz_mock_key)\n"
    "  --project NAME        a project (its name is also its slug); repeatable\n"
    "                        (default: one project, mock-project)\n"
    "  --era kubernetes|firecracker\n"
    "                        the platform era to play (default kubernetes: exec envs,\n"
    "                        workdir and user and create metadata are ignored, uploads\n"
    "                        must be UTF-8; firecracker applies them)\n"
    "  --exec-limit-ms N     the per-request exec limit (default 600000, at most a day)\n"
    "  --control-key KEY     the secret of the control plane /_mock/* (header\n"
    "                        X-Mock-Control-Key; default: a random one)\n"
    "  --state-dir DIR       where sandboxes live (default: a temporary directory)\n"
    "  --verbose             one line per request on stderr (keys redacted)\n"
    "  -h, --help            this text\n"
    "\n"
    "Output (stdout, one line each, then nothing more):\n"
    "  LIZARD_MOCK_LISTENING http://127.0.0.1:PORT\n"
    "  LIZARD_MOCK_API_KEY KEY          (\"(as given)\" with --api-key)\n"
    "  LIZARD_MOCK_PROJECT_ID ID\n"
    "  LIZARD_MOCK_PROJECT mock-project (without --project)\n"
    "  LIZARD_MOCK_CONTROL_KEY KEY      (\"(as given)\" with --control-key)\n"
    "\n"
    "Exit status: 0 stopped by a signal; 1 could not start; 2 usage error;\n"
    "3 the sandboxes cannot be isolated here (the message says what is missing).\n"
    "\n"
    "Example:\n"
    "  lizard-mock --api-key liz_test --project demo &\n"
    "  LIZARD_API_URL=http://127.0.0.1:PORT LIZARD_API_KEY=liz_test \\\n"
    "    LIZARD_PROJECT_ID=demo lizard-conformance --live\n";

void usage() { std::fputs(kUsage, stderr); }

// What the command line asks for.
struct CommandLine {
  lizard::mock::MockOptions options;
  bool verbose = false;
};

// Reads the options into `cl`. Returns -1 to go on, or the status to exit
// with at once: 0 after --help, 2 after a usage error (its message printed).
int parse_command_line(int argc, char** argv, CommandLine& cl) {
  lizard::mock::MockOptions& opt = cl.options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "lizard-mock: %s needs a value\n", a.c_str());
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    // An integer from `low` to `high`, else a usage error (exit 2).
    auto number = [&](const std::string& v, long long low, long long high) -> long long {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno == ERANGE || n < low || n > high) {
        std::fprintf(stderr, "lizard-mock: %s needs an integer from %lld to %lld, not '%s'\n",
                     a.c_str(), low, high, v.c_str());
        std::exit(2);
      }
      return n;
    };
    if (a == "--host") {
      opt.host = value();
    } else if (a == "--port") {
      opt.port = static_cast<int>(number(value(), 0, 65535));
    } else if (a == "--api-key") {
      opt.api_keys.push_back(value());
    } else if (a == "--project") {
      opt.projects.push_back(value());
    } else if (a == "--era") {
      std::string e = value();
      if (e == "kubernetes") {
        opt.era = lizard::mock::Era::kKubernetes;
      } else if (e == "firecracker") {
        opt.era = lizard::mock::Era::kFirecracker;
      } else {
        std::fprintf(stderr, "lizard-mock: unknown era %s\n", e.c_str());
        return 2;
      }
    } else if (a == "--exec-limit-ms") {
      // Up to a day: deadlines are the clock plus the limit, which must not overflow.
      opt.exec_limit = std::chrono::milliseconds(number(value(), 1, 86'400'000));
    } else if (a == "--control-key") {
      opt.control_key = value();
      if (opt.control_key.empty()) {
        std::fprintf(stderr, "lizard-mock: --control-key must not be empty\n");
        return 2;
      }
    } else if (a == "--state-dir") {
      opt.state_dir = value();
    } else if (a == "--verbose") {
      cl.verbose = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::fputs(kHelp, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "lizard-mock: unknown option %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine cl;
  if (const int status = parse_command_line(argc, argv, cl); status >= 0) return status;
  lizard::mock::MockOptions& opt = cl.options;
  const bool verbose = cl.verbose;
  const bool default_key = opt.api_keys.empty();
  const bool default_project = opt.projects.empty();

  // Block the stop signals before any thread starts, so that only the
  // sigwait below receives them.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (verbose) {
    opt.log = [](std::string_view line) {
      std::fprintf(stderr, "lizard-mock: %.*s\n", static_cast<int>(line.size()), line.data());
      std::fflush(stderr);
    };
  }
  const bool default_control_key = opt.control_key.empty();
  try {
    lizard::mock::MockServer server(opt);
    std::printf("LIZARD_MOCK_LISTENING %s\n", server.url().c_str());
    std::printf("LIZARD_MOCK_API_KEY %s\n", default_key ? server.api_key().c_str() : "(as given)");
    std::printf("LIZARD_MOCK_PROJECT_ID %s\n", server.project_id().c_str());
    if (default_project) std::printf("LIZARD_MOCK_PROJECT %s\n", lizard::mock::kDefaultProject);
    // Only the launcher reads stdout: the control plane's secret goes there.
    std::printf("LIZARD_MOCK_CONTROL_KEY %s\n",
                default_control_key ? server.control_key().c_str() : "(as given)");
    std::fflush(stdout);
    int sig = 0;
    sigwait(&stop_set, &sig);
    if (verbose) std::fprintf(stderr, "lizard-mock: stopping on %s\n", strsignal(sig));
  } catch (const lizard::mock::IsolationUnavailable& e) {
    std::fprintf(stderr, "lizard-mock: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lizard-mock: %s\n", e.what());
    return 1;
  }
  return 0;
}
