// Processes: exec (buffered and streaming), list and signal.
#include "lizard/api/client.h"
#include "wire_codec.h"

namespace lizard::api {

using internal::sandbox_path;

ExecResult Client::exec(std::string_view sandbox_id, const ExecRequest& request,
                        const CallOptions& call) {
  const std::string body = internal::encode_exec(request);
  const Exchange exchange{
      .method = "POST", .path = sandbox_path(sandbox_id, "/exec"), .body = body};
  return internal::decode_exec_result(checked(exchange, call).body, operation(exchange));
}

int Client::exec_stream(std::string_view sandbox_id, const ExecRequest& request,
                        const std::function<void(const ExecEvent&)>& on_event,
                        const CallOptions& call) {
  const std::string body = internal::encode_exec(request);
  internal::ExecStreamDecoder decoder(on_event);
  const Exchange exchange{.method = "POST",
                          .path = sandbox_path(sandbox_id, "/exec"),
                          .body = body,
                          .accept = "text/event-stream",
                          .on_answer_chunk = [&](std::string_view chunk) { decoder.feed(chunk); }};
  send(exchange, call, true);
  return decoder.finish(operation(exchange), options_.api_key);
}

std::vector<ProcessInfo> Client::list_processes(std::string_view sandbox_id,
                                                const CallOptions& call) {
  const Exchange exchange{.method = "GET", .path = sandbox_path(sandbox_id, "/processes")};
  return internal::decode_processes(checked(exchange, call).body, operation(exchange));
}

void Client::signal_process(std::string_view sandbox_id, long long pid, std::string_view signal,
                            const CallOptions& call) {
  const std::string body = internal::encode_signal(pid, signal);
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/processes/signal"), .body = body},
          call);
}

}  // namespace lizard::api
