// The Lizard API's JSON on the wire: request bodies written with RapidJSON's
// SAX Writer, answers read through FindMember/Is*() (never operator[] on
// what a server sent). The endpoints (sandboxes.cc, processes.cc, files.cc,
// projects.cc, volumes.cc) only move these values over the transport.
//
// Decoders take the answer body and `what` (the operation, for messages);
// malformed JSON (or JSON nested deeper than 64 levels, bounded_json.h), or
// a number out of its field's range, raises workspace::WorkspaceError.
// Fields of the wrong type decode as absent (the API's answers are lenient
// across eras).
//
// Pure functions; thread-safe. ExecStreamDecoder belongs to one stream.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/api/codec.h"

namespace lizard::api::internal {

// --- paths ------------------------------------------------------------------

// Percent-encodes everything but [A-Za-z0-9-_.~].
std::string escape_segment(std::string_view segment);
// "/api/sandboxes/{id}" + rest; std::invalid_argument for an ID of "", "."
// or "..", which would name another route.
std::string sandbox_path(std::string_view sandbox_id, std::string_view rest = {});
// "/api/projects/{id}" + rest (the same IDs refused).
std::string project_path(std::string_view project_id, std::string_view rest = {});

// --- request bodies ---------------------------------------------------------

std::string encode_create_sandbox(const CreateSandboxRequest& request);
std::string encode_exec(const ExecRequest& request);
std::string encode_timeout(std::int64_t timeout_ms);
std::string encode_signal(long long pid, std::string_view signal);
std::string encode_create_volume(const CreateVolumeRequest& request);
// An object of string fields, in order: {"path": ...}, {"from": ..., "to": ...}.
std::string encode_strings(std::initializer_list<std::pair<const char*, std::string_view>> fields);
// {"path":P,"content":"<base64 of data>"[,"encoding":"base64"]} in one string
// sized up front: memory is the base64 (1.33x) plus the caller's data.
// `declare_base64`: the server decodes it; else the file holds the base64 text.
std::string encode_base64_upload(std::string_view path, std::string_view data, bool declare_base64);
// {"path":P,"content":"<text as a JSON string>"} in one string sized up
// front: memory is the escaped text (the text itself and a byte more for each
// '"', '\\' and control character, five more for the rarer ones) plus the
// caller's text. Escaped as RapidJSON's writer escapes (`text` is UTF-8; its
// bytes from 0x80 go as they are).
std::string encode_text_upload(std::string_view path, std::string_view text);

// --- answers ----------------------------------------------------------------

std::vector<ProjectInfo> decode_projects(std::string_view body, std::string_view what);
SandboxInfo decode_sandbox(std::string_view body, std::string_view what);
std::vector<SandboxInfo> decode_sandboxes(std::string_view body, std::string_view what);
// Also a WorkspaceError when the answer has no exitCode.
ExecResult decode_exec_result(std::string_view body, std::string_view what);
std::vector<ProcessInfo> decode_processes(std::string_view body, std::string_view what);
FileInfo decode_file(std::string_view body, std::string_view what);
std::vector<FileInfo> decode_files(std::string_view body, std::string_view what);
VolumeInfo decode_volume(std::string_view body, std::string_view what);
std::vector<VolumeInfo> decode_volumes(std::string_view body, std::string_view what);

// The events of a streaming exec: SSE bytes in, ExecEvents out. feed() never
// throws (it runs inside the transport's write callback): a malformed event,
// or an exception of `on_event`, is kept and raised by finish().
class ExecStreamDecoder {
 public:
  explicit ExecStreamDecoder(std::function<void(const ExecEvent&)> on_event);
  ExecStreamDecoder(const ExecStreamDecoder&) = delete;  // the parser calls back into this
  ExecStreamDecoder& operator=(const ExecStreamDecoder&) = delete;
  void feed(std::string_view chunk) noexcept;
  // The stream ended: its exit code. WorkspaceError when an event carried a
  // number out of range, the stream reported an error (its text redacted of
  // `secret`) or it ended without an exit event; an exception of on_event
  // is rethrown.
  int finish(std::string_view what, std::string_view secret);

 private:
  void on_sse(const std::string& event, const std::string& data);

  std::function<void(const ExecEvent&)> on_event_;
  SseParser parser_;
  std::optional<int> exit_code_;
  std::optional<std::string> error_;
  std::optional<std::string> malformed_;
  std::exception_ptr callback_error_;
};

}  // namespace lizard::api::internal
