// The control plane, /_mock: the journal, faults, reset, the clock, state.
#include <map>

#include "api_error.h"
#include "faults.h"
#include "journal.h"
#include "json.h"
#include "request_body.h"
#include "routes.h"
#include "state.h"

namespace lizard::mock::internal {
namespace {

std::string journal_json(const Journal& journal) {
  JsonOut j;
  j.begin_array();
  for (const auto& e : journal.entries()) {
    j.begin_object()
        .kv("method", e.method)
        .kv("path", e.path)
        .kv("query", e.query)
        .kv("status", e.status)
        .kv("body", e.body)
        .kv("accept", e.accept)
        .end_object();
  }
  j.end_array();
  return j.text();
}

FaultRule fault_of(const RequestBody& b) {
  FaultRule r;
  r.method = b.str("method").value_or("*");
  auto path = b.str("path");
  if (!path) api_error(400, "'path' (a glob) is required", "BAD_REQUEST");
  r.path_pattern = *path;
  const std::string action = b.str("action").value_or("respond");
  static const std::map<std::string, FaultRule::Action> kActions = {
      {"respond", FaultRule::Action::kRespond},
      {"delay", FaultRule::Action::kDelay},
      {"close", FaultRule::Action::kClose},
      {"close_after_handling", FaultRule::Action::kCloseAfterHandling},
      {"truncate", FaultRule::Action::kTruncate}};
  auto a = kActions.find(action);
  if (a == kActions.end()) api_error(400, "Unknown action " + action, "BAD_REQUEST");
  r.action = a->second;
  r.status = static_cast<int>(b.integer("status").value_or(500));
  if (const rapidjson::Value* body = b.get("body")) {
    r.body = body->IsString() ? string_of(*body) : to_json(*body);
  }
  r.content_type = b.str("contentType").value_or("application/json");
  r.delay = std::chrono::milliseconds(b.integer("delayMs").value_or(0));
  r.truncate_at =
      static_cast<std::size_t>(std::max<std::int64_t>(0, b.integer("truncateAt").value_or(0)));
  r.times = static_cast<int>(b.integer("times").value_or(-1));
  if (const rapidjson::Value* pr = b.get("probability")) {
    if (!pr->IsNumber()) api_error(400, "'probability' must be a number", "BAD_REQUEST");
    r.probability = pr->GetDouble();
  }
  r.seed = static_cast<std::uint64_t>(b.integer("seed").value_or(1));
  return r;
}

}  // namespace

void add_control_routes(Router& router, MockState& state, Journal& journal, FaultTable& faults) {
  router.add("GET", "/_mock/requests",
             [&journal](Call& c) { c.reply(200, journal_json(journal)); });
  router.add("DELETE", "/_mock/requests", [&journal](Call& c) {
    journal.clear();
    c.reply(200, "{}");
  });
  router.add("POST", "/_mock/reset", [&](Call& c) {
    journal.clear();
    faults.clear();
    state.reset();
    c.reply(200, "{}");
  });
  router.add("POST", "/_mock/faults", [&faults](Call& c) {
    faults.add(fault_of(RequestBody(c.body)));
    c.reply(200, "{}");
  });
  router.add("DELETE", "/_mock/faults", [&faults](Call& c) {
    faults.clear();
    c.reply(200, "{}");
  });
  router.add("POST", "/_mock/clock", [&state](Call& c) {
    RequestBody b(c.body);
    auto by = b.integer("advanceMs");
    if (!by || *by < 0) api_error(400, "'advanceMs' must be a non-negative integer", "BAD_REQUEST");
    state.advance_clock(*by);
    JsonOut j;
    j.begin_object()
        .kv("offsetMs", state.clock_offset_ms())
        .kv("nowMs", state.now_ms())
        .end_object();
    c.reply(200, j.text());
  });
  router.add("GET", "/_mock/state", [&state](Call& c) {
    JsonOut j;
    j.begin_object()
        .kv("isolated", true)
        .kv("sandboxes", static_cast<std::int64_t>(state.live_sandboxes()))
        .kv("processes", static_cast<std::int64_t>(state.live_processes()))
        .kv("era", state.options().era == Era::kFirecracker ? "firecracker" : "kubernetes")
        .kv("execLimitMs", static_cast<std::int64_t>(state.options().exec_limit.count()))
        .end_object();
    c.reply(200, j.text());
  });
}

}  // namespace lizard::mock::internal
