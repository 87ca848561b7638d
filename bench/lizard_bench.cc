// lizard-bench: the reference backend side by side with its baselines, all
// against one mock (lizard::mock::MockServer) that this program forks into a
// child process at start, so that the client's memory and CPU figures are
// the client's alone (see docs/performance.md).
//
//   lizard-bench [--quick] [--js-script FILE --js-out FILE] [google benchmark flags]
//
// --quick cuts iterations and sizes so the whole run takes well under a minute.
// --js-script FILE --js-out FILE runs the JS SDK baseline (bench/js/sdk_bench.mjs)
// against this process's mock first, so both sides hit the same server.
//
// The benchmarks: round_trip_bench.cc, protocol_bench.cc, requests_bench.cc,
// files_bench.cc, load_bench.cc; what they share: bench_env.h.
#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "bench_env.h"

namespace lizard::bench {
namespace {

// Runs the JS SDK baseline against the mock and stores its JSON line.
void run_js_baseline(const std::string& script, const std::string& out_path) {
  const std::string sizes = g_quick ? "1,8" : "1,8,64";
  const std::string command = "node '" + script + "' '" + g_env->mock->url + "' '" +
                              g_env->mock->api_key + "' '" + g_env->mock->project_id + "' " +
                              std::to_string(iterations_round_trip()) + " " + sizes + " " +
                              std::to_string(iterations_files());
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    if (pclose(pipe) != 0) std::fprintf(stderr, "lizard-bench: the JS baseline failed\n");
  }
  std::ofstream(out_path) << output;
}

}  // namespace
}  // namespace lizard::bench

int main(int argc, char** argv) {
  using namespace lizard::bench;
  std::vector<char*> args;
  std::string js_script;
  std::string js_out;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_quick = true;
    } else if (std::strcmp(argv[i], "--js-script") == 0 && i + 1 < argc) {
      js_script = argv[++i];
    } else if (std::strcmp(argv[i], "--js-out") == 0 && i + 1 < argc) {
      js_out = argv[++i];
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc] is NULL: Initialize shifts it along with the flags
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  signal(SIGPIPE, SIG_IGN);

  Env env;
  env.mock = std::make_unique<MockProcess>(start_mock());
  curl_global_init(CURL_GLOBAL_DEFAULT);
  env.backend = std::make_unique<lizard::workspace::LizardSandboxBackend>(options_for(*env.mock));
  env.backend->run(lizard::workspace::Argv{{"true"}});  // create the sandbox outside every timing
  env.sandbox_id = env.backend->ref()->id;
  g_env = &env;

  if (!js_script.empty() && !js_out.empty()) run_js_baseline(js_script, js_out);
  register_round_trip();
#ifdef LIZARD_BENCH_HAVE_PROTOCOL
  register_protocol();
#endif
  register_requests();
  register_files();
  register_load();
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  env.backend->destroy();
  env.backend.reset();
  g_env = nullptr;
  stop_mock(*env.mock);
  curl_global_cleanup();
  return 0;
}
