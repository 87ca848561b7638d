// Files: write (base64, text, base64 as text), read, list, stat, remove, move.
#include "lizard/api/client.h"
#include "wire_codec.h"

namespace lizard::api {

using internal::sandbox_path;

namespace {

std::string path_query(std::string_view path) {
  return Client::encode_query({{"path", std::string(path)}});
}

}  // namespace

void Client::write_file(std::string_view sandbox_id, std::string_view path, std::string_view data,
                        const CallOptions& call) {
  const std::string body = internal::encode_base64_upload(path, data, true);
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/files"), .body = body}, call);
}

void Client::write_base64_text_file(std::string_view sandbox_id, std::string_view path,
                                    std::string_view data, const CallOptions& call) {
  const std::string body = internal::encode_base64_upload(path, data, false);
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/files"), .body = body}, call);
}

void Client::write_text_file(std::string_view sandbox_id, std::string_view path,
                             std::string_view text, const CallOptions& call) {
  const std::string body = internal::encode_text_upload(path, text);
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/files"), .body = body}, call);
}

std::string Client::read_file(std::string_view sandbox_id, std::string_view path,
                              const CallOptions& call) {
  CallOptions raw = call;
  if (raw.max_answer_bytes == 0) raw.max_answer_bytes = kMaxFileReadBytes;
  return checked({.method = "GET",
                  .path = sandbox_path(sandbox_id, "/files"),
                  .query = path_query(path),
                  .accept = "*/*"},
                 raw)
      .body;
}

std::vector<FileInfo> Client::list_files(std::string_view sandbox_id, std::string_view path,
                                         const CallOptions& call) {
  const Exchange exchange{
      .method = "GET", .path = sandbox_path(sandbox_id, "/files/list"), .query = path_query(path)};
  return internal::decode_files(checked(exchange, call).body, operation(exchange));
}

FileInfo Client::stat_file(std::string_view sandbox_id, std::string_view path,
                           const CallOptions& call) {
  const Exchange exchange{
      .method = "GET", .path = sandbox_path(sandbox_id, "/files/stat"), .query = path_query(path)};
  return internal::decode_file(checked(exchange, call).body, operation(exchange));
}

void Client::remove_file(std::string_view sandbox_id, std::string_view path,
                         const CallOptions& call) {
  const std::string body = internal::encode_strings({{"path", path}});
  CallOptions once = call;
  once.no_replay = true;  // a replay could remove what a later write put there
  checked({.method = "DELETE", .path = sandbox_path(sandbox_id, "/files"), .body = body}, once);
}

void Client::move_file(std::string_view sandbox_id, std::string_view from, std::string_view to,
                       const CallOptions& call) {
  const std::string body = internal::encode_strings({{"from", from}, {"to", to}});
  CallOptions once = call;
  once.no_replay = true;  // a replayed move fails (the source is gone) after succeeding
  checked({.method = "POST", .path = sandbox_path(sandbox_id, "/files/move"), .body = body}, once);
}

}  // namespace lizard::api
