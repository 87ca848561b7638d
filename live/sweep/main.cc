// lizard-sweep: deletes sandboxes that live conformance runs left behind
// (tagged "lizard-conformance-run") and that are older than N minutes.
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "lizard/api/errors.h"
#include "lizard/workspace/errors.h"
#include "sweep.h"

namespace {

constexpr const char* kUsage =
    R"(usage: lizard-sweep [--older-than MINUTES] [--run RUN_ID] [--dry-run]

Deletes the sandboxes of the project that earlier live conformance runs tagged
("lizard-conformance-run", in the create metadata or, for a sandbox without
any metadata (a platform that drops it), in the file /root/.lizard/tags inside
it) and that are at least MINUTES old (default 30; 0 to 5256000), and prints
each one it deleted, kept, or could not check. Untagged sandboxes are never
touched. --run deletes only that run's (its ID is printed when the run starts).
Credentials: LIZARD_API_KEY and LIZARD_PROJECT_ID; LIZARD_API_URL overrides
the endpoint. Exit status: 0; 1 when a delete failed, a sandbox's tags could
not be read, or the listing failed; 2 on a usage or credentials error.
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "lizard-sweep: " << message << "\n\n" << kUsage;
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  lizard::sweep::SweepOptions options;
  options.client = lizard::api::ClientOptions::from_environment();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--older-than") {
      const std::string v = value();
      char* end = nullptr;
      errno = 0;
      const long minutes = std::strtol(v.c_str(), &end, 10);
      // Up to ten years: the cut-off is the clock less this, which must not overflow.
      if (v.empty() || *end != '\0' || errno == ERANGE || minutes < 0 || minutes > 5'256'000)
        usage_error("--older-than needs minutes from 0 to 5256000 (ten years), not '" + v + "'");
      options.older_than = std::chrono::minutes(minutes);
    } else if (arg == "--run") {
      options.run_id = value();
      // An empty --run "$RUN_ID" would otherwise mean every run's sandboxes.
      if (options.run_id.empty()) usage_error("--run needs a run ID (lc-...), not ''");
    } else if (arg == "--dry-run") {
      options.dry_run = true;
    } else {
      usage_error("unknown option '" + arg + "'");
    }
  }
  if (options.client.api_key.empty() || options.client.project.empty()) {
    usage_error("LIZARD_API_KEY and LIZARD_PROJECT_ID must be set");
  }
  try {
    const auto result = lizard::sweep::sweep(options, &std::cout);
    return result.failed.empty() && result.unchecked.empty() ? 0 : 1;
  } catch (const lizard::api::NotFoundError& e) {  // LIZARD_PROJECT_ID names no project
    std::cerr << "lizard-sweep: " << lizard::sweep::printable(e.what(), 1000) << "\n";
    return 2;
  } catch (const lizard::workspace::WorkspaceAuthenticationError& e) {
    std::cerr << "lizard-sweep: " << lizard::sweep::printable(e.what(), 1000) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lizard-sweep: the sandboxes could not be listed: "
              << lizard::sweep::printable(e.what(), 1000) << "\n";
    return 1;
  }
}
