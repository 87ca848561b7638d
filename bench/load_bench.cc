// 5. Concurrent runs on one backend; 7. the mock server's own request rates,
// and a sandbox's start in a mock embedded in a process that holds much
// memory (the suite's runner: the mock and the rules in one process).
#include <atomic>
#include <vector>

#include "bench_env.h"
#include "lizard/mock/mock_server.h"

namespace lizard::bench {
namespace {

using workspace::Argv;

Latencies g_concurrent_latencies;
std::atomic<int> g_concurrent_errors{0};

void BM_ConcurrentRuns(benchmark::State& state) {
  if (state.thread_index() == 0) g_concurrent_errors = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    try {
      if (g_env->backend->run(Argv{{"true"}}).exit_code != 0) ++g_concurrent_errors;
    } catch (const std::exception&) {
      ++g_concurrent_errors;
    }
    g_concurrent_latencies.add(Clock::now() - t0);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    // Thread 0 reports after its own loop; the others add to the same pool.
    state.counters["errors"] = g_concurrent_errors.load();
    g_concurrent_latencies.report(state);
  }
}

void BM_MockGetSandbox(benchmark::State& state) {
  RawCurl curl;
  const std::string path = "/api/sandboxes/" + g_env->sandbox_id;
  std::string response;
  for (auto _ : state) {
    if (curl.request("GET", path, nullptr, &response) != 200) state.SkipWithError("get failed");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_MockExecTrue(benchmark::State& state) {
  RawCurl curl;
  const std::string body = R"({"cmd":["true"]})";
  for (auto _ : state) {
    if (!curl.exec(body)) state.SkipWithError("exec failed");
  }
  state.SetItemsProcessed(state.iterations());
}

// A backend's first run (the sandbox's creation, then `true`) and its
// destroy, on a mock embedded in this process while it holds range(0) MiB,
// which it writes again after each start; p50 of the starts alone. The
// sandbox's init is cloned from the mock's process: a clone that copied
// that memory write-protected all of it, and each page written afterwards
// faulted once more (2.3 s of CPU per start for 512 MiB on the slow host).
void BM_EmbeddedSandboxStart(benchmark::State& state) {
  std::vector<char> held(static_cast<std::size_t>(state.range(0)) << 20);
  const auto write_every_page = [&held] {
    for (std::size_t i = 0; i < held.size(); i += 4096) ++held[i];
  };
  write_every_page();
  mock::MockServer server;
  workspace::LizardOptions options;
  options.api_url = server.url();
  options.api_key = server.api_key();
  options.project = server.project_id();
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    workspace::LizardSandboxBackend backend(options);
    if (backend.run(Argv{{"true"}}).exit_code != 0) state.SkipWithError("true failed");
    backend.destroy();
    latencies.add(Clock::now() - t0);
    // Written again, as the runner's memory is: pages that a clone
    // write-protected fault once more.
    write_every_page();
  }
  benchmark::DoNotOptimize(held.data());
  latencies.report(state);
}

}  // namespace

void register_load() {
  const int per_thread = g_quick ? 5 : 40;
  for (int threads : {1, 4, 16, 64}) {
    benchmark::RegisterBenchmark("concurrency/run_true", BM_ConcurrentRuns)
        ->Threads(threads)
        ->Iterations(per_thread)
        ->UseRealTime();
  }
  const int mock_iters = g_quick ? 100 : 2000;
  for (int threads : {1, 16}) {
    benchmark::RegisterBenchmark("mock/get_sandbox", BM_MockGetSandbox)
        ->Threads(threads)
        ->Iterations(mock_iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("mock/exec_true", BM_MockExecTrue)
        ->Threads(threads)
        ->Iterations(mock_iters / 10)
        ->UseRealTime();
  }
  // Not in a quick run: writing 512 MiB the first time takes seconds here.
  if (!g_quick) {
    benchmark::RegisterBenchmark("embedded/sandbox_start", BM_EmbeddedSandboxStart)
        ->Arg(0)
        ->Arg(512)
        ->Iterations(20)
        ->UseRealTime();
  }
}

}  // namespace lizard::bench
