// lizard-workspace-serve: serves a C++ backend over the backend protocol
// (docs/protocol.md) on stdin and stdout, so the conformance runner can judge
// it out of process: `lizard-conformance --backend command --
// lizard-workspace-serve --backend lizard` must give the verdicts of
// `lizard-conformance --backend lizard`.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include "lizard/conformance/lizard_factory.h"
#include "lizard/conformance/local_factory.h"
#include "lizard/conformance/protocol_server.h"
#ifdef LIZARD_SERVE_HAVE_MUTANTS
#include "lizard/conformance/mutants.h"
#endif

namespace {

constexpr const char* kUsage =
    R"(usage: lizard-workspace-serve --backend local|lizard [--mutant NAME]

Serves a workspace backend over the backend protocol (docs/protocol.md):
JSON-RPC 2.0, one message per line, requests on stdin, answers on stdout,
log lines on stderr. Runs until stdin ends. Made to be started by
`lizard-conformance --backend command -- lizard-workspace-serve ...`.

  --backend local    LocalWorkspaceBackend, each backend in a fresh directory
  --backend lizard   LizardSandboxBackend on the platform that LIZARD_API_URL,
                     LIZARD_API_KEY and LIZARD_PROJECT_ID name (the runner sets them
                     to its embedded mock); its request log goes to stderr

Testing:
  --mutant NAME      serve the named mutant (a deliberately broken backend of the
                     suite's catalogue, conformance/mutants) of that backend instead
  --list-mutants     print the mutants' names and bases and exit
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "lizard-workspace-serve: " << message << "\n\n" << kUsage;
  std::exit(2);
}

// One line per write: lines from several threads never interleave.
void log_line(std::string_view line) {
  std::string text(line);
  text += '\n';
  (void)!::write(2, text.data(), text.size());
}

}  // namespace

int main(int argc, char** argv) {
  // A runner that closes its end of stdout must not kill this process in the
  // middle of a write (its commands would be left running): the write fails,
  // and serving ends as at the end of stdin. Commands start with SIGPIPE at
  // its default (the local backend resets every signal in its children).
  std::signal(SIGPIPE, SIG_IGN);
  std::string backend;
  std::string mutant;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--backend") {
      backend = value();
    } else if (arg == "--mutant") {
      mutant = value();
#ifdef LIZARD_SERVE_HAVE_MUTANTS
    } else if (arg == "--list-mutants") {
      for (const auto& m : lizard::conformance::all_mutants()) {
        std::cout << m.name << "\t" << m.base << "\t" << m.description << "\n";
      }
      return 0;
#endif
    } else {
      usage_error("unknown option '" + arg + "'");
    }
  }
  if (backend != "local" && backend != "lizard") usage_error("--backend local or --backend lizard");

  std::unique_ptr<lizard::conformance::BackendFactory> factory;
  lizard::workspace::LizardOptions endpoint = lizard::workspace::LizardOptions::from_environment();
  endpoint.log = log_line;
  if (!mutant.empty()) {
#ifdef LIZARD_SERVE_HAVE_MUTANTS
    const auto* m = lizard::conformance::find_mutant(mutant);
    if (m == nullptr) usage_error("no mutant '" + mutant + "' (see --list-mutants)");
    if (m->base != backend) {
      usage_error("mutant '" + mutant + "' breaks the " + m->base + " backend, not " + backend);
    }
    // The lizard mutants are built on the mock factory: point it at the
    // platform the runner passed.
    if (backend == "lizard") lizard::conformance::use_endpoint_for_mock_factories(endpoint);
    factory = m->make_factory();
#else
    usage_error("this build has no mutants");
#endif
  } else if (backend == "local") {
    factory = lizard::conformance::make_local_factory();
  } else {
    factory = lizard::conformance::make_lizard_endpoint_factory(endpoint);
  }
  lizard::conformance::ServeOptions options;
  options.name = backend == "lizard" ? "LizardSandboxBackend" : "LocalWorkspaceBackend";
  if (!mutant.empty()) options.name += ", mutant " + mutant;
  const int status = lizard::conformance::serve_protocol(*factory, options);
  if (status != 0) {
    // Requests still run on threads that use the factory: leave without
    // destroying it, and say so in the exit status.
    std::cerr << "lizard-workspace-serve: requests were still running 10 s after the end of "
                 "stdin; left without waiting for them\n";
    std::cout.flush();
    std::_Exit(1);
  }
  factory.reset();
  return 0;
}
