// pause, resume, fork, snapshots and restore: what each era does with them
// (era.h). Where they work, they work on the sandbox's files: processes do
// not survive a pause, a fork or a snapshot.
#include <algorithm>

#include "api_error.h"
#include "era.h"
#include "file_trees.h"
#include "json.h"
#include "representations.h"
#include "request_body.h"
#include "routes.h"
#include "sandbox_runtime.h"
#include "state.h"

namespace lizard::mock::internal {
namespace {

[[noreturn]] void not_implemented() { throw ApiError{501, "Not implemented", "", ""}; }

// The sandbox named in the route, or 501 where the era lacks the operation
// (after the 404 for an unknown sandbox).
std::shared_ptr<Sandbox> sandbox_for(MockState& state, Call& c, bool era_has_it) {
  auto sb = state.find_sandbox(c.key, c.param(0));
  if (!era_has_it) not_implemented();
  return sb;
}

const EraRules& rules(const MockState& state) { return era_rules(state.options().era); }

// SandboxSnapshot. The warm pool fills at once (our choice): readyCount is
// max(1, poolSize), so the SDK's waitForSnapshot returns.
void write_snapshot(JsonOut& j, const Snapshot& s) {
  j.begin_object()
      .kv("id", s.id)
      .kv("name", s.name)
      .kv("projectId", s.project_id)
      .kv("workspaceId", s.workspace_id)
      .kv("region", s.region)
      .kv("sourceSandboxId", s.source)
      .kv("status", "ready")
      .kv("poolSize", s.pool_size)
      .kv("readyCount", std::max(1, s.pool_size))
      .key("error")
      .null()
      .kv("cpus", s.cpus)
      .kv("memoryMb", s.memory_mb)
      .kv("createdAt", s.created_at)
      .end_object();
}

// The snapshot `id` when the key reaches its project; else 404.
Snapshot find_snapshot(const MockState::Tables& t, const ApiKey& key, const std::string& id) {
  auto it = t.snapshots.find(id);
  const Project* p = it == t.snapshots.end() ? nullptr : t.project_by_id(it->second.project_id);
  if (!p || !MockState::reaches(key, *p))
    api_error(404, "Snapshot not found", "SNAPSHOT_NOT_FOUND");
  return it->second;
}

void pause(MockState& state, Call& c) {
  auto sb = sandbox_for(state, c, rules(state).pause_resume);
  auto rt = state.locked([&](MockState::Tables&) {
    sb->status = "paused";
    return std::move(sb->rt);
  });
  // Files survive, processes do not.
  if (rt) rt->stop();
  c.reply(200, sandbox_json(state, *sb));
}

void resume(MockState& state, Call& c) {
  auto sb = sandbox_for(state, c, rules(state).pause_resume);
  state.locked([&](MockState::Tables& t) {
    if (!sb->rt) {
      std::string ws;
      if (!sb->volume_id.empty()) ws = t.volumes[sb->volume_id].dir;
      sb->rt = state.start_runtime(sb->id, sb->base_dir, ws);
    }
    sb->status = "running";
  });
  c.reply(200, sandbox_json(state, *sb));
}

void fork(MockState& state, Call& c) {
  auto sb = sandbox_for(state, c, rules(state).fork);
  if (!sb->volume_id.empty())
    api_error(409, "A sandbox with a volume attached cannot be forked", "VOLUME_ATTACHED");
  RequestBody b(c.body, true);
  const std::int64_t count = b.integer("count").value_or(1);
  if (count < 1 || count > 10) api_error(400, "'count' must be between 1 and 10", "BAD_REQUEST");
  std::int64_t lifetime = b.integer("timeoutMs").value_or(0);
  if (lifetime < 0) api_error(400, "'timeoutMs' must not be negative", "BAD_REQUEST");
  if (lifetime == 0) lifetime = sb->lifetime_ms;
  JsonOut j;
  j.begin_array();
  for (std::int64_t i = 0; i < count; ++i) {
    auto f = state.locked([&](MockState::Tables&) { return std::make_shared<Sandbox>(*sb); });
    f->id = state.new_id("sbx_");
    f->base_dir = state.state_dir() + "/sandboxes/" + f->id;
    for (const char* d : {"/workspace", "/tmp", "/home"})
      copy_tree(sb->base_dir + d, f->base_dir + d, state.sandbox_settings().ids);
    f->rt = state.start_runtime(f->id, f->base_dir, "");
    f->status = "running";
    f->started_at = state.now_ms();
    f->lifetime_ms = lifetime;
    f->end_at = lifetime > 0 ? f->started_at + lifetime : 0;
    j.begin_object().key("sandbox");
    write_sandbox(j, *f, state.options().era);
    j.end_object();
    state.locked([&](MockState::Tables& t) { t.sandboxes[f->id] = f; });
  }
  j.end_array();
  c.reply(201, j.text());
}

void snapshot(MockState& state, Call& c) {
  auto sb = sandbox_for(state, c, rules(state).snapshots);
  RequestBody b(c.body, true);
  Snapshot s;
  s.id = state.new_id("snap_");
  s.name = b.str("name").value_or("Snapshot " + sb->id);
  (void)b.integer("poolSize");  // accepted; the pool starts empty (our choice)
  s.project_id = sb->project_id;
  s.region = sb->region;
  s.source = sb->id;
  s.dir = state.state_dir() + "/snapshots/" + s.id;
  s.cpus = find_size(sb->size)->cpus;
  s.memory_mb = find_size(sb->size)->memory_mb;
  s.created_at = state.now_ms();
  const std::string ws_dir = state.locked([&](MockState::Tables&) {
    return sb->rt ? sb->rt->workspace_dir() : sb->base_dir + "/workspace";
  });
  const IdMap& ids = state.sandbox_settings().ids;
  state.make_sandbox_dir(s.dir);
  copy_tree(ws_dir, s.dir + "/workspace", ids);
  copy_tree(sb->base_dir + "/tmp", s.dir + "/tmp", ids);
  copy_tree(sb->base_dir + "/home", s.dir + "/home", ids);
  state.locked([&](MockState::Tables& t) {
    if (const Project* p = t.project_by_id(s.project_id)) s.workspace_id = p->workspace_id;
    t.snapshots[s.id] = s;
  });
  JsonOut j;
  write_snapshot(j, s);
  c.reply(200, j.text());
}

void get_snapshot(MockState& state, Call& c) {
  if (!rules(state).snapshots) api_error(404, "Snapshot not found", "SNAPSHOT_NOT_FOUND");
  JsonOut j;
  write_snapshot(j, state.locked([&](const MockState::Tables& t) {
    return find_snapshot(t, c.key, c.param(0));
  }));
  c.reply(200, j.text());
}

void delete_snapshot(MockState& state, Call& c) {
  if (!rules(state).snapshots) api_error(404, "Snapshot not found", "SNAPSHOT_NOT_FOUND");
  const std::string dir = state.locked([&](MockState::Tables& t) {
    const Snapshot s = find_snapshot(t, c.key, c.param(0));
    t.snapshots.erase(s.id);
    return s.dir;
  });
  remove_tree(dir);
  c.reply(200, "{}");
}

void set_snapshot_pool(MockState& state, Call& c) {
  if (!rules(state).snapshots) api_error(404, "Snapshot not found", "SNAPSHOT_NOT_FOUND");
  RequestBody b(c.body);
  const auto pool = b.integer("poolSize");
  if (pool && (*pool < 0 || *pool > 100))
    api_error(400, "'poolSize' must be between 0 and 100", "BAD_REQUEST");
  JsonOut j;
  write_snapshot(j, state.locked([&](MockState::Tables& t) {
    Snapshot s = find_snapshot(t, c.key, c.param(0));
    if (pool) s.pool_size = static_cast<int>(*pool);
    t.snapshots[s.id] = s;
    return s;
  }));
  c.reply(200, j.text());
}

// The snapshots of the projects the key reaches (all, or one project's).
void list_snapshots(MockState& state, Call& c, const std::string* project_ref) {
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    std::string project;
    if (project_ref) project = t.resolve_project(c.key, *project_ref).id;
    JsonOut j;
    j.begin_array();
    if (rules(state).snapshots) {
      for (const auto& [id, s] : t.snapshots) {
        const Project* p = t.project_by_id(s.project_id);
        if (!p || !MockState::reaches(c.key, *p)) continue;
        if (project_ref && s.project_id != project) continue;
        write_snapshot(j, s);
      }
    }
    j.end_array();
    return j.text();
  }));
}

}  // namespace

void add_era_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("POST", "/api/sandboxes/{id}/pause", bind(pause));
  router.add("POST", "/api/sandboxes/{id}/resume", bind(resume));
  router.add("POST", "/api/sandboxes/{id}/fork", bind(fork));
  router.add("POST", "/api/sandboxes/{id}/snapshot", bind(snapshot));
  router.add("GET", "/api/sandbox-snapshots",
             [&state](Call& c) { list_snapshots(state, c, nullptr); });
  router.add("GET", "/api/projects/{ref}/snapshots",
             [&state](Call& c) { list_snapshots(state, c, &c.param(0)); });
  router.add("GET", "/api/sandbox-snapshots/{id}", bind(get_snapshot));
  router.add("DELETE", "/api/sandbox-snapshots/{id}", bind(delete_snapshot));
  router.add("PATCH", "/api/sandbox-snapshots/{id}", bind(set_snapshot_pool));
}

}  // namespace lizard::mock::internal
