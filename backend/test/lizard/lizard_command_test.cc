// LizardSandboxBackend's commands against the embedded mock: results,
// output limits and encodings, timeouts, cancellation, re-attaching.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "lizard/workspace/utf8.h"
#include "lizard_backend_test.h"

namespace lizard::workspace {
namespace {

using namespace lizard_test;

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
    // stderr first: the flood is stopped within moments, and under load
    // before a later printf could run.
    backend_->run(Shell{"printf e >&2; printf head; head -c 11000000 /dev/zero; sleep 60"});
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

}  // namespace
}  // namespace lizard::workspace
