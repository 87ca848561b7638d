// The API's routes, one registration function per resource. Each adds its
// rows to the router; the handlers throw ApiError for error answers.
#pragma once

#include "router.h"

namespace lizard::mock::internal {

// The region of a sandbox or volume created without one (the default row of
// GET /api/regions).
inline constexpr const char* kDefaultRegion = "us-east-1";

class FaultTable;
class Journal;
class MockState;

// A row's handler: fn(state, call).
inline Handler with_state(MockState& state, void (*fn)(MockState&, Call&)) {
  return [&state, fn](Call& c) { fn(state, c); };
}

// GET/POST /api/projects, /api/projects/{ref}, /api/workspaces, API keys,
// billing and usage.
void add_account_routes(Router& router, MockState& state);
// /api/sandboxes: create, list, get, kill, timeout, expose.
void add_sandbox_routes(Router& router, MockState& state);
// /api/sandboxes/{id}/exec, processes, processes/signal.
void add_exec_routes(Router& router, MockState& state);
// /api/sandboxes/{id}/files...
void add_file_routes(Router& router, MockState& state);
// /api/projects/{ref}/volumes...
void add_volume_routes(Router& router, MockState& state);
// pause, resume, fork, snapshot: what each era does with them.
void add_era_routes(Router& router, MockState& state);
// /_mock: the journal, faults, reset, clock and state (no API key).
void add_control_routes(Router& router, MockState& state, Journal& journal, FaultTable& faults);

}  // namespace lizard::mock::internal
