// Projects, workspaces, API keys, billing and usage.
#include <algorithm>
#include <map>
#include <set>

#include "api_error.h"
#include "file_trees.h"
#include "json.h"
#include "representations.h"
#include "request_body.h"
#include "routes.h"
#include "sandbox_runtime.h"
#include "state.h"
#include "wire_values.h"

namespace lizard::mock::internal {
namespace {

void list_projects(MockState& state, Call& c) {
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    JsonOut j;
    j.begin_array();
    for (const auto& p : t.projects) {
      if (MockState::reaches(c.key, p)) write_project(j, p);
    }
    j.end_array();
    return j.text();
  }));
}

void create_project(MockState& state, Call& c) {
  RequestBody b(c.body);
  auto name = b.str("name");
  if (!name || name->empty()) api_error(400, "'name' is required", "BAD_REQUEST");
  auto ws = b.str("workspaceId");
  const std::string id = state.new_id("prj_");
  const std::int64_t now = state.now_ms();
  c.reply(201, state.locked([&](MockState::Tables& t) {
    std::string wid = ws.value_or(t.workspaces.begin()->first);
    if (!t.workspaces.count(wid)) api_error(404, "Workspace not found", "WORKSPACE_NOT_FOUND");
    if (!c.key.full && !c.key.workspaces.count(wid))
      api_error(403, "This API key cannot reach that workspace", "FORBIDDEN");
    Project p{id, *name, slugify(*name), wid, now};
    t.projects.push_back(p);
    JsonOut j;
    write_project(j, p);
    return j.text();
  }));
}

void get_project(MockState& state, Call& c) {
  Project p = state.locked(
      [&](const MockState::Tables& t) { return t.resolve_project(c.key, c.param(0)); });
  JsonOut j;
  write_project(j, p);
  c.reply(200, j.text());
}

void list_sandboxes_of_project(MockState& state, Call& c) {
  state.reap_expired();
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    const Project p = t.resolve_project(c.key, c.param(0));
    JsonOut j;
    j.begin_array();
    for (const auto& [id, sb] : t.sandboxes) {
      if (sb->project_id == p.id) write_sandbox(j, *sb, state.options().era);
    }
    j.end_array();
    return j.text();
  }));
}

void write_workspace(JsonOut& j, const Workspace& w) {
  j.begin_object()
      .kv("id", w.id)
      .kv("name", w.name)
      .kv("slug", w.slug)
      .kv("createdAt", iso_time(w.created_at))
      .end_object();
}

[[noreturn]] void account_scope_required(const std::string& what) {
  api_error_coded(
      403, "ACCOUNT_SCOPE_REQUIRED",
      what + " needs an account-wide key; this one is scoped to workspaces or projects");
}

void list_workspaces(MockState& state, Call& c) {
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    JsonOut j;
    j.begin_array();
    // A scoped key sees its workspaces and those holding its projects.
    std::set<std::string> visible = c.key.workspaces;
    for (const auto& pid : c.key.projects) {
      if (const Project* p = t.project_by_id(pid)) visible.insert(p->workspace_id);
    }
    for (const auto& [id, w] : t.workspaces) {
      if (!c.key.full && !visible.count(id)) continue;
      write_workspace(j, w);
    }
    j.end_array();
    return j.text();
  }));
}

void create_workspace(MockState& state, Call& c) {
  if (!c.key.full) account_scope_required("Creating a workspace");
  RequestBody b(c.body);
  auto name = b.str("name");
  if (!name || name->empty()) api_error(400, "'name' is required", "BAD_REQUEST");
  Workspace w{state.new_id("wks_"), *name, slugify(*name), state.now_ms()};
  state.locked([&](MockState::Tables& t) { t.workspaces[w.id] = w; });
  JsonOut j;
  write_workspace(j, w);
  c.reply(201, j.text());
}

// DELETE /api/workspaces/{id}: with ?requireEmpty=true a workspace that
// still has projects is 409 WORKSPACE_NOT_EMPTY; without it the workspace
// goes with its projects, their sandboxes and volumes (forced).
void delete_workspace(MockState& state, Call& c) {
  if (!c.key.full) account_scope_required("Deleting a workspace");
  const std::string& id = c.param(0);
  const std::string* require_empty = c.query("requireEmpty");
  const bool forced = !require_empty || *require_empty == "false";
  std::vector<std::shared_ptr<Sandbox>> sandboxes;
  std::vector<std::string> dirs;
  state.locked([&](MockState::Tables& t) {
    if (!t.workspaces.count(id)) api_error(404, "Workspace not found", "WORKSPACE_NOT_FOUND");
    std::set<std::string> projects;
    for (const auto& p : t.projects) {
      if (p.workspace_id == id) projects.insert(p.id);
    }
    if (!forced && !projects.empty())
      api_error(409, "The workspace still has projects", "WORKSPACE_NOT_EMPTY");
    std::vector<std::string> ids;
    for (const auto& [sid, sb] : t.sandboxes) {
      if (projects.count(sb->project_id)) ids.push_back(sid);
    }
    for (const auto& sid : ids) sandboxes.push_back(t.take(sid));
    for (auto it = t.volumes.begin(); it != t.volumes.end();) {
      if (projects.count(it->second.project_id)) {
        dirs.push_back(it->second.dir);
        it = t.volumes.erase(it);
      } else {
        ++it;
      }
    }
    std::erase_if(t.projects, [&](const Project& p) { return projects.count(p.id) > 0; });
    t.workspaces.erase(id);
  });
  for (auto& sb : sandboxes) state.discard(*sb);
  for (const auto& d : dirs) remove_tree(d);
  c.reply(200, "{}");
}

void write_scopes(JsonOut& j, const ApiKey& k) {
  j.key("scopes").begin_array();
  for (const auto& w : k.workspaces)
    j.begin_object().kv("type", "workspace").kv("id", w).end_object();
  for (const auto& p : k.projects) j.begin_object().kv("type", "project").kv("id", p).end_object();
  j.end_array();
}

// A full key sees every key of the account; a scoped key sees itself.
void list_keys(MockState& state, Call& c) {
  c.reply(200, state.locked([&](const MockState::Tables& t) {
    JsonOut j;
    j.begin_array();
    for (const auto& [secret, k] : t.keys) {
      if (!c.key.full && k.id != c.key.id) continue;
      // Never the whole key: at most 8 characters, and at most half of it.
      const std::size_t shown = std::min<std::size_t>(8, secret.size() / 2);
      j.begin_object()
          .kv("id", k.id)
          .kv("name", k.name)
          .kv("keyPreview", secret.substr(0, shown) + "...");
      write_scopes(j, k);
      j.kv("createdAt", iso_time(k.created_at)).end_object();
    }
    j.end_array();
    return j.text();
  }));
}

// Revoked means the next call with that key is 401 at once. A scoped key
// may revoke itself only.
void revoke_key(MockState& state, Call& c) {
  const std::string& id = c.param(0);
  state.locked([&](MockState::Tables& t) {
    for (auto it = t.keys.begin(); it != t.keys.end(); ++it) {
      if (it->second.id != id) continue;
      if (!c.key.full && id != c.key.id)
        api_error(403, "A scoped key can revoke only itself", "KEY_SCOPE_EXCEEDED");
      t.keys.erase(it);
      return;
    }
    api_error(404, "API key not found", "KEY_NOT_FOUND");
  });
  c.reply(200, "{}");
}

void regions(MockState&, Call& c) {
  c.reply(
      200,
      R"J([{"id":"us-east-1","name":"US East (N. Virginia)","available":true,"isDefault":true},)J"
      R"J({"id":"eu-central-1","name":"EU (Frankfurt)","available":true,"isDefault":false}])J");
}

void whoami(MockState& state, Call& c) {
  JsonOut j;
  j.begin_object();
  if (c.key.full) {
    j.kv("id", "acct_mock").kv("username", "mock-user").kv("email", "mock@lizard.invalid");
    j.kv("plan", "mock");
  } else {
    j.kv("scoped", true).key("scopes").begin_array();
    state.locked([&](const MockState::Tables& t) {
      for (const auto& w : c.key.workspaces) {
        j.begin_object().kv("type", "workspace").kv("id", w);
        if (auto it = t.workspaces.find(w); it != t.workspaces.end()) j.kv("name", it->second.name);
        j.end_object();
      }
      for (const auto& pid : c.key.projects) {
        j.begin_object().kv("type", "project").kv("id", pid);
        if (const Project* p = t.project_by_id(pid)) {
          j.kv("name", p->name).kv("workspaceId", p->workspace_id);
        }
        j.end_object();
      }
    });
    j.end_array();
  }
  j.end_object();
  c.reply(200, j.text());
}

// Scopes from either shape: {workspaces, projects} (the older route) or the
// SDK's {scopes: [{type: "workspace"|"project", id}]}.
void read_scopes(const RequestBody& b, std::vector<std::string>& ws, std::vector<std::string>& ps) {
  ws = b.string_list("workspaces");
  ps = b.string_list("projects");
  const rapidjson::Value* scopes = b.get("scopes");
  if (!scopes) return;
  if (!scopes->IsArray()) api_error(400, "'scopes' must be an array", "BAD_REQUEST");
  for (const auto& scope : scopes->GetArray()) {
    const auto type = scope.IsObject() ? scope.FindMember("type") : scope.MemberEnd();
    const auto id = scope.IsObject() ? scope.FindMember("id") : scope.MemberEnd();
    if (!scope.IsObject() || type == scope.MemberEnd() || id == scope.MemberEnd() ||
        !type->value.IsString() || !id->value.IsString()) {
      api_error(400, "Each scope is {type: \"workspace\"|\"project\", id}", "BAD_REQUEST");
    }
    const std::string kind = string_of(type->value);
    if (kind == "workspace") {
      ws.push_back(string_of(id->value));
    } else if (kind == "project") {
      ps.push_back(string_of(id->value));
    } else {
      api_error(400, "Unknown scope type: " + kind, "BAD_REQUEST");
    }
  }
}

void create_key(MockState& state, Call& c) {
  RequestBody b(c.body);
  std::vector<std::string> ws, ps;
  read_scopes(b, ws, ps);
  ApiKey k;
  k.name = b.str("name").value_or("key");
  k.full = ws.empty() && ps.empty();
  k.id = state.new_id("key_");
  k.key = state.new_id("liz_", 40);
  k.created_at = state.now_ms();
  state.locked([&](MockState::Tables& t) {
    for (const auto& w : ws) {
      if (!t.workspaces.count(w))
        api_error(404, "Workspace not found: " + w, "WORKSPACE_NOT_FOUND");
      if (!c.key.full && !c.key.workspaces.count(w))
        api_error(403, "A key cannot grant more than it has", "KEY_SCOPE_EXCEEDED");
      k.workspaces.insert(w);
    }
    for (const auto& pid : ps) {
      const Project* p = t.project_by_id(pid);
      if (!p) api_error(404, "Project not found: " + pid, "PROJECT_NOT_FOUND");
      if (!MockState::reaches(c.key, *p))
        api_error(403, "A key cannot grant more than it has", "KEY_SCOPE_EXCEEDED");
      k.projects.insert(pid);
    }
    if (k.full && !c.key.full)
      api_error(403, "A scoped key cannot create an account-wide key", "KEY_SCOPE_EXCEEDED");
    t.keys[k.key] = k;
  });
  JsonOut j;
  j.begin_object().kv("key", k.key).kv("id", k.id).kv("name", k.name);
  write_scopes(j, k);
  j.key("workspaces").begin_array();
  for (const auto& w : k.workspaces) j.str(w);
  j.end_array().key("projects").begin_array();
  for (const auto& p : k.projects) j.str(p);
  j.end_array().kv("createdAt", iso_time(k.created_at)).end_object();
  c.reply(201, j.text());
}

void billing(MockState&, Call& c) {
  if (!c.key.full) account_scope_required("Billing and usage");
  c.reply(200, R"({"plan":"mock","balanceUsd":0,"usage":[]})");
}

}  // namespace

void add_account_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("GET", "/api/projects", bind(list_projects));
  router.add("POST", "/api/projects", bind(create_project));
  router.add("GET", "/api/projects/{ref}", bind(get_project));
  router.add("GET", "/api/projects/{ref}/sandboxes", bind(list_sandboxes_of_project));
  router.add("GET", "/api/workspaces", bind(list_workspaces));
  router.add("POST", "/api/workspaces", bind(create_workspace));
  router.add("DELETE", "/api/workspaces/{id}", bind(delete_workspace));
  router.add("GET", "/api/account/api-keys", bind(list_keys));
  router.add("DELETE", "/api/account/api-keys/{id}", bind(revoke_key));
  router.add("GET", "/api/regions", bind(regions));
  router.add("GET", "/api/auth/me", bind(whoami));
  router.add("POST", "/api/api-keys", bind(create_key));
  // The SDK's route for the same operation: {name, scopes: [{type, id}]}.
  router.add("POST", "/api/account/api-keys", bind(create_key));
  router.add("*", "/api/billing/**", bind(billing));
  router.add("*", "/api/usage/**", bind(billing));
}

}  // namespace lizard::mock::internal
