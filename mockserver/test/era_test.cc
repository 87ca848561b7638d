// The eras, cell by cell (docs/spec/lizard-api.md, "Eras"): for each behaviour
// the kubernetes and the firecracker runtime differ in, what each answers;
// then the platform routes the SDK uses.
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <set>

#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

class KubernetesEra : public MockFixture {
 protected:
  KubernetesEra() : MockFixture(MockOptions{.era = Era::kKubernetes}) {}
};

class FirecrackerEra : public MockFixture {
 protected:
  FirecrackerEra() : MockFixture(MockOptions{.era = Era::kFirecracker}) {}
};

// The environment of a command started straight from the exec (no shell):
// its NAME=value entries.
std::set<std::string> environment_of(const ExecResult& r) {
  std::set<std::string> out;
  std::size_t at = 0;
  while (at < r.out.size()) {
    const std::size_t end = r.out.find('\n', at);
    out.insert(r.out.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

// --- exec ---------------------------------------------------------------------

TEST_F(KubernetesEra, ExecEnvsWorkdirAndUserAreIgnored) {
  const std::string id = create(R"("envs":{"FROM_CREATE":"c"})");
  auto r = exec(id, R"(["env"])", R"("envs":{"FROM_EXEC":"e"},"workdir":"/tmp","user":"user")");
  ASSERT_EQ(r.status, 200) << r.body;
  // Only PATH and HOME: no image variables, no create or exec envs.
  EXPECT_EQ(
      environment_of(r),
      (std::set<std::string>{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                             "HOME=/root"}));
  // The command runs in "/", as root, whatever workdir and user say; a
  // workdir that does not exist is ignored too, not refused.
  EXPECT_EQ(exec(id, R"(["pwd"])", R"("workdir":"/tmp")").out, "/\n");
  EXPECT_EQ(exec(id, R"(["pwd"])", R"("workdir":"/no/such/dir")").out, "/\n");
  EXPECT_EQ(exec(id, R"(["id","-u"])", R"("user":"user")").out, "0\n");
}

TEST_F(FirecrackerEra, ExecEnvsWorkdirAndUserAreApplied) {
  const std::string id = create(R"("envs":{"FROM_CREATE":"c","BOTH":"create"})");
  auto r = exec(id, R"(["env"])", R"("envs":{"FROM_EXEC":"e","BOTH":"exec"})");
  const auto env = environment_of(r);
  for (const char* entry :
       {"FROM_CREATE=c", "FROM_EXEC=e", "BOTH=exec", "HOME=/root", "LANG=C.UTF-8", "USER=root"}) {
    EXPECT_TRUE(env.count(entry)) << entry << " in " << r.out;
  }
  EXPECT_EQ(exec(id, R"(["pwd"])").out, "/workspace\n");
  EXPECT_EQ(exec(id, R"(["pwd"])", R"("workdir":"/tmp")").out, "/tmp\n");
  EXPECT_EQ(exec(id, R"(["pwd"])", R"("workdir":"/no/such/dir")").status, 400);
  auto as_user = exec(id, R"(["id","-u"])", R"("user":"user")");
  if (::geteuid() == 0) {
    EXPECT_EQ(as_user.out, "1000\n");
  } else {
    EXPECT_EQ(as_user.status, 400);
    EXPECT_EQ(str_field(parse(as_user.body), "code"), "USER_UNAVAILABLE");
  }
}

TEST_F(KubernetesEra, NoPidEventEvenWhenAsked) {
  const std::string id = create();
  auto r = client().Post("/api/sandboxes/" + id + "/exec", {{"Accept", "text/event-stream"}},
                         R"({"cmd":"echo hi","pidEvent":true})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body.find("\"pid\""), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("event: exit"), std::string::npos);
}

TEST_F(FirecrackerEra, PidEventComesFirstWhenAsked) {
  const std::string id = create();
  auto r = client().Post("/api/sandboxes/" + id + "/exec", {{"Accept", "text/event-stream"}},
                         R"({"cmd":"echo hi","pidEvent":true})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body.rfind("data: {\"pid\":", 0), 0u) << r->body;
}

TEST_F(KubernetesEra, ProcessRoutesAre501) {
  const std::string id = create();
  EXPECT_EQ(get("/api/sandboxes/" + id + "/processes")->status, 501);
  EXPECT_EQ(post("/api/sandboxes/" + id + "/processes/signal", R"({"pid":1})")->status, 501);
  EXPECT_EQ(get("/api/sandboxes/sbx_unknown/processes")->status, 404);
}

TEST_F(FirecrackerEra, ProcessRoutesListAndSignal) {
  const std::string id = create();
  auto running = std::async(std::launch::async, [&] { return sh(id, "sleep 60"); });
  std::int64_t pid = 0;
  ASSERT_TRUE(eventually([&] {
    auto d = parse(get("/api/sandboxes/" + id + "/processes")->body);
    if (!d.IsArray() || d.Size() != 1) return false;
    pid = int_field(d[0], "pid");
    return true;
  }));
  auto ok = post("/api/sandboxes/" + id + "/processes/signal",
                 "{\"pid\":" + std::to_string(pid) + ",\"signal\":\"SIGKILL\"}");
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(running.get().exit_code, 137);
}

// --- sandboxes ------------------------------------------------------------------

TEST_F(KubernetesEra, CreateMetadataIsNotKeptAndEndAtIsAString) {
  const std::string id = create(R"("metadata":{"tag":"x"})");
  const auto d = parse(get("/api/sandboxes/" + id)->body);
  EXPECT_TRUE(d["metadata"].IsObject() && d["metadata"].ObjectEmpty());
  EXPECT_EQ(str_field(d, "endAt"), "");
  EXPECT_EQ(str_field(d, "runtime"), "container");
  const auto list = parse(get("/api/sandboxes")->body);
  ASSERT_TRUE(list.IsArray() && list.Size() == 1);
  EXPECT_TRUE(list[0]["metadata"].ObjectEmpty());
}

TEST_F(FirecrackerEra, CreateMetadataComesBack) {
  const std::string id = create(R"("metadata":{"tag":"x"},"timeoutMs":60000)");
  const auto d = parse(get("/api/sandboxes/" + id)->body);
  EXPECT_EQ(str_field(d["metadata"], "tag"), "x");
  EXPECT_NE(str_field(d, "endAt"), "");
  EXPECT_EQ(str_field(d, "runtime"), "firecracker");
}

TEST_F(KubernetesEra, PauseResumeForkSnapshotAndRestoreAre501) {
  const std::string id = create();
  for (const char* op : {"pause", "resume", "fork", "snapshot"}) {
    auto r = post("/api/sandboxes/" + id + "/" + op, "{}");
    EXPECT_EQ(r->status, 501) << op;
    EXPECT_EQ(str_field(parse(r->body), "error"), "Not implemented") << op;
  }
  EXPECT_EQ(create_status("\"snapshotId\":\"snap_anything\""), 501);
  EXPECT_EQ(get("/api/sandbox-snapshots")->body, "[]");
  EXPECT_EQ(get("/api/projects/" + server_->project_id() + "/snapshots")->body, "[]");
  EXPECT_EQ(get("/api/sandbox-snapshots/snap_anything")->status, 404);
}

TEST_F(FirecrackerEra, PauseKeepsFilesEndsProcessesAndResumeBootsFresh) {
  const std::string id = create();
  ASSERT_EQ(sh(id, "echo kept > /workspace/f; sleep 300 > /dev/null 2>&1 &").exit_code, 0);
  ASSERT_TRUE(eventually([&] { return host_processes_with("sleep 300") >= 1; }));
  auto paused = post("/api/sandboxes/" + id + "/pause", "");
  ASSERT_EQ(paused->status, 200);
  EXPECT_EQ(str_field(parse(get("/api/sandboxes/" + id)->body), "status"), "paused");
  EXPECT_EQ(sh(id, "true").status, 409);
  ASSERT_EQ(post("/api/sandboxes/" + id + "/resume", "")->status, 200);
  EXPECT_EQ(str_field(parse(get("/api/sandboxes/" + id)->body), "status"), "running");
  EXPECT_EQ(sh(id, "cat /workspace/f; pgrep -c sleep").out, "kept\n0\n");
}

TEST_F(FirecrackerEra, SnapshotsAreReadyListedPooledRestoredAndDeleted) {
  const std::string id = create();
  ASSERT_EQ(sh(id, "echo inside > /workspace/f").exit_code, 0);
  auto snap = post("/api/sandboxes/" + id + "/snapshot", R"({"name":"s1","poolSize":5})");
  ASSERT_EQ(snap->status, 200) << snap->body;
  const auto d = parse(snap->body);
  const std::string snap_id = str_field(d, "id");
  EXPECT_EQ(str_field(d, "status"), "ready");
  EXPECT_EQ(int_field(d, "poolSize"), 0);
  EXPECT_EQ(int_field(d, "readyCount"), 1);
  EXPECT_EQ(str_field(d, "sourceSandboxId"), id);
  EXPECT_EQ(str_field(parse(get("/api/sandbox-snapshots/" + snap_id)->body), "name"), "s1");
  EXPECT_EQ(parse(get("/api/projects/" + server_->project_id() + "/snapshots")->body).Size(), 1u);
  auto pooled =
      client().Patch("/api/sandbox-snapshots/" + snap_id, R"({"poolSize":3})", "application/json");
  ASSERT_EQ(pooled->status, 200) << pooled->body;
  EXPECT_EQ(int_field(parse(pooled->body), "poolSize"), 3);
  EXPECT_EQ(int_field(parse(pooled->body), "readyCount"), 3);
  // Restore: the files, into the snapshot's own project only.
  const std::string restored = create("\"snapshotId\":\"" + snap_id + "\"");
  EXPECT_EQ(sh(restored, "cat /workspace/f").out, "inside\n");
  const std::string other =
      str_field(parse(post("/api/projects", R"({"name":"other"})")->body), "id");
  auto wrong = post("/api/sandboxes",
                    "{\"projectId\":\"" + other + "\",\"snapshotId\":\"" + snap_id + "\"}");
  EXPECT_EQ(wrong->status, 403);
  EXPECT_EQ(str_field(parse(wrong->body), "error"), "SNAPSHOT_SCOPE");
  ASSERT_EQ(del("/api/sandbox-snapshots/" + snap_id)->status, 200);
  EXPECT_EQ(get("/api/sandbox-snapshots/" + snap_id)->status, 404);
}

TEST_F(FirecrackerEra, ForkCopiesFilesAndAnswers201) {
  const std::string id = create();
  ASSERT_EQ(sh(id, "echo forked > /workspace/f").exit_code, 0);
  auto r = post("/api/sandboxes/" + id + "/fork", R"({"count":2})");
  ASSERT_EQ(r->status, 201) << r->body;
  const auto d = parse(r->body);
  ASSERT_TRUE(d.IsArray() && d.Size() == 2);
  const std::string child = str_field(d[0]["sandbox"], "sandboxId");
  EXPECT_EQ(sh(child, "cat /workspace/f").out, "forked\n");
  EXPECT_EQ(post("/api/sandboxes/" + id + "/fork", R"({"count":11})")->status, 400);
}

TEST_F(FirecrackerEra, AForkCopiesDeepTreesWholeAndNeverInflatesHolesOrLinks) {
  // What a sandbox can make cheaply must stay cheap in the copy: a 3 GiB file
  // that is all hole, 200 more names of one 1 MiB file, and a tree 300 levels
  // deep (the copy stopped at 256 levels before, and wrote the hole and each
  // name out whole).
  const std::string id = create();
  ASSERT_EQ(sh(id,
               "cd /workspace && truncate -s 3G sparse && printf end >> sparse && "
               "head -c 1048576 /dev/zero > linked && mkdir names && "
               "i=0; while [ $i -lt 200 ]; do ln linked names/$i || exit 1; i=$((i+1)); done; "
               "python3 -c \"import os\nos.chdir('/workspace')\n"
               "for i in range(300): os.mkdir('d'); os.chdir('d')\n"
               "open('bottom', 'w').write('deep')\"")
                .exit_code,
            0);
  auto r = post("/api/sandboxes/" + id + "/fork", R"({"count":1})");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string child = str_field(parse(r->body)[0]["sandbox"], "sandboxId");
  // Size, blocks in use (512 bytes each), links; then the deepest file.
  EXPECT_EQ(sh(child, "cd /workspace && stat -c '%s %h' sparse linked names/199").out,
            "3221225475 1\n1048576 201\n1048576 201\n");
  const auto blocks = sh(child, "stat -c %b /workspace/sparse").out;
  EXPECT_LT(std::stoll(blocks), 1024) << blocks;  // under 512 KiB on disk
  EXPECT_EQ(sh(child, "tail -c 3 /workspace/sparse").out, "end");
  const std::string deep = "/workspace" + [] {
    std::string p;
    for (int i = 0; i < 300; ++i) p += "/d";
    return p;
  }() + "/bottom";
  EXPECT_EQ(sh(child, "cat " + deep).out, "deep");
}

TEST_F(KubernetesEra, ExposeHasNoAccessToken) {
  const std::string id = create();
  auto r = post("/api/sandboxes/" + id + "/expose/8080", "");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(str_field(parse(r->body), "accessToken"), "<missing>");
  EXPECT_EQ(str_field(parse(r->body), "hostname"), id + "-8080.sandbox.us-east-1.onlizard.com");
}

TEST_F(FirecrackerEra, ExposeHasAnAccessToken) {
  const std::string id = create();
  auto r = post("/api/sandboxes/" + id + "/expose/8080", "");
  EXPECT_EQ(str_field(parse(r->body), "accessToken").rfind("tok_", 0), 0u);
}

// --- files ----------------------------------------------------------------------

TEST_F(KubernetesEra, Base64UploadsMustDecodeToUtf8AndUserIsIgnored) {
  const std::string id = create();
  auto bad =
      post(files_path(id), R"({"path":"/workspace/b","content":"//4=","encoding":"base64"})");
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(str_field(parse(bad->body), "code"), "INVALID_UTF8");
  EXPECT_EQ(get(files_path(id) + "/stat?path=/workspace/b")->status, 404);
  auto text =
      post(files_path(id), R"({"path":"/workspace/t","content":"aMOp","encoding":"base64"})");
  EXPECT_EQ(text->status, 200);
  EXPECT_EQ(get(files_path(id) + "?path=/workspace/t")->body, "h\xc3\xa9");
  // Text whose escapes decode to bytes that are not UTF-8: refused as well.
  auto surrogate = post(files_path(id), R"({"path":"/workspace/s","content":"a\udc00"})");
  EXPECT_EQ(surrogate->status, 400);
  EXPECT_EQ(str_field(parse(surrogate->body), "code"), "INVALID_UTF8");
  EXPECT_EQ(get(files_path(id) + "/stat?path=/workspace/s")->status, 404);
  ASSERT_EQ(post(files_path(id), R"({"path":"/workspace/u","content":"x","user":"user"})")->status,
            200);
  EXPECT_EQ(str_field(parse(get(files_path(id) + "/stat?path=/workspace/u")->body), "owner"),
            "root");
}

TEST_F(FirecrackerEra, Base64UploadsAreExactAndUserIsApplied) {
  const std::string id = create();
  ASSERT_EQ(post(files_path(id), R"({"path":"/workspace/b","content":"//4=","encoding":"base64"})")
                ->status,
            200);
  EXPECT_EQ(get(files_path(id) + "?path=/workspace/b")->body, "\xff\xfe");
  // As "user": its own permissions (root's /workspace is not writable to
  // it, /tmp is) and its ownership.
  auto as_user = post(files_path(id), R"({"path":"/tmp/u","content":"x","user":"user"})");
  if (::geteuid() == 0) {
    ASSERT_EQ(as_user->status, 200) << as_user->body;
    EXPECT_EQ(sh(id, "stat -c %u /tmp/u").out, "1000\n");
    EXPECT_EQ(
        post(files_path(id), R"({"path":"/workspace/u","content":"x","user":"user"})")->status,
        400);
  } else {
    EXPECT_EQ(as_user->status, 400);
  }
}

// --- volumes --------------------------------------------------------------------

class VolumeResize : public MockFixture {
 protected:
  explicit VolumeResize(Era era) : MockFixture(MockOptions{.era = era}) {}
  std::string volumes() const { return "/api/projects/" + server_->project_id() + "/volumes"; }
  httplib::Result resize(const std::string& name, const std::string& size) {
    return client().Patch(volumes() + "/" + name, "{\"sizeGb\":" + size + "}", "application/json");
  }
};
class KubernetesVolumes : public VolumeResize {
 protected:
  KubernetesVolumes() : VolumeResize(Era::kKubernetes) {}
};
class FirecrackerVolumes : public VolumeResize {
 protected:
  FirecrackerVolumes() : VolumeResize(Era::kFirecracker) {}
};

TEST_F(KubernetesVolumes, GrowAndShrinkWhileTenPercentStaysFree) {
  ASSERT_EQ(post(volumes(), R"({"name":"v","sizeGb":10})")->status, 201);
  auto grown = resize("v", "20");
  ASSERT_EQ(grown->status, 200) << grown->body;
  EXPECT_EQ(int_field(parse(grown->body), "sizeGb"), 20);
  EXPECT_EQ(resize("v", "5")->status, 200);
  EXPECT_EQ(str_field(parse(resize("v", "0")->body), "code"), "invalid_volume_size");
  EXPECT_EQ(resize("nope", "5")->status, 404);
}

TEST_F(FirecrackerVolumes, GrowOnly) {
  ASSERT_EQ(post(volumes(), R"({"name":"v","sizeGb":10})")->status, 201);
  EXPECT_EQ(resize("v", "12")->status, 200);
  auto shrink = resize("v", "5");
  EXPECT_EQ(shrink->status, 400);
  EXPECT_EQ(str_field(parse(shrink->body), "code"), "volume_shrink_unsupported");
}

// --- platform routes, both eras -------------------------------------------------

TEST_F(KubernetesEra, LogsAre501AndUnexposeAnswers) {
  const std::string id = create();
  auto logs = get("/api/sandboxes/" + id + "/logs?tail=10");
  EXPECT_EQ(logs->status, 501);
  EXPECT_EQ(str_field(parse(logs->body), "error"), "Not available yet");
  EXPECT_EQ(get("/api/sandboxes/sbx_unknown/logs")->status, 404);
  EXPECT_EQ(del("/api/sandboxes/" + id + "/expose/8080")->status, 200);
  EXPECT_EQ(del("/api/sandboxes/sbx_unknown/expose/8080")->status, 404);
}

TEST_F(KubernetesEra, WorkspacesHaveSlugsAndDeleteRequiresEmptyOnlyWhenAsked) {
  auto w = post("/api/workspaces", R"({"name":"Team Space"})");
  ASSERT_EQ(w->status, 201);
  const std::string ws = str_field(parse(w->body), "id");
  EXPECT_EQ(str_field(parse(w->body), "slug"), "team-space");
  bool listed = false;
  const auto workspaces = parse(get("/api/workspaces")->body);
  for (const auto& e : workspaces.GetArray()) {
    listed = listed || str_field(e, "slug") == "team-space";
  }
  EXPECT_TRUE(listed);
  const std::string project = str_field(
      parse(post("/api/projects", "{\"name\":\"p\",\"workspaceId\":\"" + ws + "\"}")->body), "id");
  const std::string sandbox = create_in(project);
  auto refused = del("/api/workspaces/" + ws + "?requireEmpty=true");
  EXPECT_EQ(refused->status, 409);
  EXPECT_EQ(str_field(parse(refused->body), "code"), "WORKSPACE_NOT_EMPTY");
  ASSERT_EQ(del("/api/workspaces/" + ws)->status, 200);
  EXPECT_EQ(get("/api/sandboxes/" + sandbox)->status, 404) << "a forced delete took the sandbox";
  EXPECT_EQ(del("/api/workspaces/" + ws)->status, 404);
}

TEST_F(KubernetesEra, KeysAreListedWithoutSecretsAndARevokedKeyIsRefusedAtOnce) {
  auto made =
      post("/api/account/api-keys", "{\"name\":\"ci\",\"scopes\":[{\"type\":\"project\",\"id\":\"" +
                                        server_->project_id() + "\"}]}");
  ASSERT_EQ(made->status, 201);
  const auto d = parse(made->body);
  const std::string key = str_field(d, "key");
  const std::string id = str_field(d, "id");
  ASSERT_TRUE(d.HasMember("scopes") && d["scopes"].IsArray() && d["scopes"].Size() == 1)
      << made->body;
  auto list = get("/api/account/api-keys");
  EXPECT_EQ(list->body.find(key), std::string::npos) << "a list shows a whole key";
  bool previewed = false;
  const auto keys = parse(list->body);
  for (const auto& e : keys.GetArray()) {
    previewed =
        previewed || (str_field(e, "id") == id && str_field(e, "keyPreview") != "<missing>");
  }
  EXPECT_TRUE(previewed);
  EXPECT_EQ(get("/api/projects", key)->status, 200);
  ASSERT_EQ(del("/api/account/api-keys/" + id)->status, 200);
  EXPECT_EQ(get("/api/projects", key)->status, 401);
  EXPECT_EQ(del("/api/account/api-keys/" + id)->status, 404);
}

TEST_F(KubernetesEra, RegionsAndWhoami) {
  const auto regions = parse(get("/api/regions")->body);
  ASSERT_TRUE(regions.IsArray() && regions.Size() >= 1);
  EXPECT_EQ(str_field(regions[0], "id"), "us-east-1");
  EXPECT_TRUE(bool_field(regions[0], "isDefault"));
  EXPECT_EQ(str_field(parse(get("/api/auth/me")->body), "username"), "mock-user");
  const std::string scoped =
      str_field(parse(post("/api/account/api-keys",
                           "{\"name\":\"s\",\"scopes\":[{\"type\":\"project\","
                           "\"id\":\"" +
                               server_->project_id() + "\"}]}")
                          ->body),
                "key");
  const auto me = parse(get("/api/auth/me", scoped)->body);
  EXPECT_TRUE(bool_field(me, "scoped"));
  ASSERT_TRUE(me["scopes"].IsArray() && me["scopes"].Size() == 1);
  EXPECT_EQ(str_field(me["scopes"][0], "id"), server_->project_id());
  EXPECT_EQ(get("/api/auth/me", "liz_wrong")->status, 401);
}

}  // namespace
}  // namespace lizard::mock::test
