// The backend protocol (docs/protocol.md): the client against
// lizard-workspace-serve, adapters that are slow or stop reading, the mutants
// through the protocol, and the reference backends' verdicts through it
// against their verdicts in process. Broken and hostile adapters:
// hostile_adapter_test.cc.
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
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lizard/conformance/adapter_client.h"
#include "lizard/conformance/command_factory.h"
#include "lizard/conformance/lizard_factory.h"
#include "lizard/conformance/local_factory.h"
#include "lizard/conformance/report_tools.h"
#include "lizard/conformance/runner.h"
#include "lizard/workspace/errors.h"
#include "protocol_test_support.h"
#include "schemas.h"
#include "wire.h"
#ifdef LIZARD_PROTOCOL_TEST_HAVE_MUTANTS
#include "lizard/conformance/mutants.h"
#endif

namespace lizard::conformance {
namespace {

using protocol::ProtocolSchemas;
using test_support::bad_adapter;
using test_support::broken_adapter;
using test_support::serve_options;
using workspace::Argv;
using workspace::Shell;

// ---------------------------------------------------------------------------
// The client against lizard-workspace-serve.

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

// fs/read's answer is encoded and written in pieces of 48 KiB (line_writer.h,
// write_base64): files of every size around a piece's end come back whole,
// each answer one line that the schemas accept, also when several large
// answers are written at once.
TEST(AdapterClient, FilesReadBackWholeAtEverySizeAroundTheAnswersPieces) {
  auto adapter = AdapterClient::start(serve_options("local"));  // schemas checked
  auto b = adapter->make();
  auto& f = *b->filesystem();
  const std::string dir = b->working_dir();
  constexpr std::size_t kPiece = 48 * 1024;
  std::uint32_t seed = 7;
  const auto bytes = [&](std::size_t n) {
    std::string data(n, '\0');
    for (auto& c : data) {
      seed = seed * 1664525u + 1013904223u;
      c = static_cast<char>(seed >> 24);
    }
    return data;
  };
  std::vector<std::size_t> sizes = {0, 1, 2, 3, 4, 5};
  for (std::size_t pieces : {1, 2, 3}) {
    for (std::size_t n = pieces * kPiece - 2; n <= pieces * kPiece + 2; ++n) sizes.push_back(n);
  }
  sizes.push_back((1u << 20) + 1);
  for (const std::size_t n : sizes) {
    const std::string data = bytes(n);
    f.write_bytes(dir + "/file", data);
    ASSERT_EQ(f.read_bytes(dir + "/file"), data) << n << " bytes";
  }
  // Answers of several pieces written at once are not interleaved.
  std::vector<std::string> contents;
  for (int i = 0; i < 4; ++i) {
    contents.push_back(bytes(5 * kPiece + static_cast<std::size_t>(i)));
    f.write_bytes(dir + "/f" + std::to_string(i), contents.back());
  }
  std::vector<std::future<bool>> readers;
  for (int i = 0; i < 4; ++i) {
    readers.push_back(std::async(std::launch::async, [&, i] {
      bool same = true;
      for (int k = 0; k < 5; ++k) {
        same = same && f.read_bytes(dir + "/f" + std::to_string(i)) == contents[i];
      }
      return same;
    }));
  }
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(readers[i].get()) << "file " << i;
  EXPECT_EQ(adapter->fault(), "");
  adapter->shutdown();
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

// What backend/new on bad_adapter(mode) failed with, at an answer deadline
// of 2 s (ProtocolError's text), or "backend/new succeeded".
std::string new_backend_error(const std::string& mode) {
  AdapterOptions options = bad_adapter(mode);
  options.answer_deadline = std::chrono::seconds(2);
  const auto client = AdapterClient::start(options);
  try {
    client->make();
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "backend/new succeeded";
}

constexpr const char* kHungAt2s =
    "answered no $/ping for 2 s while 1 request(s) were in flight (hung)";

TEST(AdapterClient, AnAnswerStillArrivingIsNotAHang) {
  // The adapter writes its answer to backend/new over 4 s, 10 bytes every
  // 0.2 s, and can answer no $/ping before that line ends: the bytes
  // arriving show it alive, at an answer deadline of 2 s.
  const std::string why = new_backend_error("slow-line");
  EXPECT_NE(why.find("answered backend/new with"), std::string::npos) << why;
  EXPECT_NE(why.find("a slow line"), std::string::npos) << why;
  EXPECT_EQ(why.find("hung"), std::string::npos) << why;
}

TEST(AdapterClient, AnAdapterWaitingForACpuIsNotHung) {
  // The adapter computes for 5 s at the lowest priority on a CPU that a busy
  // child of its own holds, answering no $/ping: nearly all of that time it
  // waits for the CPU, which the host owes it, so it is not hung at an answer
  // deadline of 2 s. (The example Python adapter went 1 to 1.5 s without
  // answering on a 64 MiB read, and a loaded host made that more than 20 s.)
  if (!std::ifstream("/proc/self/schedstat")) GTEST_SKIP() << "the kernel keeps no wait counts";
  const std::string why = new_backend_error("starved");
  if (why.find("cannot pin to a CPU here") != std::string::npos) GTEST_SKIP() << why;
  EXPECT_NE(why.find("answered backend/new with"), std::string::npos) << why;
  EXPECT_NE(why.find("starved on purpose, not hung"), std::string::npos) << why;
  EXPECT_EQ(why.find("(hung)"), std::string::npos) << why;
}

TEST(AdapterClient, AnAdapterComputingWithoutAnsweringIsHung) {
  // Never asleep, never answering: the time it waits for a CPU (the other
  // tests' load) is not counted, the rest is.
  const std::string why = new_backend_error("spin");
  EXPECT_NE(why.find(kHungAt2s), std::string::npos) << why;
}

TEST(AdapterClient, AnAdapterWhoseThreadsOutnumberTheCpusIsStillHung) {
  // Its threads wait for CPUs its other threads hold: waits side by side are
  // one wait, not a credit of several seconds per second.
  const std::string why = new_backend_error("spin-threads");
  EXPECT_NE(why.find(kHungAt2s), std::string::npos) << why;
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

TEST(AdapterClient, AnAdapterWaitingForItsStderrToBeReadIsNotHung) {
  // At backend/new the adapter writes 96 million empty lines to stderr, then
  // exits with status 3. Reading and keeping them takes this process about
  // 10 s here, while the adapter waits on its full stderr pipe and reads no
  // ping: its unread stderr is life, as unread output is. (It was not: with
  // a 2 s deadline the adapter was "hung" after about 2.5 s; with 24 million
  // lines and the usual 5 s, so it was on a loaded host,
  // Modes/BadAdapter.*/empty_stderr.) The deadline is not shorter: on a
  // loaded host the adapter itself can wait that long for a CPU with its
  // pipe empty, and then it is rightly hung (0.25 s failed so in ctest).
  AdapterOptions options = bad_adapter("empty-stderr");
  options.env["BAD_ADAPTER_EMPTY_LINES_M"] = "96";
  options.answer_deadline = std::chrono::seconds(2);
  const auto client = AdapterClient::start(options);
  std::string why;
  try {
    client->make();
  } catch (const std::exception& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("exited with status 3"), std::string::npos) << why;
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
