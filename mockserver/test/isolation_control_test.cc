// Sandbox isolation, and the /_mock control plane (journal, faults, reset).
#include <unistd.h>

#include <random>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

class IsolationTest : public MockFixture {};

TEST_F(IsolationTest, OneSandboxCannotSeeAnothersWorkspace) {
  std::string a = create(), b = create();
  ASSERT_EQ(sh(b, "echo secret-b > /workspace/secret").exit_code, 0);
  std::string b_host = server_->workspace_dir(b);
  ASSERT_FALSE(b_host.empty());
  auto r = sh(a, "cat /workspace/secret || cat " + b_host + "/secret");
  EXPECT_EQ(r.out.find("secret-b"), std::string::npos);
  EXPECT_NE(r.exit_code, 0);
  // Their process tables are separate too: each sees only its own.
  EXPECT_EQ(sh(a, "ps -e -o comm= | grep -c sleep").out, "0\n");
}

TEST_F(IsolationTest, CommandsCannotWriteOutsideTheirTrees) {
  std::string a = create();
  char tmpl[] = "/tmp/lizard-mock-iso-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string host_dir = tmpl;
  for (const std::string& target : std::vector<std::string>{
           "/usr/lizard-x", "/etc/lizard-x", "/lizard-x", "/bin/lizard-x", host_dir + "/x"}) {
    auto r = sh(a, "echo x > " + target);
    EXPECT_NE(r.exit_code, 0) << target;
  }
  EXPECT_NE(::access((host_dir + "/x").c_str(), F_OK), 0);
  EXPECT_NE(::access("/etc/lizard-x", F_OK), 0);
  EXPECT_EQ(sh(a, "echo ok > /workspace/w && echo ok > /tmp/t && echo ok > /root/h").exit_code, 0);
  ::rmdir(tmpl);
}

TEST_F(IsolationTest, KillLeavesNoProcessBehind) {
  std::string a = create();
  std::string marker = std::to_string(900000 + std::random_device{}() % 99999);
  auto r = sh(a, "setsid sleep " + marker + " > /dev/null 2>&1 & nohup sleep " + marker +
                     " > /dev/null 2>&1 & echo started");
  ASSERT_EQ(r.out, "started\n");
  ASSERT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 2; }));
  ASSERT_EQ(del("/api/sandboxes/" + a)->status, 200);
  EXPECT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 0; }));
  EXPECT_TRUE(server_->workspace_dir(a).empty());
}

TEST_F(IsolationTest, ExpiryKillsProcessesAndDiscardsFiles) {
  std::string a = create("\"timeoutMs\":30000");
  std::string host = server_->workspace_dir(a);
  std::string marker = std::to_string(800000 + std::random_device{}() % 99999);
  ASSERT_EQ(sh(a, "echo f > /workspace/f; setsid sleep " + marker + " >/dev/null 2>&1 &").exit_code,
            0);
  ASSERT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 1; }));
  server_->advance_clock(std::chrono::seconds(31));
  EXPECT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 0; }));
  EXPECT_TRUE(eventually([&] { return ::access((host + "/f").c_str(), F_OK) != 0; }));
}

class ControlTest : public MockFixture {};

TEST_F(ControlTest, JournalRecordsApiRequestsWithoutAuth) {
  std::string id = create();
  ASSERT_EQ(sh(id, "echo hi").exit_code, 0);
  get("/_mock/requests");
  auto r = get("/_mock/requests");
  ASSERT_TRUE(r);
  auto d = parse(r->body);
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 2u);
  EXPECT_EQ(str_field(d[0], "method"), "POST");
  EXPECT_EQ(str_field(d[0], "path"), "/api/sandboxes");
  EXPECT_EQ(int_field(d[0], "status"), 201);
  EXPECT_NE(str_field(d[1], "body").find("echo hi"), std::string::npos);
  EXPECT_EQ(r->body.find(server_->api_key()), std::string::npos);
  get(files_path(id) + "/stat?path=/workspace");
  auto entries = server_->requests();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[2].query, "path=/workspace");
  server_->clear_journal();
  EXPECT_TRUE(server_->requests().empty());
}

TEST_F(ControlTest, JournalCutsBodiesOverOneMebibyteWithAMarker) {
  std::string id = create();
  std::string big(2 * 1024 * 1024, 'q');
  auto w = post(files_path(id), R"({"path":"/workspace/big","content":")" + big + "\"}");
  ASSERT_TRUE(w);
  ASSERT_EQ(w->status, 200);
  auto entries = server_->requests();
  ASSERT_EQ(entries.size(), 2u);
  const std::string& body = entries[1].body;
  EXPECT_LT(body.size(), big.size());
  EXPECT_GE(body.size(), 1024u * 1024);
  EXPECT_NE(body.find("cut by lizard-mock"), std::string::npos);
  EXPECT_EQ(body.rfind(R"({"path":"/workspace/big","content":"qqq)", 0), 0u);
}

TEST_F(ControlTest, RespondFaultForNextMatchesOnly) {
  auto f = post(
      "/_mock/faults",
      R"({"method":"POST","path":"/api/sandboxes","action":"respond","status":503,"body":{"error":"busy","code":"region_unavailable"},"times":1})");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->status, 200);
  auto first = post("/api/sandboxes", R"({"projectId":")" + server_->project_id() + "\"}");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 503);
  EXPECT_EQ(str_field(parse(first->body), "code"), "region_unavailable");
  EXPECT_EQ(server_->live_sandboxes(), 0u);
  std::string id = create();
  EXPECT_FALSE(id.empty());
}

TEST_F(ControlTest, CloseFaultsDropTheConnection) {
  std::string id = create();
  FaultRule close;
  close.method = "GET";
  close.path_pattern = "/api/sandboxes/*";
  close.action = FaultRule::Action::kClose;
  close.times = 1;
  server_->add_fault(close);
  auto r = get("/api/sandboxes/" + id);
  EXPECT_FALSE(r);
  EXPECT_TRUE(get("/api/sandboxes/" + id));

  FaultRule after;
  after.method = "POST";
  after.path_pattern = "/api/sandboxes/*/exec";
  after.action = FaultRule::Action::kCloseAfterHandling;
  after.times = 1;
  server_->add_fault(after);
  auto lost = sh(id, "echo ran > /workspace/ran");
  EXPECT_EQ(lost.status, 0);  // no answer
  auto check = get(files_path(id) + "?path=/workspace/ran");
  ASSERT_TRUE(check);
  EXPECT_EQ(check->body, "ran\n");
}

TEST_F(ControlTest, TruncateAndDelayFaults) {
  std::string id = create();
  FaultRule cut;
  cut.method = "GET";
  cut.path_pattern = "/api/**";
  cut.action = FaultRule::Action::kTruncate;
  cut.truncate_at = 10;
  cut.times = 1;
  server_->add_fault(cut);
  auto r = get("/api/sandboxes/" + id);
  EXPECT_TRUE(!r || r->body.size() < 20);
  FaultRule slow;
  slow.path_pattern = "/api/projects";
  slow.action = FaultRule::Action::kDelay;
  slow.delay = std::chrono::milliseconds(300);
  slow.times = 1;
  server_->add_fault(slow);
  auto t0 = std::chrono::steady_clock::now();
  auto p = get("/api/projects");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
}

TEST_F(ControlTest, SeededProbabilityIsReproducible) {
  auto pattern = [&] {
    server_->clear_faults();
    FaultRule r;
    r.path_pattern = "/api/projects";
    r.status = 500;
    r.probability = 0.5;
    r.seed = 42;
    server_->add_fault(r);
    std::string s;
    for (int i = 0; i < 20; ++i) s += get("/api/projects")->status == 500 ? '1' : '0';
    return s;
  };
  std::string a = pattern();
  EXPECT_EQ(a, pattern());
  EXPECT_NE(a.find('0'), std::string::npos);
  EXPECT_NE(a.find('1'), std::string::npos);
}

TEST_F(ControlTest, ResetKillsSandboxesAndForgetsEverything) {
  std::string id = create();
  server_->add_fault(FaultRule{.method = "GET", .path_pattern = "/api/projects"});
  auto r = post("/_mock/reset", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(server_->live_sandboxes(), 0u);
  EXPECT_EQ(get("/api/projects")->status, 200);
  EXPECT_EQ(get("/api/sandboxes/" + id)->status, 404);
  EXPECT_EQ(server_->requests().size(), 2u);
  auto bad = post("/_mock/faults", R"({"path":"/x","action":"explode"})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
}

TEST(MockServerLifecycle, DestructorKillsAndRemovesState) {
  std::string host_ws;
  std::string marker = std::to_string(700000 + std::random_device{}() % 99999);
  {
    MockServer server;
    httplib::Client c(server.url());
    c.set_default_headers({{"X-API-Key", server.api_key()}});
    auto r = c.Post("/api/sandboxes", R"({"projectId":")" + server.project_id() + "\"}",
                    "application/json");
    ASSERT_TRUE(r);
    std::string id = str_field(parse(r->body), "sandboxId");
    host_ws = server.workspace_dir(id);
    c.Post("/api/sandboxes/" + id + "/exec",
           "{\"cmd\":\"setsid sleep " + marker + " >/dev/null 2>&1 &\"}", "application/json");
    ASSERT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 1; }));
  }
  EXPECT_TRUE(eventually([&] { return host_processes_with("sleep " + marker) == 0; }));
  EXPECT_NE(::access(host_ws.c_str(), F_OK), 0);
}

TEST(MockServerLifecycle, ARootMockRefusesHostIdsThatWouldWrapOrIncludeRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "root_id_base is a root mock's setting";
  for (const std::uint32_t base : {0u, 4294901759u, 4294967295u}) {
    EXPECT_THROW(MockServer(MockOptions{.root_id_base = base}), std::invalid_argument) << base;
  }
}

}  // namespace
}  // namespace lizard::mock::test
