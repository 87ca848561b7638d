// lizard-bench: the reference backend side by side with its baselines, all
// against one mock (lizard::mock::MockServer) that this program forks into a
// child process at start, so that the client's memory and CPU figures are
// the client's alone (see docs/performance.md).
//
// Every figure scripts/bench reports is a ratio against a baseline measured in
// this same run, or a count; absolute times on a shared 2-core machine are noise.
//
//   lizard-bench [--quick] [google benchmark flags]
//
// --quick cuts iterations and sizes so the whole run takes well under a minute.
// --js-script FILE --js-out FILE runs the JS SDK baseline (bench/js/sdk_bench.mjs)
// against this process's embedded mock first, so both sides hit the same server.
#include <benchmark/benchmark.h>
#include <curl/curl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/mock/mock_server.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

extern char** environ;

namespace {

using lizard::workspace::Argv;
using lizard::workspace::LizardOptions;
using lizard::workspace::LizardSandboxBackend;
using lizard::workspace::Shell;
using Clock = std::chrono::steady_clock;

bool g_quick = false;

// The mock, running in a child process: what a client needs to reach it.
struct MockProcess {
  pid_t pid = -1;
  int control = -1;  // closing it tells the child to stop
  std::string url_;
  std::string key_;
  std::string project_;
  std::string control_key_;
  const std::string& url() const { return url_; }
  const std::string& control_key() const { return control_key_; }
  const std::string& api_key() const { return key_; }
  const std::string& project_id() const { return project_; }
};

// Forks the mock before this process has any thread (a child of a
// multithreaded process may only make system calls). The child serves until
// the control pipe closes (this process exited or called stop_mock), then
// destroys the server, which kills its sandboxes and removes its files.
MockProcess start_mock() {
  int info[2];
  int control[2];
  if (pipe(info) != 0 || pipe(control) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(info[0]);
    close(control[1]);
    int rc = 0;
    {
      lizard::mock::MockServer server{lizard::mock::MockOptions{}};
      const std::string text = server.url() + "\n" + server.api_key() + "\n" + server.project_id() +
                               "\n" + server.control_key() + "\n";
      if (write(info[1], text.data(), text.size()) != static_cast<ssize_t>(text.size())) rc = 1;
      close(info[1]);
      char byte = 0;
      while (read(control[0], &byte, 1) > 0) {
      }
    }
    _exit(rc);
  }
  close(info[1]);
  close(control[0]);
  std::string text;
  char buffer[512];
  ssize_t n = 0;
  while ((n = read(info[0], buffer, sizeof buffer)) > 0) text.append(buffer, n);
  close(info[0]);
  MockProcess mock;
  mock.pid = pid;
  mock.control = control[1];
  const auto first = text.find('\n');
  const auto second = text.find('\n', first + 1);
  const auto third = text.find('\n', second + 1);
  const auto fourth = text.find('\n', third + 1);
  if (fourth == std::string::npos) throw std::runtime_error("the mock did not start");
  mock.url_ = text.substr(0, first);
  mock.key_ = text.substr(first + 1, second - first - 1);
  mock.project_ = text.substr(second + 1, third - second - 1);
  mock.control_key_ = text.substr(third + 1, fourth - third - 1);
  return mock;
}

void stop_mock(MockProcess& mock) {
  close(mock.control);
  int status = 0;
  waitpid(mock.pid, &status, 0);
}

struct Env {
  std::unique_ptr<MockProcess> mock;
  std::unique_ptr<LizardSandboxBackend> backend;
  std::string sandbox_id;
};
Env* g_env = nullptr;

LizardOptions options_for(const MockProcess& mock) {
  LizardOptions options;
  options.api_key = mock.api_key();
  options.project = mock.project_id();
  options.api_url = mock.url();
  options.size = "small";
  return options;
}

// ---- latency recording -----------------------------------------------------

class Latencies {
 public:
  void add(Clock::duration d) {
    std::lock_guard lock(mu_);
    samples_.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  void report(benchmark::State& state) {
    std::lock_guard lock(mu_);
    if (samples_.empty()) return;
    std::sort(samples_.begin(), samples_.end());
    auto at = [&](double p) {
      return samples_[std::min(samples_.size() - 1, static_cast<std::size_t>(p * samples_.size()))];
    };
    state.counters["p50_us"] = at(0.50);
    state.counters["p99_us"] = at(0.99);
    samples_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<double> samples_;
};

// ---- raw libcurl baseline ---------------------------------------------------

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// One reused easy handle, so the baseline also keeps its connection alive.
class RawCurl {
 public:
  RawCurl() : curl_(curl_easy_init()) {
    const std::string header = "X-API-Key: " + g_env->mock->api_key();
    const std::string control = "X-Mock-Control-Key: " + g_env->mock->control_key();
    headers_ = curl_slist_append(headers_, header.c_str());
    headers_ = curl_slist_append(headers_, control.c_str());
    headers_ = curl_slist_append(headers_, "Content-Type: application/json");
  }
  ~RawCurl() {
    curl_slist_free_all(headers_);
    curl_easy_cleanup(curl_);
  }
  RawCurl(const RawCurl&) = delete;
  RawCurl& operator=(const RawCurl&) = delete;

  long request(const char* method, const std::string& path, const std::string* body,
               std::string* response) {
    const std::string url = g_env->mock->url() + path;
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    if (body != nullptr) {
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body->data());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    } else {
      curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
      curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST,
                       std::strcmp(method, "GET") == 0 ? nullptr : method);
    }
    response->clear();
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, response);
    if (curl_easy_perform(curl_) != CURLE_OK) throw std::runtime_error("raw curl request failed");
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    return status;
  }

 private:
  CURL* curl_;
  curl_slist* headers_ = nullptr;
};

// The mock's request journal, through its control plane.
void clear_journal() {
  RawCurl curl;
  std::string response;
  curl.request("DELETE", "/_mock/requests", nullptr, &response);
}

std::size_t journal_size() {
  RawCurl curl;
  std::string response;
  if (curl.request("GET", "/_mock/requests", nullptr, &response) != 200) {
    throw std::runtime_error("cannot read the mock's journal");
  }
  // One "method" key per entry; a body inside an entry is an escaped string.
  std::size_t count = 0;
  for (auto at = response.find("\"method\":"); at != std::string::npos;
       at = response.find("\"method\":", at + 1)) {
    ++count;
  }
  return count;
}

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string payload(std::size_t bytes) {
  std::string data(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>((i * 131 + (i >> 12)) & 0xFF);
  return data;
}

// ---- peak RSS growth --------------------------------------------------------
//
// main() sets M_MMAP_THRESHOLD to 128 KiB: every large buffer is then its own
// mapping, returned to the kernel on free. Without it glibc raises the
// threshold after the first large free and keeps such buffers in the heap,
// resident, so the next operation's buffers do not raise the peak at all and
// a read looked like "0x". The figure is VmHWM after the operations minus
// VmRSS before them, over the file size; the mock is another process.

long read_status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0) return std::stol(line.substr(n + 1));
  }
  return -1;
}

// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS.
void reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

// ---- 1. command round trip --------------------------------------------------

int iterations_round_trip() { return g_quick ? 30 : 300; }

void BM_RunTrue(benchmark::State& state) {
  Latencies lat;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto result = g_env->backend->run(Argv{{"true"}});
    lat.add(Clock::now() - t0);
    if (result.exit_code != 0) state.SkipWithError("true failed");
  }
  lat.report(state);
}

// The baseline: the same exec through our API client, with no wrapper, no
// output files and no UTF-8 work: what a run() costs at the very least.
void BM_RawExecTrue(benchmark::State& state) {
  lizard::api::ClientOptions client_options;
  client_options.api_key = g_env->mock->api_key();
  client_options.api_url = g_env->mock->url();
  lizard::api::Client client(client_options);
  lizard::api::ExecRequest request;
  request.cmd = std::vector<std::string>{"true"};
  client.exec(g_env->sandbox_id, request);  // warm the connection like the backend's
  Latencies lat;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto result = client.exec(g_env->sandbox_id, request);
    lat.add(Clock::now() - t0);
    if (result.exit_code != 0) state.SkipWithError("raw exec failed");
  }
  lat.report(state);
}

// The process shapes of a run, through a raw exec, for the cost analysis in
// docs/performance.md: what a wrapper shell alone costs (2 programs), and the
// run helper's shape without its logic (4 programs: setsid, sh, setsid, true).
void BM_RawExecShape(benchmark::State& state, std::vector<std::string> argv) {
  lizard::api::ClientOptions client_options;
  client_options.api_key = g_env->mock->api_key();
  client_options.api_url = g_env->mock->url();
  lizard::api::Client client(client_options);
  lizard::api::ExecRequest request;
  request.cmd = std::move(argv);
  request.workdir = "/workspace";
  client.exec(g_env->sandbox_id, request);
  Latencies lat;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto result = client.exec(g_env->sandbox_id, request);
    lat.add(Clock::now() - t0);
    if (result.exit_code != 0) state.SkipWithError("shape exec failed");
  }
  lat.report(state);
}

void BM_PosixSpawnTrue(benchmark::State& state) {
  Latencies lat;
  char arg0[] = "/bin/true";
  char* argv[] = {arg0, nullptr};
  for (auto _ : state) {
    const auto t0 = Clock::now();
    pid_t pid = 0;
    if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) {
      state.SkipWithError("posix_spawn failed");
      break;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    lat.add(Clock::now() - t0);
  }
  lat.report(state);
}

// ---- 2. HTTP requests per operation ----------------------------------------

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

void BM_Requests(benchmark::State& state, const std::string& which) {
  auto& b = *g_env->backend;
  const std::string dir = "/workspace/bench-requests";
  b.write_bytes(dir + "/file", "content");
  if (which == "run_small") {
    count_requests(state, [&] { b.run(Shell{"printf hello"}); });
  } else if (which == "run_5MiB") {
    count_requests(state, [&] { b.run(Shell{"head -c 5242880 /dev/zero"}); });
  } else if (which == "run_timeout") {
    lizard::workspace::RunOptions options;
    options.timeout = lizard::workspace::Seconds(1);
    count_requests(state, [&] {
      try {
        b.run(Shell{"sleep 10"}, options);
      } catch (const lizard::workspace::WorkspaceTimeoutError&) {
      }
    });
  } else if (which == "read_bytes") {
    count_requests(state, [&] { b.read_bytes(dir + "/file"); });
  } else if (which == "write_bytes") {
    count_requests(state, [&] { b.write_bytes(dir + "/file", "other"); });
  } else if (which == "stat") {
    count_requests(state, [&] { b.stat(dir + "/file"); });
  } else if (which == "list_dir") {
    count_requests(state, [&] { b.list_dir(dir); });
  } else if (which == "exists") {
    count_requests(state, [&] { b.exists(dir + "/file"); });
  } else if (which == "make_dir") {
    count_requests(state, [&] { b.make_dir(dir + "/sub/deeper"); });
  } else if (which == "remove") {
    count_requests(
        state, [&] { b.remove(dir + "/gone"); }, [&] { b.write_bytes(dir + "/gone", "x"); });
  } else if (which == "realpath") {
    count_requests(state, [&] { b.realpath(dir + "/../bench-requests/file"); });
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

// ---- 3. file transfer -------------------------------------------------------

void BM_WriteBytes(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const std::string data = payload(bytes);
  const std::string path = "/workspace/bench-write";
  const long base_kib = read_status_kib("VmRSS:");
  reset_peak_rss();
  for (auto _ : state) g_env->backend->write_bytes(path, data);
  const long peak_kib = read_status_kib("VmHWM:");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["rss_growth_x"] = static_cast<double>(peak_kib - base_kib) * 1024.0 / bytes;
}

void BM_ReadBytes(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const std::string path = "/workspace/bench-read";
  g_env->backend->write_bytes(path, payload(bytes));
  const long base_kib = read_status_kib("VmRSS:");
  reset_peak_rss();
  for (auto _ : state) {
    auto data = g_env->backend->read_bytes(path);
    if (data.size() != bytes) state.SkipWithError("short read");
    benchmark::DoNotOptimize(data);
  }
  const long peak_kib = read_status_kib("VmHWM:");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["rss_growth_x"] = static_cast<double>(peak_kib - base_kib) * 1024.0 / bytes;
}

void BM_RawCurlUpload(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  // The body is prepared outside the timing: the baseline is the transfer alone.
  const std::string body =
      R"({"path":"/workspace/bench-raw-write","encoding":"base64","content":")" +
      base64(payload(bytes)) + "\"}";
  const std::string path = "/api/sandboxes/" + g_env->sandbox_id + "/files";
  RawCurl curl;
  std::string response;
  for (auto _ : state) {
    if (curl.request("POST", path, &body, &response) != 200) state.SkipWithError("raw upload");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_RawCurlDownload(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  g_env->backend->write_bytes("/workspace/bench-raw-read", payload(bytes));
  const std::string path =
      "/api/sandboxes/" + g_env->sandbox_id + "/files?path=/workspace/bench-raw-read";
  RawCurl curl;
  for (auto _ : state) {
    // A fresh buffer sized up front for each download, as read_bytes returns
    // a new string: reusing one warm buffer would leave out the page faults
    // that any client handing the bytes over pays.
    std::string response;
    response.reserve(bytes);
    if (curl.request("GET", path, nullptr, &response) != 200 || response.size() != bytes) {
      state.SkipWithError("raw download");
    }
    benchmark::DoNotOptimize(response);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// ---- 4. output capture ------------------------------------------------------

void BM_RunOutput(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const Shell command{"head -c " + std::to_string(bytes) + " /dev/zero | tr '\\0' x"};
  for (auto _ : state) {
    auto result = g_env->backend->run(command);
    if (result.out.size() != bytes) state.SkipWithError("short output");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_RawFilesRead(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  g_env->backend->run(
      Shell{"head -c " + std::to_string(bytes) + " /dev/zero | tr '\\0' x > /workspace/bench-out"});
  const std::string path =
      "/api/sandboxes/" + g_env->sandbox_id + "/files?path=/workspace/bench-out";
  RawCurl curl;
  std::string response;
  for (auto _ : state) {
    if (curl.request("GET", path, nullptr, &response) != 200 || response.size() != bytes) {
      state.SkipWithError("raw read");
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// ---- 5. concurrency ---------------------------------------------------------

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

// ---- 7. the mock server itself ----------------------------------------------

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
  const std::string path = "/api/sandboxes/" + g_env->sandbox_id + "/exec";
  const std::string body = R"({"cmd":["true"]})";
  std::string response;
  for (auto _ : state) {
    if (curl.request("POST", path, &body, &response) != 200) state.SkipWithError("exec failed");
  }
  state.SetItemsProcessed(state.iterations());
}

// Runs the JS SDK baseline against the embedded mock and stores its JSON line.
void run_js_baseline(const std::string& script, const std::string& out_path) {
  const std::string sizes = g_quick ? "1,8" : "1,8,64";
  const std::string command = "node '" + script + "' '" + g_env->mock->url() + "' '" +
                              g_env->mock->api_key() + "' '" + g_env->mock->project_id() + "' " +
                              std::to_string(iterations_round_trip()) + " " + sizes;
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    if (pclose(pipe) != 0) std::fprintf(stderr, "lizard-bench: the JS baseline failed\n");
  }
  std::ofstream(out_path) << output;
}

void register_all() {
  const int rt = iterations_round_trip();
  benchmark::RegisterBenchmark("round_trip/ours_run_true", BM_RunTrue)
      ->Iterations(rt)
      ->UseRealTime();
  benchmark::RegisterBenchmark("round_trip/raw_exec_true", BM_RawExecTrue)
      ->Iterations(rt)
      ->UseRealTime();
  benchmark::RegisterBenchmark("round_trip/shape_sh_true", BM_RawExecShape,
                               std::vector<std::string>{"/bin/sh", "-c", "true & wait $!"})
      ->Iterations(rt)
      ->UseRealTime();
  benchmark::RegisterBenchmark(
      "round_trip/shape_4_programs", BM_RawExecShape,
      std::vector<std::string>{"setsid", "-f", "-w", "/bin/sh", "-c",
                               "setsid -- true </dev/null >/dev/null 2>&1 & wait $!"})
      ->Iterations(rt)
      ->UseRealTime();
  benchmark::RegisterBenchmark("round_trip/posix_spawn_true", BM_PosixSpawnTrue)
      ->Iterations(rt)
      ->UseRealTime();

  for (const char* op :
       {"run_small", "run_5MiB", "run_timeout", "read_bytes", "write_bytes", "stat", "list_dir",
        "exists", "make_dir", "remove", "realpath", "first_use_create"}) {
    benchmark::RegisterBenchmark((std::string("requests/") + op).c_str(), BM_Requests,
                                 std::string(op))
        ->Iterations(1);
  }

  const std::vector<int64_t> sizes =
      g_quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 8, 64};
  const int file_iters = g_quick ? 2 : 5;
  for (int64_t mib : sizes) {
    benchmark::RegisterBenchmark("files/ours_write", BM_WriteBytes)
        ->Arg(mib)
        ->Iterations(file_iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("files/raw_curl_upload", BM_RawCurlUpload)
        ->Arg(mib)
        ->Iterations(file_iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("files/ours_read", BM_ReadBytes)
        ->Arg(mib)
        ->Iterations(file_iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("files/raw_curl_download", BM_RawCurlDownload)
        ->Arg(mib)
        ->Iterations(file_iters)
        ->UseRealTime();
  }

  for (int64_t mib : {1, 10}) {
    benchmark::RegisterBenchmark("output/ours_run", BM_RunOutput)
        ->Arg(mib)
        ->Iterations(file_iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("output/raw_files_read", BM_RawFilesRead)
        ->Arg(mib)
        ->Iterations(file_iters)
        ->UseRealTime();
  }

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

}  // namespace

int main(int argc, char** argv) {
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
  env.backend = std::make_unique<LizardSandboxBackend>(options_for(*env.mock));
  env.backend->run(Argv{{"true"}});  // create the sandbox once, outside every timing
  env.sandbox_id = env.backend->ref()->id;
  g_env = &env;

  if (!js_script.empty() && !js_out.empty()) run_js_baseline(js_script, js_out);
  register_all();
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
