// lizard::api over sockets: the codecs, the libcurl transport against a tiny
// in-test httplib server (keep-alive, deadline, cancellation, large reads),
// and the client against the embedded mock. The socket-free tests are in
// client_errors_test.cc and client_requests_test.cc.
#include <sys/mman.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/prefault.h"
#include "lizard/api/client.h"
#include "lizard/api/codec.h"
#include "lizard/mock/mock_server.h"
#include "lizard/testing/eventually.h"
#include "lizard/testing/matchers.h"
#include "scripted_transport.h"

namespace lizard::api {
namespace {

using namespace std::chrono_literals;
using lizard::testing::Eventually;
using lizard::testing::ThrowsTransient;
using scripted::kSecret;

TEST(Base64Test, RoundTripsEveryLengthAndRejectsGarbage) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
    bytes.push_back(static_cast<char>(i * 37));
  }
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_decode("Zm9v\nYmFy"), "foobar");
  EXPECT_THROW(base64_decode("Zm9v!"), std::invalid_argument);
}

// The encoder writes through a 4096-character block: every length around
// the block's edges (3 x 1024 bytes fill it exactly) round-trips.
TEST(Base64Test, LengthsAroundTheEncodersBlockRoundTrip) {
  for (const std::size_t edge : {std::size_t{3072}, std::size_t{6144}, std::size_t{30720}}) {
    for (std::size_t n = edge - 4; n <= edge + 4; ++n) {
      std::string bytes(n, '\0');
      for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 131 + n);
      const std::string text = base64_encode(bytes);
      EXPECT_EQ(text.size(), (n + 2) / 3 * 4) << n;
      EXPECT_EQ(base64_decode(text), bytes) << n;
      std::string appended = "head:";
      base64_encode_append(bytes, appended);
      EXPECT_EQ(appended, "head:" + text) << n;
    }
  }
}

// Pages of `s`'s buffer in [from, to) that are resident.
std::size_t resident_pages(const std::string& s, std::size_t from, std::size_t to) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto base = reinterpret_cast<std::uintptr_t>(s.data());
  const std::uintptr_t first = (base + from + page - 1) / page * page;
  const std::uintptr_t last = (base + to) / page * page;
  if (last <= first) return 0;
  std::vector<unsigned char> in((last - first) / page);
  if (::mincore(reinterpret_cast<void*>(first), last - first, in.data()) != 0) return 0;
  std::size_t n = 0;
  for (const unsigned char c : in) n += c & 1;
  return n;
}

// A body reserved at its announced length is made present a MiB ahead of
// the data, never more: a peer that announces 64 MiB and sends a few bytes
// costs about a MiB. What is appended is what arrives, whatever the chunks.
TEST(PrefaultTest, PagesComeAMiBAheadOfTheDataAndTheContentIsExact) {
  constexpr std::size_t kMiB = 1 << 20;
  std::string body;
  body.reserve(64 * kMiB);
  internal::PrefaultingAppender appender(body);
  appender.append("abc", 3);
  EXPECT_EQ(resident_pages(body, 4 * kMiB, 64 * kMiB), 0u)
      << "pages far ahead of 3 bytes of data were made present";
#ifdef MADV_POPULATE_WRITE
  // Where the kernel has it (5.14 on), the first MiB is present already.
  void* probe = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool kernel_has_it = ::madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
  ::munmap(probe, 4096);
  if (kernel_has_it) {
    EXPECT_GE(resident_pages(body, 64 * 1024, kMiB - 4096), (kMiB - 128 * 1024) / 4096);
  }
#endif
  std::string want = "abc";
  const std::string chunk(300 * 1000 + 7, 'x');
  while (want.size() < 10 * kMiB) {
    appender.append(chunk.data(), chunk.size());
    want += chunk;
  }
  EXPECT_EQ(body, want);
  EXPECT_EQ(resident_pages(body, 16 * kMiB, 64 * kMiB), 0u);
  // Past the reservation the string grows as any other; the content stays exact.
  std::string small;
  internal::PrefaultingAppender grows(small);
  for (int i = 0; i < 5000; ++i) grows.append(chunk.data(), 1000);
  EXPECT_EQ(small, std::string(5'000'000, 'x'));
}

TEST(SseParserTest, EventsSurviveAnyChunkingAndLineEnding) {
  const std::string stream =
      ": keep-alive\r\ndata: {\"pid\": 7}\r\n\r\ndata: {\"stream\":\"stdout\",\"line\":\"a\"}\n\n"
      "event: exit\ndata: {\"exitCode\": 3}\n\nevent: error\ndata: one\ndata: two\n\ndata: cut";
  for (std::size_t chunk = 1; chunk <= stream.size(); ++chunk) {
    std::vector<std::pair<std::string, std::string>> events;
    SseParser parser(
        [&](const std::string& e, const std::string& d) { events.emplace_back(e, d); });
    for (std::size_t at = 0; at < stream.size(); at += chunk) parser.feed(stream.substr(at, chunk));
    parser.finish();
    ASSERT_EQ(events.size(), 4u) << chunk;
    EXPECT_EQ(events[0], (std::pair<std::string, std::string>{"message", "{\"pid\": 7}"}));
    EXPECT_EQ(events[2].first, "exit");
    EXPECT_EQ(events[3], (std::pair<std::string, std::string>{"error", "one\ntwo"}));
  }
}

// A server that sends one line, or one event's data, without end: the
// parser keeps at most kMaxEventBytes of it, drops that event, says so, and
// dispatches the events after it.
TEST(SseParserTest, ALineOrAnEventWithoutEndIsDroppedNotKept) {
  std::vector<std::pair<std::string, std::string>> events;
  SseParser parser([&](const std::string& e, const std::string& d) { events.emplace_back(e, d); });
  const std::string mib(1u << 20, 'x');
  parser.feed("data: ");
  for (std::size_t i = 0; i <= SseParser::kMaxEventBytes >> 20; ++i) parser.feed(mib);
  parser.feed("\n\ndata: after\n\n");
  for (std::size_t i = 0; i <= SseParser::kMaxEventBytes >> 20; ++i) {
    parser.feed("data: " + std::string(1u << 20, 'y') + "\n");
  }
  parser.feed("\ndata: last\n\n");
  parser.finish();
  EXPECT_TRUE(parser.overflowed());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].second, "after");
  EXPECT_EQ(events[1].second, "last");
}

// A tiny server on port 0 for transport behaviour.
class TinyServer {
 public:
  TinyServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~TinyServer() {
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ClientTransportTest, RequestsReuseOneKeepAliveConnectionAndSendTheKeyOnlyInTheHeader) {
  TinyServer tiny;
  tiny.server().set_keep_alive_max_count(100);  // httplib's default closes after 5
  std::mutex mutex;
  std::set<int> ports;
  std::set<std::string> keys;
  std::string bodies;
  tiny.server().Post("/api/sandboxes/s/files",
                     [&](const httplib::Request& req, httplib::Response& res) {
                       std::lock_guard lock(mutex);
                       ports.insert(req.remote_port);
                       keys.insert(req.get_header_value("X-API-Key"));
                       bodies += req.body;
                       res.set_content("{}", "application/json");
                     });
  Client client({.api_key = kSecret, .api_url = tiny.url()});
  for (int i = 0; i < 10; ++i) client.write_file("s", "/workspace/f", "data");
  EXPECT_EQ(ports.size(), 1u);
  EXPECT_EQ(keys, std::set<std::string>{kSecret});
  EXPECT_EQ(bodies.find(kSecret), std::string::npos);
}

TEST(ClientTransportTest, DeadlineAndCancellationEndAHangingRequest) {
  // Declared before the server: its handlers may still be polling `release`
  // while the server shuts down.
  std::atomic<bool> release{false};
  TinyServer tiny;
  tiny.server().Get("/api/sandboxes/s", [&](const httplib::Request&, httplib::Response& res) {
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (!release && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(10ms);
    res.set_content("{}", "application/json");
  });
  Client client({.api_key = kSecret, .api_url = tiny.url()});
  EXPECT_THAT([&] { client.get_sandbox("s", {.timeout = 300ms}); }, ThrowsTransient(true));
  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(client.get_sandbox("s", {.timeout = 20s, .stop = stop.get_token()}),
               workspace::WorkspaceCancelledError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);  // did not hang
  canceller.join();
  release = true;
}

TEST(ClientTransportTest, ConnectionRefusedWasNotAdmitted) {
  int port = 0;
  {
    TinyServer tiny;  // a port that was free a moment ago and is closed now
    port = std::stoi(tiny.url().substr(tiny.url().rfind(':') + 1));
  }
  Client client({.api_key = kSecret, .api_url = "http://127.0.0.1:" + std::to_string(port)});
  EXPECT_THAT([&] { client.list_projects(); }, ThrowsTransient(false));
}

TEST(ClientTransportTest, LargeRawReadLandsWhole) {
  TinyServer tiny;
  std::string data(3 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  tiny.server().Get("/api/sandboxes/s/files",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      EXPECT_EQ(req.get_param_value("path"), "/a b/ü");
                      res.set_content(data, "application/octet-stream");
                    });
  Client client({.api_key = kSecret, .api_url = tiny.url()});
  EXPECT_TRUE(client.read_file("s", "/a b/ü") == data);
}

// The client against the embedded mock: project resolution, sandboxes,
// streaming exec, processes and volumes.
// The client speaks every route, so it is tested on the firecracker era,
// which serves them all (pid events, process routes, pause).
class ClientMockTest : public ::testing::Test {
 protected:
  mock::MockServer server_{mock::MockOptions{.era = mock::Era::kFirecracker}};
  Client client_{{.api_key = server_.api_key(), .api_url = server_.url()}};
};

// The kubernetes era refuses what it lacks with 501: a clear "not supported".
TEST(ClientKubernetesTest, ProcessRoutesAndPauseAreNotSupported) {
  mock::MockServer server;
  Client client({.api_key = server.api_key(), .api_url = server.url()});
  const auto info = client.create_sandbox({.project_id = server.project_id()});
  EXPECT_THROW(client.list_processes(info.sandbox_id), workspace::WorkspaceNotSupportedError);
  EXPECT_THROW(client.pause_sandbox(info.sandbox_id), workspace::WorkspaceNotSupportedError);
  long long pid = 0;
  EXPECT_EQ(client.exec_stream(info.sandbox_id, {.cmd = std::string("exit 5"), .pid_event = true},
                               [&](const ExecEvent& e) {
                                 if (e.kind == ExecEvent::Kind::kPid) pid = e.number;
                               }),
            5);
  EXPECT_EQ(pid, 0) << "the kubernetes era sends no pid event";
}

TEST_F(ClientMockTest, ResolvesProjectsCaseInsensitivelyAndCaches) {
  const auto id = client_.resolve_project(server_.project_id());
  EXPECT_EQ(id, server_.project_id());
  EXPECT_EQ(client_.resolve_project("MOCK-PROJECT"), id);
  server_.clear_journal();
  EXPECT_EQ(client_.resolve_project("Mock-Project"), id);
  EXPECT_EQ(client_.resolve_project("MOCK-PROJECT"), id);
  EXPECT_EQ(server_.requests().size(), 1u);  // the second lookup of a ref is cached
  EXPECT_THROW(client_.resolve_project("no-such-project"), NotFoundError);
}

TEST_F(ClientMockTest, SandboxLifecycleExecStreamingAndFiles) {
  const auto info = client_.create_sandbox(
      {.template_name = "base", .project_id = server_.project_id(), .timeout_ms = 60000});
  EXPECT_FALSE(info.sandbox_id.empty());
  EXPECT_EQ(client_.get_sandbox(info.sandbox_id).sandbox_id, info.sandbox_id);
  EXPECT_FALSE(client_.list_sandboxes().empty());
  client_.set_sandbox_timeout(info.sandbox_id, 120000);
  const auto plain = client_.exec(info.sandbox_id, {.cmd = std::string("printf hi; exit 3")});
  EXPECT_EQ(plain.out, "hi");
  EXPECT_EQ(plain.exit_code, 3);
  std::vector<std::string> lines;
  long long pid = 0;
  const int code = client_.exec_stream(
      info.sandbox_id,
      {.cmd = std::vector<std::string>{"sh", "-c", "echo a; echo b >&2; exit 4"},
       .pid_event = true},
      [&](const ExecEvent& e) {
        if (e.kind == ExecEvent::Kind::kPid) pid = e.number;
        if (e.kind == ExecEvent::Kind::kStdout) lines.push_back("out:" + e.line);
        if (e.kind == ExecEvent::Kind::kStderr) lines.push_back("err:" + e.line);
      });
  EXPECT_EQ(code, 4);
  EXPECT_GT(pid, 0);
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()),
            (std::set<std::string>{"out:a", "err:b"}));
  client_.write_text_file(info.sandbox_id, "/workspace/t.txt", "text");
  client_.move_file(info.sandbox_id, "/workspace/t.txt", "/workspace/m/t.txt");
  EXPECT_EQ(client_.read_file(info.sandbox_id, "/workspace/m/t.txt"), "text");
  EXPECT_EQ(client_.stat_file(info.sandbox_id, "/workspace/m/t.txt").size, 4u);
  EXPECT_EQ(client_.list_files(info.sandbox_id, "/workspace/m").size(), 1u);
  client_.remove_file(info.sandbox_id, "/workspace/m");
  EXPECT_THROW(client_.stat_file(info.sandbox_id, "/workspace/m"), NotFoundError);
  EXPECT_TRUE(client_.list_processes(info.sandbox_id).empty());
  EXPECT_TRUE(client_.kill_sandbox(info.sandbox_id));
  EXPECT_FALSE(client_.kill_sandbox(info.sandbox_id));
  EXPECT_THROW(client_.get_sandbox(info.sandbox_id), NotFoundError);
}

TEST_F(ClientMockTest, ProcessesCanBeListedAndSignalled) {
  const auto info =
      client_.create_sandbox({.template_name = "base", .project_id = server_.project_id()});
  std::thread runner([&] {
    const auto r = client_.exec(
        info.sandbox_id, {.cmd = std::string("sleep 60"), .timeout_ms = 90000}, {.timeout = 120s});
    EXPECT_EQ(r.exit_code, 128 + 15);
  });
  std::vector<ProcessInfo> running;
  ASSERT_TRUE(Eventually([&] {
    running = client_.list_processes(info.sandbox_id);
    return !running.empty();
  }));
  client_.signal_process(info.sandbox_id, running.front().pid, "SIGTERM");
  runner.join();
}

TEST_F(ClientMockTest, VolumesCanBeCreatedListedAndDeleted) {
  const auto project = server_.project_id();
  const auto volume = client_.create_volume(project, {.name = "data"});
  EXPECT_EQ(volume.name, "data");
  EXPECT_THROW(client_.create_volume(project, {.name = "data"}), ConflictError);
  EXPECT_EQ(client_.create_volume(project, {.name = "data", .get_or_create = true}).id, volume.id);
  EXPECT_EQ(client_.list_volumes(project).size(), 1u);
  EXPECT_EQ(client_.get_volume(project, "data").id, volume.id);
  client_.delete_volume(project, "data");
  EXPECT_THROW(client_.get_volume(project, "data"), NotFoundError);
}

}  // namespace
}  // namespace lizard::api
