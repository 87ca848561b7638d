// The runner's side of the backend protocol (docs/protocol.md): starts an
// adapter program, speaks JSON-RPC 2.0 with it over its stdin and stdout, and
// offers the backends it serves as ordinary WorkspaceBackends.
//
//   lizard::conformance::AdapterOptions options;
//   options.argv = {"python3", "conformance/examples/python/adapter.py"};
//   auto adapter = lizard::conformance::AdapterClient::start(options);  // initialized
//   auto backend = adapter->make();                                     // backend/new
//   backend->commands()->run(lizard::workspace::Argv{{"true"}});         // run
//   adapter->shutdown();                                                // stdin closed, reaped
//
// The command factory (command_factory.h) opens one AdapterClient per rule
// session; the benchmark uses one directly to time a round trip.
//
// Errors: the adapter's error answers become the contract's exceptions
// (WorkspaceTimeoutError with its partial output, a filesystem_error with the
// errno the adapter named, ...). Everything that is not the protocol (the
// adapter crashed, hung, wrote a line that is not JSON-RPC, answered an id no
// request has, sent a line longer than max_line_bytes) is a ProtocolError,
// never a WorkspaceError, so no rule can mistake it for a contract error; the
// adapter is killed, every call in flight fails with the reason and the
// adapter's last stderr lines, and fault() keeps the first such reason.
//
// Thread safety: every member function of AdapterClient and every call on
// its backends may be used from many threads at once; requests travel
// concurrently (the adapter answers them in any order).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/platform_control.h"

namespace lizard::conformance {

// The protocol version this runner speaks (docs/protocol.md, "Versions").
inline constexpr const char* kProtocolVersion = "1";

// A failure of the protocol itself, with the adapter's last stderr lines.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AdapterOptions {
  // PROGRAM [ARGS...]; PROGRAM is looked up on PATH.
  std::vector<std::string> argv;
  // Variables set in the adapter's environment on top of this process's own
  // (the lizard profile's LIZARD_API_URL, LIZARD_API_KEY, LIZARD_PROJECT_ID).
  std::map<std::string, std::string> env;
  // Sent in initialize so the adapter can log it; informational.
  std::string rule;
  // While requests are in flight the client sends $/ping; an adapter that
  // answers none for this long is hung: it is killed and the calls fail.
  // Time its process waited for a CPU is not counted (docs/protocol.md).
  std::chrono::milliseconds answer_deadline{std::chrono::seconds(20)};
  // Until it has answered initialize, the adapter is starting (a runtime
  // that loads slowly on a busy machine): initialize must be answered, and
  // a $/ping meanwhile, within this long (or answer_deadline if longer).
  std::chrono::milliseconds start_deadline{std::chrono::seconds(60)};
  // After shutdown() closes the adapter's stdin: how long it has to exit
  // before SIGTERM (and 2 s later SIGKILL) to its process group.
  std::chrono::milliseconds exit_grace{std::chrono::seconds(5)};
  // The longest line accepted from the adapter. The largest legitimate
  // message is a 64 MiB file read (85.4 MiB of base64).
  std::size_t max_line_bytes = 96u << 20;
  // How many of the adapter's last stderr lines a failure quotes.
  std::size_t stderr_tail_lines = 12;
  // Strings watched for in everything the adapter writes to stderr, from its
  // first byte, whatever is kept of it (the platform's API key): see
  // AdapterClient::stderr_carried_a_secret.
  std::vector<std::string> stderr_secrets;
  // Validate every message, both ways, against the protocol's JSON Schemas
  // (conformance/schemas/protocol/); an adapter message that does not match
  // is a protocol fault.
  bool check_schemas = false;
  // Sees every line, to the adapter (true) or from it (false), before it is
  // sent or parsed. For tests; called on the client's threads (the writer's
  // once that line is being written, the reader's before it is handled).
  std::function<void(bool to_adapter, std::string_view line)> tap;
};

// What the adapter answered to initialize.
struct AdapterInfo {
  std::string protocol_version;
  std::string name;     // shown in reports
  std::string profile;  // "lizard" for a Lizard backend, else empty
  Capabilities capabilities;
  Deviations deviations;
  bool can_attach = false;
  std::optional<std::string> working_dir;  // when every backend shares one
  std::vector<std::string> secrets;        // strings that must never leak
};

namespace protocol {
class Connection;
}

class AdapterClient {
 public:
  // Starts the adapter and initializes it. Throws ProtocolError (naming the
  // adapter and quoting its stderr) when it cannot be started, does not
  // answer initialize within start_deadline (or answer_deadline if longer),
  // answers something that is not the protocol, or speaks another protocol
  // version.
  static std::shared_ptr<AdapterClient> start(AdapterOptions options);
  // shutdown().
  ~AdapterClient();
  AdapterClient(const AdapterClient&) = delete;
  AdapterClient& operator=(const AdapterClient&) = delete;

  const AdapterInfo& info() const { return info_; }

  // backend/new: a backend on a fresh environment; with overrides (the
  // lizard profile's PlatformControl::make_with), the adapter's defaults
  // changed by them. Throws what the adapter's backend constructor threw.
  std::unique_ptr<WorkspaceBackend> make(const BackendOverrides* overrides = nullptr);
  // backend/attach. Throws std::logic_error when info().can_attach is false.
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref);
  // environment/destroy: ends an environment by ref (a gone one is no error).
  void destroy_environment(const WorkspaceRef& ref);

  // The first protocol fault (crash, hang, garbage, ...) with the stderr
  // tail, or empty when the adapter kept to the protocol.
  std::string fault() const;
  // Every line the adapter wrote to stderr (bounded: the oldest go first past
  // 8 MiB; a line is cut at 64 KiB), e.g. its log.
  std::vector<std::string> stderr_lines() const;
  // Adds strings to watch for in the adapter's stderr (those it declared as
  // secrets, say); what is still kept of it is searched at once.
  void watch_stderr_for(const std::vector<std::string>& secrets);
  // Whether a watched string appeared in its stderr, in a part kept or not
  // (past a line's 64 KiB, or dropped with the oldest lines).
  bool stderr_carried_a_secret() const;

  // Closes the adapter's stdin, fails calls still in flight, waits
  // exit_grace for it to exit, then kills its process group, and reaps it.
  // Idempotent. Backends made earlier fail with ProtocolError afterwards.
  void shutdown();
  // Kills the adapter's process group at once without waiting (for a
  // process about to exit). Idempotent.
  void kill();

 private:
  AdapterClient(std::shared_ptr<protocol::Connection> connection, AdapterInfo info);

  std::shared_ptr<protocol::Connection> connection_;
  AdapterInfo info_;
};

}  // namespace lizard::conformance
