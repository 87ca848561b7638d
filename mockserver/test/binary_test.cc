// The standalone lizard-mock binary: first line, default key and project,
// clean stop on SIGTERM with every sandbox process killed.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

// Its stdout (and stderr too, with `with_stderr`) on `out`.
Child spawn(std::vector<std::string> args, bool with_stderr = false) {
  int p[2];
  if (::pipe(p) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    if (with_stderr) ::dup2(p[1], 2);
    ::close(p[0]);
    ::close(p[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(p[1]);
  return {pid, ::fdopen(p[0], "r")};
}

std::string line_of(FILE* f) {
  char buf[512];
  if (!std::fgets(buf, sizeof buf, f)) return {};
  std::string s = buf;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(MockBinary, PrintsListeningLineServesAndStopsCleanly) {
  Child child = spawn({mock_binary(), "--exec-limit-ms", "5000"});
  ASSERT_GT(child.pid, 0);
  ASSERT_NE(child.out, nullptr);
  std::string first = line_of(child.out);
  const std::string prefix = "LIZARD_MOCK_LISTENING http://127.0.0.1:";
  ASSERT_EQ(first.rfind(prefix, 0), 0u) << first;
  std::string url = first.substr(std::string("LIZARD_MOCK_LISTENING ").size());
  EXPECT_EQ(line_of(child.out), std::string("LIZARD_MOCK_API_KEY ") + kDefaultApiKey);
  std::string project_line = line_of(child.out);
  ASSERT_EQ(project_line.rfind("LIZARD_MOCK_PROJECT_ID prj_", 0), 0u) << project_line;
  std::string project = project_line.substr(std::string("LIZARD_MOCK_PROJECT_ID ").size());

  httplib::Client c(url);
  c.set_default_headers({{"X-API-Key", kDefaultApiKey}});
  auto created = c.Post("/api/sandboxes", R"({"projectId":"mock-project"})", "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  EXPECT_EQ(str_field(parse(created->body), "projectId"), project);
  std::string id = str_field(parse(created->body), "sandboxId");
  std::string marker = std::to_string(600000 + std::random_device{}() % 99999);
  auto started = c.Post("/api/sandboxes/" + id + "/exec",
                        "{\"cmd\":\"setsid sleep " + marker + " >/dev/null 2>&1 & echo ok\"}",
                        "application/json");
  ASSERT_TRUE(started);
  EXPECT_EQ(str_field(parse(started->body), "stdout"), "ok\n");
  ASSERT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 1; }));

  ASSERT_EQ(::kill(child.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::fclose(child.out);
  EXPECT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 0; }));
}

TEST(MockBinary, RejectsUnknownOptions) {
  Child child = spawn({mock_binary(), "--no-such-flag"});
  ASSERT_GT(child.pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::fclose(child.out);
}

TEST(MockBinary, NumbersOutOfRangeAreUsageErrorsThatSaySo) {
  // A port past 65535 was cast to int and printed as the URL it listens on.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--port", "70000"},
      {"--port", "99999999999"},
      {"--port", "-1"},
      {"--port", "80x"},
      {"--exec-limit-ms", "0"},
      {"--exec-limit-ms", "86400001"},
      {"--exec-limit-ms", "99999999999999999999"}};
  for (const auto& [flag, value] : cases) {
    Child child = spawn({mock_binary(), flag, value}, true);
    ASSERT_GT(child.pid, 0);
    const std::string said = line_of(child.out);
    int status = 0;
    ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
    std::fclose(child.out);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << flag << " " << value;
    const std::string range = flag == "--port" ? "from 0 to 65535" : "from 1 to 86400000";
    EXPECT_EQ(said,
              "lizard-mock: " + flag + " needs an integer " + range + ", not '" + value + "'");
  }
}

#if defined(__SANITIZE_THREAD__)
#define LIZARD_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LIZARD_TEST_UNDER_TSAN 1
#endif
#endif

// Root in a container's user namespace often has only some ids: here 0 and
// the 65,536 sandbox ids the ID maps need, not the ids that own the
// sandboxes' namespaces (docs/mockserver.md, "Limits"). The mock still
// starts and runs commands, every sandbox then made by one owner.
TEST(MockBinary, RootWithOnlyTheSandboxIdsStillRunsCommands) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "writing a user namespace's ID map with many ids takes root";
#ifdef LIZARD_TEST_UNDER_TSAN
  GTEST_SKIP() << "ThreadSanitizer starts a thread in a forked child, and unshare(CLONE_NEWUSER) "
                  "refuses a process with threads";
#endif
  int out[2], ready[2], go[2];
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  std::string binary = mock_binary();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(ready[0]);
    ::close(go[1]);
    char c = 0;
    if (::unshare(CLONE_NEWUSER) != 0 || ::write(ready[1], "u", 1) != 1 ||
        ::read(go[0], &c, 1) != 1 || ::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0)
      ::_exit(126);
    char* argv[] = {binary.data(), nullptr};
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  // Only the child holds these ends: a child that fails ends the read.
  for (int fd : {out[1], ready[1], go[0]}) ::close(fd);
  char c = 0;
  if (::read(ready[0], &c, 1) != 1) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    FAIL() << "the child could not make a user namespace of its own (wait status " << status << ")";
  }
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string map = "0 0 1\n1000000000 1000000000 65536\n";
  for (const char* file : {"/uid_map", "/gid_map"}) {
    FILE* f = std::fopen((proc + file).c_str(), "w");
    ASSERT_NE(f, nullptr) << file;
    EXPECT_EQ(std::fputs(map.c_str(), f) >= 0 && std::fclose(f) == 0, true) << file;
  }
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  FILE* lines = ::fdopen(out[0], "r");
  ASSERT_NE(lines, nullptr);
  const std::string first = line_of(lines);
  const std::string prefix = "LIZARD_MOCK_LISTENING ";
  EXPECT_EQ(first.rfind(prefix, 0), 0u) << first;
  if (first.rfind(prefix, 0) == 0) {
    httplib::Client client(first.substr(prefix.size()));
    client.set_default_headers({{"X-API-Key", kDefaultApiKey}});
    auto created =
        client.Post("/api/sandboxes", R"({"projectId":"mock-project"})", "application/json");
    ASSERT_TRUE(created);
    ASSERT_EQ(created->status, 201) << created->body;
    const std::string id = str_field(parse(created->body), "sandboxId");
    auto ran = client.Post("/api/sandboxes/" + id + "/exec", R"({"cmd":"id -u; echo hi"})",
                           "application/json");
    ASSERT_TRUE(ran);
    EXPECT_EQ(str_field(parse(ran->body), "stdout"), "0\nhi\n") << ran->body;
  }
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::fclose(lines);
  for (int fd : {ready[0], go[1]}) ::close(fd);
}

}  // namespace
}  // namespace lizard::mock::test
