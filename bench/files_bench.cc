// 3. File transfer against raw libcurl, with the client's peak memory; 4. the
// output of a run against one raw read of the same bytes.
#include "bench_env.h"

namespace lizard::bench {
namespace {

using workspace::Shell;

// write_bytes of content that is not UTF-8 (bench_env.h: payload).
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

// The least a libcurl client sends to put the same bytes in the file on the
// default (kubernetes-era) mock, which takes UTF-8 file content only: their
// base64 text through the files API, then one exec that decodes it in
// place. The bodies are prepared outside the timing: the baseline is the
// transfer and the decoding alone.
void BM_RawCurlUpload(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const std::string staged = "/workspace/.bench-raw-write.b64";
  const std::string target = "/workspace/bench-raw-write";
  const std::string upload =
      R"({"path":")" + staged + R"(","content":")" + base64(payload(bytes)) + "\"}";
  const std::string decode = R"({"cmd":["/bin/sh","-c","base64 -d <)" + staged + " >" + target +
                             " && rm -f " + staged + R"("]})";
  const std::string path = "/api/sandboxes/" + g_env->sandbox_id + "/files";
  RawCurl curl;
  std::string response;
  for (auto _ : state) {
    if (curl.request("POST", path, &upload, &response) != 200 || !curl.exec(decode))
      state.SkipWithError("raw upload");
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

void register_transfer(const char* name, void (*fn)(benchmark::State&), int64_t mib) {
  benchmark::RegisterBenchmark(name, fn)->Arg(mib)->Iterations(iterations_files())->UseRealTime();
}

}  // namespace

void register_files() {
  const std::vector<int64_t> sizes =
      g_quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 8, 64};
  for (int64_t mib : sizes) {
    register_transfer("files/ours_write", BM_WriteBytes, mib);
    register_transfer("files/raw_curl_upload", BM_RawCurlUpload, mib);
    register_transfer("files/ours_read", BM_ReadBytes, mib);
    register_transfer("files/raw_curl_download", BM_RawCurlDownload, mib);
  }
  for (int64_t mib : {1, 10}) {
    register_transfer("output/ours_run", BM_RunOutput, mib);
    register_transfer("output/raw_files_read", BM_RawFilesRead, mib);
  }
}

}  // namespace lizard::bench
