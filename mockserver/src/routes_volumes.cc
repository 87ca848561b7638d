// /api/projects/{ref}/volumes: create, list, get, delete.
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

void list_volumes(MockState& state, Call& c) {
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    const Project p = t.resolve_project(c.key, c.param(0));
    JsonOut j;
    j.begin_array();
    for (const auto& [id, v] : t.volumes) {
      if (v.project_id == p.id) j.raw(volume_json(v));
    }
    j.end_array();
    return j.text();
  }));
}

void create_volume(MockState& state, Call& c) {
  const Project p = state.locked(
      [&](const MockState::Tables& t) { return t.resolve_project(c.key, c.param(0)); });
  RequestBody b(c.body);
  auto name = b.str("name");
  if (!name || name->empty()) api_error(400, "'name' is required", "BAD_REQUEST");
  const std::int64_t size = b.integer("sizeGb").value_or(10);
  if (size < 1 || size > 10000)
    api_error(400, "'sizeGb' must be between 1 and 10000", "BAD_REQUEST");
  const std::string region = b.str("region").value_or(kDefaultRegion);
  const bool get_or_create = b.boolean("getOrCreate").value_or(false);
  Volume v;
  v.id = state.new_id("vol_");
  v.project_id = p.id;
  v.name = *name;
  v.size_gb = static_cast<int>(size);
  v.region = region;
  v.created_at = state.now_ms();
  v.dir = state.state_dir() + "/volumes/" + v.id;
  auto [status, body] = state.locked([&](MockState::Tables& t) -> std::pair<int, std::string> {
    for (const auto& [id, existing] : t.volumes) {
      if (existing.project_id == p.id && existing.name == *name) {
        if (get_or_create) return {200, volume_json(existing)};
        api_error(409, "A volume with this name already exists", "VOLUME_EXISTS");
      }
    }
    state.make_sandbox_dir(v.dir);
    t.volumes[v.id] = v;
    return {201, volume_json(v)};
  });
  c.reply(status, body);
}

// The volume named by ID or name in the project; 404 VOLUME_NOT_FOUND.
Volume& find_volume(MockState::Tables& t, const Project& p, const std::string& name_or_id) {
  for (auto& [id, v] : t.volumes) {
    if (v.project_id == p.id && (v.id == name_or_id || v.name == name_or_id)) return v;
  }
  api_error(404, "Volume not found", "VOLUME_NOT_FOUND");
}

void get_volume(MockState& state, Call& c) {
  c.reply(200, state.locked([&](MockState::Tables& t) {
    return volume_json(find_volume(t, t.resolve_project(c.key, c.param(0)), c.param(1)));
  }));
}

// PATCH {sizeGb}: grow in every era; a shrink where the era allows it
// (kubernetes), if the files leave a tenth of the new size free.
void resize_volume(MockState& state, Call& c) {
  RequestBody b(c.body);
  const rapidjson::Value* size = b.get("sizeGb");
  if (!size || !size->IsInt64() || size->GetInt64() < 1 || size->GetInt64() > 10000)
    api_error(400, "'sizeGb' must be an integer between 1 and 10000", "invalid_volume_size");
  const int wanted = static_cast<int>(size->GetInt64());
  const auto [current, dir] = state.locked([&](MockState::Tables& t) {
    const Volume& v = find_volume(t, t.resolve_project(c.key, c.param(0)), c.param(1));
    return std::pair<int, std::string>{v.size_gb, v.dir};
  });
  if (wanted < current) {
    if (!era_rules(state.options().era).volume_shrink)
      api_error(400, "Volumes can only grow on this platform", "volume_shrink_unsupported");
    const double used = static_cast<double>(tree_bytes(dir));
    if (used > 0.9 * static_cast<double>(wanted) * (1ull << 30))
      api_error(409, "The files would not leave 10% of the new size free",
                "volume_too_full_to_shrink");
  }
  c.reply(200, state.locked([&](MockState::Tables& t) {
    Volume& v = find_volume(t, t.resolve_project(c.key, c.param(0)), c.param(1));
    v.size_gb = wanted;
    return volume_json(v);
  }));
}

void delete_volume(MockState& state, Call& c) {
  const std::string dir = state.locked([&](MockState::Tables& t) {
    Volume& v = find_volume(t, t.resolve_project(c.key, c.param(0)), c.param(1));
    if (!v.attached_to.empty()) api_error(409, "Volume is attached to a sandbox", "VOLUME_IN_USE");
    std::string d = v.dir;
    t.volumes.erase(v.id);
    return d;
  });
  remove_tree(dir);
  c.reply(200, "{}");
}

}  // namespace

void add_volume_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("GET", "/api/projects/{ref}/volumes", bind(list_volumes));
  router.add("POST", "/api/projects/{ref}/volumes", bind(create_volume));
  router.add("GET", "/api/projects/{ref}/volumes/{volume}", bind(get_volume));
  router.add("DELETE", "/api/projects/{ref}/volumes/{volume}", bind(delete_volume));
  router.add("PATCH", "/api/projects/{ref}/volumes/{volume}", bind(resize_volume));
}

}  // namespace lizard::mock::internal
