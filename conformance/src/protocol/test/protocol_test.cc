// The backend protocol (docs/protocol.md): the client against
// lizard-workspace-serve, broken adapters, the mutants through the protocol, and the reference
// backends' verdicts through it against their verdicts in process.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lizard/conformance/adapter_client.h"
#include "lizard/conformance/command_factory.h"
#include "lizard/conformance/lizard_factory.h"
#include "lizard/conformance/local_factory.h"
#include "lizard/conformance/protocol_server.h"
#include "lizard/conformance/report_tools.h"
#include "lizard/conformance/runner.h"
#include "lizard/workspace/errors.h"
#include "schemas.h"
#include "wire.h"
#ifdef LIZARD_PROTOCOL_TEST_HAVE_MUTANTS
#include "lizard/conformance/mutants.h"
#endif

namespace lizard::conformance {
namespace {

using protocol::ProtocolSchemas;
using workspace::Argv;
using workspace::Shell;

// ---------------------------------------------------------------------------
// The client against lizard-workspace-serve.

AdapterOptions serve_options(const std::string& backend) {
  AdapterOptions options;
  options.argv = {LIZARD_SERVE_PATH, "--backend", backend};
  options.check_schemas = true;
  return options;
}

TEST(AdapterClient, ServesTheLocalBackendAndMapsItsErrors) {
  std::vector<std::string> traffic;
  std::mutex traffic_mutex;
  AdapterOptions options = serve_options("local");
  options.tap = [&](bool to_adapter, std::string_view line) {
    std::lock_guard<std::mutex> lock(traffic_mutex);
    traffic.push_back((to_adapter ? ">" : "<") + std::string(line.substr(0, 200)));
  };
  auto adapter = AdapterClient::start(options);
  EXPECT_EQ(adapter->info().protocol_version, kProtocolVersion);
  EXPECT_EQ(adapter->info().profile, "");
  EXPECT_TRUE(adapter->info().capabilities.has(Capability::kCommands));
  EXPECT_TRUE(adapter->info().can_attach);
  auto b = adapter->make();
  const std::string dir = b->working_dir();
  ASSERT_EQ(dir.front(), '/');
  auto r = b->commands()->run(Shell{"printf out; printf 'e\\377' >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out");
  EXPECT_EQ(r.err, "e\xEF\xBF\xBD");
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  b->filesystem()->write_bytes(dir + "/sub/all", all);
  EXPECT_EQ(b->filesystem()->read_bytes(dir + "/sub/all"), all);
  EXPECT_EQ(b->filesystem()->stat(dir + "/sub/all").size, 256u);
  EXPECT_TRUE(b->filesystem()->exists(dir + "/sub"));
  try {
    b->filesystem()->read_bytes(dir + "/missing");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::no_such_file_or_directory));
  }
  EXPECT_THROW(b->filesystem()->read_bytes("relative"), std::invalid_argument);
  workspace::RunOptions timed;
  timed.timeout = workspace::Seconds(0.5);
  try {
    b->commands()->run(Shell{"printf early; sleep 5"}, timed);
    ADD_FAILURE() << "no timeout";
  } catch (const workspace::WorkspaceTimeoutError& e) {
    EXPECT_EQ(e.out(), "early");
  }
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  workspace::RunOptions cancellable;
  cancellable.stop = stop.get_token();
  EXPECT_THROW(b->commands()->run(Shell{"sleep 20"}, cancellable),
               workspace::WorkspaceCancelledError);
  stopper.join();
  const auto ref = b->ref();
  ASSERT_TRUE(ref.has_value());
  auto again = adapter->attach(*ref);
  EXPECT_EQ(again->filesystem()->read_bytes(dir + "/sub/all"), all);
  b.reset();
  again.reset();
  adapter->destroy_environment(*ref);
  EXPECT_EQ(adapter->fault(), "");
  adapter->shutdown();
  // Every line both ways was checked against the schemas (check_schemas);
  // the requests we expect were on the wire.
  std::set<std::string> methods;
  for (const auto& line : traffic) {
    const auto at = line.find("\"method\":\"");
    if (line[0] == '>' && at != std::string::npos) {
      methods.insert(line.substr(at + 10, line.find('"', at + 10) - at - 10));
    }
  }
  for (const char* m : {"initialize", "backend/new", "run", "fs/write", "fs/read", "fs/stat",
                        "fs/exists", "backend/ref", "backend/attach", "backend/drop",
                        "environment/destroy", "$/cancelRequest"}) {
    EXPECT_TRUE(methods.count(m)) << m << " was not sent";
  }
}

TEST(AdapterClient, ConcurrentRequestsAreAnsweredOutOfOrder) {
  // Eight runs meet: each marks its arrival and waits (up to 60 s) for all
  // eight, so each prints its number only if all ran at once; the later a
  // run was sent, the sooner it ends.
  auto adapter = AdapterClient::start(serve_options("local"));
  auto b = adapter->make();
  const std::string meet = b->working_dir() + "/meet";
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      const std::string n = std::to_string(i);
      auto r = b->commands()->run(Shell{"mkdir -p " + meet + " && : > " + meet + "/" + n +
                                        "; k=0; while [ \"$(ls " + meet +
                                        " | wc -l)\" -lt 8 ] && [ $k -lt 1200 ]; do "
                                        "sleep 0.05; k=$((k + 1)); done; [ \"$(ls " +
                                        meet +
                                        " | wc -l)\" -eq 8 ] && "
                                        "sleep 0." +
                                        std::to_string(8 - i) + " && printf " + n});
      if (r.out == n) ++right;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(right.load(), 8) << "the requests did not run at once";
  adapter->destroy_environment(*b->ref());
}

AdapterOptions broken_adapter(std::vector<std::string> argv) {
  AdapterOptions options;
  options.argv = std::move(argv);
  // Short, so a hung adapter is found soon. Starting is apart: python3 took
  // 5 to 10 s to start and answer initialize at ctest -j6 on a 2-CPU machine
  // (its start costs 0.3 s of CPU there, and the load was 15 to 30).
  options.answer_deadline = std::chrono::seconds(5);
  options.start_deadline = std::chrono::seconds(90);
  options.exit_grace = std::chrono::seconds(1);
  return options;
}

AdapterOptions bad_adapter(const std::string& mode) {
  return broken_adapter({"python3", LIZARD_BAD_ADAPTER_PATH, mode});
}

std::string start_error(const AdapterOptions& options) {
  try {
    AdapterClient::start(options);
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "started";
}

TEST(AdapterClient, AnotherProtocolVersionIsAClearError) {
  const std::string why = start_error(bad_adapter("version"));
  EXPECT_NE(why.find("speaks protocol version 2; this runner speaks version 1"), std::string::npos)
      << why;
}

TEST(AdapterClient, AnAdapterThatNeverAnswersInitializeFails) {
  // It reads initialize, says so on stderr and never answers. A shell, not
  // bad_adapter.py: python3 took 5 to 10 s to start under ctest's load, and
  // an adapter still starting when the deadline runs out has said nothing
  // yet. What is tested is the deadline and the stderr in its error.
  AdapterOptions options = broken_adapter(
      {"/bin/sh", "-c",
       "read -r request; echo 'mute adapter: not answering initialize' >&2; exec sleep 600"});
  options.start_deadline = std::chrono::seconds(10);
  const std::string why = start_error(options);
  EXPECT_NE(why.find("did not answer initialize within 10 s"), std::string::npos) << why;
  EXPECT_NE(why.find("mute adapter: not answering initialize"), std::string::npos) << why;
}

TEST(AdapterClient, AnAdapterSlowToStartHasTheStartDeadlineNotTheAnswerDeadline) {
  // Silent for its first 3 s (no answer to initialize or to a $/ping), then
  // well: not hung at an answer deadline of 1 s. Once started, that deadline
  // holds again.
  AdapterOptions options = bad_adapter("slow-start");
  options.answer_deadline = std::chrono::seconds(1);
  options.start_deadline = std::chrono::seconds(90);
  const auto client = AdapterClient::start(options);
  EXPECT_EQ(client->info().name, "bad adapter (slow-start)");
  EXPECT_EQ(client->fault(), "");
  options.start_deadline = std::chrono::seconds(1);
  const std::string why = start_error(options);
  EXPECT_NE(why.find("did not answer initialize within 1 s"), std::string::npos) << why;
}

TEST(AdapterClient, AnAnswerStillArrivingIsNotAHang) {
  // The adapter writes its answer to backend/new over 4 s, 10 bytes every
  // 0.2 s, and can answer no $/ping before that line ends: the bytes
  // arriving show it alive, at an answer deadline of 2 s.
  AdapterOptions options = bad_adapter("slow-line");
  options.answer_deadline = std::chrono::seconds(2);
  const auto client = AdapterClient::start(options);
  try {
    client->make();
    ADD_FAILURE() << "backend/new succeeded";
  } catch (const ProtocolError& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find("answered backend/new with"), std::string::npos) << why;
    EXPECT_NE(why.find("a slow line"), std::string::npos) << why;
    EXPECT_EQ(why.find("hung"), std::string::npos) << why;
  }
}

// Holds this process's writer (to_adapter) or reader for 5 s on the first
// line of backend/new, through the tap (which runs on that thread), at an
// answer deadline of 2 s: the adapter must not be judged hung for it.
void expect_not_hung_while_held(bool to_adapter) {
  AdapterOptions options = serve_options("local");
  options.answer_deadline = std::chrono::seconds(2);
  std::atomic<bool> armed{false};
  std::atomic<bool> held{false};
  options.tap = [&](bool toward, std::string_view) {
    if (toward != to_adapter || !armed.exchange(false)) return;
    std::this_thread::sleep_for(std::chrono::seconds(5));
    held = true;
  };
  const auto client = AdapterClient::start(options);
  armed = true;
  auto b = client->make();
  EXPECT_TRUE(held);
  EXPECT_EQ(client->fault(), "");
  EXPECT_EQ(b->commands()->run(Argv{{"echo", "alive"}}).out, "alive\n");
}

TEST(AdapterClient, AnAnswerWaitingInThePipeIsNotAHang) {
  // The reader held after the answer to backend/new, as a long line's copy
  // or a starved host holds it; the call is still in flight, so the client
  // pings, and the adapter answers into the pipe: what it wrote is there,
  // unread.
  expect_not_hung_while_held(false);
}

TEST(AdapterClient, AWriterHeldUpIsNotAnAdapterThatStoppedReading) {
  // The writer held in the middle of sending backend/new (the line already
  // being written), as a starved host holds it: the adapter has taken all
  // there was to take, so it has not stopped reading.
  expect_not_hung_while_held(true);
}

// What a write to the adapter ended with: its error, "written" when it
// succeeded, or "still writing" when it had not ended 60 s later.
std::string write_outcome(AdapterClient& client, std::size_t bytes) {
  auto b = client.make();
  auto done = std::async(std::launch::async, [&] {
    try {
      b->filesystem()->write_bytes("/tmp/big", std::string(bytes, 'x'));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("written");
  });
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    client.shutdown();  // ends the write
    done.get();
    return "still writing";
  }
  return done.get();
}

TEST(AdapterClient, AnAdapterThatStopsReadingInTheMiddleOfALineIsHung) {
  // The request (2.7 MiB of base64) overfills the 1 MiB pipe; the adapter
  // reads none of it. The monitor, which sends pings, must not wait behind
  // that line, and must see the writer stuck.
  AdapterOptions options = bad_adapter("deaf");
  options.answer_deadline = std::chrono::seconds(2);
  const auto client = AdapterClient::start(options);
  const std::string why = write_outcome(*client, 2 << 20);
  EXPECT_NE(why.find("read none of its input for 2 s (hung)"), std::string::npos) << why;
}

TEST(AdapterClient, AnAdapterReadingALongLineSlowlyIsNotHung) {
  // It takes the same request 256 KiB every 0.5 s, about 5 s in all, at an
  // answer deadline of 2 s: while the runner writes, and after, when the
  // last MiB and then a ping wait in the pipe, the bytes it takes show it
  // alive.
  AdapterOptions options = bad_adapter("slow-reader");
  options.answer_deadline = std::chrono::seconds(2);
  const auto client = AdapterClient::start(options);
  const std::string why = write_outcome(*client, 2 << 20);
  EXPECT_NE(why.find("answered fs/write with"), std::string::npos) << why;
  EXPECT_NE(why.find("not in this adapter (fs/write)"), std::string::npos) << why;
  EXPECT_EQ(why.find("hung"), std::string::npos) << why;
}

TEST(AdapterClient, AMissingProgramCannotStart) {
  AdapterOptions options;
  options.argv = {"/nonexistent/lizard-adapter"};
  const std::string why = start_error(options);
  EXPECT_NE(why.find("cannot start the adapter `lizard-adapter`"), std::string::npos) << why;
}

// ---------------------------------------------------------------------------
// Broken adapters: their rules FAIL with the reason, the run completes, no
// adapter is left behind, and the runner's memory stays bounded.

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

// serve_protocol driven line by line: a request sent before initialize is
// refused (it read the session on its own thread while initialize set it), and
// a run may not take the id of a run in flight (it would have taken its
// cancellation).
TEST(Serve, RequestsBeforeInitializeAndRunIdsInFlightAreRefused) {
  int in[2], out[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  auto factory = make_local_factory();
  ServeOptions options;
  options.in_fd = in[0];
  options.out_fd = out[1];
  std::thread server([&] { serve_protocol(*factory, options); });
  const auto send = [&](const std::string& line) {
    const std::string framed = line + "\n";
    ASSERT_EQ(::write(in[1], framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  };
  std::string pending;
  // The next answer line with this id.
  const auto answer = [&](int id) {
    const std::string key = "\"id\":" + std::to_string(id) + ",";
    while (true) {
      for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        if (line.find(key) != std::string::npos) return line;
      }
      char buf[4096];
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) return std::string("<closed>");
      pending.append(buf, static_cast<std::size_t>(n));
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
  const std::string first = answer(4);
  EXPECT_NE(first.find("\"exit_code\":0"), std::string::npos) << first;
  ::close(in[1]);
  server.join();
  ::close(in[0]);
  ::close(out[0]);
  ::close(out[1]);
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

// ---------------------------------------------------------------------------
// The mutants through lizard-workspace-serve --mutant: caught by the rules
// that catch them in process.

std::unique_ptr<BackendFactory> served(const std::vector<std::string>& extra,
                                       const std::string& backend,
                                       mock::Era era = mock::Era::kKubernetes) {
  CommandFactoryOptions options;
  options.adapter = serve_options(backend);
  for (const auto& a : extra) options.adapter.argv.push_back(a);
  LizardMockFactoryOptions mock;
  mock.era = era;
  options.platforms["lizard"] = make_mock_platform_provider(mock);
  return make_command_factory(std::move(options));
}

#ifdef LIZARD_PROTOCOL_TEST_HAVE_MUTANTS
// A representative set: each kind of defect of both bases. Set
// LIZARD_PROTOCOL_MUTANTS=all to run the whole catalogue.
std::vector<std::string> mutant_names() {
  if (const char* all = std::getenv("LIZARD_PROTOCOL_MUTANTS"); all && std::string(all) == "all") {
    std::vector<std::string> names;
    for (const auto& m : all_mutants()) names.push_back(m.name);
    return names;
  }
  return {"ref-set-late",
          "attach-makes-fresh",
          "destroys-on-drop",
          "drops-stderr",
          "missing-program-exit-0",
          "argv-through-shell",
          "mangles-high-bytes",
          "truncates-at-512k",
          "limit-as-truncated-success",
          "timeout-loses-output",
          "accepts-invalid-timeout",
          "ignores-stop-token",
          "passes-host-env",
          "coalesces-concurrent-runs",
          "forgets-parents",
          "reads-files-as-text",
          "list-unsorted",
          "missing-reads-empty",
          "blocking-fifo-read",
          "remove-follows-link",
          "removes-working-dir",
          "realpath-lexical",
          "racy-first-use",
          "constructs-eagerly",
          "ignores-lifetime",
          "replacement-for-unknown-ref",
          "renews-on-attach",
          "destroys-on-drop-lizard",
          "key-in-command-env",
          "key-in-create-envs",
          "single-exec-request",
          "resends-exec-after-drop",
          "binary-upload-base64",
          "auth-error-vague",
          "retries-after-transient",
          "swallows-501"};
}

class Mutants : public testing::TestWithParam<std::string> {};

TEST_P(Mutants, AreCaughtThroughTheProtocol) {
  const Mutant* m = find_mutant(GetParam());
  ASSERT_NE(m, nullptr) << GetParam() << " is no longer in the catalogue";
  auto factory = served({"--mutant", m->name}, m->base);
  RunnerOptions runner;
  for (const auto& t : m->targets) runner.filter += (runner.filter.empty() ? "" : ":") + t;
  runner.jobs = 2;
  runner.rule_deadline = std::chrono::seconds(150);
  const RunReport report = run_rules(*factory, runner);
  for (const auto& t : m->targets) {
    const RuleResult* r = report.find(t);
    ASSERT_NE(r, nullptr) << t;
    EXPECT_EQ(r->status, Status::kFail) << m->name << " was not caught by " << t << ": "
                                        << status_name(r->status) << " " << r->reason;
    // Caught by the rule, not by a failure of the protocol or of the adapter.
    EXPECT_EQ(r->reason.find("protocol fault"), std::string::npos) << r->reason;
    EXPECT_EQ(r->reason.find("could not open a session"), std::string::npos) << r->reason;
    EXPECT_EQ(r->reason.find("ProtocolError"), std::string::npos) << r->reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Mutants, Mutants, testing::ValuesIn(mutant_names()),
                         [](const testing::TestParamInfo<std::string>& param) {
                           std::string name;
                           for (char ch : param.param) name += ch == '-' ? '_' : ch;
                           return name;
                         });
#endif

// ---------------------------------------------------------------------------
// The reference backends: every rule gets the same verdict through the
// protocol as in process.

class SameAsInProcess : public testing::TestWithParam<std::string> {};

// The in-process verdicts: from the JSON report that ctest's run of the suite
// on the same backend wrote (LIZARD_IN_PROCESS_REPORT, set with a fixture in
// conformance/CMakeLists.txt: the suite does not run twice in one ctest
// run), or, without it, a run here.
RunReport in_process(BackendFactory& direct, const RunnerOptions& runner) {
  const char* path = std::getenv("LIZARD_IN_PROCESS_REPORT");
  if (path == nullptr || *path == '\0') return run_rules(direct, runner);
  std::cout << "in-process verdicts from " << path << "\n";
  return read_json_report(path);
}

TEST_P(SameAsInProcess, Rules) {
  const std::string which = GetParam();
  std::unique_ptr<BackendFactory> direct;
  std::unique_ptr<BackendFactory> through;
  if (which == "Local") {
    direct = make_local_factory();
    through = served({}, "local");
  } else {
    LizardMockFactoryOptions mock;
    mock.era = which == "Firecracker" ? mock::Era::kFirecracker : mock::Era::kKubernetes;
    direct = make_lizard_mock_factory(mock);
    through = served({}, "lizard", mock.era);
  }
  RunnerOptions runner;
  runner.jobs = 4;
  // As the suite's own ctest runs (conformance/CMakeLists.txt): room for a
  // large file's rule on a loaded host.
  runner.rule_deadline = std::chrono::seconds(300);
  const RunReport expected = in_process(*direct, runner);
  // A report of another backend (or era), suite or selection compares nothing.
  ASSERT_EQ(expected.backend, direct->name());
  ASSERT_EQ(expected.suite_version, kSuiteVersion);
  ASSERT_EQ(expected.shard.count, 1);
  const RunReport got = run_rules(*through, runner);
  ASSERT_EQ(got.rules.size(), expected.rules.size());
  for (const auto& e : expected.rules) {
    const RuleResult* g = got.find(e.id);
    ASSERT_NE(g, nullptr) << e.id;
    EXPECT_EQ(status_name(g->status), std::string(status_name(e.status)))
        << e.id << ": in process " << status_name(e.status) << " " << e.reason
        << "; through the protocol " << status_name(g->status) << " " << g->reason;
  }
  EXPECT_EQ(got.count(Status::kPass), expected.count(Status::kPass));
  EXPECT_EQ(got.count(Status::kFail), 0);
  std::cout << "through the protocol: " << got.count(Status::kPass) << " pass, "
            << got.count(Status::kFail) << " fail, " << got.count(Status::kSkip) << " skip in "
            << got.wall_seconds << " s (in process " << expected.wall_seconds << " s)\n";
}

INSTANTIATE_TEST_SUITE_P(Verdicts, SameAsInProcess,
                         testing::Values("Local", "Kubernetes", "Firecracker"),
                         [](const testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace lizard::conformance
