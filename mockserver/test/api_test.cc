// Routes, status codes and error bodies of the sandbox and account API.
#include <set>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

class ApiTest : public MockFixture {};

TEST_F(ApiTest, MissingOrUnknownKeyIs401WithTheSpecBody) {
  httplib::Client bare(server_->url());
  auto r = bare.Get("/api/sandboxes");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->body, R"({"error":"Invalid or missing API key"})");
  auto wrong = get("/api/projects", "liz_not_a_key");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
}

TEST_F(ApiTest, BearerAuthorizationIsAccepted) {
  httplib::Client c(server_->url());
  c.set_default_headers({{"Authorization", "Bearer " + server_->api_key()}});
  auto r = c.Get("/api/projects");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ApiTest, ProjectsResolveByIdSlugAndNameCaseInsensitively) {
  auto r = get("/api/projects");
  ASSERT_TRUE(r);
  auto d = parse(r->body);
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 1u);
  EXPECT_EQ(str_field(d[0], "id"), server_->project_id());
  EXPECT_EQ(str_field(d[0], "slug"), kDefaultProject);
  for (const std::string& ref :
       std::vector<std::string>{server_->project_id(), std::string("MOCK-project")}) {
    auto p = get("/api/projects/" + ref);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, 200) << ref;
    EXPECT_EQ(str_field(parse(p->body), "id"), server_->project_id());
  }
  auto missing = get("/api/projects/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(ApiTest, CreateAnswersSandboxInfo) {
  auto r = post(
      "/api/sandboxes",
      R"({"template":"interpreter","size":"small","region":"us-east-1","timeoutMs":60000,"metadata":{"a":"b"},"projectId":")" +
          server_->project_id() + "\"}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  auto d = parse(r->body);
  EXPECT_EQ(str_field(d, "sandboxId").rfind("sbx_", 0), 0u);
  EXPECT_EQ(str_field(d, "id"), str_field(d, "sandboxId"));
  EXPECT_EQ(str_field(d, "template"), "interpreter");
  EXPECT_EQ(str_field(d, "status"), "running");
  EXPECT_EQ(str_field(d, "size"), "small");
  EXPECT_EQ(int_field(d, "cpus"), 2);
  EXPECT_EQ(int_field(d, "memoryMb"), 4096);
  EXPECT_EQ(str_field(d, "projectId"), server_->project_id());
  // The default era (kubernetes) keeps no metadata; era_test.cc has both.
  EXPECT_TRUE(d["metadata"].IsObject() && d["metadata"].ObjectEmpty());
  EXPECT_NE(str_field(d, "endAt"), "<missing>");
  EXPECT_EQ(str_field(d, "runtime"), "container");
  EXPECT_EQ(server_->live_sandboxes(), 1u);
}

TEST_F(ApiTest, CreateRejectsBadInputWithJsonErrors) {
  const std::string pid = server_->project_id();
  struct Case {
    std::string body;
    int status;
    std::string code;
  };
  const Case cases[] = {
      {R"({"template":"base"})", 400, "PROJECT_REQUIRED"},
      {R"({"template":"nope","projectId":")" + pid + "\"}", 400, "INVALID_TEMPLATE"},
      {R"({"size":"huge","projectId":")" + pid + "\"}", 400, "INVALID_SIZE"},
      {R"({"projectId":"prj_unknown"})", 404, "PROJECT_NOT_FOUND"},
      {R"({"projectId":42})", 400, "BAD_REQUEST"},
      {R"({"projectId":")" + pid + R"(","timeoutMs":"soon"})", 400, "BAD_REQUEST"},
      {R"({"projectId":")" + pid + R"(","envs":{"A":1}})", 400, "BAD_REQUEST"},
      {R"({"projectId":)", 400, "BAD_REQUEST"},
      {"[1,2]", 400, "BAD_REQUEST"},
      {"{\"projectId\":\"\xff\xfe\"}", 400, "BAD_REQUEST"},
  };
  for (const auto& c : cases) {
    auto r = post("/api/sandboxes", c.body);
    ASSERT_TRUE(r) << c.body;
    EXPECT_EQ(r->status, c.status) << c.body;
    auto d = parse(r->body);
    ASSERT_TRUE(d.IsObject()) << r->body;
    EXPECT_EQ(str_field(d, "code"), c.code) << c.body;
    EXPECT_NE(str_field(d, "error"), "<missing>");
  }
  EXPECT_EQ(server_->live_sandboxes(), 0u);
}

TEST_F(ApiTest, GetListKillAndSecondKillIs404) {
  std::string id = create();
  auto g = get("/api/sandboxes/" + id);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  auto l = get("/api/sandboxes");
  ASSERT_TRUE(l);
  EXPECT_NE(l->body.find(id), std::string::npos);
  auto pl = get("/api/projects/" + server_->project_id() + "/sandboxes");
  ASSERT_TRUE(pl);
  EXPECT_NE(pl->body.find(id), std::string::npos);
  auto k = del("/api/sandboxes/" + id);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->status, 200);
  EXPECT_EQ(k->body, "{}");
  auto k2 = del("/api/sandboxes/" + id);
  ASSERT_TRUE(k2);
  EXPECT_EQ(k2->status, 404);
  EXPECT_EQ(k2->body, R"({"error":"Sandbox not found","code":"SANDBOX_NOT_FOUND"})");
  for (const std::string& path :
       std::vector<std::string>{"", "/exec", "/files?path=/workspace", "/processes"}) {
    auto r = path == "/exec" ? post("/api/sandboxes/" + id + path, R"({"cmd":"true"})")
                             : get("/api/sandboxes/" + id + path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(str_field(parse(r->body), "code"), "SANDBOX_NOT_FOUND") << path;
  }
}

TEST_F(ApiTest, SetTimeoutChecksItsRange) {
  std::string id = create();
  for (const std::string& bad : std::vector<std::string>{"999", "2147483648", "-1", "\"x\""}) {
    auto r = post("/api/sandboxes/" + id + "/timeout", "{\"timeoutMs\":" + bad + "}");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
  }
  auto ok = post("/api/sandboxes/" + id + "/timeout", R"({"timeoutMs":1000})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ApiTest, LifetimeExpiresOnTheMockClock) {
  std::string id = create("\"timeoutMs\":60000");
  std::string keep = create();
  auto w = post(files_path(id), R"({"path":"/workspace/f","content":"x"})");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->status, 200);
  server_->advance_clock(std::chrono::milliseconds(59000));
  auto still = get("/api/sandboxes/" + id);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
  auto adv = post("/_mock/clock", R"({"advanceMs":2000})");
  ASSERT_TRUE(adv);
  EXPECT_EQ(adv->status, 200);
  auto gone = get("/api/sandboxes/" + id);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  EXPECT_EQ(server_->live_sandboxes(), 1u);
  auto kept = get("/api/sandboxes/" + keep);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->status, 200);
}

TEST_F(ApiTest, SetTimeoutExtendsFromNow) {
  std::string id = create("\"timeoutMs\":5000");
  server_->advance_clock(std::chrono::milliseconds(4000));
  auto r = post("/api/sandboxes/" + id + "/timeout", R"({"timeoutMs":10000})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  server_->advance_clock(std::chrono::milliseconds(4000));
  EXPECT_EQ(get("/api/sandboxes/" + id)->status, 200);
  server_->advance_clock(std::chrono::milliseconds(7000));
  EXPECT_EQ(get("/api/sandboxes/" + id)->status, 404);
}

TEST_F(ApiTest, UnknownRouteIsJson404) {
  auto r = get("/api/nothing/here");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(parse(r->body).IsObject());
  httplib::Client bare(server_->url());
  auto root = bare.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 404);
  EXPECT_TRUE(parse(root->body).IsObject());
}

TEST_F(ApiTest, KubernetesEraAnswers501ForPauseForkSnapshot) {
  std::string id = create();
  for (const std::string& op : std::vector<std::string>{"pause", "resume", "fork", "snapshot"}) {
    auto r = post("/api/sandboxes/" + id + "/" + op, "{}");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 501) << op;
    EXPECT_EQ(r->body, R"({"error":"Not implemented"})");
  }
}

TEST_F(ApiTest, ExposeNamesTheHost) {
  std::string id = create();
  auto r = post("/api/sandboxes/" + id + "/expose/8080", "");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(str_field(parse(r->body), "hostname"), id + "-8080.sandbox.us-east-1.onlizard.com");
}

TEST_F(ApiTest, VolumesPersistWorkspaceAndHoldOneSandbox) {
  const std::string base = "/api/projects/" + server_->project_id() + "/volumes";
  auto v = post(base, R"({"name":"data"})");
  ASSERT_TRUE(v);
  ASSERT_EQ(v->status, 201) << v->body;
  std::string vid = str_field(parse(v->body), "id");
  auto taken = post(base, R"({"name":"data"})");
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->status, 409);
  auto again = post(base, R"({"name":"data","getOrCreate":true})");
  ASSERT_TRUE(again);
  EXPECT_EQ(str_field(parse(again->body), "id"), vid);

  std::string a = create("\"volumeName\":\"data\"");
  EXPECT_EQ(sh(a, "echo kept > /workspace/file").exit_code, 0);
  auto busy = post("/api/sandboxes",
                   R"({"projectId":")" + server_->project_id() + R"(","volumeId":")" + vid + "\"}");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 409);
  auto in_use = del(base + "/" + vid);
  ASSERT_TRUE(in_use);
  EXPECT_EQ(in_use->status, 409);
  ASSERT_EQ(del("/api/sandboxes/" + a)->status, 200);
  std::string b = create("\"volumeId\":\"" + vid + "\"");
  EXPECT_EQ(sh(b, "cat /workspace/file").out, "kept\n");
  ASSERT_EQ(del("/api/sandboxes/" + b)->status, 200);
  EXPECT_EQ(del(base + "/data")->status, 200);
  EXPECT_EQ(get(base + "/" + vid)->status, 404);
}

TEST_F(ApiTest, ScopedKeysReachOnlyTheirScope) {
  auto ws = post("/api/workspaces", R"({"name":"team"})");
  ASSERT_TRUE(ws);
  ASSERT_EQ(ws->status, 201);
  std::string wid = str_field(parse(ws->body), "id");
  auto pr = post("/api/projects", R"({"workspaceId":")" + wid + R"(","name":"Other Project"})");
  ASSERT_TRUE(pr);
  ASSERT_EQ(pr->status, 201);
  std::string other = str_field(parse(pr->body), "id");
  EXPECT_EQ(str_field(parse(pr->body), "slug"), "other-project");

  auto k = post("/api/api-keys", R"({"name":"ci","projects":[")" + other + "\"]}");
  ASSERT_TRUE(k);
  ASSERT_EQ(k->status, 201) << k->body;
  std::string scoped = str_field(parse(k->body), "key");
  ASSERT_EQ(scoped.rfind("liz_", 0), 0u);

  auto projects = get("/api/projects", scoped);
  ASSERT_TRUE(projects);
  auto d = parse(projects->body);
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 1u);
  EXPECT_EQ(str_field(d[0], "id"), other);

  std::string mine = create();  // in the default project, with the full key
  auto hidden = get("/api/sandboxes/" + mine, scoped);
  ASSERT_TRUE(hidden);
  EXPECT_EQ(hidden->status, 404);
  auto refused =
      post("/api/sandboxes", R"({"projectId":")" + server_->project_id() + "\"}", scoped);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 404);
  auto own = post("/api/sandboxes", R"({"projectId":")" + other + "\"}", scoped);
  ASSERT_TRUE(own);
  EXPECT_EQ(own->status, 201);

  auto broader = post("/api/api-keys", R"({"name":"all"})", scoped);
  ASSERT_TRUE(broader);
  EXPECT_EQ(broader->status, 403);
  auto sideways = post("/api/api-keys", R"({"name":"x","workspaces":[")" + wid + "\"]}", scoped);
  ASSERT_TRUE(sideways);
  EXPECT_EQ(sideways->status, 403);
  auto same = post("/api/api-keys", R"({"name":"y","projects":[")" + other + "\"]}", scoped);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 201);

  auto billing = get("/api/billing", scoped);
  ASSERT_TRUE(billing);
  EXPECT_EQ(billing->status, 403);
  EXPECT_EQ(str_field(parse(billing->body), "error"), "ACCOUNT_SCOPE_REQUIRED");
  EXPECT_NE(str_field(parse(billing->body), "message"), "<missing>");
  EXPECT_EQ(get("/api/billing")->status, 200);
}

class SmallBodyTest : public MockFixture {
 protected:
  SmallBodyTest() : MockFixture(MockOptions{.max_body_bytes = 4096}) {}
};

TEST_F(SmallBodyTest, OversizedBodyIs413Json) {
  std::string id = create();
  std::string big = R"({"path":"/workspace/big","content":")" + std::string(100000, 'a') + "\"}";
  auto r = post(files_path(id), big);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(str_field(parse(r->body), "code"), "PAYLOAD_TOO_LARGE");
  auto small = post(files_path(id), R"({"path":"/workspace/small","content":"ok"})");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
}

class FirecrackerTest : public MockFixture {
 protected:
  FirecrackerTest() : MockFixture(MockOptions{.era = Era::kFirecracker}) {}
};

TEST_F(FirecrackerTest, PauseKeepsFilesNotProcesses) {
  std::string id = create();
  EXPECT_EQ(sh(id, "echo v > /workspace/f").exit_code, 0);
  auto p = post("/api/sandboxes/" + id + "/pause", "");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->status, 200);
  EXPECT_EQ(str_field(parse(p->body), "status"), "paused");
  EXPECT_EQ(sh(id, "true").status, 409);
  auto r = post("/api/sandboxes/" + id + "/resume", "");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(sh(id, "cat /workspace/f").out, "v\n");
}

TEST_F(FirecrackerTest, ForkCopiesFilesAndSnapshotRestores) {
  std::string id = create();
  EXPECT_EQ(sh(id, "echo orig > /workspace/f").exit_code, 0);
  auto f = post("/api/sandboxes/" + id + "/fork", R"({"count":2,"timeoutMs":0})");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->status, 201) << f->body;
  auto d = parse(f->body);
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 2u);
  std::string child = str_field(d[0]["sandbox"], "sandboxId");
  EXPECT_EQ(sh(child, "cat /workspace/f").out, "orig\n");
  EXPECT_EQ(sh(child, "echo changed > /workspace/f").exit_code, 0);
  EXPECT_EQ(sh(id, "cat /workspace/f").out, "orig\n");

  auto s = post("/api/sandboxes/" + id + "/snapshot", R"({"name":"snap"})");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  std::string snap = str_field(parse(s->body), "id");
  std::string restored = create("\"snapshotId\":\"" + snap + "\"");
  EXPECT_EQ(sh(restored, "cat /workspace/f").out, "orig\n");
}

}  // namespace
}  // namespace lizard::mock::test
