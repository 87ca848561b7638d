// Security properties of the mock: every /api route needs a valid key (and
// a refused request has no effect), a scoped key cannot see or touch
// another project's sandboxes on any sandbox route, file routes cannot
// leave the sandbox through "..", absolute links or link chains, nor act
// on the sandbox's host binds and /proc as host root would, deeply nested
// JSON is refused without harm, a request without a key is answered before
// its body is read, an
// oversized body is refused before it is read, and the standalone binary
// listens on loopback only.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

struct Route {
  std::string method;
  std::string path;
  std::string body;
};

// Every route of docs/mockserver.md, with IDs that exist.
std::vector<Route> all_routes(const std::string& sandbox, const std::string& project) {
  const std::string s = "/api/sandboxes/" + sandbox;
  const std::string p = "/api/projects/" + project;
  return {
      {"GET", "/api/projects", ""},
      {"POST", "/api/projects", R"({"name":"x"})"},
      {"GET", p, ""},
      {"GET", p + "/sandboxes", ""},
      {"POST", p + "/volumes", R"({"name":"v"})"},
      {"GET", p + "/volumes", ""},
      {"GET", p + "/volumes/v", ""},
      {"DELETE", p + "/volumes/v", ""},
      {"POST", "/api/workspaces", R"({"name":"w"})"},
      {"GET", "/api/workspaces", ""},
      {"POST", "/api/api-keys", R"({"name":"k"})"},
      {"POST", "/api/account/api-keys", R"({"name":"k"})"},
      {"GET", "/api/billing", ""},
      {"GET", "/api/usage", ""},
      {"POST", "/api/sandboxes", R"({"projectId":")" + project + "\"}"},
      {"GET", "/api/sandboxes", ""},
      {"GET", s, ""},
      {"DELETE", s, ""},
      {"POST", s + "/timeout", R"({"timeoutMs":5000})"},
      {"POST", s + "/expose/8080", ""},
      {"DELETE", s + "/expose/8080", ""},
      {"POST", s + "/pause", ""},
      {"POST", s + "/resume", ""},
      {"POST", s + "/fork", R"({"count":1})"},
      {"POST", s + "/snapshot", R"({"name":"n"})"},
      {"POST", s + "/exec", R"({"cmd":"touch /workspace/pwned"})"},
      {"GET", s + "/processes", ""},
      {"POST", s + "/processes/signal", R"({"pid":1})"},
      {"POST", s + "/files", R"({"path":"/workspace/pwned","content":"x"})"},
      {"GET", s + "/files?path=/workspace/secret", ""},
      {"GET", s + "/files/list?path=/workspace", ""},
      {"GET", s + "/files/stat?path=/workspace/secret", ""},
      {"DELETE", s + "/files?path=/workspace/secret", ""},
      {"POST", s + "/files/move", R"({"from":"/workspace/secret","to":"/workspace/moved"})"},
      {"GET", s + "/files/watch?path=/workspace", ""},
      {"GET", "/api/no/such/route", ""},
  };
}

httplib::Result send(httplib::Client& c, const Route& r) {
  if (r.method == "GET") return c.Get(r.path);
  if (r.method == "DELETE") return c.Delete(r.path, r.body, "application/json");
  return c.Post(r.path, r.body, "application/json");
}

class SecurityTest : public MockFixture {
 protected:
  void SetUp() override {
    id_ = create();
    ASSERT_FALSE(id_.empty());
    auto w = post(files_path(id_), R"({"path":"/workspace/secret","content":"s3cret"})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 200);
  }
  // Nothing a refused request could have done happened.
  void expect_untouched(std::size_t live = 1) {
    auto info = get("/api/sandboxes/" + id_);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->status, 200) << "the sandbox was killed";
    EXPECT_EQ(get(files_path(id_) + "?path=/workspace/secret")->body, "s3cret");
    EXPECT_EQ(get(files_path(id_) + "/stat?path=/workspace/pwned")->status, 404);
    EXPECT_EQ(get(files_path(id_) + "/stat?path=/workspace/moved")->status, 404);
    EXPECT_EQ(server_->live_sandboxes(), live);
  }
  std::string id_;
};

TEST_F(SecurityTest, EveryRouteIs401WithoutAValidKeyAndDoesNothing) {
  const std::string key = server_->api_key();
  std::string upper = key;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  // Each way of not presenting the key (the query string is not a way).
  const std::vector<std::pair<std::string, httplib::Headers>> ways = {
      {"none", {}},
      {"empty X-API-Key", {{"X-API-Key", ""}}},
      {"wrong X-API-Key", {{"X-API-Key", "liz_wrong"}}},
      {"key with a suffix", {{"X-API-Key", key + "x"}}},
      {"key prefix", {{"X-API-Key", key.substr(0, key.size() - 1)}}},
      {"upper-cased key", {{"X-API-Key", upper}}},
      {"wrong bearer", {{"Authorization", "Bearer liz_wrong"}}},
      {"basic auth", {{"Authorization", "Basic " + key}}},
      {"bearer without space", {{"Authorization", "Bearer" + key}}},
  };
  std::size_t checked = 0;
  for (const auto& route : all_routes(id_, server_->project_id())) {
    for (const auto& [name, headers] : ways) {
      httplib::Client c(server_->url());
      c.set_default_headers(headers);
      Route r = route;
      if (name == "none") {
        r.path += (r.path.find('?') == std::string::npos ? "?" : "&") + std::string("api_key=") +
                  key + "&key=" + key;
      }
      auto res = send(c, r);
      ASSERT_TRUE(res) << r.method << " " << r.path;
      EXPECT_EQ(res->status, 401) << name << ": " << r.method << " " << r.path;
      EXPECT_EQ(res->body, R"({"error":"Invalid or missing API key"})");
      ++checked;
    }
  }
  EXPECT_GT(checked, 300u);
  expect_untouched();
  // The refused requests left no project, workspace, key or volume either.
  auto projects = parse(get("/api/projects")->body);
  ASSERT_TRUE(projects.IsArray());
  EXPECT_EQ(projects.Size(), 1u);
}

TEST_F(SecurityTest, AScopedKeyCannotSeeOrTouchAnotherProjectsSandboxOnAnyRoute) {
  auto ws = post("/api/workspaces", R"({"name":"other-team"})");
  ASSERT_EQ(ws->status, 201);
  const std::string wid = str_field(parse(ws->body), "id");
  auto pr = post("/api/projects", R"({"workspaceId":")" + wid + R"(","name":"elsewhere"})");
  ASSERT_EQ(pr->status, 201);
  const std::string other = str_field(parse(pr->body), "id");
  auto k = post("/api/api-keys", R"({"name":"scoped","workspaces":[")" + wid + "\"]}");
  ASSERT_EQ(k->status, 201) << k->body;
  const std::string scoped = str_field(parse(k->body), "key");

  for (const auto& route : all_routes(id_, server_->project_id())) {
    const bool sandbox_route = route.path.rfind("/api/sandboxes/", 0) == 0;
    const bool project_route = route.path.rfind("/api/projects/", 0) == 0;
    if (!sandbox_route && !project_route) continue;
    httplib::Client c(server_->url());
    c.set_default_headers({{"X-API-Key", scoped}});
    auto res = send(c, route);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << route.method << " " << route.path << " -> " << res->body;
    EXPECT_EQ(res->body.find("s3cret"), std::string::npos);
  }
  // Not in its listings, and no create in the other project.
  auto listed = get("/api/sandboxes", scoped);
  EXPECT_EQ(listed->body.find(id_), std::string::npos);
  EXPECT_EQ(
      post("/api/sandboxes", R"({"projectId":")" + server_->project_id() + "\"}", scoped)->status,
      404);
  // No broader key: account-wide, another workspace, or a project outside its workspace.
  EXPECT_EQ(post("/api/api-keys", R"({"name":"all"})", scoped)->status, 403);
  EXPECT_EQ(post("/api/account/api-keys", R"({"name":"all","scopes":[]})", scoped)->status, 403);
  EXPECT_EQ(
      post("/api/api-keys", R"({"name":"p","projects":[")" + server_->project_id() + "\"]}", scoped)
          ->status,
      403);
  EXPECT_EQ(
      post("/api/account/api-keys",
           R"({"name":"p","scopes":[{"type":"project","id":")" + server_->project_id() + "\"}]}",
           scoped)
          ->status,
      403);
  EXPECT_EQ(post("/api/workspaces", R"({"name":"mine"})", scoped)->status, 403);
  // Its own scope works.
  EXPECT_EQ(post("/api/sandboxes", R"({"projectId":")" + other + "\"}", scoped)->status, 201);
  expect_untouched(2);
}

TEST_F(SecurityTest, FileRoutesCannotReadOrWriteOutsideTheSandbox) {
  const std::string host_workspace = server_->workspace_dir(id_);
  ASSERT_FALSE(host_workspace.empty());
  // A host file next to the sandbox's trees, and one in the mock's state dir.
  const std::filesystem::path sandbox_dir = std::filesystem::path(host_workspace).parent_path();
  const std::filesystem::path outside = sandbox_dir.parent_path() / "outside-secret";
  { std::ofstream(outside) << "host-secret"; }
  const std::string names[] = {
      "/../outside-secret",
      "/workspace/../../outside-secret",
      "/workspace/../../../../../../" + outside.string(),
      outside.string(),
      "/proc/1/root" + outside.string(),
      "/proc/self/root" + outside.string(),
  };
  for (const auto& name : names) {
    auto r = get(files_path(id_) + "?path=" + name);
    ASSERT_TRUE(r);
    EXPECT_NE(r->status, 200) << name;
    EXPECT_EQ(r->body.find("host-secret"), std::string::npos) << name;
  }
  // Links made inside the sandbox: absolute to the host path, relative
  // climbing, and a chain of links.
  const std::string script = "ln -s " + outside.string() +
                             " /workspace/abs; ln -s ../../../../../../../.. /workspace/up; "
                             "ln -s /workspace/up /workspace/chain; ln -s " +
                             sandbox_dir.parent_path().string() + " /workspace/statedir";
  ASSERT_EQ(sh(id_, script).exit_code, 0);
  for (const std::string& name : std::vector<std::string>{
           "/workspace/abs", "/workspace/up" + outside.string(),
           "/workspace/chain" + outside.string(), "/workspace/statedir/outside-secret"}) {
    auto r = get(files_path(id_) + "?path=" + name);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.find("host-secret"), std::string::npos) << name;
    // Writing through the same links must not reach the host file (it
    // lands inside the sandbox, where the link resolves).
    auto w = post(files_path(id_), "{\"path\":" + quote(name) + ",\"content\":\"overwritten\"}");
    ASSERT_TRUE(w);
  }
  std::ifstream in(outside);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "host-secret") << "a file route wrote outside the sandbox";
  // Remove and move through the links leave it too.
  del(files_path(id_) + "?path=/workspace/statedir/outside-secret");
  post(files_path(id_) + "/move", R"({"from":"/workspace/abs","to":"/workspace/stolen"})");
  EXPECT_TRUE(std::filesystem::exists(outside));
  std::filesystem::remove(outside);
}

// The first line of a host file, or "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The sandbox's /etc is the host's, bound read-only. A link to a host file
// that only host root (and group shadow) may read must not make the files
// API read it: the command itself cannot, so neither may the API acting
// as sandbox root.
TEST_F(SecurityTest, FileRoutesReadHostFilesOnlyAsSandboxRootCould) {
  struct stat st {};
  if (::stat("/etc/shadow", &st) != 0 || (st.st_mode & S_IROTH) || st.st_uid != 0)
    GTEST_SKIP() << "no /etc/shadow of root closed to others on this host";
  ASSERT_EQ(sh(id_, "ln -s /etc/shadow /workspace/out").exit_code, 0);
  EXPECT_NE(sh(id_, "cat /etc/shadow").exit_code, 0) << "the command itself reads it";
  for (const char* path : {"/workspace/out", "/etc/shadow"}) {
    auto r = get(files_path(id_) + "?path=" + path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    EXPECT_EQ(str_field(parse(r->body), "code"), "EACCES") << path << ": " << r->body;
  }
  // Its metadata stays visible, as `ls -l` shows it inside.
  EXPECT_EQ(get(files_path(id_) + "/stat?path=/etc/shadow")->status, 200);
}

// A write through a link (or straight) to a kernel setting of the
// sandbox's /proc must never reach the host's sysctl. The value written is
// the one already there, so that even a regression changes nothing.
TEST_F(SecurityTest, FileRoutesNeverWriteKernelSettings) {
  const std::string knob = "/proc/sys/kernel/printk_ratelimit_burst";
  const std::string before = first_line(knob);
  if (before.empty()) GTEST_SKIP() << knob << " is not readable here";
  ASSERT_EQ(sh(id_, "ln -s " + knob + " /workspace/cfg").exit_code, 0);
  for (const std::string& path : {std::string("/workspace/cfg"), knob}) {
    auto w = post(files_path(id_),
                  "{\"path\":" + quote(path) + ",\"content\":" + quote(before + "\n") + "}");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->status, 400) << path << ": " << w->body;
    EXPECT_EQ(str_field(parse(w->body), "code"), "EINVAL") << path << ": " << w->body;
  }
  EXPECT_EQ(first_line(knob), before);
  // Refused like a read of the same file.
  auto r = get(files_path(id_) + "?path=/workspace/cfg");
  ASSERT_TRUE(r);
  EXPECT_EQ(str_field(parse(r->body), "code"), "EINVAL") << r->body;
}

// RapidJSON's default parser recursed once per level: 300 KB of "[" took
// the stack, and the mock with every sandbox. Deep bodies are a 400 now,
// closed or not, and the mock serves on.
TEST_F(SecurityTest, DeeplyNestedBodiesAre400AndTheMockServesOn) {
  const std::string open_only(300 * 1024, '[');
  const std::string closed = "{\"metadata\":" + std::string(65, '[') + std::string(65, ']') + "}";
  for (const std::string& body : {open_only, closed}) {
    auto r = post("/api/sandboxes", body);
    ASSERT_TRUE(r) << "the mock did not answer";
    EXPECT_EQ(r->status, 400) << r->body.substr(0, 200);
    EXPECT_EQ(str_field(parse(r->body), "code"), "BAD_REQUEST") << r->body.substr(0, 200);
    EXPECT_NE(r->body.find("nested deeper than 64"), std::string::npos) << r->body.substr(0, 200);
  }
  expect_untouched();
}

// A raw request whose header announces `length` body bytes; returns the
// status line the server sent without waiting for the body.
std::string status_for_announced_body(int port, const std::string& path, std::size_t length,
                                      const std::string& key) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  const std::string head =
      "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + key +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(length) +
      "\r\n\r\n{\"path\":";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (got.find("\r\n") == std::string::npos && ::poll(&p, 1, 10000) > 0) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return got.substr(0, got.find("\r\n"));
}

class SmallLimitTest : public MockFixture {
 protected:
  SmallLimitTest() : MockFixture(MockOptions{.max_body_bytes = 1024 * 1024}) {}
};

TEST_F(SmallLimitTest, AnOversizedBodyIsRefusedBeforeItIsSent) {
  const std::string id = create();
  // 1 GiB announced, 8 bytes sent: an answer now means it was not read whole.
  for (const std::string& path :
       std::vector<std::string>{"/api/sandboxes", "/api/sandboxes/" + id + "/files",
                                "/api/sandboxes/" + id + "/exec", "/api/projects"}) {
    EXPECT_EQ(status_for_announced_body(server_->port(), path, 1u << 30, server_->api_key()),
              "HTTP/1.1 413 Payload Too Large")
        << path;
  }
  // Without a key, too: the size check does not wait for the body.
  EXPECT_EQ(status_for_announced_body(server_->port(), "/api/sandboxes", 1u << 30, "liz_wrong"),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(server_->live_sandboxes(), 1u);
}

// The key is checked before the body is read: a client without one gets
// its answer after 8 bytes of 200 MiB announced (under the body limit),
// on the API, the control plane (no control key) and unknown paths alike.
TEST_F(SecurityTest, ARequestWithoutAKeyIsAnsweredBeforeItsBodyIsRead) {
  const std::size_t announced = 200u << 20;
  for (const std::string& path : {std::string("/api/sandboxes"), files_path(id_)}) {
    EXPECT_EQ(status_for_announced_body(server_->port(), path, announced, "liz_wrong"),
              "HTTP/1.1 401 Unauthorized")
        << path;
  }
  EXPECT_EQ(status_for_announced_body(server_->port(), "/_mock/faults", announced, "liz_wrong"),
            "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(status_for_announced_body(server_->port(), "/nowhere", announced, server_->api_key()),
            "HTTP/1.1 404 Not Found");
  expect_untouched();
}

#ifdef LIZARD_MOCK_BINARY
// The listening sockets of a process, as "ADDR:PORT" in /proc/net/tcp{,6} hex.
bool listens_on_any_address(pid_t pid) {
  // Collect the socket inodes of the process.
  std::vector<std::string> inodes;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.push_back(target.substr(8, target.size() - 9));
  }
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
          inode;
      if (state != "0A") continue;  // LISTEN
      if (std::find(inodes.begin(), inodes.end(), inode) == inodes.end()) continue;
      const std::string addr = local.substr(0, local.find(':'));
      if (addr != "0100007F" && addr != "00000000000000000000000001000000") return true;
    }
  }
  return false;
}

TEST(MockBinarySecurity, ListensOnLoopbackOnlyByDefault) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const std::string binary = mock_binary();  // before fork: the child only makes system calls
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::close(p[0]);
    ::close(p[1]);
    ::execl(binary.c_str(), binary.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(p[1]);
  FILE* out = ::fdopen(p[0], "r");
  char buf[512] = {0};
  ASSERT_NE(std::fgets(buf, sizeof buf, out), nullptr);
  const std::string first = buf;
  EXPECT_EQ(first.rfind("LIZARD_MOCK_LISTENING http://127.0.0.1:", 0), 0u) << first;
  EXPECT_FALSE(listens_on_any_address(pid)) << "a socket listens beyond loopback";
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::fclose(out);
  EXPECT_TRUE(WIFEXITED(status));
}
#endif

}  // namespace
}  // namespace lizard::mock::test

namespace lizard::mock::test {
namespace {

// Regression of fuzz_mock_handlers: {"sizeGb":1e308} cast a double outside
// int64 before the range check (undefined behaviour in Body::integer).
TEST_F(SecurityTest, NumbersOutsideInt64InBodiesAre400) {
  const std::string p = "/api/projects/" + server_->project_id() + "/volumes";
  for (const char* number : {"1e308", "-1e308", "9.3e18", "1e19", "1.5"}) {
    auto v = post(p, std::string(R"({"name":"v","sizeGb":)") + number + "}");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->status, 400) << number << ": " << v->body;
    auto t =
        post("/api/sandboxes/" + id_ + "/timeout", std::string(R"({"timeoutMs":)") + number + "}");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->status, 400) << number << ": " << t->body;
  }
}

}  // namespace
}  // namespace lizard::mock::test
