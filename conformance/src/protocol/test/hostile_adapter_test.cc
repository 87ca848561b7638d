// Broken and hostile adapters against the runner (docs/protocol.md, "What
// FAILs a rule besides the contract"): each fault FAILs its rules with the
// reason and the run goes on, nothing of the adapter is left running, and
// the runner's memory stays bounded; an adapter cannot hide the API key in
// its log past what is kept, nor turn a FAIL into a SKIP; and
// lizard-workspace-serve driven line by line.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "lizard/conformance/adapter_client.h"
#include "lizard/conformance/command_factory.h"
#include "lizard/conformance/local_factory.h"
#include "lizard/conformance/protocol_server.h"
#include "lizard/conformance/runner.h"
#include "lizard/workspace/utf8.h"
#include "protocol_test_support.h"

namespace lizard::conformance {
namespace {

using test_support::bad_adapter;

struct Children {
  int zombies = 0;
  int alive = 0;
};

Children children() {
  Children c;
  const std::string self = std::to_string(::getpid());
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return c;
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid != self) continue;
    if (state == "Z") {
      ++c.zombies;
    } else {
      ++c.alive;
    }
  }
  ::closedir(proc);
  return c;
}

long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

struct BadCase {
  std::string mode;
  std::string rules;
  std::string reason;  // in every rule's reason
  bool says_on_stderr;
};

class BadAdapter : public testing::TestWithParam<BadCase> {};

TEST_P(BadAdapter, FailsItsRulesWithTheReasonAndTheRunGoesOn) {
  const BadCase& c = GetParam();
  std::ofstream("/proc/self/clear_refs") << "5";  // resets the peak RSS
  CommandFactoryOptions options;
  options.adapter = bad_adapter(c.mode);
  auto factory = make_command_factory(options);
  RunnerOptions runner;
  runner.filter = c.rules;
  runner.jobs = 2;
  // A rule still waiting at the deadline would FAIL with "did not finish",
  // not with the reason checked below.
  runner.rule_deadline = std::chrono::seconds(60);
  const RunReport report = run_rules(*factory, runner);
  ASSERT_FALSE(report.rules.empty());
  for (const auto& r : report.rules) {
    EXPECT_EQ(r.status, Status::kFail) << r.id << ": " << r.reason;
    EXPECT_NE(r.reason.find(c.reason), std::string::npos) << r.id << ": " << r.reason;
    EXPECT_NE(r.reason.find("ProtocolError"), std::string::npos) << r.id << ": " << r.reason;
    if (c.says_on_stderr) {
      EXPECT_NE(r.reason.find("its last stderr lines: bad_adapter:"), std::string::npos)
          << r.id << ": " << r.reason;
    }
  }
  const Children left = children();
  EXPECT_EQ(left.zombies, 0) << "zombie adapters";
  EXPECT_EQ(left.alive, 0) << "adapters still running";
  // The oversized line is read up to the limit and dropped, never kept whole.
  EXPECT_LT(peak_rss_kib(), 400 * 1024) << "KiB at peak";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, BadAdapter,
    testing::Values(
        BadCase{"crash", "cmd.result-fields:fs.exists",
                "exited with status 3 with 1 request(s) in flight (backend/new)", true},
        BadCase{"hang", "cmd.result-fields:fs.exists",
                "answered no $/ping for 5 s while 1 request(s) were in flight (hung)", true},
        BadCase{"garbage", "cmd.result-fields:fs.exists", "wrote a line that is not JSON", true},
        BadCase{"oversized", "cmd.result-fields:fs.exists",
                "wrote a line longer than 100663296 bytes", true},
        BadCase{"wrong-id", "cmd.result-fields:fs.exists", "which no request in flight has", true},
        BadCase{"exit-mid-run", "cmd.result-fields",
                "exited with status 0 with 1 request(s) in flight (run)", true},
        // A recursive parser overflowed its stack on this line (a crash).
        BadCase{"deep", "cmd.result-fields",
                "wrote a line that is not JSON (nested deeper than 64 levels)", true},
        // Empty lines cost nothing against the stderr bound before: RSS grew
        // by gigabytes (the peak check below).
        // A child holding (and writing to) its pipes kept the readers, and
        // so the rule, busy until the rule's deadline ("did not finish").
        BadCase{"noisy-child", "cmd.result-fields",
                "exited with status 3 with 1 request(s) in flight", false},
        BadCase{"empty-stderr", "cmd.result-fields",
                "exited with status 3 with 1 request(s) in flight (backend/new)", false}),
    [](const testing::TestParamInfo<BadCase>& param) {
      std::string name;
      for (char ch : param.param.mode) name += ch == '-' ? '_' : ch;
      return name;
    });

// The API key logged after 64 KiB of one stderr line (or before 8 MiB of
// other lines) was not in what is kept of the log, and the key rule passed:
// the watched strings are searched in every byte as it is read.
TEST(AdapterClient, ASecretInStderrIsSeenPastWhatIsKeptOfIt) {
  const std::string secret = "liz_watched_secret_42";
  AdapterOptions options = bad_adapter("log-secret");
  options.env["BAD_ADAPTER_SECRET"] = secret;
  options.stderr_secrets = {secret};
  auto client = AdapterClient::start(options);
  EXPECT_FALSE(client->stderr_carried_a_secret());
  EXPECT_ANY_THROW(client->make());
  for (int i = 0; i < 200 && !client->stderr_carried_a_secret(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(client->stderr_carried_a_secret());
  for (const auto& line : client->stderr_lines()) {
    EXPECT_EQ(line.find(secret), std::string::npos) << "the kept log has it: not the case tested";
  }
  client->shutdown();
}

// serve_protocol with the local factory on a pair of pipes, on a thread of
// this process, driven line by line.
class ServedOnPipes {
 public:
  explicit ServedOnPipes(int max_in_flight, std::size_t max_bytes_in_flight = 512u << 20) {
    if (::pipe2(in_, O_CLOEXEC) != 0 || ::pipe2(out_, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2 failed";
      return;
    }
    ServeOptions options;
    options.in_fd = in_[0];
    options.out_fd = out_[1];
    options.max_in_flight = max_in_flight;
    options.max_bytes_in_flight = max_bytes_in_flight;
    server_ = std::thread([this, options] { status_ = serve_protocol(*factory_, options); });
  }
  ~ServedOnPipes() {
    end();
    for (int fd : {in_[0], out_[0], out_[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
  ServedOnPipes(const ServedOnPipes&) = delete;
  ServedOnPipes& operator=(const ServedOnPipes&) = delete;

  void send(const std::string& line) {
    const std::string framed = line + "\n";
    ASSERT_EQ(::write(in_[1], framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  }
  // The next answer line, or "<closed>".
  std::string read_line() {
    while (true) {
      const auto nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return line;
      }
      char buf[65536];
      const ssize_t n = ::read(out_[0], buf, sizeof buf);
      if (n <= 0) return "<closed>";
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Ends the input and waits for serve_protocol: what it returned.
  int end() {
    if (in_[1] >= 0) ::close(in_[1]);
    in_[1] = -1;
    if (server_.joinable()) server_.join();
    return status_;
  }

 private:
  int in_[2] = {-1, -1};
  int out_[2] = {-1, -1};
  std::unique_ptr<BackendFactory> factory_ = make_local_factory();
  std::string pending_;  // read, not a whole line yet
  int status_ = -1;
  std::thread server_;
};

// serve_protocol driven line by line: a request sent before initialize is
// refused (it read the session on its own thread while initialize set it), a
// run may not take the id of a run in flight (it would have taken its
// cancellation), and a request past max_in_flight is refused (a thread per
// request, without bound, before).
TEST(Serve, RequestsBeforeInitializeRunIdsInFlightAndTooManyAreRefused) {
  ServedOnPipes served(2);
  const auto send = [&](const std::string& line) { served.send(line); };
  std::vector<std::string> unclaimed;  // answers read while waiting for another id
  // The next answer line with this id.
  const auto answer = [&](int id) {
    const std::string key = "\"id\":" + std::to_string(id) + ",";
    while (true) {
      for (auto it = unclaimed.begin(); it != unclaimed.end(); ++it) {
        if (it->find(key) == std::string::npos) continue;
        std::string line = std::move(*it);
        unclaimed.erase(it);
        return line;
      }
      std::string line = served.read_line();
      if (line == "<closed>") return line;
      unclaimed.push_back(std::move(line));
    }
  };
  send(R"({"jsonrpc":"2.0","id":1,"method":"fs/exists","params":{"backend":1,"path":"/"}})");
  EXPECT_NE(answer(1).find("initialize comes first"), std::string::npos);
  send(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocol_version":"1"}})");
  EXPECT_NE(answer(2).find("\"result\""), std::string::npos);
  send(R"({"jsonrpc":"2.0","id":3,"method":"backend/new","params":{}})");
  EXPECT_NE(answer(3).find("\"backend\":1"), std::string::npos);
  send(
      R"({"jsonrpc":"2.0","id":4,"method":"run","params":{"backend":1,"command":{"shell":"sleep 2; echo first"},"output_limit":1000}})");
  send(
      R"({"jsonrpc":"2.0","id":4,"method":"run","params":{"backend":1,"command":{"shell":"echo second"},"output_limit":1000}})");
  const std::string refused = answer(4);
  EXPECT_NE(refused.find("a run with this id is in flight"), std::string::npos) << refused;
  // max_in_flight is 2 here: run 4 and run 5 are in flight, run 6 is one
  // too many, and is refused at once.
  send(
      R"({"jsonrpc":"2.0","id":5,"method":"run","params":{"backend":1,"command":{"shell":"sleep 2"},"output_limit":1000}})");
  send(
      R"({"jsonrpc":"2.0","id":6,"method":"run","params":{"backend":1,"command":{"shell":"echo third"},"output_limit":1000}})");
  const std::string too_many = answer(6);
  EXPECT_NE(too_many.find("too many requests in flight (2)"), std::string::npos) << too_many;
  const std::string first = answer(4);
  EXPECT_NE(first.find("\"exit_code\":0"), std::string::npos) << first;
  EXPECT_NE(answer(5).find("\"exit_code\":0"), std::string::npos);
  // Nothing ran any more: every worker ended at the end of input (1 is "a
  // request still running after 10 s").
  EXPECT_EQ(served.end(), 0);
}

// What a hostile or broken caller sends gets JSON-RPC's own answers, on
// lines of UTF-8 whose error messages are strings: JSON that is not an
// object and an object without a method are invalid requests (id null when
// there is none), a NUL hides nothing after it, an id that is not UTF-8 is
// not echoed. $/ping is answered at once however many requests are in
// flight, and the bytes of the lines in flight are bounded as their count
// is.
TEST(Serve, BrokenRequestsGetTheirStandardErrorsAndPingIsAnsweredWhenFull) {
  ServedOnPipes served(2, 4096);
  const auto exchange = [&](const std::string& line) {
    served.send(line);
    return served.read_line();
  };
  EXPECT_EQ(exchange("not json"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not JSON"}})");
  EXPECT_EQ(exchange("[1,2]"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"not a JSON object"}})");
  EXPECT_EQ(exchange(R"({"jsonrpc":"2.0"})"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no method"}})");
  EXPECT_NE(exchange(std::string(R"({"jsonrpc":"2.0","id":7,"method":"$/ping"})") + '\0' +
                     " this is not JSON }}}")
                .find(R"("id":null,"error":{"code":-32700)"),
            std::string::npos);
  const std::string bad_id =
      exchange("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"$/ping\"}");
  EXPECT_NE(bad_id.find(R"("id":null,"error":{"code":-32600)"), std::string::npos) << bad_id;
  const std::string bad_method =
      exchange("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"\xff\xfe\",\"params\":{}}");
  EXPECT_NE(bad_method.find(R"("code":-32601,"message":"no method )"), std::string::npos)
      << bad_method;
  EXPECT_TRUE(workspace::is_valid_utf8(bad_method)) << bad_method;
  EXPECT_NE(
      exchange(
          R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"1"}})")
          .find("\"result\""),
      std::string::npos);
  EXPECT_NE(exchange(R"({"jsonrpc":"2.0","id":2,"method":"backend/new","params":{}})")
                .find("\"backend\":1"),
            std::string::npos);
  // A line over the bytes in flight allowed (4096 here) is refused at once.
  const std::string padded = exchange(
      R"({"jsonrpc":"2.0","id":3,"method":"run","params":{"backend":1,"command":{"shell":"true"},"output_limit":1000,"pad":")" +
      std::string(5000, 'x') + "\"}}");
  EXPECT_NE(padded.find("hold too many bytes (at most 4096)"), std::string::npos) << padded;
  // Two runs fill the two places in flight; a ping is still answered first.
  served.send(
      R"({"jsonrpc":"2.0","id":4,"method":"run","params":{"backend":1,"command":{"shell":"sleep 1"},"output_limit":1000}})");
  served.send(
      R"({"jsonrpc":"2.0","id":5,"method":"run","params":{"backend":1,"command":{"shell":"sleep 1"},"output_limit":1000}})");
  EXPECT_EQ(exchange(R"({"jsonrpc":"2.0","id":9,"method":"$/ping"})"),
            R"({"jsonrpc":"2.0","id":9,"result":null})");
  EXPECT_NE(served.read_line().find("\"exit_code\":0"), std::string::npos);
  EXPECT_NE(served.read_line().find("\"exit_code\":0"), std::string::npos);
  EXPECT_EQ(served.end(), 0);
}

// Threads of this process (serve_protocol's workers run here).
int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

// A caller that sends requests and never reads the answers: each request
// leaves the count in flight before its answer is written, and then its
// worker waits on the full pipe. serve_protocol starts at most
// max_in_flight + 16 workers; the requests after that wait for one (before,
// every request started a thread of its own).
TEST(Serve, ACallerThatReadsNoAnswersCannotStartThreadsWithoutBound) {
  const std::string path = "/tmp/lizard-serve-bound-" + std::to_string(::getpid());
  const int before = thread_count();
  ServedOnPipes served(2);
  int lines = 0;
  const auto read_lines = [&](int want) {
    while (lines < want && served.read_line() != "<closed>") ++lines;
  };
  served.send(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"1"}})");
  served.send(R"({"jsonrpc":"2.0","id":2,"method":"backend/new","params":{}})");
  read_lines(2);
  ASSERT_EQ(lines, 2);
  // A 192 KiB file: each answer alone is more than the 64 KiB pipe holds.
  const std::string b64(256 * 1024, 'A');
  served.send(R"({"jsonrpc":"2.0","id":3,"method":"fs/write","params":{"backend":1,"path":")" +
              path + R"(","data":")" + b64 + R"("}})");
  read_lines(3);
  constexpr int kRequests = 60;
  int most = 0;
  for (int i = 0; i < kRequests; ++i) {
    served.send(R"({"jsonrpc":"2.0","id":)" + std::to_string(100 + i) +
                R"(,"method":"fs/read","params":{"backend":1,"path":")" + path + R"("}})");
    // Time for the worker to answer (and to wait on the pipe), so that the
    // next request is not one too many in flight.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    most = std::max(most, thread_count());
  }
  // The server's own thread, and at most 2 + 16 workers.
  EXPECT_LE(most - before, 1 + 2 + 16) << "threads started for answers no one reads";
  read_lines(3 + kRequests);  // every request is answered once the answers are read
  EXPECT_EQ(lines, 3 + kRequests);
  EXPECT_EQ(served.end(), 0);
  ::unlink(path.c_str());
}

// An adapter is told each rule's ID: one that offers less for a rule (here:
// nothing, where the run's probe got commands and a filesystem) would turn
// that rule's FAIL into a SKIP. The rule FAILs instead, and says why.
TEST(AdapterClient, CapabilitiesThatChangeFromRuleToRuleFailTheRule) {
  CommandFactoryOptions options;
  options.adapter = bad_adapter("fewer-caps");
  auto factory = make_command_factory(options);
  RunnerOptions runner;
  runner.filter = "cmd.result-fields:fs.exists";
  runner.jobs = 2;
  runner.rule_deadline = std::chrono::seconds(60);
  const RunReport report = run_rules(*factory, runner);
  ASSERT_EQ(report.rules.size(), 2u);
  for (const auto& r : report.rules) {
    EXPECT_EQ(r.status, Status::kFail) << r.id << ": " << r.reason;
    EXPECT_NE(r.reason.find("other capabilities, deviations or can_attach"), std::string::npos)
        << r.id << ": " << r.reason;
  }
}

}  // namespace
}  // namespace lizard::conformance
