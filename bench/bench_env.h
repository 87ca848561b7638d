// What every part of lizard-bench shares: the mock in a child process, the
// backend under test, raw libcurl requests to the same mock, latency
// samples, the mock's request journal, payloads and the peak-RSS reading.
//
// Every figure scripts/bench reports is a ratio against a baseline measured in
// the same run (where the two can be, in alternation: see Alternating), or a
// count; absolute times on a shared 2-core machine are noise.
//
// Not thread-safe unless a comment says so: benchmarks run one at a time,
// except the concurrency ones, which share only the backend (thread-safe).
#pragma once

#include <benchmark/benchmark.h>
#include <curl/curl.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::bench {

using Clock = std::chrono::steady_clock;

// --quick: fewer iterations and smaller files.
extern bool g_quick;

// The mock, running in a child process: what a client needs to reach it.
struct MockProcess {
  pid_t pid = -1;
  int control = -1;  // closing it tells the child to stop
  std::string url;
  std::string api_key;
  std::string project_id;
  std::string control_key;
};

// Forks the mock; call before this process has any thread (a child of a
// multithreaded process may only make system calls). The child serves until
// the control pipe closes (this process exited or called stop_mock), then
// destroys the server, which kills its sandboxes and removes its files.
MockProcess start_mock();
void stop_mock(MockProcess& mock);

struct Env {
  std::unique_ptr<MockProcess> mock;
  std::unique_ptr<workspace::LizardSandboxBackend> backend;
  std::string sandbox_id;  // the backend's sandbox
};
extern Env* g_env;

workspace::LizardOptions options_for(const MockProcess& mock);

int iterations_round_trip();
int iterations_files();

// Latency samples; add() is thread-safe.
class Latencies {
 public:
  void add(Clock::duration d);
  // The median so far, in microseconds (0 without samples).
  double p50_us();
  // Sets counters `<prefix>p50_us` and `<prefix>p99_us`, then forgets the samples.
  void report(benchmark::State& state, const std::string& prefix = "");

 private:
  std::mutex mu_;
  std::vector<double> samples_;
};

// Runs each operation once per iteration, in an order that rotates every
// iteration (so none always follows another), and reports each one's
// `<name>_p50_us` and `<name>_p99_us`, and with `bytes` its throughput at the
// median time, `<name>_mib_s` (one stall of a loaded machine moves a mean of
// five 64 MiB transfers by a fifth). Operations measured this way see the same
// machine load, so their ratio holds on a busy machine too. An operation
// returns false when it failed (the benchmark stops with an error).
struct TimedOp {
  std::string name;
  std::function<bool()> run;
  std::size_t bytes = 0;  // moved per run, for `<name>_mib_s`
};
void alternate(benchmark::State& state, const std::vector<TimedOp>& ops);

// One reused easy handle to the mock, with the API key and the control key,
// so that it keeps its connection alive like the backend does.
class RawCurl {
 public:
  RawCurl();
  ~RawCurl();
  RawCurl(const RawCurl&) = delete;
  RawCurl& operator=(const RawCurl&) = delete;

  // The HTTP status; throws std::runtime_error when curl fails. `response`
  // is cleared first (its capacity kept).
  long request(const char* method, const std::string& path, const std::string* body,
               std::string* response);
  // POST /api/sandboxes/{id}/exec with `body`; true when it answered 200
  // with exit code 0.
  bool exec(const std::string& body);

 private:
  CURL* curl_;
  curl_slist* headers_ = nullptr;
  std::string answer_;
};

// JSON text of a string (quotes included), for request bodies; the append
// form sizes `out` once, as a client written for the job would.
std::string json_string(const std::string& text);
void json_string_append(std::string_view text, std::string& out);

// The mock's request journal, through its control plane.
void clear_journal();
std::size_t journal_size();

// Appends the base64 of `in` to `out` (sized once, as a client would).
void base64_append(std::string_view in, std::string& out);
// `bytes` of content that is not UTF-8.
std::string payload(std::size_t bytes);
// `bytes` of UTF-8 text with characters JSON escapes and multi-byte letters.
std::string text_payload(std::size_t bytes);

// Peak RSS: main() sets M_MMAP_THRESHOLD to 128 KiB, so that every large
// buffer is its own mapping, returned to the kernel on free (without it glibc
// raises the threshold after the first large free and keeps such buffers
// resident: the next operation's buffers would not raise the peak at all).
// Growth is VmHWM after the operations minus VmRSS before, over the file
// size; the mock is another process.
long read_status_kib(const char* field);
void reset_peak_rss();  // VmHWM := VmRSS

// Each part registers its benchmarks (round_trip_bench.cc, requests_bench.cc,
// files_bench.cc, load_bench.cc, protocol_bench.cc: the last only where
// lizard-workspace-serve is built, LIZARD_BENCH_HAVE_PROTOCOL).
void register_round_trip();
void register_requests();
void register_files();
void register_load();
void register_protocol();

}  // namespace lizard::bench
