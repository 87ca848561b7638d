// serve_protocol (protocol_server.h): the adapter's side of the backend
// protocol. Requests run on workers (workers.h); answers are written by
// line_writer.h.

#include <cerrno>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "line_writer.h"
#include "lines.h"
#include "lizard/conformance/adapter_client.h"
#include "lizard/conformance/protocol_server.h"
#include "lizard/conformance/rules.h"
#include "lizard/workspace/utf8.h"
#include "server_params.h"
#include "wire.h"
#include "workers.h"

namespace lizard::conformance {

namespace {

using protocol::member;
using protocol::Writer;
using serve::InvalidParams;
using serve::InvalidRequest;
using serve::MethodNotFound;
using serve::need;
using serve::need_ref;
using serve::need_text;
using serve::read_env;
using serve::read_overrides;
using serve::serialize;
using workspace::Argv;
using workspace::Shell;

// Set on a request's thread: frees its place among the requests in flight,
// called by Server::respond just before the answer is written, so that a
// caller that sends its next request on reading an answer finds the place
// free (a request answered is no longer in flight).
thread_local std::function<void()> tl_release_request;

class Server {
 public:
  Server(BackendFactory& factory, const ServeOptions& options)
      : factory_(factory), options_(options) {}

  int run() {
    read_lines();
    // End of input: stop what runs, wait for the requests, end the session.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [id, stop] : runs_) stop->request_stop();
    }
    if (!workers_.close(std::chrono::seconds(10))) return 1;
    std::lock_guard<std::mutex> lock(mutex_);
    backends_.clear();
    session_.reset();
    return 0;
  }

 private:
  void read_lines() {
    protocol::LineReader reader(options_.in_fd);
    bool discarding = false;  // the rest of a line over the limit
    while (true) {
      const ssize_t n = reader.fill();
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      while (auto line = reader.next()) {
        if (!discarding) handle(std::move(*line));
        discarding = false;
      }
      // The reader of the answers is gone (a write failed): no answer can
      // be given any more, so end as at the end of the input.
      if (out_.broken()) return;
      if (reader.partial_size() > options_.max_line_bytes) {
        if (!discarding) respond_error("null", protocol::kInvalidRequest, "line too long");
        reader.drop_partial();
        discarding = true;
      }
    }
  }

  void handle(protocol::Line line) {
    try {
      handle_line(std::move(line));
    } catch (const std::bad_alloc&) {
      // One line the adapter had no memory for: said, and the next is read.
      respond_error("null", protocol::kInternalError,
                    "the adapter ran out of memory for a request");
    }
  }

  // An id as JSON-RPC has it (a number, or a string of UTF-8: the answer
  // carries it back on a line of UTF-8), serialized; nullopt for anything
  // else (an object, an array, a string that is not UTF-8).
  static std::optional<std::string> id_of(const rapidjson::Value& id) {
    if (id.IsNumber() ||
        (id.IsString() && workspace::is_valid_utf8({id.GetString(), id.GetStringLength()}))) {
      return serialize(id);
    }
    return std::nullopt;
  }

  void handle_line(protocol::Line line) {
    if (line.view().find_first_not_of(" \t\r") == std::string_view::npos) return;
    // A NUL ends RapidJSON's in-place parse early: what follows it would pass unread.
    if (line.view().find('\0') != std::string_view::npos) {
      respond_error("null", protocol::kParseError, "not JSON: the line holds a NUL byte");
      return;
    }
    const std::size_t line_bytes = line.size;
    // Parsed in place: the document points into the line, which it keeps.
    struct Parsed {
      protocol::Line line;
      rapidjson::Document doc;
    };
    auto parsed = std::make_shared<Parsed>();
    parsed->line = std::move(line);
    // Text values are checked for UTF-8 where they are read (read_text).
    const rapidjson::ParseResult result = protocol::parse_line(parsed->doc, parsed->line, false);
    std::shared_ptr<const rapidjson::Document> doc(parsed, &parsed->doc);
    if (result.IsError()) {
      respond_error("null", protocol::kParseError, "not JSON");
      return;
    }
    if (!doc->IsObject()) {
      respond_error("null", protocol::kInvalidRequest, "not a JSON object");
      return;
    }
    const rapidjson::Value* method = member(*doc, "method");
    const rapidjson::Value* id = member(*doc, "id");
    const rapidjson::Value* params = member(*doc, "params");
    const std::optional<std::string> id_json = id != nullptr ? id_of(*id) : std::nullopt;
    if (id != nullptr && !id_json) {
      respond_error("null", protocol::kInvalidRequest,
                    "the id is neither a number nor a string of UTF-8");
      return;
    }
    if (method == nullptr || !method->IsString()) {
      respond_error(id_json.value_or("null"), protocol::kInvalidRequest, "no method");
      return;
    }
    const std::string name = method->GetString();
    static const rapidjson::Value kNoParams(rapidjson::kObjectType);
    if (params == nullptr) params = &kNoParams;
    if (id == nullptr) {
      notification(name, *params);
      return;
    }
    const std::string& id_text = *id_json;
    if (name == "$/ping") {
      // At once, on this thread, whatever is in flight (docs/protocol.md).
      respond(id_text, "result", "null");
      return;
    }
    if (name == "initialize") {
      // Answered before the next line is read: everything else needs its session.
      execute(id_text, name, *params);
      return;
    }
    std::shared_ptr<std::stop_source> stop;
    bool duplicate = false;
    bool too_many = false;
    bool too_large = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // A second run with the id of one in flight would take its
      // cancellation: ids must be unique among requests in flight.
      duplicate = name == "run" && runs_.count(id_text) != 0;
      // A worker per request in flight (workers.h): a caller that never
      // waits for answers must not start threads without bound.
      too_many = !duplicate && in_flight_ >= options_.max_in_flight;
      // Each request keeps its line until answered: their bytes together
      // are bounded too (256 lines of 128 MiB would be 32 GiB).
      too_large =
          !duplicate && !too_many && bytes_in_flight_ + line_bytes > options_.max_bytes_in_flight;
      if (!duplicate && !too_many && !too_large) {
        ++in_flight_;
        bytes_in_flight_ += line_bytes;
        if (name == "run") {
          stop = std::make_shared<std::stop_source>();
          runs_[id_text] = stop;
        }
      }
    }
    if (duplicate) {
      respond_error(id_text, protocol::kInvalidRequest, "a run with this id is in flight");
      return;
    }
    if (too_many || too_large) {
      respond_error(id_text, protocol::kInvalidRequest,
                    too_many
                        ? "too many requests in flight (" + std::to_string(options_.max_in_flight) +
                              "); send more once some are answered"
                        : "the requests in flight hold too many bytes (at most " +
                              std::to_string(options_.max_bytes_in_flight) +
                              "); send more once some are answered");
      return;
    }
    const bool queued = workers_.submit([this, doc, params, id_text, name, stop, line_bytes] {
      tl_release_request = [this, &id_text, &stop, line_bytes] {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop) runs_.erase(id_text);
        --in_flight_;
        bytes_in_flight_ -= line_bytes;
      };
      execute(id_text, name, *params, stop ? stop->get_token() : std::stop_token());
      // Answered in every case; released here only if no answer was written.
      if (auto release = std::exchange(tl_release_request, nullptr)) release();
    });
    if (!queued) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop) runs_.erase(id_text);
        --in_flight_;
        bytes_in_flight_ -= line_bytes;
      }
      respond_error(id_text, protocol::kInternalError,
                    "the adapter could not start a thread for this request; send it again later");
    }
  }

  void notification(const std::string& name, const rapidjson::Value& params) {
    if (name != "$/cancelRequest") return;  // unknown notifications are ignored
    const rapidjson::Value* id = member(params, "id");
    if (id == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = runs_.find(serialize(*id));
    if (it != runs_.end()) it->second->request_stop();
  }

  void execute(const std::string& id, const std::string& method, const rapidjson::Value& params,
               std::stop_token stop = {}) {
    rapidjson::StringBuffer result;
    Writer w(result);
    std::optional<std::string> data;  // fs/read's bytes, written by respond_data
    try {
      dispatch(method, params, w, stop, data);
    } catch (const InvalidParams& e) {
      respond_error(id, protocol::kInvalidParams, e.what());
      return;
    } catch (const InvalidRequest& e) {
      respond_error(id, protocol::kInvalidRequest, e.what());
      return;
    } catch (const MethodNotFound& e) {
      respond_error(id, protocol::kMethodNotFound, std::string("no method ") + e.what());
      return;
    } catch (...) {
      rapidjson::StringBuffer error;
      Writer ew(error);
      protocol::write_current_exception(ew);
      respond(id, "error", std::string_view(error.GetString(), error.GetSize()));
      return;
    }
    if (data) return respond_data(id, *data);
    respond(id, "result", std::string_view(result.GetString(), result.GetSize()));
  }

  std::shared_ptr<WorkspaceBackend> backend(const rapidjson::Value& params) {
    const rapidjson::Value& handle = need(params, "backend");
    if (!handle.IsUint64()) throw InvalidParams("params.backend is not a handle");
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = backends_.find(handle.GetUint64());
    if (it == backends_.end()) throw InvalidParams("no backend " + serialize(handle));
    return it->second;
  }

  void answer_backend(Writer& w, std::unique_ptr<WorkspaceBackend> made) {
    if (!made) throw std::invalid_argument("the session made no backend");
    std::shared_ptr<WorkspaceBackend> b(std::move(made));
    std::uint64_t handle = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      handle = next_handle_++;
      backends_[handle] = b;
    }
    w.StartObject();
    w.Key("backend");
    w.Uint64(handle);
    w.Key("working_dir");
    protocol::write_text(w, b->working_dir());
    w.EndObject();
  }

  static workspace::SupportsFilesystem& files(WorkspaceBackend& b) {
    if (auto* f = b.filesystem()) return *f;
    throw workspace::WorkspaceNotSupportedError("this backend offers no filesystem");
  }

  // The result goes to `w`, except fs/read's, whose bytes go to `read_data`.
  void dispatch(const std::string& method, const rapidjson::Value& params, Writer& w,
                std::stop_token stop, std::optional<std::string>& read_data) {
    static const std::set<std::string> kMethods = {
        "initialize",  "$/ping",          "backend/new",  "backend/attach",
        "backend/ref", "backend/destroy", "backend/drop", "environment/destroy",
        "run",         "fs/read",         "fs/write",     "fs/stat",
        "fs/list",     "fs/make_dir",     "fs/remove",    "fs/exists",
        "fs/realpath"};
    if (kMethods.count(method) == 0) throw MethodNotFound(method);
    if (method == "initialize") return initialize(params, w);
    if (method == "$/ping") return (void)w.Null();
    // Read under the lock: a request sent before initialize runs on its own
    // thread while initialize sets the session.
    const std::shared_ptr<BackendSession> session = current_session();
    if (!session) throw InvalidRequest("initialize comes first");
    if (method == "backend/new") {
      const rapidjson::Value* o = member(params, "overrides");
      if (o == nullptr) return answer_backend(w, session->make());
      PlatformControl* platform = session->platform();
      if (platform == nullptr)
        throw std::invalid_argument("this adapter's backends take no overrides");
      return answer_backend(w, platform->make_with(read_overrides(*o)));
    }
    if (method == "backend/attach") {
      auto b = session->attach(need_ref(params, "ref"));
      if (!b) throw std::invalid_argument("this adapter cannot attach by ref");
      return answer_backend(w, std::move(b));
    }
    if (method == "environment/destroy") {
      session->destroy_environment(need_ref(params, "ref"));
      return (void)w.Null();
    }
    if (method == "backend/drop") {
      const rapidjson::Value& handle = need(params, "backend");
      std::shared_ptr<WorkspaceBackend> dropped;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = handle.IsUint64() ? backends_.find(handle.GetUint64()) : backends_.end();
        if (it == backends_.end()) throw InvalidParams("no backend " + serialize(handle));
        dropped = std::move(it->second);
        backends_.erase(it);
      }
      dropped.reset();  // the object ends here unless a request still uses it
      return (void)w.Null();
    }
    auto b = backend(params);
    if (method == "backend/ref") {
      const auto ref = b->ref();
      w.StartObject();
      w.Key("ref");
      if (ref) {
        protocol::write_ref(w, *ref);
      } else {
        w.Null();
      }
      w.EndObject();
      return;
    }
    if (method == "backend/destroy") {
      b->destroy();
      return (void)w.Null();
    }
    if (method == "run") return run(*b, params, w, std::move(stop));
    if (method == "fs/realpath") {
      auto* r = b->realpath_support();
      if (r == nullptr)
        throw workspace::WorkspaceNotSupportedError("this backend offers no realpath");
      const std::string resolved = r->realpath(need_text(params, "path"));
      w.StartObject();
      w.Key("path");
      protocol::write_text(w, resolved);
      w.EndObject();
      return;
    }
    if (method.rfind("fs/", 0) != 0) throw MethodNotFound(method);
    auto& f = files(*b);
    const std::string path = need_text(params, "path");
    if (method == "fs/read") {
      read_data = f.read_bytes(path);
      // Its answer is one line; the runner takes none longer than
      // AdapterOptions::max_line_bytes (96 MiB): say so rather than write it.
      constexpr std::size_t kMaxReadBytes = ((96u << 20) - 4096) / 4 * 3;
      if (read_data->size() > kMaxReadBytes) {
        const std::size_t size = read_data->size();
        read_data.reset();
        throw workspace::WorkspaceError(path + " holds " + std::to_string(size) +
                                        " bytes; an answer of the protocol carries at most " +
                                        std::to_string(kMaxReadBytes));
      }
    } else if (method == "fs/write") {
      auto data = protocol::read_bytes(need(params, "data"));
      if (!data) throw InvalidParams("params.data is not Bytes");
      f.write_bytes(path, *data);
      w.Null();
    } else if (method == "fs/stat") {
      protocol::write_entry(w, f.stat(path));
    } else if (method == "fs/list") {
      const auto entries = f.list_dir(path);
      w.StartObject();
      w.Key("entries");
      w.StartArray();
      for (const auto& e : entries) protocol::write_entry(w, e);
      w.EndArray();
      w.EndObject();
    } else if (method == "fs/make_dir") {
      f.make_dir(path);
      w.Null();
    } else if (method == "fs/remove") {
      f.remove(path);
      w.Null();
    } else if (method == "fs/exists") {
      const bool exists = f.exists(path);
      w.StartObject();
      w.Key("exists");
      w.Bool(exists);
      w.EndObject();
    } else {
      throw MethodNotFound(method);
    }
  }

  void run(WorkspaceBackend& b, const rapidjson::Value& params, Writer& w, std::stop_token stop) {
    auto* c = b.commands();
    if (c == nullptr)
      throw workspace::WorkspaceNotSupportedError("this backend offers no commands");
    const rapidjson::Value& command = need(params, "command");
    std::optional<workspace::Command> cmd;
    if (const rapidjson::Value* argv = member(command, "argv")) {
      if (!argv->IsArray()) throw InvalidParams("command.argv is not an array");
      std::vector<std::string> items;
      for (const auto& item : argv->GetArray()) {
        auto text = protocol::read_text(item);
        if (!text) throw InvalidParams("an argv item is not Text");
        items.push_back(std::move(*text));
      }
      cmd.emplace(Argv{std::move(items)});
    } else if (member(command, "shell") != nullptr) {
      cmd.emplace(Shell{need_text(command, "shell")});
    } else {
      throw InvalidParams("command has neither argv nor shell");
    }
    workspace::RunOptions options;
    if (const rapidjson::Value* env = member(params, "env")) options.env = read_env(*env);
    if (const rapidjson::Value* timeout = member(params, "timeout")) {
      auto seconds = protocol::read_seconds(*timeout);
      if (!seconds) throw InvalidParams("timeout is not Seconds");
      options.timeout = workspace::Seconds(*seconds);
    }
    options.stop = std::move(stop);
    const auto result = c->run(*cmd, options);
    w.StartObject();
    w.Key("exit_code");
    w.Int(result.exit_code);
    w.Key("out");
    protocol::write_bytes(w, result.out);
    w.Key("err");
    protocol::write_bytes(w, result.err);
    w.EndObject();
  }

  void initialize(const rapidjson::Value& params, Writer& w) {
    if (current_session()) throw InvalidRequest("initialize was already answered");
    static const RuleInfo kNoRule{};
    const RuleInfo* rule = &kNoRule;
    if (const rapidjson::Value* id = member(params, "rule"); id && id->IsString()) {
      if (const RuleInfo* found = find_rule(id->GetString())) rule = found;
    }
    const std::shared_ptr<BackendSession> session = factory_.open(*rule);
    if (!session) throw std::runtime_error("the factory opened no session");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      session_ = session;
    }
    const Capabilities caps = session->capabilities();
    const Deviations dev = session->deviations();
    w.StartObject();
    w.Key("protocol_version");
    w.String(kProtocolVersion);
    // Strings of UTF-8, as the schema has them.
    w.Key("name");
    protocol::write_utf8_string(w, options_.name.empty() ? factory_.name() : options_.name);
    w.Key("profile");
    protocol::write_utf8_string(w, factory_.profile());
    w.Key("capabilities");
    w.StartArray();
    if (caps.has(Capability::kCommands)) w.String("commands");
    if (caps.has(Capability::kFilesystem)) w.String("filesystem");
    if (caps.has(Capability::kRealpath)) w.String("realpath");
    w.EndArray();
    w.Key("deviations");
    w.StartObject();
    w.Key("commands_run_as_root");
    w.Bool(dev.commands_run_as_root);
    w.Key("no_posix_shell");
    w.Bool(dev.no_posix_shell);
    w.Key("commands_have_own_filesystem");
    w.Bool(dev.commands_have_own_filesystem);
    w.EndObject();
    w.Key("can_attach");
    w.Bool(session->can_attach());
    w.Key("secrets");
    w.StartArray();
    for (const auto& s : session->secrets()) protocol::write_utf8_string(w, s);
    w.EndArray();
    w.EndObject();
  }

  void respond_error(const std::string& id, int code, const std::string& message) {
    rapidjson::StringBuffer error;
    Writer w(error);
    w.StartObject();
    w.Key("code");
    w.Int(code);
    w.Key("message");
    // A string, whatever it quotes (a method name that is not UTF-8): JSON-RPC and the schema.
    protocol::write_utf8_string(w, message);
    w.EndObject();
    respond(id, "error", std::string_view(error.GetString(), error.GetSize()));
  }

  // One line: {"jsonrpc":"2.0","id":ID,"FIELD":BODY}.
  void respond(const std::string& id, const char* field, std::string_view body) {
    out_.write(answer_head(id, field), body, "}\n");
  }

  // fs/read's answer, {"result":{"data":Bytes}}, its base64 written in
  // pieces as it is encoded (line_writer.h).
  void respond_data(const std::string& id, std::string_view bytes) {
    out_.write_base64(answer_head(id, "result") + R"({"data":")", bytes, "\"}}\n");
  }

  // An answer's line up to its field's value. The request leaves the count
  // in flight here, just before its answer is written (tl_release_request).
  static std::string answer_head(const std::string& id, const char* field) {
    if (auto release = std::exchange(tl_release_request, nullptr)) release();
    return R"({"jsonrpc":"2.0","id":)" + id + ",\"" + field + "\":";
  }

  BackendFactory& factory_;
  ServeOptions options_;
  std::shared_ptr<BackendSession> session_;  // under mutex_ (current_session())

  std::shared_ptr<BackendSession> current_session() {
    std::lock_guard<std::mutex> lock(mutex_);
    return session_;
  }
  protocol::LineWriter out_{options_.out_fd};
  std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<WorkspaceBackend>> backends_;
  std::uint64_t next_handle_ = 1;
  std::map<std::string, std::shared_ptr<std::stop_source>> runs_;
  int in_flight_ = 0;                // requests not answered yet (max_in_flight counts these)
  std::size_t bytes_in_flight_ = 0;  // their lines' bytes (max_bytes_in_flight)
  // A request leaves in_flight_ before its answer is written, and a caller
  // that does not read its answers keeps that write (and its worker)
  // waiting: past max_in_flight + 16 workers, requests wait for one, so the
  // threads stay bounded whatever the caller does.
  protocol::Workers workers_{options_.max_in_flight + 16};
};

}  // namespace

int serve_protocol(BackendFactory& factory, const ServeOptions& options) {
  auto* server = new Server(factory, options);
  const int status = server->run();
  // With requests still running their threads use the server: leave it.
  if (status == 0) delete server;
  return status;
}

}  // namespace lizard::conformance
