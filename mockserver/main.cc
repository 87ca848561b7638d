// lizard-mock: the embedded mock of the Lizard API as a standalone server.
// A thin main around lizard::mock::MockServer; see docs/mockserver.md.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "lizard/mock/mock_server.h"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: lizard-mock [--host H] [--port N] [--api-key KEY]... [--project NAME]...\n"
               "                   [--era kubernetes|firecracker] [--exec-limit-ms N]\n"
               "                   [--control-key KEY] [--state-dir DIR] [--verbose]\n");
}

}  // namespace

int main(int argc, char** argv) {
  lizard::mock::MockOptions opt;
  bool verbose = false;
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
    auto number = [&](const std::string& v) -> long long {
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0) {
        std::fprintf(stderr, "lizard-mock: %s needs a non-negative integer\n", a.c_str());
        std::exit(2);
      }
      return n;
    };
    if (a == "--host") {
      opt.host = value();
    } else if (a == "--port") {
      opt.port = static_cast<int>(number(value()));
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
      long long n = number(value());
      if (n < 1) {
        std::fprintf(stderr, "lizard-mock: --exec-limit-ms must be at least 1\n");
        return 2;
      }
      opt.exec_limit = std::chrono::milliseconds(n);
    } else if (a == "--control-key") {
      opt.control_key = value();
      if (opt.control_key.empty()) {
        std::fprintf(stderr, "lizard-mock: --control-key must not be empty\n");
        return 2;
      }
    } else if (a == "--state-dir") {
      opt.state_dir = value();
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "lizard-mock: unknown option %s\n", a.c_str());
      usage();
      return 2;
    }
  }
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
