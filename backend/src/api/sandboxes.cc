// Sandboxes: create, get, list, kill, lifetime, pause and resume.
#include "lizard/api/client.h"
#include "wire_codec.h"

namespace lizard::api {

using internal::sandbox_path;

SandboxInfo Client::create_sandbox(const CreateSandboxRequest& request, const CallOptions& call) {
  const std::string body = internal::encode_create_sandbox(request);
  const Exchange exchange{.method = "POST", .path = "/api/sandboxes", .body = body};
  CallOptions once = call;
  once.no_replay = true;  // a replayed create could leave two sandboxes
  auto info = internal::decode_sandbox(checked(exchange, once).body, operation(exchange));
  if (info.sandbox_id.empty()) {
    throw workspace::WorkspaceError(operation(exchange) + ": the answer names no sandbox");
  }
  return info;
}

SandboxInfo Client::get_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  const Exchange exchange{.method = "GET", .path = sandbox_path(sandbox_id)};
  return internal::decode_sandbox(checked(exchange, call).body, operation(exchange));
}

std::vector<SandboxInfo> Client::list_sandboxes(const std::optional<std::string>& project_id,
                                                const CallOptions& call) {
  const Exchange exchange{
      .method = "GET",
      .path = project_id ? internal::project_path(*project_id, "/sandboxes") : "/api/sandboxes"};
  return internal::decode_sandboxes(checked(exchange, call).body, operation(exchange));
}

bool Client::kill_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  const Exchange exchange{.method = "DELETE", .path = sandbox_path(sandbox_id)};
  const TransportOutcome outcome = send(exchange, call, false);
  if (outcome.status == 404) return false;
  if (outcome.status < 200 || outcome.status >= 300) {
    throw_transport_error(outcome, operation(exchange), options_.api_key);
  }
  return true;
}

void Client::set_sandbox_timeout(std::string_view sandbox_id, std::int64_t timeout_ms,
                                 const CallOptions& call) {
  const std::string body = internal::encode_timeout(timeout_ms);
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/timeout"), .body = body}, call);
}

void Client::pause_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/pause")}, call);
}

void Client::resume_sandbox(std::string_view sandbox_id, const CallOptions& call) {
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/resume")}, call);
}

}  // namespace lizard::api
