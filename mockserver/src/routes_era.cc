// pause, resume, fork and snapshot: 501 in the kubernetes era; in the
// firecracker era they work on the sandbox's files (processes do not
// survive a pause).
#include "api_error.h"
#include "json.h"
#include "representations.h"
#include "request_body.h"
#include "routes.h"
#include "sandbox_runtime.h"
#include "state.h"

namespace lizard::mock::internal {
namespace {

// The sandbox named in the route, or 501 in the kubernetes era (after the
// 404 for an unknown sandbox).
std::shared_ptr<Sandbox> firecracker_sandbox(MockState& state, Call& c) {
  auto sb = state.find_sandbox(c.key, c.param(0));
  if (state.options().era == Era::kKubernetes) {
    throw ApiError{501, "Not implemented", "", ""};
  }
  return sb;
}

void pause(MockState& state, Call& c) {
  auto sb = firecracker_sandbox(state, c);
  auto rt = state.locked([&](MockState::Tables&) {
    sb->status = "paused";
    return std::move(sb->rt);
  });
  // Files survive, processes do not.
  if (rt) rt->stop();
  c.reply(200, sandbox_json(state, *sb));
}

void resume(MockState& state, Call& c) {
  auto sb = firecracker_sandbox(state, c);
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
  auto sb = firecracker_sandbox(state, c);
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
  c.reply(200, j.text());
}

void snapshot(MockState& state, Call& c) {
  auto sb = firecracker_sandbox(state, c);
  RequestBody b(c.body, true);
  Snapshot s;
  s.id = state.new_id("snap_");
  s.name = b.str("name").value_or("Snapshot " + sb->id);
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
  j.begin_object()
      .kv("id", s.id)
      .kv("name", s.name)
      .kv("projectId", s.project_id)
      .kv("workspaceId", s.workspace_id)
      .kv("region", s.region)
      .kv("sourceSandboxId", s.source)
      .kv("status", "ready")
      .kv("poolSize", 0)
      .kv("readyCount", 0)
      .key("error")
      .null()
      .kv("cpus", s.cpus)
      .kv("memoryMb", s.memory_mb)
      .kv("createdAt", s.created_at)
      .end_object();
  c.reply(200, j.text());
}

}  // namespace

void add_era_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("POST", "/api/sandboxes/{id}/pause", bind(pause));
  router.add("POST", "/api/sandboxes/{id}/resume", bind(resume));
  router.add("POST", "/api/sandboxes/{id}/fork", bind(fork));
  router.add("POST", "/api/sandboxes/{id}/snapshot", bind(snapshot));
}

}  // namespace lizard::mock::internal
