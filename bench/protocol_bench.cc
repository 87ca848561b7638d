// 6. The backend protocol (docs/protocol.md): what a call through an adapter
// costs over the same call in process. LocalWorkspaceBackend served by
// `lizard-workspace-serve --backend local` through AdapterClient, against a
// LocalWorkspaceBackend in this process, each pair measured in alternation
// (bench_env.h) so that the added time is that of one machine load.
#include <malloc.h>

#include <memory>

#include "bench_env.h"
#include "lizard/conformance/adapter_client.h"
#include "lizard/workspace/local_workspace_backend.h"

namespace lizard::bench {
namespace {

using workspace::Argv;

// The allocator as a runner has it. main() pins M_MMAP_THRESHOLD at 128 KiB
// for the peak-memory rows, which turns off glibc's dynamic threshold: every
// buffer of the 1 MiB read (the 1.4 MB line, the decoded bytes, on both
// sides of a comparison) would then be a fresh mapping, page-faulted in and
// unmapped per call. A runner keeps glibc's default, whose threshold rises to
// the size of the first large buffer freed (and the trim threshold to twice
// that), so from the second call on these buffers are reused from the heap.
// This restores that steady state for the protocol rows, and main()'s setting
// after them.
class RunnerAllocator {
 public:
  RunnerAllocator() {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
  }
  ~RunnerAllocator() {
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    malloc_trim(0);
  }
  RunnerAllocator(const RunnerAllocator&) = delete;
  RunnerAllocator& operator=(const RunnerAllocator&) = delete;
};

// An adapter serving LocalWorkspaceBackend, one backend made through it, and
// the same backend in process.
struct Pair {
  std::shared_ptr<conformance::AdapterClient> adapter;
  std::unique_ptr<workspace::WorkspaceBackend> remote;
  workspace::LocalWorkspaceBackend local;

  Pair() {
    conformance::AdapterOptions options;
    options.argv = {LIZARD_SERVE_PATH, "--backend", "local"};
    adapter = conformance::AdapterClient::start(options);
    remote = adapter->make();
  }
  ~Pair() {
    try {
      if (auto ref = remote->ref()) adapter->destroy_environment(*ref);
    } catch (const std::exception&) {
      // the adapter's own directory goes with it at shutdown
    }
    remote.reset();
    adapter->shutdown();
    local.destroy();
  }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
};

void BM_ProtocolRunTrue(benchmark::State& state) {
  RunnerAllocator allocator;
  Pair pair;
  auto& remote = *pair.remote->commands();
  auto& local = pair.local;
  const Argv command{{"true"}};
  for (int i = 0; i < 3; ++i) {  // warm up both sides
    remote.run(command);
    local.run(command);
  }
  alternate(state, {{"protocol", [&] { return remote.run(command).exit_code == 0; }},
                    {"in_process", [&] { return local.run(command).exit_code == 0; }}});
}

// One file read by both sides (the same page-cache pages), bytes that are not
// UTF-8 (bench_env.h: payload).
void BM_ProtocolRead(benchmark::State& state) {
  RunnerAllocator allocator;
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  Pair pair;
  const std::string path = pair.local.working_dir() + "/bench-protocol-read";
  pair.local.write_bytes(path, payload(bytes));
  auto& remote = *pair.remote->filesystem();
  auto& local = pair.local;
  for (int i = 0; i < 3; ++i) {
    remote.read_bytes(path);
    local.read_bytes(path);
  }
  alternate(state, {{"protocol", [&] { return remote.read_bytes(path).size() == bytes; }, bytes},
                    {"in_process", [&] { return local.read_bytes(path).size() == bytes; }, bytes}});
}

}  // namespace

void register_protocol() {
  const int n = iterations_round_trip();
  benchmark::RegisterBenchmark("protocol/run_true", BM_ProtocolRunTrue)
      ->Iterations(n)
      ->UseRealTime();
  benchmark::RegisterBenchmark("protocol/read", BM_ProtocolRead)
      ->Arg(1)
      ->Iterations(n)
      ->UseRealTime();
}

}  // namespace lizard::bench
