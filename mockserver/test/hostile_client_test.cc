// What a hostile (or merely broken) HTTP client can do to the mock, each
// with the mock's memory or threads bounded: bodies over the limit (chunked
// too), endless headers, heads with bare line feeds, slow heads, bodies
// that trickle, a POST without a length, a client that leaves, reads of
// huge sparse files, output without newlines, /proc files, keys that
// differ from the real one only after percent-decoding, the journal, the
// control plane, a busy port, SIGTERM with work in flight and the state
// directories of runs that died.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

// Resets the peak resident set (VmHWM) of this process; peak_rss_kib() then
// reads the peak since.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmHWM:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 12, '\n');
  }
  return -1;
}

class HostileClient : public MockFixture {
 protected:
  HostileClient() : MockFixture(MockOptions{.max_body_bytes = 1 << 20}) {}

  std::string head(const std::string& method, const std::string& path,
                   const std::string& extra = "") const {
    return method + " " + path +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + server_->api_key() + "\r\n" + extra;
  }
};

TEST_F(HostileClient, AChunkedBodyOverTheLimitIsRefusedWhileItIsRead) {
  const std::string id = create();
  RawConnection c(server_->port());
  ASSERT_TRUE(c.ok());
  reset_peak_rss();
  const long before = rss_kib();
  // 300 MiB in 64 KiB chunks from another thread; the answer comes long before.
  std::thread sender([&] {
    const std::string chunk(64 * 1024, 'x');
    char size_line[32];
    std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
    if (!c.send(head("POST", "/api/sandboxes/" + id + "/files",
                     "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n")))
      return;
    for (int i = 0; i < 300 * 16; ++i) {
      if (!c.send(size_line + chunk + "\r\n")) return;
    }
  });
  const std::string status = c.status_line();
  sender.join();
  EXPECT_EQ(status, "HTTP/1.1 413 Payload Too Large");
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "KiB of resident memory for the refused body";
  // The mock goes on serving.
  EXPECT_EQ(sh(id, "echo fine").out, "fine\n");
}

TEST_F(HostileClient, ASmallChunkedBodyIsHandled) {
  const std::string id = create();
  RawConnection c(server_->port());
  const std::string body = R"({"path":"/workspace/chunked","content":"in pieces"})";
  ASSERT_TRUE(c.send(head("POST", "/api/sandboxes/" + id + "/files",
                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n") +
                     "10\r\n" + body.substr(0, 16) + "\r\n" +
                     [&] {
                       char n[16];
                       std::snprintf(n, sizeof n, "%zx", body.size() - 16);
                       return std::string(n);
                     }() +
                     "\r\n" + body.substr(16) + "\r\n0\r\n\r\n"));
  EXPECT_EQ(c.status_line(), "HTTP/1.1 200 OK");
  EXPECT_EQ(get(files_path(id) + "?path=/workspace/chunked")->body, "in pieces");
}

TEST_F(HostileClient, EndlessHeadersAre431WithMemoryBounded) {
  reset_peak_rss();
  const long before = rss_kib();
  RawConnection many(server_->port());
  std::thread sender([&] {
    if (!many.send("GET /api/projects HTTP/1.1\r\nHost: x\r\n")) return;
    for (int i = 0; i < 2000000; ++i) {
      if (!many.send("X-Filler-" + std::to_string(i) + ": yes\r\n")) return;
    }
  });
  EXPECT_EQ(many.status_line(), "HTTP/1.1 431 Request Header Fields Too Large");
  sender.join();
  RawConnection long_line(server_->port());
  std::thread sender2([&] {
    if (!long_line.send("GET /api/projects HTTP/1.1\r\nX-Long: ")) return;
    const std::string block(64 * 1024, 'a');
    for (int i = 0; i < 1024; ++i) {
      if (!long_line.send(block)) return;
    }
  });
  EXPECT_EQ(long_line.status_line(), "HTTP/1.1 431 Request Header Fields Too Large");
  sender2.join();
  EXPECT_LT(peak_rss_kib() - before, 32 * 1024);
  EXPECT_EQ(get("/api/projects")->status, 200);
}

// httplib 0.11.4 skips head lines that do not end in CRLF and reads on,
// without a line limit, past where a bare "\n\n" ended the head for the
// mock: 200,000 more header lines were answered 200. A bare LF in the head
// is now refused at once, with or without a key, and nothing after it is
// kept: the rest is drained (at most 16 MiB, so that the answer is not lost
// to a reset) and dropped, and the sender of 48 MB finds the connection
// closed long before it is done.
TEST_F(HostileClient, ABareLineFeedInTheHeadIs400AndNothingAfterItIsRead) {
  reset_peak_rss();
  const long before = rss_kib();
  for (const std::string& key : {server_->api_key(), std::string("liz_wrong")}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.ok());
    bool sent_all = true;
    std::thread sender([&] {
      sent_all = c.send("GET /api/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: " + key +
                        "\r\nContent-Length: 0\r\n\n");
      const std::string lines = [] {
        std::string out;
        for (int i = 0; i < 10000; ++i) out += "A: b\r\n";
        return out;
      }();
      for (int i = 0; sent_all && i < 800; ++i) sent_all = c.send(lines);  // 8,000,000 lines
    });
    EXPECT_EQ(c.status_line(), "HTTP/1.1 400 Bad Request");
    EXPECT_TRUE(c.closed_by_peer());
    sender.join();
    EXPECT_FALSE(sent_all) << "48 MB of header lines were taken";
  }
  EXPECT_LT(peak_rss_kib() - before, 32 * 1024) << "KiB of resident memory for the refused heads";
  // A bare LF anywhere in the head (here: the request line) is refused too.
  RawConnection lf(server_->port());
  ASSERT_TRUE(lf.send("GET /api/projects HTTP/1.1\nHost: x\r\n\r\n"));
  EXPECT_EQ(lf.status_line(), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(get("/api/projects")->status, 200);
}

// Each byte within the 30 s read timeout, the body as a whole late: the
// request's body deadline (1 s here) ends it, so a trickling client cannot
// hold a thread for ever. The sender paces its bytes (100 ms apart); the
// test waits only on the answer.
class BodyDeadline : public MockFixture {
 protected:
  BodyDeadline()
      : MockFixture(MockOptions{.request_body_timeout = std::chrono::milliseconds(1000)}) {}
};

TEST_F(BodyDeadline, ABodyThatTricklesIsCutAtTheDeadline) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send("POST /api/projects HTTP/1.1\r\nHost: x\r\nX-API-Key: " + server_->api_key() +
                     "\r\nContent-Length: 200\r\n\r\n"));
  std::atomic<bool> answered{false};
  int sent = 0;
  std::thread sender([&] {
    while (!answered && sent < 200 && c.send("x")) {
      ++sent;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_EQ(c.status_line(std::chrono::seconds(30)), "HTTP/1.1 400 Bad Request");
  EXPECT_TRUE(c.closed_by_peer());
  answered = true;
  sender.join();
  EXPECT_LT(sent, 200) << "the whole body was taken";
  EXPECT_EQ(get("/api/projects")->status, 200);
}

TEST_F(HostileClient, SlowClientsDoNotHoldThePool) {
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 300; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(slow.back()->send("POST /api/sandboxes HTTP/1.1\r\nHost: x\r\n"));
  }
  // A well-behaved client is served while all of them dawdle.
  auto c = client();
  c.set_read_timeout(20, 0);
  auto r = c.Get("/api/projects");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // The slow ones are answered 408 once their head deadline passes.
  EXPECT_EQ(slow.front()->status_line(std::chrono::seconds(30)), "HTTP/1.1 408 Request Timeout");
}

TEST_F(HostileClient, APostWithoutALengthHasNoBodyAndIsAnsweredAtOnce) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send(head("POST", "/api/sandboxes", "\r\n")));
  // Not after a read timeout: the status comes well within this limit.
  EXPECT_EQ(c.status_line(std::chrono::seconds(5)), "HTTP/1.1 400 Bad Request");
}

TEST_F(HostileClient, AClientThatLeavesTakesItsCommandAlong) {
  const std::string id = create();
  const std::string marker = std::to_string(800000 + std::random_device{}() % 99999);
  RawConnection c(server_->port());
  const std::string body = R"({"cmd":"sleep )" + marker + "\"}";
  ASSERT_TRUE(c.send(head("POST", "/api/sandboxes/" + id + "/exec",
                          "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n") +
                     body));
  // The shell and its sleep both hold the marker in their command lines.
  ASSERT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) >= 1; }));
  c.close();
  EXPECT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 0; }));
  // The mock's own count drops when it has reaped the command, a moment
  // after the process is gone from /proc.
  EXPECT_TRUE(eventually([&] { return server_->live_processes() == 0; }))
      << server_->live_processes() << " processes still counted";
}

TEST_F(HostileClient, AHugeSparseFileIsStreamedWithMemoryBounded) {
  const std::string id = create();
  ASSERT_EQ(sh(id, "truncate -s 2G /workspace/sparse && printf end >> /workspace/sparse").exit_code,
            0);
  reset_peak_rss();
  const long before = rss_kib();
  std::uint64_t received = 0;
  std::string tail;
  auto c = client();
  auto r = c.Get(files_path(id) + "?path=/workspace/sparse", [&](const char* data, std::size_t n) {
    received += n;
    tail.assign(data + (n > 3 ? n - 3 : 0), std::min<std::size_t>(n, 3));
    return true;
  });
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(received, (2ull << 30) + 3);
  EXPECT_EQ(tail, "end");
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "KiB resident for a 2 GiB read";
}

TEST_F(HostileClient, OutputWithoutNewlinesStreamsInBoundedMemory) {
  const std::string id = create();
  reset_peak_rss();
  const long before = rss_kib();
  std::uint64_t letters = 0;
  std::uint64_t longest = 0;
  std::string carry;
  auto c = client();
  const std::string body = R"({"cmd":"head -c 50000000 /dev/zero | tr '\\0' a"})";
  httplib::Request req;
  req.method = "POST";
  req.path = "/api/sandboxes/" + id + "/exec";
  req.body = body;
  req.set_header("Accept", "text/event-stream");
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    carry.append(data, n);
    std::size_t at = 0;
    for (;;) {
      const std::size_t end = carry.find("\n\n", at);
      if (end == std::string::npos) break;
      auto event = parse(carry.substr(at + 6, end - at - 6));  // after "data: "
      const std::string line = str_field(event, "line");
      if (line != "<missing>" && line != "<not an object>") {
        letters += line.size();
        longest = std::max<std::uint64_t>(longest, line.size());
      }
      at = end + 2;
    }
    carry.erase(0, at);
    return true;
  };
  auto r = c.send(req);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(letters, 50000000u);
  EXPECT_LE(longest, 64u * 1024) << "a line without a newline is sent in bounded pieces";
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024);
}

TEST_F(HostileClient, ProcFilesAndDevicesAreRefusedWithoutBlocking) {
  const std::string id = create();
  ASSERT_EQ(sh(id, "mkfifo /workspace/fifo").exit_code, 0);
  // Each answered at once (the client would time out otherwise): refused as
  // not a regular file, or (a /proc/self of a process outside) not found.
  for (const char* path :
       {"/proc/kmsg", "/proc/1/environ", "/proc/self/status", "/dev/zero", "/workspace/fifo"}) {
    auto c = client();
    c.set_read_timeout(10, 0);
    auto r = c.Get(files_path(id) + "?path=" + path);
    ASSERT_TRUE(r) << path;
    EXPECT_TRUE(r->status == 400 || r->status == 404) << path << ": " << r->body;
  }
}

TEST_F(HostileClient, TheKeyIsComparedExactlyAsSent) {
  std::string encoded;
  for (char ch : server_->api_key()) {
    if (ch == '_') {
      encoded += "%5F";
    } else {
      encoded += ch;
    }
  }
  ASSERT_NE(encoded, server_->api_key());
  for (const std::string& header : {"X-API-Key: " + encoded, "Authorization: Bearer " + encoded,
                                    "X-API-Key: " + server_->api_key() + " x"}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.send("GET /api/projects HTTP/1.1\r\nHost: x\r\n" + header + "\r\n\r\n"));
    EXPECT_EQ(c.status_line(), "HTTP/1.1 401 Unauthorized") << header;
  }
  RawConnection ok(server_->port());
  ASSERT_TRUE(ok.send("GET /api/projects HTTP/1.1\r\nHost: x\r\nX-API-Key: " + server_->api_key() +
                      "\r\n\r\n"));
  EXPECT_EQ(ok.status_line(), "HTTP/1.1 200 OK");
}

TEST_F(HostileClient, TheControlPlaneNeedsItsKey) {
  for (const std::string& header : std::vector<std::string>{
           "", "X-Mock-Control-Key: wrong\r\n", "X-API-Key: " + server_->api_key() + "\r\n"}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.send("POST /_mock/reset HTTP/1.1\r\nHost: x\r\n" + header + "\r\n"));
    EXPECT_EQ(c.status_line(), "HTTP/1.1 401 Unauthorized") << header;
  }
  const std::string id = create();
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send("GET /_mock/state HTTP/1.1\r\nHost: x\r\nX-Mock-Control-Key: " +
                     server_->control_key() + "\r\n\r\n"));
  EXPECT_EQ(c.status_line(), "HTTP/1.1 200 OK");
  EXPECT_EQ(server_->live_sandboxes(), 1u) << "a refused reset killed the sandboxes";
}

class BoundedJournal : public MockFixture {
 protected:
  BoundedJournal()
      : MockFixture(MockOptions{.journal_max_entries = 50, .journal_max_bytes = 20000}) {}
};

TEST_F(BoundedJournal, KeepsTheNewestWithinItsLimitsAndNo401Bodies) {
  const std::string big(1000, 'n');
  for (int i = 0; i < 200; ++i) post("/api/projects", R"({"name":")" + big + "\"}");
  auto entries = server_->requests();
  EXPECT_LE(entries.size(), 50u);
  std::size_t bytes = 0;
  for (const auto& e : entries) bytes += e.body.size();
  EXPECT_LE(bytes, 20000u);
  ASSERT_FALSE(entries.empty());
  EXPECT_NE(entries.back().body.find(big), std::string::npos) << "the newest entry is kept";
  post("/api/projects", R"({"name":"secret-in-a-refused-request"})", "liz_wrong");
  entries = server_->requests();
  EXPECT_EQ(entries.back().status, 401);
  EXPECT_TRUE(entries.back().body.empty()) << entries.back().body;
}

TEST(MockHygiene, ABusyPortIsAClearError) {
  MockServer first;
  try {
    MockServer second(MockOptions{.port = first.port()});
    FAIL() << "a second server shares port " << first.port();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
}

TEST(MockHygiene, StateDirectoriesOfDeadRunsAreRemoved) {
  const auto tmp = std::filesystem::temp_directory_path();
  const auto dead = tmp / ("lizard-mock-deadrun" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dead / "sandboxes");
  // A pid that does not exist (pid_max is at most 2^22).
  std::ofstream(dead / ".lizard-mock-owner") << "99999999 12345\n";
  MockServer live;
  MockServer next;
  EXPECT_FALSE(std::filesystem::exists(dead)) << dead;
  // The live server's directory is kept: a sandbox of it still works.
  EXPECT_EQ(live.live_sandboxes(), 0u);
  bool any_live = false;
  for (const auto& e : std::filesystem::directory_iterator(tmp)) {
    if (e.path().filename().string().rfind("lizard-mock-", 0) == 0 &&
        std::filesystem::exists(e.path() / ".lizard-mock-owner"))
      any_live = true;
  }
  EXPECT_TRUE(any_live);
}

#ifdef LIZARD_MOCK_BINARY
TEST(MockHygiene, SigtermStopsPromptlyWithWorkInFlightAndRemovesTheStateDirectory) {
  char tmpl[] = "/tmp/lizard-sigterm-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string tmpdir = tmpl;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  // Everything the child needs is made before fork: it only makes system calls.
  const std::string binary = mock_binary();
  std::vector<std::string> env_strings = {"TMPDIR=" + tmpdir};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("TMPDIR=", 0) != 0) env_strings.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* const argv[] = {const_cast<char*>(binary.c_str()), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::close(p[0]);
    ::close(p[1]);
    ::execve(binary.c_str(), argv, envp.data());
    ::_exit(127);
  }
  ::close(p[1]);
  FILE* out = ::fdopen(p[0], "r");
  std::vector<std::string> lines;
  char buf[512];
  while (lines.size() < 5 && std::fgets(buf, sizeof buf, out)) {
    std::string l = buf;
    l.pop_back();
    lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 5u);
  const std::string url = lines[0].substr(std::string("LIZARD_MOCK_LISTENING ").size());
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  const std::string project = lines[2].substr(std::string("LIZARD_MOCK_PROJECT_ID ").size());
  // Work in flight: a head that never ends, and a streamed command that never ends.
  RawConnection slow(port);
  ASSERT_TRUE(slow.send("GET /api/projects HTTP/1.1\r\nHost: x\r\n"));
  httplib::Client c(url);
  c.set_default_headers({{"X-API-Key", kDefaultApiKey}});
  auto created =
      c.Post("/api/sandboxes", R"({"projectId":")" + project + "\"}", "application/json");
  ASSERT_TRUE(created);
  const std::string id = str_field(parse(created->body), "id");
  std::thread streamer([&] {
    httplib::Client s(url);
    s.set_default_headers({{"X-API-Key", kDefaultApiKey}, {"Accept", "text/event-stream"}});
    s.set_read_timeout(300, 0);
    s.Post("/api/sandboxes/" + id + "/exec", R"({"cmd":"sleep 1000"})", "application/json");
  });
  ASSERT_TRUE(eventually([] { return host_processes_with("sleep 1000") >= 1; }));
  ::kill(pid, SIGTERM);
  int status = 0;
  const bool exited =
      eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(60));
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  streamer.join();
  std::fclose(out);
  EXPECT_TRUE(exited) << "SIGTERM did not stop the mock";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(std::filesystem::is_empty(tmpdir)) << "state left in " << tmpdir;
  std::filesystem::remove_all(tmpdir);
}
#endif

}  // namespace
}  // namespace lizard::mock::test
