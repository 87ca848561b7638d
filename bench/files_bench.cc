// 3. File transfer against raw libcurl (in alternation), and the client's
// peak memory; 4. the output of a run against one raw read of the same bytes.
#include <functional>

#include "bench_env.h"

namespace lizard::bench {
namespace {

using workspace::Shell;

constexpr const char* kOursWrite = "/workspace/bench-write";
constexpr const char* kOursRead = "/workspace/bench-read";
constexpr const char* kRawWrite = "/workspace/bench-raw-write";
constexpr const char* kRawStaged = "/workspace/.bench-raw-write.b64";
constexpr const char* kRawRead = "/workspace/bench-raw-read";

std::size_t bytes_of(const benchmark::State& state) {
  return static_cast<std::size_t>(state.range(0)) << 20;
}

// What a libcurl client written for this one job does to put bytes that are
// not UTF-8 in a file on the default (kubernetes-era) mock, which takes UTF-8
// file content only: the bytes' base64 text through the files API (the body
// built per write, in one buffer sized up front, as any client must), then
// one exec that decodes it in place.
class RawUpload {
 public:
  explicit RawUpload(const std::string& data)
      : data_(data),
        decode_(R"({"cmd":["/bin/sh","-c","base64 -d <)" + std::string(kRawStaged) + " >" +
                kRawWrite + " && rm -f " + kRawStaged + R"("]})"),
        path_("/api/sandboxes/" + g_env->sandbox_id + "/files") {}

  bool operator()() {
    const std::string head = R"({"path":")" + std::string(kRawStaged) + R"(","content":")";
    std::string upload;
    upload.reserve(head.size() + (data_.size() + 2) / 3 * 4 + 2);
    upload += head;
    base64_append(data_, upload);
    upload += "\"}";
    return curl_.request("POST", path_, &upload, &response_) == 200 && curl_.exec(decode_);
  }

 private:
  RawCurl curl_;
  const std::string& data_;
  std::string decode_, path_, response_;
};

// What a libcurl client written for this one job does to put UTF-8 text in
// a file: one POST whose body is the text as a JSON string, built per write
// in one buffer sized up front.
class RawTextUpload {
 public:
  explicit RawTextUpload(const std::string& text)
      : text_(text), path_("/api/sandboxes/" + g_env->sandbox_id + "/files") {}

  bool operator()() {
    std::string upload = R"({"path":")" + std::string(kRawWrite) + R"(","content":)";
    json_string_append(text_, upload);
    upload += '}';
    return curl_.request("POST", path_, &upload, &response_) == 200;
  }

 private:
  RawCurl curl_;
  const std::string& text_;
  std::string path_, response_;
};

// A GET of the file's bytes into a fresh buffer sized up front, as read_bytes
// returns a new string: reusing one warm buffer would leave out the page
// faults that any client handing the bytes over pays.
class RawDownload {
 public:
  explicit RawDownload(std::size_t bytes)
      : bytes_(bytes),
        path_("/api/sandboxes/" + g_env->sandbox_id + "/files?path=" + std::string(kRawRead)) {}

  bool operator()() {
    std::string response;
    response.reserve(bytes_);
    const bool ok =
        curl_.request("GET", path_, nullptr, &response) == 200 && response.size() == bytes_;
    benchmark::DoNotOptimize(response);
    return ok;
  }

 private:
  RawCurl curl_;
  std::size_t bytes_;
  std::string path_;
};

// write_bytes of `data` in alternation with `raw`, a raw libcurl upload of
// the same bytes.
template <typename Raw>
void write_against_raw(benchmark::State& state, const std::string& data) {
  Raw raw(data);
  auto& backend = *g_env->backend;
  alternate(state, {{"ours",
                     [&] {
                       backend.write_bytes(kOursWrite, data);
                       return true;
                     },
                     data.size()},
                    {"raw", std::ref(raw), data.size()}});
}

// Content that is not UTF-8 (bench_env.h: payload): a staged base64 upload
// and a decoding exec, for both.
void BM_Write(benchmark::State& state) {
  write_against_raw<RawUpload>(state, payload(bytes_of(state)));
}

// UTF-8 text (bench_env.h: text_payload): one files-API request for both.
void BM_WriteText(benchmark::State& state) {
  write_against_raw<RawTextUpload>(state, text_payload(bytes_of(state)));
}

void BM_Read(benchmark::State& state) {
  const std::size_t bytes = bytes_of(state);
  g_env->backend->write_bytes(kOursRead, payload(bytes));
  g_env->backend->write_bytes(kRawRead, payload(bytes));
  RawDownload raw(bytes);
  auto& backend = *g_env->backend;
  alternate(state, {{"ours", [&] { return backend.read_bytes(kOursRead).size() == bytes; }, bytes},
                    {"raw", std::ref(raw), bytes}});
}

// The client's peak memory over the file size, with nothing else running in
// this process (the mock is another one).
void write_memory(benchmark::State& state, const std::string& data) {
  const long base_kib = read_status_kib("VmRSS:");
  reset_peak_rss();
  for (auto _ : state) g_env->backend->write_bytes(kOursWrite, data);
  const long peak_kib = read_status_kib("VmHWM:");
  state.counters["rss_growth_x"] =
      static_cast<double>(peak_kib - base_kib) * 1024.0 / static_cast<double>(data.size());
}

void BM_WriteMemory(benchmark::State& state) { write_memory(state, payload(bytes_of(state))); }

void BM_WriteTextMemory(benchmark::State& state) {
  write_memory(state, text_payload(bytes_of(state)));
}

void BM_ReadMemory(benchmark::State& state) {
  const std::size_t bytes = bytes_of(state);
  g_env->backend->write_bytes(kOursRead, payload(bytes));
  const long base_kib = read_status_kib("VmRSS:");
  reset_peak_rss();
  for (auto _ : state) {
    auto data = g_env->backend->read_bytes(kOursRead);
    if (data.size() != bytes) state.SkipWithError("short read");
    benchmark::DoNotOptimize(data);
  }
  const long peak_kib = read_status_kib("VmHWM:");
  state.counters["rss_growth_x"] = static_cast<double>(peak_kib - base_kib) * 1024.0 / bytes;
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

void register_sized(const char* name, void (*fn)(benchmark::State&), int64_t mib, int iterations) {
  benchmark::RegisterBenchmark(name, fn)->Arg(mib)->Iterations(iterations)->UseRealTime();
}

}  // namespace

void register_files() {
  const std::vector<int64_t> sizes =
      g_quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 8, 64};
  for (int64_t mib : sizes) {
    register_sized("files/write", BM_Write, mib, iterations_files());
    register_sized("files/read", BM_Read, mib, iterations_files());
    register_sized("files/write_memory", BM_WriteMemory, mib, 2);
    register_sized("files/write_text", BM_WriteText, mib, iterations_files());
    register_sized("files/write_text_memory", BM_WriteTextMemory, mib, 2);
    register_sized("files/read_memory", BM_ReadMemory, mib, 2);
  }
  for (int64_t mib : {1, 10}) {
    register_sized("output/ours_run", BM_RunOutput, mib, iterations_files());
    register_sized("output/raw_files_read", BM_RawFilesRead, mib, iterations_files());
  }
}

}  // namespace lizard::bench
