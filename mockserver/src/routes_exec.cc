// /api/sandboxes/{id}/exec (plain and Server-Sent Events), the process list
// and signals.
#include <signal.h>

#include <httplib.h>

#include <map>

#include "api_error.h"
#include "era.h"
#include "http_server.h"
#include "json.h"
#include "lizard/workspace/utf8.h"
#include "request_body.h"
#include "routes.h"
#include "sandbox_files.h"
#include "sandbox_runtime.h"
#include "scoped_fd.h"
#include "state.h"

namespace lizard::mock::internal {
namespace {

constexpr std::size_t kExecStreamCap = 512 * 1024;
constexpr std::int64_t kExecTimeoutDefaultMs = 60000;
constexpr std::int64_t kExecTimeoutMinMs = 1000;
constexpr std::int64_t kExecTimeoutMaxMs = 600000;
constexpr const char* kBasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// A streamed line longer than this is sent in pieces of this size (cut at a
// character boundary), so that output without newlines needs bounded memory.
constexpr std::size_t kMaxStreamedLine = 64 * 1024;

const std::map<std::string, int> kSignals = {
    {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}, {"SIGINT", SIGINT},  {"SIGHUP", SIGHUP},
    {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}};

std::string no_nul(std::string s) {
  if (s.find('\0') != std::string::npos)
    api_error(400, "'cmd' must not contain NUL", "BAD_REQUEST");
  return s;
}

// `cmd`: a string runs through /bin/sh -c, an array is an argv.
std::vector<std::string> command_of(const RequestBody& b) {
  const rapidjson::Value* cmd = b.get("cmd");
  if (!cmd) api_error(400, "'cmd' is required", "BAD_REQUEST");
  if (cmd->IsString()) return {"/bin/sh", "-c", no_nul(string_of(*cmd))};
  if (!cmd->IsArray())
    api_error(400, "'cmd' must be a string or an array of strings", "BAD_REQUEST");
  std::vector<std::string> argv;
  for (const auto& a : cmd->GetArray()) {
    if (!a.IsString())
      api_error(400, "'cmd' must be a string or an array of strings", "BAD_REQUEST");
    argv.push_back(no_nul(string_of(a)));
  }
  if (argv.empty()) api_error(400, "'cmd' must not be an empty array", "BAD_REQUEST");
  if (argv[0].empty()) api_error(400, "'cmd[0]' must not be empty", "BAD_REQUEST");
  return argv;
}

void stream_exec(MockState& state, SandboxRuntime& rt, const ExecSpec& spec,
                 std::chrono::milliseconds limit, std::int64_t started, bool pid_event,
                 const std::string& id, httplib::DataSink& sink) {
  std::string pending[2];
  bool broken = false;
  auto last_write = std::chrono::steady_clock::now();
  auto send = [&](const std::string& text) {
    if (broken) return;
    if (!sink.write(text.data(), text.size())) broken = true;
    last_write = std::chrono::steady_clock::now();
  };
  auto emit_line = [&](int stream, std::string_view line) {
    JsonOut j;
    j.begin_object().kv("stream", stream == 1 ? "stdout" : "stderr").kv("line", line).end_object();
    send("data: " + j.text() + "\n\n");
  };
  // Each stream's partial line; the search for a newline starts at the new
  // bytes only, so the time is linear in the output.
  auto on_output = [&](int stream, std::string_view data) {
    std::string& buf = pending[stream - 1];
    std::size_t scan = buf.size();
    buf.append(data);
    std::size_t start = 0;
    for (;;) {
      const std::size_t nl = buf.find('\n', scan);
      if (nl == std::string::npos) break;
      emit_line(stream, std::string_view(buf).substr(start, nl - start));
      start = scan = nl + 1;
    }
    while (buf.size() - start > kMaxStreamedLine) {
      std::string_view piece = std::string_view(buf).substr(start, kMaxStreamedLine);
      const std::size_t whole = lizard::workspace::utf8_complete_prefix(piece);
      piece = piece.substr(0, whole > 0 ? whole : piece.size());
      emit_line(stream, piece);
      start += piece.size();
    }
    buf.erase(0, start);
  };
  auto on_pid = [&](pid_t pid) {
    if (pid_event) send("data: {\"pid\":" + std::to_string(pid) + "}\n\n");
  };
  const int socket = current_connection().socket;
  auto should_stop = [&] {
    if (!broken && std::chrono::steady_clock::now() - last_write > std::chrono::seconds(15))
      send(": keep-alive\n\n");
    return broken || state.stopping() || peer_closed(socket) || !sink.is_writable();
  };
  auto out = rt.run(spec, limit, 0, on_output, on_pid, should_stop, started, spec.argv);
  for (int s = 1; s <= 2; ++s) {
    if (!pending[s - 1].empty()) emit_line(s, pending[s - 1]);
  }
  // A command that never started in a live sandbox (the init's process for it
  // stopped by another command) timed out, or was cancelled; not a 404.
  if (!state.alive(id) || (!out.started && !out.timed_out)) {
    send("event: error\ndata: Sandbox not found\n\n");
  } else if (out.timed_out) {
    send("event: exit\ndata: {\"exitCode\":124,\"timedOut\":true}\n\n");
  } else {
    send("event: exit\ndata: {\"exitCode\":" + std::to_string(out.exit_code) + "}\n\n");
  }
  sink.done();
}

// The sandbox user a command or a file operation acts as: root, or (in an
// era that applies `user`) the template's unprivileged account "user".
struct SandboxUser {
  std::uint32_t uid = 0;
  std::string name = "root";
  std::string home = "/root";
};

SandboxUser sandbox_user(const MockState& state, const std::string& name) {
  if (name == "root") return {};
  if (name != "user") api_error(400, "Unknown user: " + name + " (root or user)", "EINVAL");
  if (state.sandbox_settings().ids.count <= 1000) {
    api_error(400,
              "This mock runs as a normal user, so its sandboxes have no user but root (run it as "
              "root for the account \"user\")",
              "USER_UNAVAILABLE");
  }
  return {1000, "user", "/tmp"};
}

// The command's environment: PATH and HOME always; the image's variables,
// the create's and the request's `envs` where the era applies them.
std::vector<std::string> environment_of(
    const EraRules& era, const Sandbox& sb,
    const std::vector<std::pair<std::string, std::string>>& envs, const SandboxUser& user) {
  std::map<std::string, std::string> env = {{"PATH", kBasePath}, {"HOME", user.home}};
  if (era.image_environment) {
    env.insert({{"LANG", "C.UTF-8"},
                {"USER", user.name},
                {"LOGNAME", user.name},
                {"SHELL", "/bin/sh"},
                {"TERM", "dumb"}});
  }
  if (era.create_envs) {
    for (const auto& [k, v] : sb.envs) env[k] = v;
  }
  if (era.exec_envs) {
    for (const auto& [k, v] : envs) env[k] = v;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

void exec(MockState& state, Call& c) {
  const std::string& id = c.param(0);
  auto sb = state.find_sandbox(c.key, id);
  const EraRules& era = era_rules(state.options().era);
  RequestBody b(c.body);
  ExecSpec spec;
  spec.argv = command_of(b);
  // Every field is read (a wrong type is a 400 in both eras); what the era
  // does not apply is then ignored.
  const auto req_envs = b.env_map("envs");
  const auto workdir = b.str("workdir");
  const std::string user_name = b.str("user").value_or("root");
  const std::int64_t timeout_ms = b.integer("timeoutMs").value_or(kExecTimeoutDefaultMs);
  if (timeout_ms < kExecTimeoutMinMs || timeout_ms > kExecTimeoutMaxMs)
    api_error(400, "'timeoutMs' must be between 1000 and 600000", "INVALID_TIMEOUT");
  const bool pid_event = b.boolean("pidEvent").value_or(false) && era.pid_event;
  const SandboxUser user = era.exec_user ? sandbox_user(state, user_name) : SandboxUser{};
  spec.uid = spec.gid = user.uid;
  spec.workdir = era.exec_workdir ? workdir.value_or("/workspace") : "/";
  if (spec.workdir.empty() || spec.workdir[0] != '/' ||
      spec.workdir.find('\0') != std::string::npos)
    api_error(400, "'workdir' must be an absolute path", "EINVAL");
  auto rt = state.running_runtime(*sb);
  if (era.exec_workdir) {
    const ScopedFd root(rt->dup_root_fd());
    if (root.get() < 0) not_found_sandbox();
    // As the sandbox sees it, not as host root (no probing of host dirs
    // the sandbox cannot search).
    const ScopedFsIdentity identity(rt->ids());
    const bool dir_ok = is_directory(root.get(), spec.workdir);
    if (!dir_ok) api_error(400, "The working directory does not exist: " + spec.workdir, "ENOENT");
  }
  spec.env = environment_of(era, *sb, req_envs, user);
  const auto limit = std::min(std::chrono::milliseconds(timeout_ms), state.options().exec_limit);
  const std::int64_t started = state.now_ms();

  const bool streaming =
      c.req.get_header_value("Accept").find("text/event-stream") != std::string::npos;
  if (!streaming) {
    // A client that went away takes its command with it.
    const int socket = current_connection().socket;
    auto out = rt->run(
        spec, limit, kExecStreamCap, nullptr, nullptr,
        [&state, socket] { return state.stopping() || peer_closed(socket); }, started, spec.argv);
    if (!state.alive(id) || (!out.started && !out.timed_out)) not_found_sandbox();
    JsonOut j;
    j.begin_object()
        .kv("stdout", out.stdout_bytes)
        .kv("stderr", out.stderr_bytes)
        .kv("exitCode", out.exit_code);
    if (out.stdout_truncated || out.stderr_truncated) j.kv("truncated", true);
    if (out.timed_out) j.kv("timedOut", true);
    j.end_object();
    return c.reply(200, j.text());
  }
  c.res.status = 200;
  c.res.set_header("Cache-Control", "no-cache");
  c.res.set_chunked_content_provider(
      "text/event-stream",
      [&state, rt, spec, limit, started, pid_event, id](std::size_t, httplib::DataSink& sink) {
        stream_exec(state, *rt, spec, limit, started, pid_event, id, sink);
        return true;
      });
}

// 501 in an era without the process routes (after the 404 for an unknown sandbox).
void require_process_routes(const MockState& state) {
  if (!era_rules(state.options().era).process_routes)
    throw ApiError{501, "Not implemented", "", ""};
}

void list_processes(MockState& state, Call& c) {
  auto sb = state.find_sandbox(c.key, c.param(0));
  require_process_routes(state);
  auto rt = state.locked([&](MockState::Tables&) { return sb->rt; });
  JsonOut j;
  j.begin_array();
  if (rt) {
    for (const auto& p : rt->processes()) {
      std::string joined;
      for (const auto& a : p.cmd) joined += (joined.empty() ? "" : " ") + a;
      j.begin_object().kv("pid", static_cast<std::int64_t>(p.pid)).key("cmd").begin_array();
      for (const auto& a : p.cmd) j.str(a);
      j.end_array().kv("command", joined).kv("startedAt", p.started_at_ms).end_object();
    }
  }
  j.end_array();
  c.reply(200, j.text());
}

void signal_process(MockState& state, Call& c) {
  auto sb = state.find_sandbox(c.key, c.param(0));
  require_process_routes(state);
  RequestBody b(c.body);
  auto pid = b.integer("pid");
  if (!pid) api_error(400, "'pid' is required", "BAD_REQUEST");
  std::string name = b.str("signal").value_or("SIGTERM");
  auto it = kSignals.find(name);
  if (it == kSignals.end()) api_error(400, "Unknown signal: " + name, "BAD_REQUEST");
  auto rt = state.running_runtime(*sb);
  if (!rt->signal(static_cast<pid_t>(*pid), it->second))
    api_error(404, "Process not found", "PROCESS_NOT_FOUND");
  c.reply(200, R"({"ok":true})");
}

}  // namespace

void add_exec_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("POST", "/api/sandboxes/{id}/exec", bind(exec));
  router.add("GET", "/api/sandboxes/{id}/processes", bind(list_processes));
  router.add("POST", "/api/sandboxes/{id}/processes/signal", bind(signal_process));
}

}  // namespace lizard::mock::internal
