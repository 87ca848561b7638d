// LizardSandboxBackend's commands against the embedded mock.
//
// The conformance suite runs every cmd.* and lizard.* rule on this backend
// and this mock (ctests conformance_lizard, conformance_lizard_firecracker);
// this file checks what those rules do not: the backend's env under the
// call's, random argv items, invalid UTF-8 cut at the end of a stream,
// multi-byte characters across the inline/files boundary and the head of a
// limit error, the requests large output takes, a short stream's head in a
// limit error, a timed-out command's background children, the command
// itself gone after a cancellation, that an invalid run sends nothing, the
// re-attach after a dropped answer or past the exec limit (recovered, not
// only "unknown"), the status and Retry-After of transient errors, and a
// destroy by another client while a command runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "lizard/workspace/utf8.h"
#include "lizard_backend_test.h"

namespace lizard::workspace {
namespace {

using namespace lizard_test;

// cmd.env-added passes env per call only; the backend's own env
// (LizardOptions::env) reaches commands too, under the call's.
TEST_F(LizardBackendTest, TheCallsEnvComesOnTopOfTheBackends) {
  auto o = options();
  o.env = {{"FROM_BACKEND", "b"}, {"BOTH", "backend"}};
  auto backend = make_backend(o);
  RunOptions run;
  run.env = {{"FROM_CALL", "c"}, {"BOTH", "call"}};
  EXPECT_EQ(
      backend->run(Shell{"printf '%s|%s|%s' \"$FROM_BACKEND\" \"$FROM_CALL\" \"$BOTH\""}, run).out,
      "b|c|call");
  EXPECT_EQ(backend->run(Shell{"printf %s \"$BOTH\""}).out, "backend");
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

// cmd.utf8-replacement cuts a sequence inside a stream; here one is cut at
// its end, after NUL and a valid character, and 0xC0 (never valid) leads.
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

// cmd.output-complete checks the bytes; this, the requests: 9 KiB on each
// stream comes inline with the one exec, 5 MiB in one raw read per stream.
TEST_F(LizardCommandTest, LargeOutputTakesOneRawReadPerStream) {
  const auto small =
      backend_->run(Shell{"head -c 9216 /dev/zero | tr '\\0' a; "
                          "head -c 9216 /dev/zero | tr '\\0' b >&2"});
  EXPECT_EQ(small.out.size(), 9216u);
  EXPECT_EQ(small.err.size(), 9216u);
  EXPECT_EQ(execs(), 1u);
  server_.clear_journal();
  const auto big =
      backend_->run(Shell{"head -c 5242880 /dev/zero | tr '\\0' c; "
                          "head -c 5242880 /dev/zero | tr '\\0' d >&2"});
  EXPECT_EQ(big.out.size(), 5242880u);
  EXPECT_EQ(big.err.size(), 5242880u);
  EXPECT_EQ(journal().size(), 3u);  // 1 exec + 2 raw reads
}

// cmd.output-limit checks heads of streams longer than 64 KiB; a shorter
// stream comes whole.
TEST_F(LizardCommandTest, ALimitErrorCarriesAShortStreamWhole) {
  // stderr first: the flood is stopped within moments, and under load
  // before a later printf could run.
  EXPECT_THAT([&] { backend_->run(Shell{"printf e >&2; head -c 11000000 /dev/zero; sleep 60"}); },
              ::testing::Throws<WorkspaceOutputLimitError>(
                  ::testing::Property(&WorkspaceOutputLimitError::err_head, "e")));
}

// cmd.timeout-stops-group checks a foreground child; a background child
// the command waits for is in its group too.
TEST_F(LizardCommandTest, ATimeoutStopsTheCommandsBackgroundChildrenToo) {
  RunOptions run;
  run.timeout = Seconds(1.0);
  EXPECT_THAT(
      [&] {
        backend_->run(
            Shell{"echo $$ > /workspace/pid; sleep 60 & echo $! > /workspace/child; wait"}, run);
      },
      ::testing::Throws<WorkspaceTimeoutError>());
  EXPECT_TRUE(Eventually([&] {
    return backend_
               ->run(Shell{"kill -0 $(cat pid) 2>/dev/null || kill -0 $(cat child) 2>/dev/null"})
               .exit_code != 0;
  }));
}

// cmd.timeout-invalid checks that nothing runs; here nothing is even sent,
// and an empty argv is refused too.
TEST_F(LizardCommandTest, InvalidRunsSendNothing) {
  for (const double t : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    RunOptions run;
    run.timeout = Seconds(t);
    EXPECT_THAT([&] { backend_->run(Shell{"true"}, run); }, ThrowsInvalidArgument()) << t;
  }
  EXPECT_THAT([&] { backend_->run(Argv{{}}); }, ThrowsInvalidArgument());
  EXPECT_TRUE(journal().empty());
}

// cmd.cancellation checks that a foreground child stops; the command (the
// shell itself) must be gone too.
TEST_F(LizardCommandTest, CancellationStopsTheCommandItself) {
  std::stop_source stop;
  std::thread canceller([&] {
    EXPECT_TRUE(Eventually([&] { return backend_->exists("/workspace/started"); }));
    stop.request_stop();
  });
  RunOptions run;
  run.stop = stop.get_token();
  EXPECT_THAT([&] { backend_->run(Shell{"echo $$ > pid; touch started; sleep 60"}, run); },
              ::testing::Throws<WorkspaceCancelledError>());
  canceller.join();
  EXPECT_TRUE(Eventually(
      [&] { return backend_->run(Shell{"kill -0 $(cat pid) 2>/dev/null"}).exit_code != 0; }));
}

// lizard.no-rerun-after-drop accepts "outcome unknown"; this backend
// re-attaches and recovers the result.
TEST_F(LizardCommandTest, ADroppedAnswerDoesNotRunTheCommandTwice) {
  server_.add_fault(fault::close_after_handling("POST", "/api/sandboxes/*/exec").times(1));
  const auto result = backend_->run(Shell{"echo x >> count; printf ok"});
  EXPECT_EQ(result.out, "ok");
  server_.clear_faults();
  EXPECT_EQ(backend_->read_bytes("/workspace/count"), "x\n");
  EXPECT_GE(execs(), 2u);
  RecordProperty("exec_requests", static_cast<int>(execs()));
}

// lizard.transient-errors tries a 429 on exec and a 502 on a read; not a
// persistent 503 on exec, nor a 429's Retry-After.
TEST_F(LizardCommandTest, PersistentServerErrorsAreTransient) {
  server_.add_fault(fault::respond("POST", "/api/sandboxes/*/exec", 503));
  EXPECT_THAT([&] { backend_->run(Shell{"true"}); }, ::testing::Throws<WorkspaceTransientError>());
  server_.clear_faults();
  server_.add_fault(fault::respond("GET", "/api/sandboxes/*/files", 429)
                        .body(R"({"error":"Limit reached","retryAfterS":7})"));
  try {
    backend_->read_bytes("/workspace/x");
    FAIL() << "expected WorkspaceTransientError";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_FALSE(e.may_have_been_admitted());
    EXPECT_EQ(e.http_status(), 429);
    EXPECT_EQ(e.retry_after(), std::chrono::seconds(7));
  }
}

// lizard.transient-errors checks the status of a 429 on exec; not that it
// says "not admitted" or that it is sent once.
TEST_F(LizardCommandTest, ARateLimitedRunIsReportedAtOnceAndNotResent) {
  server_.add_fault(
      fault::respond("POST", "/api/sandboxes/*/exec", 429).body(R"({"error":"Limit reached"})"));
  EXPECT_THAT([&] { backend_->run(Shell{"true"}); }, ThrowsTransient(false, 429));
  EXPECT_EQ(execs(), 1u);
}

// env.destroy-during-command destroys through the same object; here another
// client deletes the sandbox by ref, so the running call learns it from the
// server alone.
TEST_F(LizardCommandTest, DestroyByAnotherClientDuringACommandMakesItUnavailable) {
  std::thread destroyer([&] {
    LizardSandbox provider(options());
    auto observer = provider.attach(*backend_->ref());
    EXPECT_TRUE(Eventually([&] { return observer->exists("/workspace/running"); }));
    provider.destroy(*backend_->ref());
  });
  EXPECT_THAT([&] { backend_->run(Shell{"touch running; sleep 60"}); }, ThrowsUnavailable());
  destroyer.join();
}

class LizardLongCommandTest : public LizardBackendTest {
 protected:
  LizardLongCommandTest() : LizardBackendTest(MockOptions{.exec_limit = 1500ms}) {}
};

// lizard.long-command checks the output and that the command ran once; this
// also counts the re-attaching execs.
TEST_F(LizardLongCommandTest, ACommandOutlivingTheExecLimitCompletesOnce) {
  auto backend = make_backend();
  const auto result = backend->run(Shell{"echo x >> count; printf start; sleep 4; printf end"});
  EXPECT_EQ(result.out, "startend");
  EXPECT_EQ(backend->read_bytes("/workspace/count"), "x\n");
  EXPECT_GE(count(is_exec), 3u);
  RecordProperty("exec_requests", static_cast<int>(count(is_exec)));
}

}  // namespace
}  // namespace lizard::workspace
