// 5. Concurrent runs on one backend; 7. the mock server's own request rates.
#include <atomic>

#include "bench_env.h"

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
}

}  // namespace lizard::bench
