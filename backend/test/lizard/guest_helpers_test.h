// What the guest helpers' tests share (guest_helpers_test.cc,
// guest_streams_test.cc): the helpers are plain POSIX sh, and these tests run
// them under this machine's /bin/sh (no server), as the sandbox would.
#pragma once

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

namespace lizard::workspace::internal::guest_test {

struct Local {
  int status = -1;
  std::string out;
};

// This process's environment with the PATH a sandbox has: a caller's PATH
// may hold a directory this user cannot search (root's PATH under runuser),
// and then a missing program is EACCES (126) to sh and setsid, not 127.
// `first` goes before the sandbox's PATH when it is not empty.
// `extra`, when not empty, is one more NAME=VALUE entry.
inline std::vector<char*> sandbox_environment(std::string& path, const std::string& first,
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
inline Local run_local(const std::vector<std::string>& argv, const std::string& path_first = "",
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

inline std::string fresh_id() {
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

}  // namespace lizard::workspace::internal::guest_test
