// LizardSandboxBackend end to end against the embedded mock; the mock's
// request journal shows what went over the wire.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/mock/mock_server.h"
#include "lizard/workspace/lizard_sandbox_backend.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace {
namespace {

using namespace std::chrono_literals;
using mock::FaultRule;
using mock::JournalEntry;
using mock::MockOptions;
using mock::MockServer;

bool is_exec(const JournalEntry& e) {
  return e.method == "POST" && e.path.size() > 5 && e.path.substr(e.path.size() - 5) == "/exec";
}
bool is_create(const JournalEntry& e) { return e.method == "POST" && e.path == "/api/sandboxes"; }

template <typename Pred>
std::size_t count_if(const std::vector<JournalEntry>& journal, Pred pred) {
  return static_cast<std::size_t>(std::count_if(journal.begin(), journal.end(), pred));
}

// Waits for `condition` with a deadline (no fixed sleeps).
template <typename Cond>
bool eventually(Cond condition, std::chrono::milliseconds deadline = 20s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(gen() & 0xFF);
  return out;
}

class LizardBackendTest : public ::testing::Test {
 protected:
  explicit LizardBackendTest(MockOptions mock_options = {}) : server_(std::move(mock_options)) {}

  LizardOptions options() const {
    LizardOptions o;
    o.api_key = server_.api_key();
    o.project = server_.project_id();
    o.api_url = server_.url();
    return o;
  }

  std::vector<JournalEntry> journal() const { return server_.requests(); }

  MockServer server_;
};

// --- lifecycle ----------------------------------------------------------------

TEST_F(LizardBackendTest, NoRequestAtConstruction) {
  LizardSandboxBackend backend(options());
  EXPECT_FALSE(backend.ref().has_value());
  EXPECT_EQ(backend.working_dir(), "/workspace");
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardBackendTest, InvalidSizeIsRejectedBeforeAnyRequest) {
  for (const char* size : {"tiny", "", "Medium", "xl"}) {
    auto o = options();
    o.size = size;
    EXPECT_THROW(LizardSandboxBackend{o}, std::invalid_argument) << size;
  }
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardBackendTest, ConcurrentFirstUseCreatesExactlyOneSandbox) {
  LizardSandboxBackend backend(options());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      if (i % 2 == 0) {
        if (backend.run(Shell{"true"}).exit_code == 0) ++ok;
      } else {
        backend.write_bytes("/workspace/f" + std::to_string(i), "x");
        ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(count_if(journal(), is_create), 1u);
  EXPECT_EQ(server_.live_sandboxes(), 1u);
  ASSERT_TRUE(backend.ref().has_value());
  EXPECT_EQ(backend.ref()->provider, "lizard");
}

TEST_F(LizardBackendTest, CreateBodyCarriesTemplateSizeLifetimeProjectAndOnlyCallerEnv) {
  auto o = options();
  o.size = "small";
  o.lifetime = 90s;
  o.env = {{"ONE", "1"}};
  o.metadata = {{"owner", "test"}};
  LizardSandboxBackend backend(o);
  backend.run(Shell{"true"});
  const auto j = journal();
  const auto create = std::find_if(j.begin(), j.end(), is_create);
  ASSERT_NE(create, j.end());
  rapidjson::Document body;
  body.Parse(create->body.c_str());
  ASSERT_TRUE(body.IsObject());
  EXPECT_STREQ(body["template"].GetString(), "interpreter");
  EXPECT_STREQ(body["size"].GetString(), "small");
  EXPECT_EQ(body["timeoutMs"].GetInt64(), 90000);
  EXPECT_EQ(std::string(body["projectId"].GetString()), server_.project_id());
  ASSERT_TRUE(body.HasMember("envs"));
  EXPECT_EQ(body["envs"].MemberCount(), 1u);
  EXPECT_STREQ(body["envs"]["ONE"].GetString(), "1");
  EXPECT_STREQ(body["metadata"]["owner"].GetString(), "test");
  EXPECT_FALSE(body.HasMember("lizardToken"));
}

TEST_F(LizardBackendTest, CreateBodyOmitsEnvsWhenNoneGiven) {
  LizardSandboxBackend backend(options());
  backend.run(Shell{"true"});
  const auto j = journal();
  const auto create = std::find_if(j.begin(), j.end(), is_create);
  ASSERT_NE(create, j.end());
  rapidjson::Document body;
  body.Parse(create->body.c_str());
  EXPECT_FALSE(body.HasMember("envs"));
  EXPECT_EQ(body["timeoutMs"].GetInt64(), 3600000);
  EXPECT_STREQ(body["size"].GetString(), "medium");
}

TEST_F(LizardBackendTest, AttachByRefSeesTheSameFilesAndSendsNoCreateOrRenewal) {
  WorkspaceRef ref;
  {
    LizardSandboxBackend first(options());
    first.write_bytes("/workspace/shared.txt", "hello");
    ref = *first.ref();
  }  // the backend object goes; the sandbox stays
  server_.clear_journal();
  auto attached = LizardSandbox(options()).attach(ref);
  EXPECT_EQ(attached->ref(), ref);
  EXPECT_TRUE(journal().empty());  // no I/O until first use
  EXPECT_EQ(attached->run(Shell{"cat shared.txt"}).out, "hello");
  const auto j = journal();
  EXPECT_EQ(count_if(j, is_create), 0u);
  EXPECT_EQ(
      count_if(j,
               [](const JournalEntry& e) { return e.path.find("/timeout") != std::string::npos; }),
      0u);
  EXPECT_EQ(count_if(j, [](const JournalEntry& e) { return e.method == "DELETE"; }), 0u);
}

TEST_F(LizardBackendTest, UnknownRefIsUnavailableAndCreatesNothing) {
  auto backend = LizardSandbox(options()).attach({"lizard", "sbx_doesnotexist"});
  EXPECT_THROW(backend->run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend->read_bytes("/workspace/x"), WorkspaceUnavailableError);
  EXPECT_EQ(count_if(journal(), is_create), 0u);
  EXPECT_EQ(server_.live_sandboxes(), 0u);
}

TEST_F(LizardBackendTest, DestroyDeletesAndLaterOperationsAreUnavailable) {
  LizardSandboxBackend backend(options());
  backend.run(Shell{"true"});
  const auto ref = *backend.ref();
  backend.destroy();
  backend.destroy();  // twice is fine
  EXPECT_EQ(count_if(journal(), [](const JournalEntry& e) { return e.method == "DELETE"; }), 1u);
  EXPECT_THROW(backend.run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend.stat("/workspace"), WorkspaceUnavailableError);
  EXPECT_EQ(backend.ref(), ref);  // still fixed
  auto again = LizardSandbox(options()).attach(ref);
  EXPECT_THROW(again->exists("/workspace"), WorkspaceUnavailableError);
  EXPECT_NO_THROW(LizardSandbox(options()).destroy(ref));  // already gone: fine
  EXPECT_EQ(count_if(journal(), is_create), 1u);
}

TEST_F(LizardBackendTest, ExpiryBetweenOperationsIsUnavailable) {
  auto o = options();
  o.lifetime = 5s;
  LizardSandboxBackend backend(o);
  backend.run(Shell{"true"});
  server_.advance_clock(10s);
  EXPECT_THROW(backend.run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend.read_bytes("/workspace/a"), WorkspaceUnavailableError);
  EXPECT_EQ(count_if(journal(), is_create), 1u);
}

TEST_F(LizardBackendTest, RejectedKeyIsAuthenticationErrorOnCreateAndUnavailableOnAttach) {
  auto o = options();
  o.api_key = "liz_wrong_key";
  LizardSandboxBackend backend(o);
  try {
    backend.run(Shell{"true"});
    FAIL() << "expected an authentication error";
  } catch (const WorkspaceAuthenticationError& e) {
    EXPECT_EQ(std::string(e.what()).find("liz_wrong_key"), std::string::npos);
  }
  LizardSandboxBackend real(options());
  real.run(Shell{"true"});
  auto attached = LizardSandbox(o).attach(*real.ref());
  EXPECT_THROW(attached->run(Shell{"true"}), WorkspaceUnavailableError);
}

TEST_F(LizardBackendTest, TheKeyAppearsInNoRequestBodyLogOrEnvironment) {
  std::vector<std::string> log;
  std::mutex log_mutex;
  auto o = options();
  o.log = [&](std::string_view line) {
    std::lock_guard lock(log_mutex);
    log.emplace_back(line);
  };
  LizardSandboxBackend backend(o);
  const auto env = backend.run(Shell{"env"});
  EXPECT_EQ(env.out.find(server_.api_key()), std::string::npos);
  backend.write_bytes("/workspace/f", "data");
  backend.read_bytes("/workspace/f");
  EXPECT_THROW(backend.read_bytes("/workspace/missing"), std::filesystem::filesystem_error);
  for (const auto& e : journal()) {
    EXPECT_EQ(e.body.find(server_.api_key()), std::string::npos) << e.path;
    EXPECT_EQ(e.query.find(server_.api_key()), std::string::npos) << e.path;
  }
  ASSERT_FALSE(log.empty());
  for (const auto& line : log) EXPECT_EQ(line.find(server_.api_key()), std::string::npos);
}

TEST_F(LizardBackendTest, RunEndAndDestructionKeepTheSandbox) {
  {
    LizardSandboxBackend backend(options());
    backend.run(Shell{"true"});
  }
  EXPECT_EQ(count_if(journal(), [](const JournalEntry& e) { return e.method == "DELETE"; }), 0u);
  EXPECT_EQ(server_.live_sandboxes(), 1u);
}

// --- commands -------------------------------------------------------------------

class LizardCommandTest : public LizardBackendTest {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<LizardSandboxBackend>(options());
    backend_->run(Shell{"true"});  // creates the sandbox
    server_.clear_journal();
  }
  std::size_t execs() const { return count_if(journal(), is_exec); }
  std::unique_ptr<LizardSandboxBackend> backend_;
};

TEST_F(LizardCommandTest, SmallCommandCostsOneRequestAndReportsAllFields) {
  const auto result = backend_->run(Shell{"printf out; printf err >&2; exit 7"});
  EXPECT_EQ(result, (CommandResult{7, "out", "err"}));
  EXPECT_EQ(journal().size(), 1u);
}

TEST_F(LizardCommandTest, RunsAsRootInWorkspaceWithStdinAtEof) {
  const auto result = backend_->run(Shell{"id -u; pwd -P; read v || printf eof"});
  EXPECT_EQ(result.out, "0\n/workspace\neof");
}

TEST_F(LizardCommandTest, ExitCodesFollowTheShellConventions) {
  EXPECT_EQ(backend_->run(Argv{{"lizard-no-such-program"}}).exit_code, 127);
  backend_->write_bytes("/workspace/not-exec", "echo hi\n");
  EXPECT_EQ(backend_->run(Argv{{"/workspace/not-exec"}}).exit_code, 126);
  EXPECT_EQ(backend_->run(Shell{"kill -9 $$"}).exit_code, 137);
  EXPECT_EQ(backend_->run(Shell{"kill -15 $$"}).exit_code, 143);
}

TEST_F(LizardCommandTest, EnvHoldsBackendAndCallVariablesButNothingOfTheHost) {
  ::setenv("LIZARD_HOST_CANARY", "leaked", 1);
  auto o = options();
  o.env = {{"FROM_BACKEND", "b"}, {"BOTH", "backend"}};
  LizardSandboxBackend backend(o);
  RunOptions run;
  run.env = {{"FROM_CALL", "c"}, {"BOTH", "call"}};
  const auto out = backend
                       .run(Shell{"printf '%s|%s|%s|%s' \"$FROM_BACKEND\" \"$FROM_CALL\" "
                                  "\"$BOTH\" \"${LIZARD_HOST_CANARY-unset}\""},
                            run)
                       .out;
  EXPECT_EQ(out, "b|c|call|unset");
  ::unsetenv("LIZARD_HOST_CANARY");
}

// Property: random argv items (every byte but NUL, quotes, newlines, long
// items) arrive byte for byte (as valid UTF-8 output, invalid bytes repaired).
TEST_F(LizardCommandTest, RandomArgvItemsArriveLiterally) {
  std::mt19937_64 gen(20261129);
  const std::vector<std::string> specials = {"$(id)", "`id`", "'",  "\"", ";", "&&",
                                             "\n",    "-n",   "\\", "*",  "~", "%s"};
  for (int round = 0; round < 6; ++round) {
    std::vector<std::string> items;
    const int count = 1 + static_cast<int>(gen() % 8);
    for (int i = 0; i < count; ++i) {
      std::string item;
      const std::size_t len = gen() % 4 == 0 ? 50000 + gen() % 50000 : gen() % 40;
      for (std::size_t k = 0; k < len; ++k) {
        if (gen() % 5 == 0) {
          item += specials[gen() % specials.size()];
        } else {
          item.push_back(static_cast<char>(1 + gen() % 255));
        }
      }
      items.push_back(item);
    }
    std::vector<std::string> argv = {"printf", "%s\\0"};
    argv.insert(argv.end(), items.begin(), items.end());
    std::string expected;
    for (const auto& item : items) expected += item + std::string(1, '\0');
    const auto result = backend_->run(Argv{argv});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.out, repair_utf8(expected)) << "round " << round;
  }
}

TEST_F(LizardCommandTest, InvalidUtf8BecomesReplacementAndNulIsKept) {
  const auto result = backend_->run(Shell{
      "printf 'a\\377b\\303\\251c\\000d\\342\\202'; printf '\\360\\237\\230\\200\\300x' >&2"});
  EXPECT_EQ(result.out, std::string("a\xEF\xBF\xBD"
                                    "b\xC3\xA9"
                                    "c") +
                            std::string(1, '\0') + "d\xEF\xBF\xBD");
  EXPECT_EQ(result.err, "\xF0\x9F\x98\x80\xEF\xBF\xBDx");
}

// Multi-byte characters survive wherever they fall: across the inline /
// files boundary, transfer chunks and the 64 KiB head of a limit error.
TEST_F(LizardCommandTest, MultiByteCharactersSurviveEveryBoundary) {
  for (const char* prefix : {"", "a", "ab"}) {
    const std::string script =
        std::string("printf '") + prefix +
        "'; i=0; while [ $i -lt 14 ]; do cat e e e e e e e e; i=$((i+1)); done";
    backend_->write_bytes("/workspace/e", [] {
      std::string chunk;
      while (chunk.size() < 9000) chunk += "\xE2\x82\xAC\xF0\x9F\x98\x80";  // euro sign, emoji
      return chunk;
    }());
    const auto result = backend_->run(Shell{script});
    EXPECT_TRUE(is_valid_utf8(result.out));
    EXPECT_EQ(result.out.find("\xEF\xBF\xBD"), std::string::npos) << prefix;
    EXPECT_EQ(result.out.size(), std::string(prefix).size() + 14u * 8u * 9002u);
  }
  try {
    backend_->run(Shell{"printf a; while :; do cat e; done"});
    FAIL() << "expected WorkspaceOutputLimitError";
  } catch (const WorkspaceOutputLimitError& e) {
    EXPECT_TRUE(is_valid_utf8(e.out_head()));
    EXPECT_EQ(e.out_head().find("\xEF\xBF\xBD"), std::string::npos);
    EXPECT_LE(e.out_head().size(), kOutputHeadBytes);
    EXPECT_GT(e.out_head().size(), kOutputHeadBytes - 4);
  }
}

TEST_F(LizardCommandTest, NineKibAndFiveMibPerStreamComeBackComplete) {
  const auto small =
      backend_->run(Shell{"head -c 9216 /dev/zero | tr '\\0' a; "
                          "head -c 9216 /dev/zero | tr '\\0' b >&2"});
  EXPECT_EQ(small.out, std::string(9216, 'a'));
  EXPECT_EQ(small.err, std::string(9216, 'b'));
  EXPECT_EQ(execs(), 1u);
  server_.clear_journal();
  const auto big =
      backend_->run(Shell{"head -c 5242880 /dev/zero | tr '\\0' c; "
                          "head -c 5242880 /dev/zero | tr '\\0' d >&2"});
  EXPECT_EQ(big.out, std::string(5242880, 'c'));
  EXPECT_EQ(big.err, std::string(5242880, 'd'));
  EXPECT_EQ(journal().size(), 3u);  // 1 exec + 2 raw reads
}

TEST_F(LizardCommandTest, OutputOverTenMibRaisesTheLimitErrorWithHeads) {
  try {
    backend_->run(Shell{"printf head; head -c 11000000 /dev/zero; printf e >&2; sleep 60"});
    FAIL() << "expected WorkspaceOutputLimitError";
  } catch (const WorkspaceOutputLimitError& e) {
    EXPECT_EQ(e.limit(), kOutputLimitBytes);
    EXPECT_EQ(e.out_head().size(), kOutputHeadBytes);
    EXPECT_EQ(e.out_head().substr(0, 4), "head");
    EXPECT_EQ(e.err_head(), "e");
  }
}

TEST_F(LizardCommandTest, ExactlyTenMibIsNotOverTheLimit) {
  const auto result = backend_->run(Shell{"head -c 10485760 /dev/zero"});
  EXPECT_EQ(result.out.size(), kOutputLimitBytes);
}

TEST_F(LizardCommandTest, TimeoutRaisesWithPartialOutputAndStopsTheGroup) {
  RunOptions run;
  run.timeout = Seconds(1.0);
  try {
    backend_->run(Shell{"printf before; printf warn >&2; echo $$ > /workspace/pid; sleep 60 & "
                        "echo $! > /workspace/child; wait"},
                  run);
    FAIL() << "expected WorkspaceTimeoutError";
  } catch (const WorkspaceTimeoutError& e) {
    EXPECT_EQ(e.out(), "before");
    EXPECT_EQ(e.err(), "warn");
    EXPECT_DOUBLE_EQ(e.timeout().count(), 1.0);
  }
  EXPECT_TRUE(eventually([&] {
    return backend_
               ->run(Shell{"kill -0 $(cat pid) 2>/dev/null || kill -0 $(cat child) "
                           "2>/dev/null"})
               .exit_code != 0;
  }));
}

TEST_F(LizardCommandTest, InvalidTimeoutsAreRejectedAndNothingRuns) {
  for (const double t : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    RunOptions run;
    run.timeout = Seconds(t);
    EXPECT_THROW(backend_->run(Shell{"true"}, run), std::invalid_argument);
  }
  EXPECT_THROW(backend_->run(Argv{{}}), std::invalid_argument);
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardCommandTest, CancellationStopsTheGroupAndReturnsPromptly) {
  std::stop_source stop;
  std::thread canceller([&] {
    eventually([&] { return backend_->exists("/workspace/started"); });
    stop.request_stop();
  });
  RunOptions run;
  run.stop = stop.get_token();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(backend_->run(Shell{"echo $$ > pid; touch started; sleep 60"}, run),
               WorkspaceCancelledError);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // did not hang
  EXPECT_TRUE(eventually(
      [&] { return backend_->run(Shell{"kill -0 $(cat pid) 2>/dev/null"}).exit_code != 0; }));
}

TEST_F(LizardCommandTest, BackgroundChildHoldingStdoutDoesNotHoldTheCommand) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = backend_->run(Shell{"sleep 30 & echo $! > bg; printf done"});
  EXPECT_EQ(result.out, "done");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_EQ(backend_->run(Shell{"kill -0 $(cat bg)"}).exit_code, 0);  // the child lives on
}

TEST_F(LizardCommandTest, SixteenConcurrentCommandsGetTheirOwnResults) {
  std::vector<std::thread> threads;
  std::vector<CommandResult> results(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      results[i] = backend_->run(
          Argv{{"sh", "-c", "printf %s \"$0\"; exit $(($0 % 7))", std::to_string(i)}});
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(results[i].out, std::to_string(i));
    EXPECT_EQ(results[i].exit_code, i % 7);
  }
}

TEST_F(LizardCommandTest, ADroppedAnswerDoesNotRunTheCommandTwice) {
  FaultRule rule;
  rule.method = "POST";
  rule.path_pattern = "/api/sandboxes/*/exec";
  rule.action = FaultRule::Action::kCloseAfterHandling;
  rule.times = 1;
  server_.add_fault(rule);
  const auto result = backend_->run(Shell{"echo x >> count; printf ok"});
  EXPECT_EQ(result.out, "ok");
  server_.clear_faults();
  EXPECT_EQ(backend_->read_bytes("/workspace/count"), "x\n");
  EXPECT_GE(execs(), 2u);
  RecordProperty("exec_requests", static_cast<int>(execs()));
}

TEST_F(LizardCommandTest, PersistentServerErrorsAreTransient) {
  FaultRule rule;
  rule.method = "POST";
  rule.path_pattern = "/api/sandboxes/*/exec";
  rule.status = 503;
  server_.add_fault(rule);
  EXPECT_THROW(backend_->run(Shell{"true"}), WorkspaceTransientError);
  server_.clear_faults();
  FaultRule limited;
  limited.method = "GET";
  limited.path_pattern = "/api/sandboxes/*/files";
  limited.status = 429;
  limited.body = R"({"error":"Limit reached","retryAfterS":7})";
  server_.add_fault(limited);
  try {
    backend_->read_bytes("/workspace/x");
    FAIL() << "expected WorkspaceTransientError";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_FALSE(e.may_have_been_admitted());
    EXPECT_EQ(e.http_status(), 429);
    EXPECT_EQ(e.retry_after(), std::chrono::seconds(7));
  }
}

TEST_F(LizardCommandTest, ARateLimitedRunIsReportedAtOnceAndNotResent) {
  FaultRule rule;
  rule.method = "POST";
  rule.path_pattern = "/api/sandboxes/*/exec";
  rule.status = 429;
  rule.body = R"({"error":"Limit reached"})";
  server_.add_fault(rule);
  try {
    backend_->run(Shell{"true"});
    FAIL() << "expected WorkspaceTransientError";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_FALSE(e.may_have_been_admitted());
    EXPECT_EQ(e.http_status(), 429);
  }
  EXPECT_EQ(execs(), 1u);
}

TEST_F(LizardCommandTest, DestroyDuringACommandMakesItUnavailable) {
  std::thread destroyer([&] {
    LizardSandbox provider(options());
    auto observer = provider.attach(*backend_->ref());
    eventually([&] { return observer->exists("/workspace/running"); });
    provider.destroy(*backend_->ref());
  });
  EXPECT_THROW(backend_->run(Shell{"touch running; sleep 60"}), WorkspaceUnavailableError);
  destroyer.join();
}

class LizardLongCommandTest : public LizardBackendTest {
 protected:
  LizardLongCommandTest() : LizardBackendTest(MockOptions{.exec_limit = 1500ms}) {}
};

TEST_F(LizardLongCommandTest, ACommandOutlivingTheExecLimitCompletesOnce) {
  LizardSandboxBackend backend(options());
  const auto result = backend.run(Shell{"echo x >> count; printf start; sleep 4; printf end"});
  EXPECT_EQ(result.out, "startend");
  EXPECT_EQ(backend.read_bytes("/workspace/count"), "x\n");
  EXPECT_GE(count_if(journal(), is_exec), 3u);
  RecordProperty("exec_requests", static_cast<int>(count_if(journal(), is_exec)));
}

TEST_F(LizardBackendTest, AFailedCreateIsNotRepeated) {
  FaultRule rule;
  rule.method = "POST";
  rule.path_pattern = "/api/sandboxes";
  rule.action = FaultRule::Action::kCloseAfterHandling;
  rule.times = 1;
  server_.add_fault(rule);
  LizardSandboxBackend backend(options());
  try {
    backend.run(Shell{"true"});
    FAIL() << "expected WorkspaceTransientError";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_TRUE(e.may_have_been_admitted());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected: " << e.what();
  }
  EXPECT_THROW(backend.run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_EQ(count_if(journal(), is_create), 1u);
}

TEST_F(LizardBackendTest, PauseIsNotSupportedOnTheKubernetesEra) {
  LizardSandboxBackend backend(options());
  backend.run(Shell{"true"});
  api::Client client({.api_key = server_.api_key(), .api_url = server_.url()});
  try {
    client.pause_sandbox(backend.ref()->id);
    FAIL() << "expected WorkspaceNotSupportedError";
  } catch (const WorkspaceNotSupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("not supported by this platform"), std::string::npos);
  }
}

// --- files ------------------------------------------------------------------------

using LizardFilesTest = LizardCommandTest;

TEST_F(LizardFilesTest, AllByteValuesRoundTripThroughNewParents) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  server_.clear_journal();
  // Not UTF-8: the base64 as a UTF-8 file, decoded in the sandbox (two requests).
  backend_->write_bytes("/workspace/new/parents/all.bin", bytes);
  EXPECT_EQ(journal().size(), 2u);
  server_.clear_journal();
  backend_->write_bytes("/workspace/new/parents/text.txt", "UTF-8 text, \xc3\xa9");
  EXPECT_EQ(journal().size(), 1u);
  server_.clear_journal();
  EXPECT_EQ(backend_->read_bytes("/workspace/new/parents/all.bin"), bytes);
  EXPECT_EQ(journal().size(), 1u);
  backend_->write_bytes("/workspace/new/parents/all.bin", "short");
  EXPECT_EQ(backend_->read_bytes("/workspace/new/parents/all.bin"), "short");
  EXPECT_EQ(backend_->run(Shell{"cat new/parents/all.bin"}).out, "short");
  backend_->run(Shell{"printf 'from command' > fromcmd"});
  EXPECT_EQ(backend_->read_bytes("/workspace/fromcmd"), "from command");
}

TEST_F(LizardFilesTest, LargeFilesRoundTripExactly) {
  for (const std::size_t size : {std::size_t{8} << 20, std::size_t{64} << 20}) {
    const std::string data = random_bytes(size, size);
    backend_->write_bytes("/workspace/large.bin", data);
    EXPECT_TRUE(backend_->read_bytes("/workspace/large.bin") == data) << size;
  }
}

TEST_F(LizardFilesTest, EmptyFileStatAndListInOneRequestEach) {
  backend_->write_bytes("/workspace/d/empty", "");
  backend_->write_bytes("/workspace/d/b.txt", "12345");
  backend_->make_dir("/workspace/d/sub");
  server_.clear_journal();
  const auto st = backend_->stat("/workspace/d/empty");
  EXPECT_EQ(st, (FileEntry{"empty", "/workspace/d/empty", false, 0}));
  const auto entries = backend_->list_dir("/workspace/d");
  EXPECT_TRUE(backend_->exists("/workspace/d/sub"));
  EXPECT_FALSE(backend_->exists("/workspace/d/absent"));
  EXPECT_EQ(journal().size(), 4u);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0], (FileEntry{"b.txt", "/workspace/d/b.txt", false, 5}));
  EXPECT_EQ(entries[1].name, "empty");
  EXPECT_EQ(entries[2].name, "sub");
  EXPECT_TRUE(entries[2].is_dir);
  EXPECT_TRUE(backend_->stat("/workspace/d/sub").is_dir);
}

void expect_errc(const std::function<void()>& f, std::errc code) {
  try {
    f();
    ADD_FAILURE() << "expected " << std::make_error_code(code).message();
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(code)) << e.what();
  }
}

TEST_F(LizardFilesTest, PathErrorsAreTheExactPosixKind) {
  backend_->write_bytes("/workspace/file", "x");
  backend_->make_dir("/workspace/dir");
  const auto enoent = std::errc::no_such_file_or_directory;
  expect_errc([&] { backend_->read_bytes("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->stat("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->list_dir("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->remove("/workspace/missing"); }, enoent);
  expect_errc([&] { backend_->read_bytes("/workspace/dir"); }, std::errc::is_a_directory);
  expect_errc([&] { backend_->write_bytes("/workspace/dir", "x"); }, std::errc::is_a_directory);
  expect_errc([&] { backend_->list_dir("/workspace/file"); }, std::errc::not_a_directory);
  expect_errc([&] { backend_->write_bytes("/workspace/file/x", "x"); }, std::errc::not_a_directory);
  expect_errc([&] { backend_->make_dir("/workspace/file"); }, std::errc::file_exists);
  EXPECT_NO_THROW(backend_->make_dir("/workspace/dir"));
  EXPECT_THROW(backend_->read_bytes("relative"), std::invalid_argument);
}

TEST_F(LizardFilesTest, FifoReadFailsFast) {
  backend_->run(Shell{"mkfifo fifo"});
  EXPECT_THROW(backend_->read_bytes("/workspace/fifo"), std::filesystem::filesystem_error);
}

TEST_F(LizardFilesTest, SymlinksBehaveAsTheContractSays) {
  backend_->write_bytes("/workspace/target/file", "old");
  backend_->run(
      Shell{"ln -s target/file link; ln -s target dirlink; ln -s loop loop; "
            "ln -s nowhere dangling"});
  backend_->write_bytes("/workspace/link", "new");
  EXPECT_EQ(backend_->read_bytes("/workspace/target/file"), "new");
  EXPECT_TRUE(backend_->stat("/workspace/dirlink").is_dir);
  EXPECT_EQ(backend_->stat("/workspace/link").size, 3u);
  const auto entries = backend_->list_dir("/workspace");
  std::map<std::string, FileEntry> by_name;
  for (const auto& e : entries) by_name[e.name] = e;
  EXPECT_TRUE(by_name.at("dirlink").is_dir);
  EXPECT_FALSE(by_name.at("loop").is_dir);
  EXPECT_FALSE(by_name.at("dangling").is_dir);
  EXPECT_FALSE(backend_->exists("/workspace/dangling"));
  backend_->remove("/workspace/link");
  EXPECT_FALSE(backend_->exists("/workspace/link"));
  EXPECT_EQ(backend_->read_bytes("/workspace/target/file"), "new");
  backend_->remove("/workspace/target");
  EXPECT_FALSE(backend_->exists("/workspace/target"));
}

TEST_F(LizardFilesTest, OverwriteKeepsModeBits) {
  backend_->write_bytes("/workspace/tool.sh", "#!/bin/sh\necho one\n");
  backend_->run(Shell{"chmod 755 tool.sh"});
  backend_->write_bytes("/workspace/tool.sh", "#!/bin/sh\necho two\n");
  EXPECT_EQ(backend_->run(Argv{{"/workspace/tool.sh"}}).out, "two\n");
  EXPECT_EQ(backend_->run(Shell{"stat -c %a tool.sh"}).out, "755\n");
}

TEST_F(LizardFilesTest, RemoveRefusesTheWorkingDirectoryAndItsAncestors) {
  server_.clear_journal();
  for (const char* p : {"/workspace", "/workspace/", "/", "/workspace/a/..", "//"}) {
    EXPECT_THROW(backend_->remove(p), std::invalid_argument) << p;
  }
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardFilesTest, OddNamesRoundTrip) {
  for (const std::string name : {"with space", "quote'\"", "$(id)", "new\nline", "-dash", "ünï"}) {
    const std::string path = "/workspace/odd/" + name;
    backend_->write_bytes(path, name);
    EXPECT_EQ(backend_->read_bytes(path), name);
    EXPECT_EQ(backend_->stat(path).name, name);
    const auto entries = backend_->list_dir("/workspace/odd");
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].name, name);
    backend_->remove(path);
    EXPECT_FALSE(backend_->exists(path));
  }
}

TEST_F(LizardFilesTest, RealpathResolvesInsideTheSandboxAndSurvivesLoops) {
  backend_->run(Shell{"mkdir -p real/sub && ln -s real/sub rel && ln -s loop loop"});
  EXPECT_EQ(backend_->realpath("/workspace/rel/../missing/x"), "/workspace/real/missing/x");
  EXPECT_EQ(backend_->realpath("/workspace"), "/workspace");
  try {
    const auto p = backend_->realpath("/workspace/loop");
    EXPECT_EQ(p.rfind("/workspace", 0), 0u);
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::too_many_symbolic_link_levels));
  }
}

}  // namespace
}  // namespace lizard::workspace

namespace lizard::workspace {
namespace {

// The round-trip cost of each operation, read from the journal.
TEST_F(LizardBackendTest, RequestCountsPerOperation) {
  LizardSandboxBackend backend(options());
  const auto cost = [&](const std::function<void()>& op) {
    server_.clear_journal();
    op();
    return journal().size();
  };
  EXPECT_EQ(cost([&] { backend.write_bytes("/workspace/a/f", "x"); }), 3u);  // projects + create
  EXPECT_EQ(cost([&] { backend.run(Shell{"ln -s a/f link; ln -s a dirlink"}); }), 1u);
  EXPECT_EQ(cost([&] { backend.write_bytes("/workspace/a/f", "y"); }), 1u);
  EXPECT_EQ(cost([&] { backend.read_bytes("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend.stat("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend.exists("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend.exists("/workspace/absent"); }), 1u);
  EXPECT_EQ(cost([&] { backend.list_dir("/workspace/a"); }), 1u);
  EXPECT_EQ(cost([&] { backend.stat("/workspace/link"); }), 2u);      // + one probe
  EXPECT_EQ(cost([&] { backend.list_dir("/workspace"); }), 2u);       // + one probe for all links
  EXPECT_EQ(cost([&] { backend.make_dir("/workspace/b/c"); }), 1u);   // one helper exec
  EXPECT_EQ(cost([&] { backend.realpath("/workspace/link"); }), 1u);  // one helper exec
  EXPECT_EQ(cost([&] { backend.remove("/workspace/b"); }), 1u);
  EXPECT_EQ(cost([&] { backend.run(Shell{"printf small"}); }), 1u);
  auto attached = LizardSandbox(options()).attach(*backend.ref());
  EXPECT_EQ(cost([&] { attached->read_bytes("/workspace/a/f"); }), 2u);  // GET sandbox + read
}

}  // namespace
}  // namespace lizard::workspace
