// What the mock keeps about accounts and sandboxes: plain records, guarded
// by MockState's lock (state.h).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lizard::mock::internal {

class SandboxRuntime;

struct Workspace {
  std::string id, name, slug;
  std::int64_t created_at = 0;
};

struct Project {
  std::string id, name, slug, workspace_id;
  std::int64_t created_at = 0;
};

struct ApiKey {
  std::string key, id, name;
  bool full = true;  // account-wide; otherwise limited to `workspaces` and `projects`
  std::set<std::string> workspaces, projects;
  std::int64_t created_at = 0;
};

struct Volume {
  std::string id, project_id, name, region, dir, attached_to;
  int size_gb = 10;
  std::int64_t created_at = 0;
};

struct Snapshot {
  std::string id, name, project_id, workspace_id, region, source, dir;
  int cpus = 0, memory_mb = 0;
  int pool_size = 0;
  std::int64_t created_at = 0;
};

struct Sandbox {
  std::string id, template_name, size, region, project_id, metadata_json = "{}", volume_id;
  std::vector<std::pair<std::string, std::string>> envs;
  std::int64_t started_at = 0, end_at = 0;  // end_at 0: no deadline
  std::int64_t lifetime_ms = 0;
  std::string status = "running";
  std::string base_dir;
  std::shared_ptr<SandboxRuntime> rt;  // null while paused
};

// The machine behind each size (reported, not enforced).
struct SizeSpec {
  int cpus;
  int memory_mb;
};
// The SizeSpec of a known size name, or nullptr.
const SizeSpec* find_size(const std::string& name);
// True for the template names the API accepts.
bool known_template(const std::string& name);

}  // namespace lizard::mock::internal
