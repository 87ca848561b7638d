// lizard::api::Client: the C++ client of the Lizard sandbox HTTP API
// (RapidJSON over an injectable HTTP transport; libcurl by default). See
// docs/backend.md.
//
//   auto client = lizard::api::Client(lizard::api::ClientOptions::from_environment());
//   auto project = client.resolve_project("my-project");
//   auto info = client.create_sandbox({.template_name = "base", .project_id = project});
//   auto result = client.exec(info.sandbox_id, {.cmd = std::vector<std::string>{"uname", "-a"}});
//
// Transport: ClientOptions::transport (transport.h), make_curl_transport()
// when none is given: a pool of curl easy handles sharing one connection
// cache, so requests reuse keep-alive connections. Every call takes a
// CallOptions with its own deadline and a std::stop_token. The transport
// hands back answers as values; failures and non-2xx answers are raised
// through throw_transport_error (errors.h), the one mapping. The API key
// travels only in the X-API-Key header and is redacted from every message
// and log line.
//
// The endpoints live in one file per group (backend/src/api/: projects.cc,
// sandboxes.cc, processes.cc, files.cc, volumes.cc); the JSON on the wire in
// wire_codec.cc.
//
// Thread safety: a Client may be used from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lizard/api/errors.h"
#include "lizard/api/transport.h"

namespace lizard::api {

struct ClientOptions {
  std::string api_key;                           // never sent anywhere but the auth header
  std::string api_url = "https://lizard.build";  // no trailing slash needed
  std::string project;                           // default project ref (ID, slug or name)
  // Deadline of a request when CallOptions gives none.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(60)};
  // One line per request (method, path, status, milliseconds); never headers or bodies.
  std::function<void(std::string_view)> log;
  // What carries the requests; nullptr: make_curl_transport(). Tests hand in
  // a scripted one (no socket).
  std::shared_ptr<HttpTransport> transport;

  // Reads LIZARD_API_KEY, LIZARD_PROJECT_ID and LIZARD_API_URL; unset stay default.
  static ClientOptions from_environment();
};

// kMaxJsonAnswerBytes and kMaxFileReadBytes: transport.h.

struct CallOptions {
  // 0: ClientOptions::request_timeout.
  std::chrono::milliseconds timeout{0};
  std::stop_token stop;
  // Send on a new connection. libcurl silently re-sends a request whose
  // reused keep-alive connection died before any answer; for a mutation that
  // must not happen twice (create, file remove/move) that replay could act
  // twice, and a new connection is never replayed. The client sets it itself
  // for those routes.
  bool no_replay = false;
  // The most answer bytes buffered; past it the transfer stops and the call
  // raises workspace::WorkspaceError ("the answer is larger than N bytes").
  // 0: the route's default (kMaxFileReadBytes for read_file,
  // kMaxJsonAnswerBytes for every other route and for error answers).
  // A streaming exec's events are not buffered and not counted.
  std::uint64_t max_answer_bytes = 0;
  // With max_answer_bytes: a successful answer longer than it is cut to its
  // first max_answer_bytes bytes (the rest is never received) instead of
  // raising. For reading the head of a file that may still be growing.
  bool cut_at_max_answer = false;
};

// An HTTP answer as a value (any status).
struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;
};

struct ProjectInfo {
  std::string id;
  std::string name;
  std::string slug;
  std::string workspace_id;
};

struct SandboxInfo {
  std::string sandbox_id;
  std::string template_name;
  std::string status;
  std::string region;
  std::string size;
  std::string project_id;
  std::string started_at;
  std::string end_at;
  std::map<std::string, std::string> metadata;
};

struct CreateSandboxRequest {
  std::string template_name = "base";
  std::string project_id;  // a resolved ID (see resolve_project)
  std::optional<std::int64_t> timeout_ms;
  std::optional<std::string> size;
  std::optional<std::string> region;
  std::map<std::string, std::string> envs;      // omitted when empty
  std::map<std::string, std::string> metadata;  // omitted when empty
  std::optional<std::string> volume_id;
  std::optional<std::string> volume_name;
};

struct ExecRequest {
  // A string runs under /bin/sh -c; a vector is an argv run without a shell.
  std::variant<std::string, std::vector<std::string>> cmd;
  std::map<std::string, std::string> envs;  // omitted when empty
  std::optional<std::string> workdir;
  std::optional<std::string> user;
  std::optional<std::int64_t> timeout_ms;  // the API accepts 1000..600000
  bool pid_event = false;                  // streaming only
};

struct ExecResult {
  std::string out;  // the JSON "stdout" (the server already replaced invalid UTF-8)
  std::string err;  // the JSON "stderr"
  int exit_code = 0;
  bool truncated = false;
  bool timed_out = false;
};

// One Server-Sent Event of a streaming exec, decoded.
struct ExecEvent {
  enum class Kind { kPid, kStdout, kStderr, kExit, kError };
  Kind kind = Kind::kStdout;
  std::string line;      // kStdout/kStderr: the line without its newline; kError: the text
  long long number = 0;  // kPid: the pid; kExit: the exit code
};

struct ProcessInfo {
  long long pid = 0;
  std::vector<std::string> cmd;
  std::string started_at;
};

struct FileInfo {
  std::string name;
  std::string path;
  std::string type;  // "file", "dir", "symlink" (others passed through)
  std::uint64_t size = 0;
  std::uint32_t mode = 0;
  std::string permissions;
  std::int64_t mod_time_ms = 0;
  std::optional<std::string> symlink_target;
};

struct VolumeInfo {
  std::string id;
  std::string project_id;
  std::string name;
  double size_gb = 0;
  std::string region;
  std::string status;
  std::string attached_to;
};

struct CreateVolumeRequest {
  std::string name;
  std::optional<double> size_gb;
  std::optional<std::string> region;
  bool get_or_create = false;
};

class Client {
 public:
  // No I/O. Throws std::invalid_argument for an empty api_url.
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const { return options_; }

  // The raw exchange: any HTTP status comes back as a value; only transport
  // failures (and cancellation) throw. `path` starts with "/", `query` is
  // already encoded (see encode_query).
  Response request(std::string_view method, std::string_view path, std::string_view query,
                   std::string_view body, const CallOptions& call = {},
                   std::string_view accept = {});

  // --- projects -----------------------------------------------------------
  std::vector<ProjectInfo> list_projects(const CallOptions& call = {});
  // Resolves an ID, slug or name (case-insensitive) to the project ID; cached
  // per Client. Throws NotFoundError (none), ApiError (ambiguous).
  std::string resolve_project(std::string_view ref, const CallOptions& call = {});

  // --- sandboxes ----------------------------------------------------------
  SandboxInfo create_sandbox(const CreateSandboxRequest& request, const CallOptions& call = {});
  SandboxInfo get_sandbox(std::string_view sandbox_id, const CallOptions& call = {});
  // All sandboxes, or those of one project.
  std::vector<SandboxInfo> list_sandboxes(const std::optional<std::string>& project_id = {},
                                          const CallOptions& call = {});
  // True when deleted, false when it was already gone (404).
  bool kill_sandbox(std::string_view sandbox_id, const CallOptions& call = {});
  void set_sandbox_timeout(std::string_view sandbox_id, std::int64_t timeout_ms,
                           const CallOptions& call = {});
  // WorkspaceNotSupportedError on platforms without them (501).
  void pause_sandbox(std::string_view sandbox_id, const CallOptions& call = {});
  void resume_sandbox(std::string_view sandbox_id, const CallOptions& call = {});

  // --- processes ----------------------------------------------------------
  ExecResult exec(std::string_view sandbox_id, const ExecRequest& request,
                  const CallOptions& call = {});
  // Streaming exec: `on_event` gets every event as it arrives (on the calling
  // thread). Returns the exit code; a stream that ends without an exit event,
  // or an error event, throws WorkspaceError.
  int exec_stream(std::string_view sandbox_id, const ExecRequest& request,
                  const std::function<void(const ExecEvent&)>& on_event,
                  const CallOptions& call = {});
  std::vector<ProcessInfo> list_processes(std::string_view sandbox_id,
                                          const CallOptions& call = {});
  // `signal` is one of SIGTERM SIGKILL SIGINT SIGHUP SIGQUIT SIGUSR1 SIGUSR2.
  void signal_process(std::string_view sandbox_id, long long pid, std::string_view signal,
                      const CallOptions& call = {});

  // --- files ----------------------------------------------------------------
  // Sends `data` base64-encoded (any bytes), building the body in one
  // pre-sized string. Creates parents.
  void write_file(std::string_view sandbox_id, std::string_view path, std::string_view data,
                  const CallOptions& call = {});
  // Sends `text` (must be valid UTF-8) without encoding.
  void write_text_file(std::string_view sandbox_id, std::string_view path, std::string_view text,
                       const CallOptions& call = {});
  // Writes the base64 of `data` as the file's text (no `encoding`: the file
  // holds the base64 characters), building the body in one pre-sized string.
  // For bytes that are not UTF-8 on platforms that take UTF-8 uploads only.
  void write_base64_text_file(std::string_view sandbox_id, std::string_view path,
                              std::string_view data, const CallOptions& call = {});
  // The raw bytes; a file over CallOptions::max_answer_bytes (default
  // kMaxFileReadBytes, 1 GiB) raises workspace::WorkspaceError.
  std::string read_file(std::string_view sandbox_id, std::string_view path,
                        const CallOptions& call = {});
  std::vector<FileInfo> list_files(std::string_view sandbox_id, std::string_view path,
                                   const CallOptions& call = {});
  FileInfo stat_file(std::string_view sandbox_id, std::string_view path,
                     const CallOptions& call = {});
  void remove_file(std::string_view sandbox_id, std::string_view path,
                   const CallOptions& call = {});
  void move_file(std::string_view sandbox_id, std::string_view from, std::string_view to,
                 const CallOptions& call = {});

  // --- volumes --------------------------------------------------------------
  VolumeInfo create_volume(std::string_view project_id, const CreateVolumeRequest& request,
                           const CallOptions& call = {});
  std::vector<VolumeInfo> list_volumes(std::string_view project_id, const CallOptions& call = {});
  VolumeInfo get_volume(std::string_view project_id, std::string_view name_or_id,
                        const CallOptions& call = {});
  void delete_volume(std::string_view project_id, std::string_view name_or_id,
                     const CallOptions& call = {});

  // "key=value&..." with each value percent-encoded.
  static std::string encode_query(
      const std::vector<std::pair<std::string, std::string>>& parameters);

 private:
  // One exchange as the endpoints describe it.
  struct Exchange {
    std::string_view method;
    std::string path;        // starts with "/"
    std::string query = {};  // already encoded
    std::string_view body = {};
    std::string_view accept = "application/json";
    // For a streaming answer (HttpRequest::on_answer_chunk).
    std::function<void(std::string_view)> on_answer_chunk = {};
  };

  // One exchange through the transport, logged. A transport failure throws
  // (throw_transport_error); so does a non-2xx answer when `require_2xx`.
  TransportOutcome send(const Exchange& exchange, const CallOptions& call, bool require_2xx);
  // send() with require_2xx; the answer as a value.
  Response checked(const Exchange& exchange, const CallOptions& call);
  // "METHOD /path": how messages name an exchange.
  static std::string operation(const Exchange& exchange);

  ClientOptions options_;
  std::shared_ptr<HttpTransport> transport_;
};

}  // namespace lizard::api
