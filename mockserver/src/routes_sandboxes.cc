// /api/sandboxes: create, list, get, kill, lifetime, expose.
#include <filesystem>

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

constexpr std::int64_t kSetTimeoutMinMs = 1000;
constexpr std::int64_t kSetTimeoutMaxMs = 2147483647;

// Attaches the create's volume (by ID or name) to `sb`; its directory.
std::string attach_volume(MockState::Tables& t, Sandbox& sb, const Project& p,
                          const std::optional<std::string>& volume_id,
                          const std::optional<std::string>& volume_name) {
  Volume* v = nullptr;
  for (auto& [id, vol] : t.volumes) {
    if (vol.project_id == p.id &&
        ((volume_id && vol.id == *volume_id) || (volume_name && vol.name == *volume_name)))
      v = &vol;
  }
  if (!v) api_error(404, "Volume not found", "VOLUME_NOT_FOUND");
  if (!v->attached_to.empty())
    api_error(409, "Volume is attached to another sandbox", "VOLUME_IN_USE");
  v->attached_to = sb.id;
  sb.volume_id = v->id;
  sb.region = v->region;
  return v->dir;
}

void create_sandbox(MockState& state, Call& c) {
  if (state.stopping()) api_error(503, "The mock is shutting down", "SHUTTING_DOWN");
  RequestBody b(c.body);
  auto sb = std::make_shared<Sandbox>();
  sb->template_name = b.str("template").value_or("base");
  if (!known_template(sb->template_name))
    api_error(400, "Unknown template: " + sb->template_name, "INVALID_TEMPLATE");
  sb->size = b.str("size").value_or("medium");
  if (!find_size(sb->size)) api_error(400, "Unknown size: " + sb->size, "INVALID_SIZE");
  auto project_ref = b.str("projectId");
  if (!project_ref || project_ref->empty())
    api_error(400, "A project is required to create a sandbox", "PROJECT_REQUIRED");
  auto timeout = b.integer("timeoutMs");
  if (timeout && (*timeout < 0 || *timeout > kSetTimeoutMaxMs))
    api_error(400, "'timeoutMs' must be between 0 and 2147483647", "INVALID_TIMEOUT");
  sb->region = b.str("region").value_or(kDefaultRegion);
  const EraRules& era = era_rules(state.options().era);
  // Read (a wrong type is a 400 in both eras), then kept only where the era
  // applies them.
  auto envs = b.env_map("envs");
  if (era.create_envs) sb->envs = std::move(envs);
  if (const rapidjson::Value* md = b.get("metadata")) {
    if (!md->IsObject()) api_error(400, "'metadata' must be an object", "BAD_REQUEST");
    if (era.keeps_metadata) sb->metadata_json = to_json(*md);
  }
  auto volume_id = b.str("volumeId");
  auto volume_name = b.str("volumeName");
  auto snapshot_id = b.str("snapshotId");
  sb->id = state.new_id("sbx_");
  sb->base_dir = state.state_dir() + "/sandboxes/" + sb->id;
  std::string workspace_src;
  std::string snapshot_dir;
  state.locked([&](MockState::Tables& t) {
    Project p = t.resolve_project(c.key, *project_ref);
    sb->project_id = p.id;
    if (volume_id || volume_name) workspace_src = attach_volume(t, *sb, p, volume_id, volume_name);
    if (snapshot_id) {
      if (!era.snapshots) throw ApiError{501, "Not implemented", "", ""};
      auto it = t.snapshots.find(*snapshot_id);
      const Project* owner =
          it == t.snapshots.end() ? nullptr : t.project_by_id(it->second.project_id);
      if (!owner || !MockState::reaches(c.key, *owner))
        api_error(404, "Snapshot not found", "SNAPSHOT_NOT_FOUND");
      if (owner->id != p.id) {
        api_error_coded(403, "SNAPSHOT_SCOPE",
                        "A snapshot can be restored only into its own project");
      }
      snapshot_dir = it->second.dir;
    }
  });
  try {
    if (!snapshot_dir.empty()) {
      state.make_sandbox_dir(sb->base_dir);
      for (const char* d : {"/workspace", "/tmp", "/home"})
        copy_tree(snapshot_dir + d, sb->base_dir + d, state.sandbox_settings().ids);
    }
    sb->rt = state.start_runtime(sb->id, sb->base_dir, workspace_src);
  } catch (const std::exception& e) {
    state.locked([&](MockState::Tables& t) {
      if (!sb->volume_id.empty()) t.volumes[sb->volume_id].attached_to.clear();
    });
    remove_tree(sb->base_dir);
    api_error(500, std::string("Sandbox could not start: ") + e.what(), "SANDBOX_START_FAILED");
  }
  sb->started_at = state.now_ms();
  sb->lifetime_ms = timeout.value_or(0);
  sb->end_at = sb->lifetime_ms > 0 ? sb->started_at + sb->lifetime_ms : 0;
  state.locked([&](MockState::Tables& t) { t.sandboxes[sb->id] = sb; });
  if (state.stopping()) {
    auto gone = state.locked([&](MockState::Tables& t) { return t.take(sb->id); });
    if (gone) state.discard(*gone);
    api_error(503, "The mock is shutting down", "SHUTTING_DOWN");
  }
  c.reply(201, sandbox_json(state, *sb));
}

void list_sandboxes(MockState& state, Call& c) {
  state.reap_expired();
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    JsonOut j;
    j.begin_array();
    for (const auto& [id, sb] : t.sandboxes) {
      const Project* p = t.project_by_id(sb->project_id);
      if (!p || !MockState::reaches(c.key, *p)) continue;
      write_sandbox(j, *sb, state.options().era);
    }
    j.end_array();
    return j.text();
  }));
}

void get_sandbox(MockState& state, Call& c) {
  c.reply(200, sandbox_json(state, *state.find_sandbox(c.key, c.param(0))));
}

void kill_sandbox(MockState& state, Call& c) {
  const std::string& id = c.param(0);
  state.find_sandbox(c.key, id);
  auto sb = state.locked([&](MockState::Tables& t) { return t.take(id); });
  if (!sb) not_found_sandbox();
  state.discard(*sb);
  c.reply(200, "{}");
}

void set_timeout(MockState& state, Call& c) {
  auto sb = state.find_sandbox(c.key, c.param(0));
  RequestBody b(c.body);
  auto t = b.integer("timeoutMs");
  if (!t) api_error(400, "'timeoutMs' is required", "INVALID_TIMEOUT");
  if (*t < kSetTimeoutMinMs || *t > kSetTimeoutMaxMs)
    api_error(400, "'timeoutMs' must be between 1000 and 2147483647", "INVALID_TIMEOUT");
  const std::int64_t now = state.now_ms();
  state.locked([&](MockState::Tables&) {
    sb->lifetime_ms = *t;
    sb->end_at = now + *t;
  });
  c.reply(200, "{}");
}

void expose(MockState& state, Call& c) {
  auto sb = state.find_sandbox(c.key, c.param(0));
  const std::string& port_text = c.param(1);
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 1 || port > 65535)
    api_error(400, "Invalid port", "BAD_REQUEST");
  std::string host =
      sb->id + "-" + std::to_string(port) + ".sandbox." + sb->region + ".onlizard.com";
  JsonOut j;
  j.begin_object()
      .kv("hostname", host)
      .kv("url", "https://" + host)
      .kv("port", static_cast<std::int64_t>(port));
  if (era_rules(state.options().era).expose_token) j.kv("accessToken", state.new_id("tok_", 32));
  j.end_object();
  c.reply(200, j.text());
}

// Logs are not available on either platform yet.
void logs(MockState& state, Call& c) {
  state.find_sandbox(c.key, c.param(0));
  c.reply(501, R"({"error":"Not available yet"})");
}

void unexpose(MockState& state, Call& c) {
  state.find_sandbox(c.key, c.param(0));
  c.reply(200, "{}");
}

}  // namespace

void add_sandbox_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("POST", "/api/sandboxes", bind(create_sandbox));
  router.add("GET", "/api/sandboxes", bind(list_sandboxes));
  router.add("GET", "/api/sandboxes/{id}", bind(get_sandbox));
  router.add("DELETE", "/api/sandboxes/{id}", bind(kill_sandbox));
  router.add("POST", "/api/sandboxes/{id}/timeout", bind(set_timeout));
  router.add("POST", "/api/sandboxes/{id}/expose/{port}", bind(expose));
  router.add("DELETE", "/api/sandboxes/{id}/expose/{port}", bind(unexpose));
  router.add("GET", "/api/sandboxes/{id}/logs", bind(logs));
}

}  // namespace lizard::mock::internal
