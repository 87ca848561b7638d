// The guest helpers are plain POSIX sh: these tests run them under this
// machine's /bin/sh (no server), as the sandbox would.
#include "lizard/guest_helpers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lizard/testing/eventually.h"

extern char** environ;

namespace lizard::workspace::internal {
namespace {

using namespace std::chrono_literals;
using lizard::testing::Eventually;

struct Local {
  int status = -1;
  std::string out;
};

// This process's environment with the PATH a sandbox has: a caller's PATH
// may hold a directory this user cannot search (root's PATH under runuser),
// and then a missing program is EACCES (126) to sh and setsid, not 127.
// `first` goes before the sandbox's PATH when it is not empty.
// `extra`, when not empty, is one more NAME=VALUE entry.
std::vector<char*> sandbox_environment(std::string& path, const std::string& first,
                                       std::string& extra) {
  path = "PATH=" + (first.empty() ? "" : first + ":") +
         "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, 5) != "PATH=") env.push_back(*e);
  }
  env.push_back(path.data());
  if (!extra.empty()) env.push_back(extra.data());
  env.push_back(nullptr);
  return env;
}

// Runs argv on this machine with stdin at EOF, in /tmp, and collects stdout.
// `path_first`: a directory searched before the sandbox's PATH; `extra`: one
// more environment entry.
Local run_local(const std::vector<std::string>& argv, const std::string& path_first = "",
                std::string extra = "") {
  int pipe_fds[2];
  EXPECT_EQ(pipe(pipe_fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  std::string path;
  std::vector<char*> env = sandbox_environment(path, path_first, extra);
  EXPECT_EQ(posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  Local result;
  char buffer[65536];
  ssize_t n = 0;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.out.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = status;
  return result;
}

std::string fresh_id() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  char text[17];
  snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(gen()));
  return text;
}

class GuestHelpersTest : public ::testing::Test {
 protected:
  GuestHelpersTest() {
    state_ = (std::filesystem::temp_directory_path() / ("lizard-guest-" + fresh_id())).string();
  }
  RunSpec spec(std::vector<std::string> argv) {
    RunSpec s;
    s.run_id = fresh_id();
    s.argv = std::move(argv);
    s.limit_bytes = 10u * 1024 * 1024;
    s.state_dir = state_;
    s.workdir = "/tmp";
    return s;
  }
  std::string file(const RunSpec& s, const char* suffix) const {
    return run_file(state_, s.run_id, suffix);
  }
  Envelope run(const RunSpec& s, const std::string& path_first = "") {
    return run_with(s, path_first, "");
  }
  // The helper's way without pipes (a shell whose here-documents are files):
  // the command writes the run's files itself.
  Envelope run_on_files(const RunSpec& s) { return run_with(s, "", "__lz_files=1"); }
  Envelope run_with(const RunSpec& s, const std::string& path_first, const std::string& extra) {
    const Local local = run_local(run_command(s), path_first, extra);
    auto env = parse_envelope(local.out);
    EXPECT_TRUE(env.has_value()) << local.out.substr(0, 500);
    return env.value_or(Envelope{});
  }
  void TearDown() override { std::filesystem::remove_all(state_); }
  std::string state_;
};

TEST_F(GuestHelpersTest, ReportsExitCodeAndBothStreams) {
  const auto env = run(spec({"/bin/sh", "-c", "printf out; printf err >&2; exit 7"}));
  EXPECT_EQ(env.exit_code, 7);
  EXPECT_EQ(env.out.value_or("?"), "out");
  EXPECT_EQ(env.err.value_or("?"), "err");
  EXPECT_EQ(env.out_size, 3u);
  EXPECT_FALSE(env.timed_out);
  EXPECT_FALSE(env.over_limit);
}

// The streams are pipes: reopening one with O_TRUNC (`> /dev/stdout`, a
// program's `-o /dev/stderr`) appends, as it does to a local command. The
// run's files, which the command wrote itself before, lost what came before.
TEST_F(GuestHelpersTest, ReopeningAStreamWithTruncationKeepsWhatCameBefore) {
  const std::vector<std::string> argv = {
      "/bin/sh", "-c",
      "echo first; echo second > /dev/stdout; echo e1 >&2; echo e2 > /dev/stderr; "
      "echo third | dd of=/dev/stdout status=none"};
  const auto env = run(spec(argv));
  EXPECT_EQ(env.out.value_or("?"), "first\nsecond\nthird\n");
  EXPECT_EQ(env.err.value_or("?"), "e1\ne2\n");
  // The way without pipes, where a shell makes none, still truncates (docs/backend.md).
  const auto files = run_on_files(spec(argv));
  EXPECT_EQ(files.out.value_or("?"), "third\n");
  EXPECT_EQ(files.err.value_or("?"), "e2\n");
}

// Without pipes the command writes the files and an output watcher polls
// them: every guarantee but the one above holds there too.
TEST_F(GuestHelpersTest, TheWayWithoutPipesKeepsTheOtherGuarantees) {
  const auto plain = run_on_files(spec({"/bin/sh", "-c", "printf out; printf err >&2; exit 7"}));
  EXPECT_EQ(plain.exit_code, 7);
  EXPECT_EQ(plain.out.value_or("?"), "out");
  EXPECT_EQ(plain.err.value_or("?"), "err");
  auto flood = spec({"/bin/sh", "-c", "head -c 5000 /dev/zero; sleep 30; printf late"});
  flood.limit_bytes = 1000;
  const auto over = run_on_files(flood);
  EXPECT_TRUE(over.over_limit);
  EXPECT_EQ(over.out.value_or("?"), std::string(5000, '\0'));
  auto slow = spec({"/bin/sh", "-c", "printf before; sleep 30; printf after"});
  slow.timeout_ms = 300;
  const auto timed = run_on_files(slow);
  EXPECT_TRUE(timed.timed_out);
  EXPECT_EQ(timed.out.value_or("?"), "before");
  const auto held = run_on_files(spec({"/bin/sh", "-c", "sleep 20 & printf done"}));
  EXPECT_EQ(held.out.value_or("?"), "done");
}

// Many runs at once: each gets its own streams, whole. A copier that could
// start reading before its command opened the stream's pipe took the pipe
// for ended and left the command without a reader (SIGPIPE, exit 141): seen
// once under the suite's load, when the helper did not yet hold the write
// ends until both were started.
TEST_F(GuestHelpersTest, ManyRunsAtOnceEachGetTheirOwnStreams) {
  constexpr int kRuns = 24;
  std::vector<Envelope> results(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([&, i] {
      const std::string n = std::to_string(i);
      results[i] = run(spec({"/bin/sh", "-c", "printf o" + n + "; printf e" + n + " >&2; exit 7"}));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kRuns; ++i) {
    EXPECT_EQ(results[i].exit_code, 7) << i;
    EXPECT_EQ(results[i].out.value_or("?"), "o" + std::to_string(i));
    EXPECT_EQ(results[i].err.value_or("?"), "e" + std::to_string(i));
  }
}

// A command that ignores SIGPIPE and write errors outlives the copier that
// stopped at the limit: the copier stops its group (no timeout here).
TEST_F(GuestHelpersTest, PastTheLimitAWriterThatIgnoresBrokenPipesIsStopped) {
  auto s = spec({"/bin/sh", "-c", "trap '' PIPE; while :; do echo 0123456789; done 2>/dev/null"});
  s.limit_bytes = 1000;
  const auto env = run(s);
  EXPECT_TRUE(env.over_limit);
  EXPECT_EQ(env.exit_code, 137);
  EXPECT_EQ(env.out.value_or("?").substr(0, 11), "0123456789\n");
}

// A background child keeps the stream open: the answer comes after the drain
// grace with what the command wrote, and the child's later writes do not
// kill it (its copier goes on until it ends).
TEST_F(GuestHelpersTest, ABackgroundChildThatWritesLaterKeepsRunning) {
  const std::string marker = state_ + "-marker";
  const auto env = run(
      spec({"/bin/sh", "-c",
            "(sleep 1; echo late; echo late >&2; sleep 0.2; touch " + marker + ") & printf done"}));
  EXPECT_EQ(env.out.value_or("?"), "done");
  EXPECT_TRUE(Eventually([&] { return std::filesystem::exists(marker); }, 30s));
  std::filesystem::remove(marker);
}

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

TEST_F(GuestHelpersTest, OutputOverTheLimitIsFlaggedWithHeads) {
  auto s = spec({"/bin/sh", "-c", "printf e >&2; head -c 5000 /dev/zero; sleep 30"});
  s.limit_bytes = 1000;
  const auto start = std::chrono::steady_clock::now();
  const auto env = run(s);
  EXPECT_TRUE(env.over_limit);
  // The head: what the command wrote before it was stopped, at most 64 KiB.
  EXPECT_GT(env.out.value_or("").size(), 1000u);
  EXPECT_LE(env.out.value_or("").size(), 65536u);
  EXPECT_EQ(env.err.value_or(""), "e");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));  // did not hang
}

TEST_F(GuestHelpersTest, ExactlyTheLimitIsNotOver) {
  auto s = spec({"/bin/sh", "-c", "head -c 1000 /dev/zero"});
  s.limit_bytes = 1000;
  const auto env = run(s);
  EXPECT_FALSE(env.over_limit);
  EXPECT_EQ(env.out_size, 1000u);
}

TEST_F(GuestHelpersTest, TimeoutStopsTheGroupAndKeepsPartialOutput) {
  auto s = spec({"/bin/sh", "-c", "printf before; sleep 30 & sleep 30; printf after"});
  s.timeout_ms = 500;
  const auto env = run(s);
  EXPECT_TRUE(env.timed_out);
  EXPECT_EQ(env.out.value_or("?"), "before");
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

TEST_F(GuestHelpersTest, BackgroundChildHoldingStdoutDoesNotHoldTheResult) {
  const auto start = std::chrono::steady_clock::now();
  const auto env = run(spec({"/bin/sh", "-c", "sleep 20 & printf done"}));
  EXPECT_EQ(env.out.value_or("?"), "done");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
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

TEST_F(GuestHelpersTest, LargeOutputIsLeftInFilesNotInline) {
  auto s = spec({"/bin/sh", "-c", "head -c 150000 /dev/zero; head -c 300000 /dev/zero >&2"});
  const auto env = run(s);
  EXPECT_EQ(env.out_size, 150000u);
  EXPECT_EQ(env.err_size, 300000u);
  // Together they exceed the inline budget; the smaller stream still fits half of it.
  EXPECT_EQ(env.out.value_or("?"), std::string(150000, '\0'));
  EXPECT_FALSE(env.err.has_value());
  auto big = spec({"/bin/sh", "-c", "head -c 1000000 /dev/zero"});
  const auto big_env = run(big);
  EXPECT_FALSE(big_env.out.has_value());
  EXPECT_EQ(std::filesystem::file_size(file(big, "o")), 1000000u);
}

// A stream of at most min(limit, half the inline budget) bytes is read whole
// and sized by what was read; a larger one is measured by one stat. Every
// size and inline decision is the same either way, at each boundary, with
// every base64 padding (sizes 3k, 3k+1, 3k+2); the exit's stat calls are
// counted through a stat first on the helper's PATH.
TEST_F(GuestHelpersTest, SmallStreamsAreSizedByTheirReadAndLargerOnesByOneStat) {
  const std::filesystem::path dir = state_ + "-bin";
  std::filesystem::create_directories(dir);
  const std::string log = (dir / "stat.log").string();
  {
    std::ofstream stat(dir / "stat");
    // The output watcher's stat (its names after --) runs only when the
    // command outlives 20 ms: not counted.
    stat << "#!/bin/sh\ncase \" $* \" in *\" -- \"*) ;; *) echo called >>'" << log
         << "' ;; esac\nexec /usr/bin/stat \"$@\"\n";
  }
  std::filesystem::permissions(dir / "stat", std::filesystem::perms::owner_all);
  const auto stat_calls = [&] {
    std::ifstream in(log);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    std::filesystem::remove(log);
    return n;
  };
  // Bytes of every value, '=' and NUL among them.
  const auto bytes = [](std::size_t n) {
    std::string b(n, '\0');
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
    return b;
  };
  struct Case {
    std::uint64_t limit, budget;
    std::size_t out, err;
    bool over, out_inline, err_inline;
    std::size_t stats;
  };
  const Case cases[] = {
      // limit 1000 under half the budget (2000): 1000 is read whole, 1001 is over.
      {1000, 4000, 998, 0, false, true, true, 0},
      {1000, 4000, 999, 1, false, true, true, 0},
      {1000, 4000, 1000, 1000, false, true, true, 0},
      {1000, 4000, 1001, 5, true, true, true, 1},
      {1000, 4000, 0, 1001, true, true, true, 1},
      // Half the budget (1000) under the limit: together up to the budget
      // both are inline, past it each one of at most half.
      {100000, 2000, 1000, 1000, false, true, true, 0},
      {100000, 2000, 1001, 999, false, true, true, 1},
      {100000, 2000, 1001, 1000, false, false, true, 1},
      {100000, 2000, 1000, 1002, false, true, false, 1},
      {100000, 2000, 3000, 0, false, false, true, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("limit " + std::to_string(c.limit) + ", budget " + std::to_string(c.budget) +
                 ", out " + std::to_string(c.out) + ", err " + std::to_string(c.err));
    const std::string out_file = (dir / "out").string();
    const std::string err_file = (dir / "err").string();
    std::ofstream(out_file, std::ios::binary) << bytes(c.out);
    std::ofstream(err_file, std::ios::binary) << bytes(c.err + 1).substr(1);
    auto s = spec({"/bin/sh", "-c", "cat \"$1\"; cat \"$2\" >&2", "sh", out_file, err_file});
    s.limit_bytes = c.limit;
    s.inline_budget = c.budget;
    const auto env = run(s, dir.string());
    EXPECT_EQ(env.over_limit, c.over);
    EXPECT_EQ(env.out_size, c.out);
    EXPECT_EQ(env.err_size, c.err);
    EXPECT_EQ(stat_calls(), c.stats);
    if (c.over) continue;  // the heads are OutputOverTheLimitIsFlaggedWithHeads's
    EXPECT_EQ(env.exit_code, 0);
    EXPECT_EQ(env.out.has_value(), c.out_inline);
    EXPECT_EQ(env.err.has_value(), c.err_inline);
    if (env.out) {
      EXPECT_TRUE(*env.out == bytes(c.out));
    }
    if (env.err) {
      EXPECT_TRUE(*env.err == bytes(c.err + 1).substr(1));
    }
  }
  std::filesystem::remove_all(dir);
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

TEST_F(GuestHelpersTest, RemovingTheRunFilesKeepsTheTimeoutAndTheLimit) {
  auto timed = spec({"/bin/sh", "-c", "rm -rf " + state_ + "; printf gone; sleep 20; printf late"});
  timed.timeout_ms = 500;
  const auto t = run(timed);
  EXPECT_TRUE(t.timed_out);
  EXPECT_EQ(t.out.value_or("?"), "gone");
  auto flood = spec(
      {"/bin/sh", "-c", "rm -rf " + state_ + "; head -c 5000 /dev/zero; sleep 20; printf late"});
  flood.limit_bytes = 1000;
  const auto f = run(flood);
  EXPECT_TRUE(f.over_limit);
  // Copied just past the limit (a whole 512-byte block), and stopped before "late".
  const std::string out = f.out.value_or("?");
  EXPECT_GT(out.size(), 1000u);
  EXPECT_LE(out.size(), 5000u);
  EXPECT_EQ(out, std::string(out.size(), '\0'));
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
}  // namespace lizard::workspace::internal
