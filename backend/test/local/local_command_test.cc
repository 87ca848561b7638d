// LocalWorkspaceBackend::run: the cmd.* rules of the workspace contract.
// Beyond the suite's cmd.* rules (ctest conformance_local): program lookup
// on the command's PATH, scripts without a shebang, a group that ignores
// SIGTERM, no inherited descriptors, the exact minimal environment, a run
// cancelled before it starts, signal_own_group and signal_group_of.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <stop_token>
#include <thread>
#include <vector>

#include "lizard/workspace/errors.h"
#include "local/local_process.h"
#include "local_test_support.h"

namespace lizard::workspace {
namespace {

using local_test::Eventually;
using local_test::LocalBackendTest;
using local_test::process_gone;
using ::testing::HasSubstr;
using ::testing::Not;

// A test that takes longer than this has hung (generous: the machine is shared).
constexpr auto kHangBound = std::chrono::seconds(20);

std::string random_token() {
  std::random_device device;
  std::mt19937_64 engine(device());
  return std::to_string(engine());
}

using Commands = LocalBackendTest;

TEST_F(Commands, ResultFields) {
  const auto result = backend_->run(Shell{"printf out; printf err >&2; exit 7"});
  EXPECT_EQ(result, (CommandResult{7, "out", "err"}));
}

// Any positive, finite timeout is valid: one past what the clock's
// nanoseconds hold (about 9.2e9 s) used to overflow into a deadline in the
// past, and the command timed out at once.
TEST_F(Commands, HugeTimeoutsAreNoDeadlineInPractice) {
  for (const double seconds : {9.3e9, 1e10, 1e300}) {
    RunOptions options;
    options.timeout = Seconds(seconds);
    EXPECT_EQ(backend_->run(Shell{"echo hi"}, options), (CommandResult{0, "hi\n", ""})) << seconds;
  }
}

TEST_F(Commands, StdinAtEof) {
  EXPECT_EQ(backend_->run(Shell{"read value || printf eof"}).out, "eof");
  EXPECT_EQ(backend_->run(Argv{{"cat"}}), (CommandResult{0, "", ""}));
}

TEST_F(Commands, MissingProgramIs127) {
  const auto by_name = backend_->run(Argv{{"lizard-no-such-program-" + random_token()}});
  EXPECT_EQ(by_name.exit_code, 127);
  EXPECT_THAT(by_name.err, HasSubstr("lizard-no-such-program-"));
  EXPECT_EQ(backend_->run(Argv{{at("missing/tool")}}).exit_code, 127);
  EXPECT_EQ(backend_->run(Argv{{"./missing-tool"}}).exit_code, 127);
  EXPECT_EQ(backend_->run(Shell{"lizard-no-such-program"}).exit_code, 127);
}

TEST_F(Commands, NotExecutableIs126) {
  backend_->write_bytes(at("plain.sh"), "#!/bin/sh\necho ran\n");
  ASSERT_EQ(::chmod(at("plain.sh").c_str(), 0644), 0);
  const auto by_path = backend_->run(Argv{{at("plain.sh")}});
  EXPECT_EQ(by_path.exit_code, 126);
  EXPECT_EQ(by_path.out, "");
  // Found on PATH but not executable: 126 as well (execvp's EACCES).
  backend_->write_bytes(at("bin/plain"), "#!/bin/sh\necho ran\n");
  RunOptions options;
  options.env["PATH"] = at("bin");
  EXPECT_EQ(backend_->run(Argv{{"plain"}}, options).exit_code, 126);
  // A directory is not executable either.
  backend_->make_dir(at("adir"));
  EXPECT_EQ(backend_->run(Argv{{at("adir")}}).exit_code, 126);
}

TEST_F(Commands, ProgramLookupUsesTheCommandPath) {
  backend_->write_bytes(at("bin/hello-tool"), "#!/bin/sh\nprintf 'hello %s' \"$1\"\n");
  ASSERT_EQ(::chmod(at("bin/hello-tool").c_str(), 0755), 0);
  EXPECT_EQ(backend_->run(Argv{{"hello-tool", "x"}}).exit_code, 127);
  RunOptions options;
  options.env["PATH"] = at("bin") + ":/usr/bin:/bin";
  EXPECT_EQ(backend_->run(Argv{{"hello-tool", "x"}}, options), (CommandResult{0, "hello x", ""}));
  // A relative program path resolves from the working directory.
  EXPECT_EQ(backend_->run(Argv{{"./bin/hello-tool", "y"}}).out, "hello y");
}

TEST_F(Commands, ExecutableWithoutShebangRunsWithSh) {
  backend_->write_bytes(at("noshebang"), "printf 'via sh %s' \"$1\"\n");
  ASSERT_EQ(::chmod(at("noshebang").c_str(), 0755), 0);
  EXPECT_EQ(backend_->run(Argv{{at("noshebang"), "arg"}}), (CommandResult{0, "via sh arg", ""}));
}

TEST_F(Commands, SignalExitCode) {
  EXPECT_EQ(backend_->run(Shell{"kill -9 $$"}).exit_code, 137);
  EXPECT_EQ(backend_->run(Shell{"kill -TERM $$"}).exit_code, 143);
  EXPECT_EQ(backend_->run(Argv{{"sh", "-c", "kill -INT $$"}}).exit_code, 130);
}

TEST_F(Commands, ArgvItemsArriveLiterally) {
  std::string item = "$(touch pwned) `touch pwned2` 'single' \"double\" ; && || \n newline \\ *";
  item += std::string(100 * 1024, 'x');
  const std::vector<std::string> items = {item, "-n", "--", "$HOME", "", "a b", "é😀"};
  for (const auto& one : items) {
    EXPECT_EQ(backend_->run(Argv{{"printf", "%s", one}}).out, one) << one.substr(0, 40);
  }
  EXPECT_FALSE(backend_->exists(at("pwned")));
  EXPECT_FALSE(backend_->exists(at("pwned2")));
  // Several items keep their boundaries.
  EXPECT_EQ(backend_->run(Argv{{"printf", "[%s]", "a b", "", "c"}}).out, "[a b][][c]");
}

TEST_F(Commands, InvalidUtf8BecomesReplacementOnBothStreams) {
  const auto result = backend_->run(Shell{"printf 'a\\377b'; printf 'c\\300d' >&2"});
  EXPECT_EQ(result.out,
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(result.err,
            "c\xEF\xBF\xBD"
            "d");
}

TEST_F(Commands, MultiByteCharactersSurviveReadBoundaries) {
  // 3-byte and 4-byte characters after a 1-byte offset, far more than one
  // pipe read, so characters straddle every chunk boundary.
  std::string text = "x";
  for (int i = 0; i < 60000; ++i) text += (i % 2 == 0) ? "\xE2\x82\xAC" : "\xF0\x9F\x98\x80";
  backend_->write_bytes(at("text"), text);
  const auto result = backend_->run(Shell{"cat text; cat text >&2"});
  EXPECT_EQ(result.out, text);
  EXPECT_EQ(result.err, text);
}

TEST_F(Commands, NulBytesAreKept) {
  const auto result = backend_->run(Shell{"printf 'a\\000b'; printf '\\000' >&2"});
  EXPECT_EQ(result.out, std::string("a\0b", 3));
  EXPECT_EQ(result.err, std::string("\0", 1));
}

TEST_F(Commands, StreamsStaySeparateAndOrdered) {
  const auto result = backend_->run(
      Shell{"i=0; while [ $i -lt 300 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done"});
  std::string want_out, want_err;
  for (int i = 0; i < 300; ++i) {
    want_out += "out" + std::to_string(i) + "\n";
    want_err += "err" + std::to_string(i) + "\n";
  }
  EXPECT_EQ(result.out, want_out);
  EXPECT_EQ(result.err, want_err);
}

TEST_F(Commands, OutputComesBackComplete) {
  for (const std::size_t size : {std::size_t{9 * 1024}, std::size_t{5 * 1024 * 1024}}) {
    const std::string n = std::to_string(size);
    // Both streams written at the same time, so neither pipe can be left unread.
    const auto result =
        backend_->run(Shell{"head -c " + n + " /dev/zero | tr '\\0' e >&2 & head -c " + n +
                            " /dev/zero | tr '\\0' o; wait"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.out, std::string(size, 'o')) << size;
    EXPECT_EQ(result.err, std::string(size, 'e')) << size;
  }
}

TEST_F(Commands, ExactlyTheLimitIsNotOver) {
  const auto result = backend_->run(
      Shell{"head -c " + std::to_string(kOutputLimitBytes) + " /dev/zero | tr '\\0' a"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out.size(), kOutputLimitBytes);
  EXPECT_EQ(result.out, std::string(kOutputLimitBytes, 'a'));
}

TEST_F(Commands, OneByteOverTheLimitThrowsWithHeadsAndStopsTheGroup) {
  const std::string over = std::to_string(kOutputLimitBytes + 1);
  for (const std::string stream : {"", ">&2"}) {
    const std::string script = "sleep 300 & echo $! > bg.pid; printf small" +
                               std::string(stream.empty() ? " >&2" : "") + "; head -c " + over +
                               " /dev/zero | tr '\\0' a " + stream + "; sleep 300";
    try {
      backend_->run(Shell{script});
      ADD_FAILURE() << "no output-limit error for " << stream;
    } catch (const WorkspaceOutputLimitError& error) {
      EXPECT_EQ(error.limit(), kOutputLimitBytes);
      const std::string& big = stream.empty() ? error.out_head() : error.err_head();
      const std::string& small = stream.empty() ? error.err_head() : error.out_head();
      EXPECT_EQ(big, std::string(kOutputHeadBytes, 'a'));
      EXPECT_EQ(small, "small");
    }
    const pid_t background = pid_in("bg.pid");
    EXPECT_TRUE(Eventually([&] { return process_gone(background); })) << background;
  }
}

// What the other stream held when one went over is in the error's heads,
// even when it is still in its pipe (the reader was busy with the flood).
TEST_F(Commands, OverTheLimitTheOtherStreamsHeadHasWhatWasWrittenBefore) {
  const std::string before = std::to_string(kOutputLimitBytes - 60);
  for (int i = 0; i < 5; ++i) {
    try {
      // One process, no pause between the writes (a shell's next program's
      // start gave the reader time to take stderr first).
      backend_->run(Argv{{"perl", "-e",
                          "$| = 1; print STDOUT 'x' x " + before +
                              "; print STDERR 'ERR'; print STDOUT 'x' x 100"}});
      ADD_FAILURE() << "no output-limit error";
    } catch (const WorkspaceOutputLimitError& error) {
      EXPECT_EQ(error.err_head(), "ERR") << "run " << i;
    }
  }
}

TEST_F(Commands, BackgroundChildDoesNotHoldTheResult) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = backend_->run(Shell{"sleep 300 & echo $!; echo done"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, kHangBound);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("done\n"));
  const pid_t child = static_cast<pid_t>(std::stol(result.out));
  // The background child keeps running after run() returned...
  EXPECT_FALSE(process_gone(child));
  // ...until the environment is destroyed.
  backend_->destroy();
  EXPECT_TRUE(Eventually([&] { return process_gone(child); }));
  backend_.reset();
}

TEST_F(Commands, TimeoutThrowsWithPartialOutput) {
  RunOptions options;
  options.timeout = Seconds(0.5);
  const auto start = std::chrono::steady_clock::now();
  try {
    backend_->run(Shell{"printf 'partial \\377'; printf perr >&2; sleep 300"}, options);
    FAIL() << "no timeout";
  } catch (const WorkspaceTimeoutError& error) {
    EXPECT_EQ(error.out(), "partial \xEF\xBF\xBD");
    EXPECT_EQ(error.err(), "perr");
    EXPECT_DOUBLE_EQ(error.timeout().count(), 0.5);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, kHangBound);
}

TEST_F(Commands, CommandWithinItsTimeoutCompletes) {
  RunOptions options;
  options.timeout = Seconds(30);
  EXPECT_EQ(backend_->run(Shell{"printf ok"}, options), (CommandResult{0, "ok", ""}));
}

TEST_F(Commands, TimeoutStopsTheGroupEvenWhenItIgnoresSigterm) {
  RunOptions options;
  options.timeout = Seconds(0.5);
  // The ignored SIGTERM is inherited by the children: only SIGKILL ends them.
  EXPECT_THROW(backend_->run(Shell{"trap '' TERM; echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; "
                                   "sleep 300"},
                             options),
               WorkspaceTimeoutError);
  const pid_t shell = pid_in("sh.pid");
  const pid_t background = pid_in("bg.pid");
  EXPECT_TRUE(Eventually([&] { return process_gone(shell); }));
  EXPECT_TRUE(Eventually([&] { return process_gone(background); }));
}

TEST_F(Commands, InvalidTimeoutsRunNothing) {
  for (const double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    RunOptions options;
    options.timeout = Seconds(bad);
    EXPECT_THROW(backend_->run(Shell{"touch ran"}, options), std::invalid_argument) << bad;
  }
  EXPECT_THROW(backend_->run(Argv{}), std::invalid_argument);
  RunOptions bad_env;
  bad_env.env["A=B"] = "x";
  EXPECT_THROW(backend_->run(Shell{"touch ran"}, bad_env), std::invalid_argument);
  EXPECT_FALSE(backend_->exists(at("ran")));
}

TEST_F(Commands, CancellationStopsTheGroup) {
  std::stop_source source;
  RunOptions options;
  options.stop = source.get_token();
  std::jthread canceller([&] {
    if (Eventually([&] { return backend_->exists(at("bg.pid")); })) source.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(backend_->run(Shell{"sleep 300 & echo $! > bg.pid.tmp; mv bg.pid.tmp bg.pid; "
                                   "sleep 300"},
                             options),
               WorkspaceCancelledError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kHangBound);
  const pid_t background = pid_in("bg.pid");
  EXPECT_TRUE(Eventually([&] { return process_gone(background); }));
}

TEST_F(Commands, AlreadyCancelledRunsNothing) {
  std::stop_source source;
  source.request_stop();
  RunOptions options;
  options.stop = source.get_token();
  EXPECT_THROW(backend_->run(Shell{"touch ran"}, options), WorkspaceCancelledError);
  EXPECT_FALSE(backend_->exists(at("ran")));
}

TEST_F(Commands, EnvAddedOnTopOfTheBackendsOwn) {
  LocalWorkspaceBackend with_env(LocalOptions{root_, {{"BASE", "b"}, {"BOTH", "backend"}}, {}});
  RunOptions options;
  options.env = {{"CALL", "c d"}, {"BOTH", "call"}};
  EXPECT_EQ(with_env.run(Shell{"printf '%s|%s|%s' \"$BASE\" \"$CALL\" \"$BOTH\""}, options).out,
            "b|c d|call");
  EXPECT_EQ(with_env.run(Shell{"printf '%s' \"$BOTH\""}).out, "backend");
}

TEST_F(Commands, HostEnvironmentIsNotInherited) {
  const std::string canary_name = "LIZARD_LOCAL_CANARY_" + random_token();
  const std::string canary_value = "canary-" + random_token();
  const std::string key_value = "lizard-key-" + random_token();
  ASSERT_EQ(::setenv(canary_name.c_str(), canary_value.c_str(), 1), 0);
  ASSERT_EQ(::setenv("LIZARD_API_KEY", key_value.c_str(), 1), 0);
  const auto result = backend_->run(Argv{{"env"}});
  ::unsetenv(canary_name.c_str());
  ::unsetenv("LIZARD_API_KEY");
  EXPECT_THAT(result.out, Not(HasSubstr(canary_value)));
  EXPECT_THAT(result.out, Not(HasSubstr(canary_name)));
  EXPECT_THAT(result.out, Not(HasSubstr(key_value)));
  // Exactly the minimal environment.
  EXPECT_EQ(result.out, "HOME=" + root_ + "\nLANG=C.UTF-8\nPATH=" +
                            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n");
}

TEST_F(Commands, StartsInTheWorkingDirectory) {
  EXPECT_EQ(backend_->run(Shell{"pwd -P"}).out, root_ + "\n");
  EXPECT_EQ(backend_->run(Argv{{"pwd"}}).out, root_ + "\n");
}

TEST_F(Commands, NoDescriptorLeaksIntoTheChild) {
  // The shell's own descriptors: stdin, stdout, stderr and nothing else.
  EXPECT_EQ(backend_->run(Shell{"ls /proc/$$/fd"}).out, "0\n1\n2\n");
}

TEST_F(Commands, SixteenConcurrentCommandsGetTheirOwnOutput) {
  constexpr int kCommands = 16;
  std::vector<CommandResult> results(kCommands);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kCommands; ++i) {
      threads.emplace_back([&, i] {
        const std::string n = std::to_string(i);
        results[i] = backend_->run(Shell{"head -c 200000 /dev/zero | tr '\\0' " +
                                         std::string(1, char('a' + i)) + "; printf err" + n +
                                         " >&2; exit " + n});
      });
    }
  }
  for (int i = 0; i < kCommands; ++i) {
    EXPECT_EQ(results[i].exit_code, i);
    EXPECT_EQ(results[i].out, std::string(200000, char('a' + i))) << i;
    EXPECT_EQ(results[i].err, "err" + std::to_string(i));
  }
}

TEST(OwnGroupSignal, SignalsOnlyGroupsOfThisSession) {
  // A group id that no process uses is never signalled.
  EXPECT_FALSE(internal::signal_own_group(std::numeric_limits<pid_t>::max(), 0));
  // This process's own group is in its session (signal 0 only probes).
  EXPECT_TRUE(internal::signal_own_group(::getpgrp(), 0));
}

// destroy() stops a command's lingering group only while a member it saw
// then still runs: once they all ended, the group id may be another
// command's (the pids wrapped), and that one must not be killed.
TEST(OwnGroupSignal, ALingeringGroupIsSignalledOnlyWhileAMemberSeenThenLives) {
  const auto members = internal::own_group_members(::getpgrp());
  ASSERT_FALSE(members.empty());
  EXPECT_TRUE(std::any_of(members.begin(), members.end(),
                          [](const internal::ProcessIdentity& m) { return m.pid == ::getpid(); }));
  EXPECT_TRUE(internal::signal_group_of(::getpgrp(), members, 0));
  // The same pids with other start times: processes that ended, their pids
  // (and so the group's id) reused by others.
  auto gone = members;
  for (auto& m : gone) m.start += 1;
  EXPECT_FALSE(internal::signal_group_of(::getpgrp(), gone, 0));
  EXPECT_FALSE(internal::signal_group_of(::getpgrp(), {}, 0));
}

}  // namespace
}  // namespace lizard::workspace
