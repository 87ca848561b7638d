// An embedded mock of the Lizard sandbox HTTP API (docs/spec/lizard-api.md) that
// really runs commands in isolated sandboxes on this machine: each sandbox is
// its own user, mount, PID, network, UTS and IPC namespace, its root is never
// host root, and its commands run without the capabilities and system calls
// that could reach the host (docs/mockserver.md, "Isolation").
//
// A test starts one in-process:
//
//   lizard::mock::MockServer server;          // 127.0.0.1, port 0, ready on return
//   auto url = server.url();                  // "http://127.0.0.1:PORT"
//   ... drive it with any client, key server.api_key(), project server.project_id() ...
//   auto journal = server.requests();          // what was sent
//                                              // ~MockServer stops, kills, joins, cleans up
//
// The standalone binary `lizard-mock` (mockserver/main.cc) is a thin main
// around this class. docs/mockserver.md documents every route and the ways
// the mock knowingly differs from the real platform.
//
// Where the kernel refuses what isolation needs (user namespaces disabled,
// a container's masked /proc), MockServer's constructor throws
// IsolationUnavailable; isolation_problem() says so before any server starts.
//
// Thread safety: every member function may be called from any thread while
// the server runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lizard::mock {

enum class Era {
  kKubernetes,   // pause/resume/fork/snapshot answer 501 (the default)
  kFirecracker,  // pause/resume (files survive, processes do not), fork, snapshot work
};

// Per-sandbox resource limits, applied to every command of the sandbox (soft
// and hard): a fork bomb or a disk filler in one sandbox stops at them.
struct SandboxLimits {
  long long max_processes = 4096;        // RLIMIT_NPROC, for all uids of the sandbox together
  long long max_open_files = 8192;       // RLIMIT_NOFILE, per process
  long long max_file_bytes = 4LL << 30;  // RLIMIT_FSIZE, per file
  // Processes of all sandboxes together, so that several fork bombs at once
  // cannot use up the host's PIDs (keep it under the host's pid_max). A root
  // mock counts the sandboxes of every root mock with the same root_id_base;
  // a user's mock counts all of that user's processes, its own included.
  long long max_processes_all_sandboxes = 16384;
};

struct MockOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  // Accepted API keys (full-scope). Empty: one key, kDefaultApiKey.
  std::vector<std::string> api_keys;
  // Project names (each also its slug). Empty: one project, kDefaultProject.
  std::vector<std::string> projects;
  Era era = Era::kKubernetes;
  // The server's per-request exec limit: an exec whose timeoutMs is larger is
  // cut to this (the command is killed and answered with timedOut).
  std::chrono::milliseconds exec_limit{600000};
  // Where sandboxes live. Empty: a fresh temporary directory removed on stop.
  std::string state_dir;
  // Called once per request with a one-line summary (key redacted). Empty: quiet.
  std::function<void(std::string_view)> log;
  // Largest request body accepted; larger answers 413 before being read whole.
  std::size_t max_body_bytes = 256u * 1024 * 1024;
  // A request body must arrive whole within this time after the request's
  // head; else the connection is closed.
  std::chrono::milliseconds request_body_timeout{120000};
  // The secret of the control plane (/_mock/...), sent as the header
  // X-Mock-Control-Key. Empty: a random one, see MockServer::control_key().
  std::string control_key;
  SandboxLimits sandbox_limits;
  // When the mock runs as root: the host ids that sandbox ids 0..65535 map to
  // start here (never 0, at most 4294901758); the id after them makes the
  // sandboxes' namespaces (for the process limits). Ignored otherwise (a
  // user's mock maps uid 0 to itself).
  std::uint32_t root_id_base = 1000000000;
  // The request journal keeps at most this many entries and this many body
  // bytes in all (the oldest go first); each body is cut at 1 MiB.
  std::size_t journal_max_entries = 10000;
  std::size_t journal_max_bytes = 64u << 20;
};

// Thrown by MockServer's constructor when sandboxes cannot be isolated here;
// what() names what is missing and the fixes.
class IsolationUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why this machine cannot run isolated sandboxes (with the fixes), or
// nullopt when it can. The first call starts one sandbox to find out; the
// answer is remembered. Thread-safe.
std::optional<std::string> isolation_problem();

// Removes the state directories of every MockServer of this process,
// without stopping them: for a process about to exit without running
// destructors (on SIGINT or SIGTERM, or with a thread still inside a
// server). Their sandboxes end with the process. Thread-safe.
void remove_state_directories();

inline constexpr const char* kDefaultApiKey = "liz_mock_key";
inline constexpr const char* kDefaultProject = "mock-project";

// One request as the server saw it. The auth headers are never recorded.
struct JournalEntry {
  std::string method;
  std::string path;   // without the query string
  std::string query;  // raw, without '?'
  int status = 0;
  std::string body;    // as sent (bodies over 1 MiB are cut, with a marker)
  std::string accept;  // the Accept header (tells streaming exec apart)
};

// A fault rule: requests whose method and path match get `action` instead of
// (or on top of) the normal handling.
struct FaultRule {
  enum class Action {
    kRespond,  // answer `status` with `body` (content type `content_type`); handler not run
    kDelay,    // wait `delay`, then handle normally
    kClose,    // close the connection without answering; handler not run
    kCloseAfterHandling,  // run the handler (side effects happen), then close without answering
    kTruncate,  // handle normally, then send only the first `truncate_at` bytes of the body
  };
  std::string method;        // "GET", "POST", ... or "*" for any
  std::string path_pattern;  // glob: '*' matches within one segment, '**' across segments
  Action action = Action::kRespond;
  int status = 500;
  std::string body = R"({"error":"injected fault"})";
  std::string content_type = "application/json";
  std::chrono::milliseconds delay{0};
  std::size_t truncate_at = 0;
  // Applies to the next `times` matches (-1: every match) ...
  int times = -1;
  // ... each with this probability, drawn from a generator seeded with `seed`.
  double probability = 1.0;
  std::uint64_t seed = 1;
};

class MockServer {
 public:
  // Binds, starts the listener thread and returns when it accepts
  // connections. Throws std::runtime_error when it cannot bind.
  explicit MockServer(MockOptions options = {});
  // Stops listening, kills every sandbox process, removes the state
  // directory (when it made one), and joins its threads.
  ~MockServer();
  MockServer(const MockServer&) = delete;
  MockServer& operator=(const MockServer&) = delete;

  std::string url() const;  // "http://HOST:PORT"
  int port() const;
  // The first accepted key and the first project's ID.
  std::string api_key() const;
  std::string project_id() const;
  // The control plane's secret (MockOptions::control_key, or the generated one).
  std::string control_key() const;

  // The request journal, oldest first (GET /_mock/requests).
  std::vector<JournalEntry> requests() const;
  // Forgets the journal and the fault rules, and kills every sandbox
  // (POST /_mock/reset).
  void reset();
  void clear_journal();
  void add_fault(FaultRule rule);  // POST /_mock/faults
  void clear_faults();
  // Moves the mock's clock forward: lifetimes expire without sleeping
  // (POST /_mock/clock {"advanceMs": N}).
  void advance_clock(std::chrono::milliseconds by);
  // Sandboxes currently alive, and processes started through exec still running.
  std::size_t live_sandboxes() const;
  std::size_t live_processes() const;
  // The host directory that a live sandbox sees as /workspace (for tests
  // that check isolation); empty when unknown.
  std::string workspace_dir(const std::string& sandbox_id) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard::mock
