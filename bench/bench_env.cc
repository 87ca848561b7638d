#include "bench_env.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "lizard/mock/mock_server.h"

namespace lizard::bench {

bool g_quick = false;
Env* g_env = nullptr;

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
      mock::MockServer server{mock::MockOptions{}};
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
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  if (lines.size() < 4) throw std::runtime_error("the mock did not start");
  MockProcess mock;
  mock.pid = pid;
  mock.control = control[1];
  mock.url = lines[0];
  mock.api_key = lines[1];
  mock.project_id = lines[2];
  mock.control_key = lines[3];
  return mock;
}

void stop_mock(MockProcess& mock) {
  close(mock.control);
  int status = 0;
  waitpid(mock.pid, &status, 0);
}

workspace::LizardOptions options_for(const MockProcess& mock) {
  workspace::LizardOptions options;
  options.api_key = mock.api_key;
  options.project = mock.project_id;
  options.api_url = mock.url;
  options.size = "small";
  return options;
}

int iterations_round_trip() { return g_quick ? 30 : 300; }
int iterations_files() { return g_quick ? 2 : 5; }

// ---- latencies --------------------------------------------------------------

void Latencies::add(Clock::duration d) {
  std::lock_guard lock(mu_);
  samples_.push_back(std::chrono::duration<double, std::micro>(d).count());
}

double Latencies::p50_us() {
  std::lock_guard lock(mu_);
  if (samples_.empty()) return 0;
  std::vector<double> sorted = samples_;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  return sorted[sorted.size() / 2];
}

void Latencies::report(benchmark::State& state, const std::string& prefix) {
  std::lock_guard lock(mu_);
  if (samples_.empty()) return;
  std::sort(samples_.begin(), samples_.end());
  auto at = [&](double p) {
    return samples_[std::min(samples_.size() - 1, static_cast<std::size_t>(p * samples_.size()))];
  };
  state.counters[prefix + "p50_us"] = at(0.50);
  state.counters[prefix + "p99_us"] = at(0.99);
  samples_.clear();
}

void alternate(benchmark::State& state, const std::vector<TimedOp>& ops) {
  std::vector<Latencies> lat(ops.size());
  std::size_t first = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const std::size_t i = (first + k) % ops.size();
      const auto t0 = Clock::now();
      const bool ok = ops[i].run();
      lat[i].add(Clock::now() - t0);
      if (!ok) state.SkipWithError((ops[i].name + " failed").c_str());
    }
    first = (first + 1) % ops.size();
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const double p50 = lat[i].p50_us();
    if (ops[i].bytes > 0 && p50 > 0)
      state.counters[ops[i].name + "_mib_s"] =
          static_cast<double>(ops[i].bytes) / (1 << 20) / (p50 / 1e6);
    lat[i].report(state, ops[i].name + "_");
  }
}

// ---- raw libcurl --------------------------------------------------------------

namespace {

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

}  // namespace

RawCurl::RawCurl() : curl_(curl_easy_init()) {
  const std::string header = "X-API-Key: " + g_env->mock->api_key;
  const std::string control = "X-Mock-Control-Key: " + g_env->mock->control_key;
  headers_ = curl_slist_append(headers_, header.c_str());
  headers_ = curl_slist_append(headers_, control.c_str());
  headers_ = curl_slist_append(headers_, "Content-Type: application/json");
}

RawCurl::~RawCurl() {
  curl_slist_free_all(headers_);
  curl_easy_cleanup(curl_);
}

long RawCurl::request(const char* method, const std::string& path, const std::string* body,
                      std::string* response) {
  const std::string url = g_env->mock->url + path;
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

bool RawCurl::exec(const std::string& body) {
  const long status =
      request("POST", "/api/sandboxes/" + g_env->sandbox_id + "/exec", &body, &answer_);
  return status == 200 && answer_.find("\"exitCode\":0") != std::string::npos;
}

void json_string_append(std::string_view text, std::string& out) {
  std::size_t size = 2;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    size += c == '"' || c == '\\' ? 2 : u < 0x20 ? 6 : 1;
  }
  const std::size_t start = out.size();
  out.resize(start + size);
  char* o = out.data() + start;
  *o++ = '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = c;
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      *o++ = '\\';
      *o++ = 'u';
      *o++ = '0';
      *o++ = '0';
      *o++ = kHex[u >> 4];
      *o++ = kHex[u & 15];
    } else {
      *o++ = c;
    }
  }
  *o = '"';
}

std::string json_string(const std::string& text) {
  std::string out;
  json_string_append(text, out);
  return out;
}

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

// ---- payloads ---------------------------------------------------------------

void base64_append(std::string_view in, std::string& out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::size_t start = out.size();
  out.resize(start + (in.size() + 2) / 3 * 4);
  char* o = out.data() + start;
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = kAlphabet[v & 63];
  }
  if (i < in.size()) {
    unsigned v = p[i] << 16;
    if (i + 1 < in.size()) v |= p[i + 1] << 8;
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
}

std::string payload(std::size_t bytes) {
  std::string data(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>((i * 131 + (i >> 12)) & 0xFF);
  return data;
}

std::string text_payload(std::size_t bytes) {
  // Source-like lines: quotes, backslashes and tabs (which JSON escapes),
  // and letters of two, three and four bytes (which it passes as they are).
  static constexpr std::string_view kLines[] = {
      "\tif (path == \"C:\\\\temp\") return \"gr\xC3\xBC\xC3\x9F\";\n",
      "// \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E, \xF0\x9F\xA6\x8E and a plain line of code\n",
      "{\"name\": \"lizard\", \"value\": 42, \"list\": [1, 2, 3]}\n",
  };
  std::string text;
  text.reserve(bytes);
  for (std::size_t i = 0; text.size() < bytes; ++i) {
    const std::string_view line = kLines[i % std::size(kLines)];
    if (text.size() + line.size() > bytes) {
      text.append(bytes - text.size(), '.');
    } else {
      text.append(line);
    }
  }
  return text;
}

// ---- peak RSS ---------------------------------------------------------------

long read_status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0) return std::stol(line.substr(n + 1));
  }
  return -1;
}

void reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

}  // namespace lizard::bench
