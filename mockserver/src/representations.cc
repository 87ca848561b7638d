#include "representations.h"

#include "era.h"
#include "state.h"
#include "wire_values.h"

namespace lizard::mock::internal {

void write_sandbox(JsonOut& j, const Sandbox& sb, Era era) {
  const SizeSpec& sz = *find_size(sb.size);
  j.begin_object()
      .kv("sandboxId", sb.id)
      .kv("id", sb.id)
      .kv("template", sb.template_name)
      .kv("status", sb.status)
      .kv("startedAt", iso_time(sb.started_at));
  // A string in both eras: "" without a deadline (our choice).
  j.kv("endAt", sb.end_at != 0 ? iso_time(sb.end_at) : std::string());
  j.kv("region", sb.region)
      .kv("size", sb.size)
      .kv("cpus", sz.cpus)
      .kv("memoryMb", sz.memory_mb)
      .key("metadata")
      .raw(sb.metadata_json)
      .kv("projectId", sb.project_id)
      .kv("runtime", era_rules(era).runtime);
  if (!sb.volume_id.empty()) j.kv("volumeId", sb.volume_id);
  j.end_object();
}

std::string sandbox_json(const MockState& state, const Sandbox& sb) {
  return state.locked([&](const MockState::Tables&) {
    JsonOut j;
    write_sandbox(j, sb, state.options().era);
    return j.text();
  });
}

void write_project(JsonOut& j, const Project& p) {
  j.begin_object()
      .kv("id", p.id)
      .kv("name", p.name)
      .kv("slug", p.slug)
      .kv("workspaceId", p.workspace_id)
      .kv("createdAt", iso_time(p.created_at))
      .end_object();
}

std::string volume_json(const Volume& v) {
  JsonOut j;
  j.begin_object()
      .kv("id", v.id)
      .kv("projectId", v.project_id)
      .kv("name", v.name)
      .kv("sizeGb", v.size_gb)
      .kv("region", v.region)
      .kv("status", v.attached_to.empty() ? "available" : "attached");
  j.key("attachedTo");
  if (v.attached_to.empty()) {
    j.null();
  } else {
    j.str(v.attached_to);
  }
  j.kv("createdAt", iso_time(v.created_at)).end_object();
  return j.text();
}

void write_file_info(JsonOut& j, const FileInfo& f) {
  j.begin_object()
      .kv("name", f.name)
      .kv("path", f.path)
      .kv("type", f.type)
      .kv("size", static_cast<std::int64_t>(f.size))
      .kv("mode", static_cast<std::int64_t>(f.mode))
      .kv("permissions", f.permissions)
      .kv("owner", f.owner)
      .kv("group", f.group)
      .kv("modTime", f.mod_time_ms);
  if (f.is_link) j.kv("symlinkTarget", f.symlink_target);
  j.end_object();
}

}  // namespace lizard::mock::internal
