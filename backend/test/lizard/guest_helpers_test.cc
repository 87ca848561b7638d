// The guest helpers (backend/src/lizard/guest/) run under this machine's
// /bin/sh: the argument and environment encoding, the run's idempotence,
// the file helpers (probe, mkdir, realpath, write), cancellation, and what a
// hostile command can do to the helper's processes and files. The command's
// streams, the output limit and the timeout: guest_streams_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "guest_helpers_test.h"
#include "lizard/testing/eventually.h"

namespace lizard::workspace::internal::guest_test {
namespace {

using namespace std::chrono_literals;
using lizard::testing::Eventually;

TEST_F(GuestHelpersTest, MissingProgramIs127AndNotExecutableIs126) {
  EXPECT_EQ(run(spec({"lizard-no-such-program-" + fresh_id()})).exit_code, 127);
  const std::string file = "/tmp/lizard-not-exec-" + fresh_id();
  std::ofstream(file) << "echo hi\n";
  EXPECT_EQ(run(spec({file})).exit_code, 126);
  std::filesystem::remove(file);
}

TEST_F(GuestHelpersTest, SignalDeathIs128PlusN) {
  EXPECT_EQ(run(spec({"/bin/sh", "-c", "kill -9 $$"})).exit_code, 137);
}

TEST_F(GuestHelpersTest, ArgvItemsArriveLiterallyIncludingInvalidUtf8) {
  std::string all_bytes;
  for (int c = 1; c < 256; ++c) all_bytes.push_back(static_cast<char>(c));
  const std::vector<std::string> items = {"$(echo no)", "`x`",      "'\"",     "a;b && c",
                                          "line\n",     "-n",       all_bytes, "\xff\xfe",
                                          "",           "trail\n\n"};
  std::vector<std::string> argv = {"/bin/sh", "-c", "for a do printf '%s\\0' \"$a\"; done", "sh"};
  argv.insert(argv.end(), items.begin(), items.end());
  const auto env = run(spec(argv));
  std::string expected;
  for (const auto& item : items) expected += item + std::string(1, '\0');
  EXPECT_EQ(env.out.value_or("?"), expected);
}

TEST_F(GuestHelpersTest, AFinishedRunLeavesNoWatchdogBehind) {
  auto s = spec({"true"});
  s.timeout_ms = 987654;  // a sleep argument no other process on this machine uses
  EXPECT_EQ(run(s).exit_code, 0);
  const auto sleeping = [] {
    return run_local({"/bin/sh", "-c", "ps -eo args | grep -c '^sleep 987.654$'"}).out;
  };
  EXPECT_TRUE(Eventually([&] { return sleeping() == "0\n"; }, 60s)) << sleeping();
}

TEST_F(GuestHelpersTest, ResendingTheSameRunDoesNotStartItAgain) {
  const std::string marker = "/tmp/lizard-count-" + fresh_id();
  const auto s = spec({"/bin/sh", "-c", "echo x >> " + marker + "; printf ok"});
  const auto first = run(s);
  const auto second = run(s);
  EXPECT_EQ(first.out, second.out);
  std::ifstream in(marker);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "x\n");
  std::filesystem::remove(marker);
}

TEST_F(GuestHelpersTest, CleanupListRemovesEarlierRunDirectories) {
  const auto first = spec({"true"});
  run(first);
  ASSERT_TRUE(std::filesystem::exists(file(first, "p")));
  ASSERT_TRUE(std::filesystem::exists(file(first, "o")));
  auto second = spec({"true"});
  second.cleanup = {first.run_id};
  run(second);
  // The removal runs beside the second command; wait for it with a deadline.
  const auto gone = [&] {
    return !std::filesystem::exists(file(first, "p")) &&
           !std::filesystem::exists(file(first, "o")) && !std::filesystem::exists(file(first, "e"));
  };
  EXPECT_TRUE(Eventually(gone, 60s));
  // The second run's own files stay (its status is the second line of its .p).
  EXPECT_TRUE(std::filesystem::exists(file(second, "p")));
  EXPECT_TRUE(std::filesystem::exists(file(second, "o")));
}

TEST_F(GuestHelpersTest, ProbeTellsDirectoriesFilesLoopsAndAbsence) {
  const std::string base = "/tmp/lizard-probe-" + fresh_id();
  std::filesystem::create_directories(base + "/dir");
  std::ofstream(base + "/file") << "12345";
  std::filesystem::create_directory_symlink(base + "/dir", base + "/to-dir");
  std::filesystem::create_symlink(base + "/loop", base + "/loop");
  std::filesystem::create_symlink(base + "/nowhere", base + "/dangling");
  const Local local = run_local(
      probe_command({base + "/to-dir", base + "/file", base + "/loop", base + "/dangling"}));
  EXPECT_EQ(local.out, "d\nf 5\nl\nn\n");
  std::filesystem::remove_all(base);
}

TEST_F(GuestHelpersTest, MkdirAndRealpathReportErrnoByExitCode) {
  const std::string base = "/tmp/lizard-mk-" + fresh_id();
  std::filesystem::create_directories(base);
  std::ofstream(base + "/file") << "x";
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/a/b")).status), 0);
  EXPECT_TRUE(std::filesystem::is_directory(base + "/a/b"));
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/file")).status), 17);
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/file/")).status), 17);
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "//file")).status), 17);
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/file/x")).status), 20);
  // Names that read like error messages change nothing: the errno comes from the disk.
  std::ofstream(base + "/File exists") << "x";
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/File exists/sub")).status), 20);
  std::filesystem::create_symlink(base + "/loop", base + "/loop");
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/loop/x")).status), 40);
  std::filesystem::create_symlink(base + "/nowhere", base + "/Too many levels of symbolic links");
  EXPECT_EQ(
      WEXITSTATUS(run_local(mkdir_command(base + "/Too many levels of symbolic links/x")).status),
      2);
  // What the disk cannot show comes from the end of mkdir's message, never
  // from the path in it.
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/" + std::string(300, 'n'))).status), 36);
  EXPECT_EQ(WEXITSTATUS(run_local(mkdir_command(base + "/file/x: File name too long")).status), 20);
  std::filesystem::create_directory_symlink("a", base + "/rel");
  EXPECT_EQ(run_local(realpath_command(base + "/rel/b/../missing")).out, base + "/a/missing\n");
  std::filesystem::remove_all(base);
}

TEST_F(GuestHelpersTest, TheEnvironmentArrivesExactlyWhateverTheNames) {
  // Read by a program started straight from the helper (a shell would reset IFS).
  auto s = spec({"cat", "/proc/self/environ"});
  // Exported by the shell, or through env(1): both must be exact.
  const std::vector<std::pair<std::string, std::string>> env = {{"IFS", "x"},
                                                                {"PLAIN", " two  spaces \n"},
                                                                {"A B", "spaced name"},
                                                                {"1X", "digit first"},
                                                                {"__lz_0", "helper's own"},
                                                                {"__lz_e0", "also"},
                                                                {"BIN", "\xff\xfe raw"},
                                                                {"EMPTY", ""},
                                                                {"-dash", "leading dash"}};
  s.env = env;
  const auto result = run(s);
  std::string expect_all;
  for (const auto& [k, v] : env) {
    const std::string entry = k + "=" + v + std::string(1, '\0');
    EXPECT_NE(result.out.value_or("").find(entry), std::string::npos) << k;
  }
  // IFS did not change how the helper reads its own fields.
  EXPECT_EQ(result.exit_code, 0);
}

TEST_F(GuestHelpersTest, IdentifierNamesAndPathAreExactToo) {
  auto s = spec({"printenv", "IFS", "PATH", "X_Y"});
  s.env = {{"IFS", ":"}, {"PATH", "/usr/bin:/bin:/lizard-nowhere"}, {"X_Y", "v"}};
  EXPECT_EQ(run(s).out.value_or("?"), ":\n/usr/bin:/bin:/lizard-nowhere\nv\n");
}

TEST_F(GuestHelpersTest, TheCommandStartsInItsWorkingDirectory) {
  auto s = spec({"pwd"});
  s.workdir = state_;
  std::filesystem::create_directories(state_);
  EXPECT_EQ(run(s).out.value_or("?"), state_ + "\n");
}

TEST_F(GuestHelpersTest, NoHelperProcessCarriesTheCommandsText) {
  // The command kills every process whose command line holds a fragment of
  // its own text: itself (its shell) included, as it would locally; the
  // helper survives and reports exactly that.
  const std::string fragment = "lzfrag" + fresh_id();
  const auto result = run(spec({"/bin/sh", "-c", "pkill -f " + fragment + "; echo after"}));
  EXPECT_EQ(result.exit_code, 143);
  EXPECT_EQ(result.out.value_or("?"), "");
}

TEST_F(GuestHelpersTest, ACommandThatRemovesTheRunFilesStillGetsItsResult) {
  const auto result = run(spec({"/bin/sh", "-c", "printf kept; rm -rf " + state_ + "; exit 4"}));
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.out.value_or("?"), "kept");
}

TEST_F(GuestHelpersTest, AnOversizedArgumentListIsRefusedBeforeAnythingRuns) {
  auto one = spec({"echo", std::string(256 * 1024, 'a')});
  EXPECT_NE(argument_list_problem(one).find("Argument list too long"), std::string::npos);
  auto many = spec({"true"});
  for (int i = 0; i < 64; ++i)
    many.env.emplace_back("V" + std::to_string(i), std::string(64 * 1024, 'v'));
  EXPECT_NE(argument_list_problem(many).find("Argument list too long"), std::string::npos);
  auto fine = spec({"echo", std::string(100 * 1024, 'a')});
  EXPECT_EQ(argument_list_problem(fine), "");
  EXPECT_EQ(run(fine).out_size, 100u * 1024 + 1);
}

TEST_F(GuestHelpersTest, BinaryWriteDecodesNextToTheTargetAndKeepsItsMode) {
  std::filesystem::create_directories(state_);
  const std::string target = state_ + "/dir/target";
  const std::string staged = state_ + "/staged.b64";
  std::ofstream(staged) << "//4A";  // ff fe 00
  EXPECT_EQ(parse_write_answer(run_local(write_command(staged, target)).out), 0);
  std::ifstream in(target, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, std::string("\xff\xfe\0", 3));
  EXPECT_FALSE(std::filesystem::exists(staged));
  std::filesystem::permissions(target, std::filesystem::perms(0751));
  std::ofstream(staged) << "QQ==";
  EXPECT_EQ(parse_write_answer(run_local(write_command(staged, target)).out), 0);
  EXPECT_EQ(static_cast<int>(std::filesystem::status(target).permissions()), 0751);
  std::ofstream(staged) << "QQ==";
  EXPECT_EQ(parse_write_answer(run_local(write_command(staged, state_ + "/dir")).out), 21);
  std::ofstream(staged) << "QQ==";
  EXPECT_EQ(parse_write_answer(run_local(write_command(staged, target + "/below")).out), 20);
}

// What a command does to the helper's processes and files (the command is
// untrusted; cmd.command-cannot-break-the-backend).

TEST_F(GuestHelpersTest, NoProcessCarriesTheHelpersOwnText) {
  // run.sh's text used to be the helper's argument: `pkill -f sleep` (or
  // kill, stat, head, env ...) killed the helper, and the run never ended.
  // The command prints the command lines of its parent (the helper) and of
  // the helper's parent (setsid -w).
  const auto result = run(spec({"/bin/sh", "-c",
                                "p=$PPID; for i in 1 2; do tr '\\0' ' ' </proc/$p/cmdline; echo; "
                                "read -r _ _ _ p _ </proc/$p/stat; done"}));
  const std::string lines = result.out.value_or("?");
  EXPECT_NE(lines.find("lizard-run"), std::string::npos) << lines;
  for (const char* word : {"sleep", "kill", "stat", "head", "__lz_sigignored"}) {
    EXPECT_EQ(lines.find(word), std::string::npos) << word << " in " << lines;
  }
}

TEST_F(GuestHelpersTest, KillingTheWatchdogsSleepDoesNotCancelTheTimeout) {
  auto s = spec({"/bin/sh", "-c",
                 "sleep 0.3; pkill -f '^sleep 1[.]234$'; printf killed; sleep 20; printf late"});
  s.timeout_ms = 1234;  // the watchdog's `sleep 1.234`, which no other process runs
  const auto env = run(s);
  EXPECT_TRUE(env.timed_out);
  EXPECT_EQ(env.out.value_or("?"), "killed");
}

TEST_F(GuestHelpersTest, ARunWhoseHelperDiedAnswersAFailureNotAWait) {
  // Claimed by a helper that is gone (no such pid), with no status line.
  const auto s = spec({"true"});
  std::filesystem::create_directories(state_);
  std::ofstream(file(s, "p")) << "999999999\n";
  const Local local = run_local(run_command(s));
  EXPECT_THROW(parse_envelope(local.out), std::runtime_error) << local.out;
}

TEST_F(GuestHelpersTest, AReattachWhoseOutputFileWasRemovedIsAnErrorNotEmptyOutput) {
  const auto s = spec({"/bin/sh", "-c", "printf kept"});
  EXPECT_EQ(run(s).out.value_or("?"), "kept");
  std::filesystem::remove(file(s, "o"));
  const Local again = run_local(run_command(s));  // a re-attach: reads the files
  EXPECT_THROW(parse_envelope(again.out), std::runtime_error) << again.out;
}

TEST_F(GuestHelpersTest, CancellingBeforeTheStartMeansItNeverStarts) {
  const std::string marker = "/tmp/lizard-never-" + fresh_id();
  const auto s = spec({"/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(run_local(kill_command(state_, s.run_id)).status, 0);
  const auto env = run(s);  // the exec that arrives after the cancel
  EXPECT_EQ(env.exit_code, 137);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(GuestHelpersTest, CancellingARunThatNeverStartedKillsNothing) {
  // The E2BIG case leaves pid 0; `kill -KILL -0` would kill kill.sh's own
  // process group, which here is this test's.
  const auto s = spec({"true"});
  std::filesystem::create_directories(state_);
  std::ofstream(file(s, "p")) << "1\n0\n";
  EXPECT_EQ(run_local(kill_command(state_, s.run_id)).status, 0);
}

TEST_F(GuestHelpersTest, ShellSpecialNamesArriveExactly) {
  auto s = spec({"printenv", "OPTIND", "RANDOM", "SECONDS", "PPID"});
  s.env = {{"OPTIND", "abc"}, {"RANDOM", "r"}, {"SECONDS", "s"}, {"PPID", "p"}};
  const auto env = run(s);
  EXPECT_EQ(env.exit_code, 0);
  EXPECT_EQ(env.out.value_or("?"), "abc\nr\ns\np\n");
}

TEST_F(GuestHelpersTest, ManyArgvItemsArriveInOrder) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "echo $#; shift 499; echo \"$1 $2\"", "sh"};
  for (int i = 0; i < 20000; ++i) argv.push_back("a" + std::to_string(i));
  EXPECT_EQ(run(spec(argv)).out.value_or("?"), "20000\na499 a500\n");
}

TEST(EnvelopeTest, CutShortIsAbsentAndFailureThrows) {
  EXPECT_FALSE(parse_envelope("").has_value());
  EXPECT_FALSE(parse_envelope("LZ2 0 0 0 3 0 0\nbb3V0\n").has_value());
  EXPECT_FALSE(parse_envelope("LZ1 3 1 0 3 0\nbb3V0\nb\nLZEND\n").has_value());
  const auto started = parse_envelope("LZ2 126 0 0 0 0 7\nb\nb\nLZEND\n");
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->start_errno, 7);
  const auto env = parse_envelope("noise\nLZ2 3 1 0 3 0 0\nbb3V0\nb\nLZEND\n");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->exit_code, 3);
  EXPECT_TRUE(env->timed_out);
  EXPECT_EQ(env->out.value_or("?"), "out");
  EXPECT_EQ(env->err.value_or("?"), "");
  EXPECT_THROW(parse_envelope("LZFAIL no setsid\n"), std::runtime_error);
  // A stream shorter than its size (its file was cut before the answer).
  EXPECT_THROW(parse_envelope("LZ2 0 0 0 5 0 0\nbb3V0\nb\nLZEND\n"), std::runtime_error);
  EXPECT_THROW(parse_envelope("LZ2 0 0 1 100000 0 0\nbb3V0\nb\nLZEND\n"), std::runtime_error);
  EXPECT_TRUE(parse_envelope("LZ2 0 0 1 3 0 0\nbb3V0\nb\nLZEND\n").has_value());
}

TEST(EncodeItemTest, ValidUtf8IsRawOthersBase64) {
  EXPECT_EQ(encode_item("héllo"), "rhéllo");
  EXPECT_EQ(encode_item("\xff"), "b/w==");
}

}  // namespace
}  // namespace lizard::workspace::internal::guest_test
