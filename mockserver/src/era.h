// What each era's runtime does, cell by cell (docs/spec/lizard-api.md, "Eras").
// Every route asks this table instead of testing the era itself, so the
// table is the one place that says how the eras differ.
#pragma once

#include "lizard/mock/mock_server.h"

namespace lizard::mock::internal {

struct EraRules {
  const char* name;     // "kubernetes" / "firecracker"
  const char* runtime;  // SandboxInfo.runtime
  // Exec: `envs`, `workdir` and `user` applied, or accepted and ignored (the
  // command then runs in "/" as root).
  bool exec_envs;
  bool exec_workdir;
  bool exec_user;
  // The image's environment (LANG, USER, LOGNAME, SHELL, TERM) beside PATH
  // and HOME, which every command has.
  bool image_environment;
  // Create: `envs` reach every command; `metadata` comes back on get/list.
  bool create_envs;
  bool keeps_metadata;
  bool pid_event;       // `data: {"pid": N}` first, when asked
  bool process_routes;  // GET .../processes, POST .../processes/signal (else 501)
  bool binary_uploads;  // base64 content that is not UTF-8 (else 400 INVALID_UTF8)
  bool file_user;       // `user` on file routes
  bool pause_resume;    // (else 501)
  bool snapshots;       // create, restore, get/delete/pool (else 501; list [], an id 404)
  bool fork;            // (else 501)
  bool volume_shrink;   // a shrink that leaves 10% free (else 400 volume_shrink_unsupported)
  bool expose_token;    // `accessToken` in the expose answer
};

const EraRules& era_rules(Era era);

}  // namespace lizard::mock::internal
