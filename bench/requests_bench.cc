// 2. HTTP requests per operation of the backend, counted from the mock's
// journal (through its control plane) around each operation.
#include "bench_env.h"

namespace lizard::bench {
namespace {

using workspace::Argv;
using workspace::LizardSandboxBackend;
using workspace::Shell;

// Runs `op` once per iteration and reports how many requests it sent; `setup`
// runs first, outside the count.
template <typename Op, typename Setup>
void count_requests(benchmark::State& state, Op op, Setup setup) {
  double requests = 0;
  for (auto _ : state) {
    setup();
    clear_journal();
    op();
    requests = static_cast<double>(journal_size());
  }
  state.counters["requests"] = requests;
}
template <typename Op>
void count_requests(benchmark::State& state, Op op) {
  count_requests(state, op, [] {});
}

const std::string kDir = "/workspace/bench-requests";

void count_run(benchmark::State& state, const std::string& which) {
  auto& b = *g_env->backend;
  if (which == "run_small") {
    count_requests(state, [&] { b.run(Shell{"printf hello"}); });
  } else if (which == "run_5MiB") {
    count_requests(state, [&] { b.run(Shell{"head -c 5242880 /dev/zero"}); });
  } else if (which == "run_timeout") {
    workspace::RunOptions options;
    options.timeout = workspace::Seconds(1);
    count_requests(state, [&] {
      try {
        b.run(Shell{"sleep 10"}, options);
      } catch (const workspace::WorkspaceTimeoutError&) {
      }
    });
  } else if (which == "first_use_create") {
    count_requests(state, [&] {
      LizardSandboxBackend fresh(options_for(*g_env->mock));
      fresh.run(Argv{{"true"}});
      fresh.destroy();
    });
    // The destroy is the caller's choice, not part of first use.
    state.counters["requests"] -= 1;
  }
}

// File operations on UTF-8 content, and a write of bytes that are not UTF-8
// (which the kubernetes-era mock, the default, does not take as file content:
// the backend stages them as base64 text and decodes them in the sandbox).
void count_file_op(benchmark::State& state, const std::string& which) {
  auto& b = *g_env->backend;
  const std::string file = kDir + "/file";
  if (which == "read_bytes") {
    count_requests(state, [&] { b.read_bytes(file); });
  } else if (which == "write_bytes") {
    count_requests(state, [&] { b.write_bytes(file, "other"); });
  } else if (which == "binary write") {
    count_requests(state,
                   [&] { b.write_bytes(kDir + "/binary", std::string("\xff\xfe\0\x80", 4)); });
  } else if (which == "stat") {
    count_requests(state, [&] { b.stat(file); });
  } else if (which == "list_dir") {
    count_requests(state, [&] { b.list_dir(kDir); });
  } else if (which == "exists") {
    count_requests(state, [&] { b.exists(file); });
  } else if (which == "make_dir") {
    count_requests(state, [&] { b.make_dir(kDir + "/sub/deeper"); });
  } else if (which == "remove") {
    count_requests(
        state, [&] { b.remove(kDir + "/gone"); }, [&] { b.write_bytes(kDir + "/gone", "x"); });
  } else if (which == "realpath") {
    count_requests(state, [&] { b.realpath(kDir + "/../bench-requests/file"); });
  }
}

void BM_Requests(benchmark::State& state, const std::string& which) {
  g_env->backend->write_bytes(kDir + "/file", "content");
  if (which.rfind("run_", 0) == 0 || which == "first_use_create") {
    count_run(state, which);
  } else {
    count_file_op(state, which);
  }
}

}  // namespace

void register_requests() {
  for (const char* op :
       {"run_small", "run_5MiB", "run_timeout", "read_bytes", "write_bytes", "binary write", "stat",
        "list_dir", "exists", "make_dir", "remove", "realpath", "first_use_create"}) {
    benchmark::RegisterBenchmark((std::string("requests/") + op).c_str(), BM_Requests,
                                 std::string(op))
        ->Iterations(1);
  }
}

}  // namespace lizard::bench
