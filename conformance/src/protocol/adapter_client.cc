#include "lizard/conformance/adapter_client.h"

#include <mutex>

#include "connection.h"
#include "lizard/conformance/rules.h"
#include "lizard/workspace/utf8.h"

namespace lizard::conformance {

namespace {

using protocol::Connection;
using protocol::member;
using protocol::Reply;
using protocol::Writer;
using workspace::Command;
using workspace::CommandResult;
using workspace::FileEntry;
using workspace::RunOptions;

void write_key(Writer& w, const char* key) { w.Key(key); }

// Throws the ProtocolError for a result that is not what the method answers.
[[noreturn]] void malformed(Connection& c, std::string_view method, const std::string& what) {
  throw ProtocolError(c.fault("answered " + std::string(method) +
                                  " with a result that is not the protocol's (" + what + ")",
                              false));
}

// A backend of the adapter, reached through the protocol.
class RemoteBackend final : public WorkspaceBackend,
                            public workspace::SupportsCommands,
                            public workspace::SupportsFilesystem,
                            public workspace::SupportsRealpath {
 public:
  RemoteBackend(std::shared_ptr<Connection> connection, std::uint64_t handle,
                std::string working_dir, Capabilities capabilities)
      : c_(std::move(connection)),
        handle_(handle),
        working_dir_(std::move(working_dir)),
        capabilities_(capabilities) {}

  // The adapter forgets its object; the environment stays.
  ~RemoteBackend() override {
    try {
      c_->call("backend/drop", backend_param(), {}, c_->options().answer_deadline);
    } catch (...) {
      // The connection is gone or broken; its fault is reported by the session.
    }
  }

  Capabilities capabilities() const override { return capabilities_; }
  workspace::SupportsCommands* commands() override {
    return capabilities_.has(Capability::kCommands) ? this : nullptr;
  }
  workspace::SupportsFilesystem* filesystem() override {
    return capabilities_.has(Capability::kFilesystem) ? this : nullptr;
  }
  workspace::SupportsRealpath* realpath_support() override {
    return capabilities_.has(Capability::kRealpath) ? this : nullptr;
  }

  // Asks the adapter each time (a ref that changes is the adapter's defect
  // to show); when it cannot answer, the last ref it gave.
  std::optional<WorkspaceRef> ref() const override {
    try {
      Reply r = c_->call("backend/ref", backend_param(), {}, c_->options().answer_deadline);
      const rapidjson::Value* ref = member(*r.result, "ref");
      if (ref == nullptr) malformed(*c_, "backend/ref", "no member ref");
      std::optional<WorkspaceRef> value;
      if (!ref->IsNull()) {
        value = protocol::read_ref(*ref);
        if (!value) malformed(*c_, "backend/ref", "ref is neither null nor a Ref");
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (value) last_ref_ = value;
      return value;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      return last_ref_;
    }
  }

  std::string working_dir() const override { return working_dir_; }

  void destroy() override { c_->call("backend/destroy", backend_param()); }

  CommandResult run(const Command& command, const RunOptions& options) override {
    Reply r = c_->call(
        "run",
        [&](Writer& w) {
          write_key(w, "backend");
          w.Uint64(handle_);
          write_key(w, "command");
          w.StartObject();
          if (command.is_shell()) {
            write_key(w, "shell");
            protocol::write_text(w, command.script());
          } else {
            write_key(w, "argv");
            w.StartArray();
            for (const auto& item : command.argv()) protocol::write_text(w, item);
            w.EndArray();
          }
          w.EndObject();
          if (!options.env.empty()) {
            write_key(w, "env");
            protocol::write_env(w, options.env);
          }
          if (options.timeout) {
            write_key(w, "timeout");
            protocol::write_seconds(w, options.timeout->count());
          }
          write_key(w, "output_limit");
          w.Uint64(workspace::kOutputLimitBytes);
        },
        options.stop);
    const rapidjson::Value* exit_code = member(*r.result, "exit_code");
    const rapidjson::Value* out = member(*r.result, "out");
    const rapidjson::Value* err = member(*r.result, "err");
    if (exit_code == nullptr || !exit_code->IsInt()) malformed(*c_, "run", "no integer exit_code");
    auto out_bytes = out ? protocol::read_bytes(*out) : std::nullopt;
    auto err_bytes = err ? protocol::read_bytes(*err) : std::nullopt;
    if (!out_bytes || !err_bytes) malformed(*c_, "run", "out and err must be Bytes");
    return CommandResult{exit_code->GetInt(), std::move(*out_bytes), std::move(*err_bytes)};
  }

  std::string read_bytes(const std::string& path) override {
    Reply r = c_->call("fs/read", path_param(path));
    const rapidjson::Value* data = member(*r.result, "data");
    auto bytes = data ? protocol::read_bytes(*data) : std::nullopt;
    if (!bytes) malformed(*c_, "fs/read", "data must be Bytes");
    return std::move(*bytes);
  }

  void write_bytes(const std::string& path, const std::string& data) override {
    c_->call("fs/write", [&](Writer& w) {
      write_key(w, "backend");
      w.Uint64(handle_);
      write_key(w, "path");
      protocol::write_text(w, path);
      write_key(w, "data");
      protocol::write_bytes(w, data);
    });
  }

  FileEntry stat(const std::string& path) override {
    Reply r = c_->call("fs/stat", path_param(path));
    auto entry = protocol::read_entry(*r.result);
    if (!entry) malformed(*c_, "fs/stat", "not an Entry");
    return std::move(*entry);
  }

  std::vector<FileEntry> list_dir(const std::string& path) override {
    Reply r = c_->call("fs/list", path_param(path));
    const rapidjson::Value* entries = member(*r.result, "entries");
    if (entries == nullptr || !entries->IsArray()) malformed(*c_, "fs/list", "no entries array");
    std::vector<FileEntry> out;
    for (const auto& e : entries->GetArray()) {
      auto entry = protocol::read_entry(e);
      if (!entry) malformed(*c_, "fs/list", "an item is not an Entry");
      out.push_back(std::move(*entry));
    }
    return out;
  }

  void make_dir(const std::string& path) override { c_->call("fs/make_dir", path_param(path)); }

  void remove(const std::string& path) override { c_->call("fs/remove", path_param(path)); }

  bool exists(const std::string& path) override {
    Reply r = c_->call("fs/exists", path_param(path));
    const rapidjson::Value* exists = member(*r.result, "exists");
    if (exists == nullptr || !exists->IsBool()) malformed(*c_, "fs/exists", "no boolean exists");
    return exists->GetBool();
  }

  std::string realpath(const std::string& path) override {
    Reply r = c_->call("fs/realpath", path_param(path));
    const rapidjson::Value* resolved = member(*r.result, "path");
    auto text = resolved ? protocol::read_text(*resolved) : std::nullopt;
    if (!text) malformed(*c_, "fs/realpath", "path must be Text");
    return std::move(*text);
  }

 private:
  std::function<void(Writer&)> backend_param() const {
    return [handle = handle_](Writer& w) {
      write_key(w, "backend");
      w.Uint64(handle);
    };
  }
  std::function<void(Writer&)> path_param(const std::string& path) const {
    return [handle = handle_, &path](Writer& w) {
      write_key(w, "backend");
      w.Uint64(handle);
      write_key(w, "path");
      protocol::write_text(w, path);
    };
  }

  std::shared_ptr<Connection> c_;
  std::uint64_t handle_;
  std::string working_dir_;
  Capabilities capabilities_;
  mutable std::mutex mutex_;
  mutable std::optional<WorkspaceRef> last_ref_;
};

std::unique_ptr<WorkspaceBackend> backend_from(const std::shared_ptr<Connection>& c,
                                               const char* method, const Reply& r,
                                               Capabilities capabilities) {
  const rapidjson::Value* handle = member(*r.result, "backend");
  const rapidjson::Value* dir = member(*r.result, "working_dir");
  auto working_dir = dir ? protocol::read_text(*dir) : std::nullopt;
  if (handle == nullptr || !handle->IsUint64() || handle->GetUint64() == 0 || !working_dir) {
    malformed(*c, method, "a Backend has a handle and a working_dir");
  }
  return std::make_unique<RemoteBackend>(c, handle->GetUint64(), std::move(*working_dir),
                                         capabilities);
}

Capabilities capabilities_of(bool commands, bool filesystem, bool realpath) {
  using C = Capability;
  if (commands && filesystem && realpath) return {C::kCommands, C::kFilesystem, C::kRealpath};
  if (commands && filesystem) return {C::kCommands, C::kFilesystem};
  if (commands && realpath) return {C::kCommands, C::kRealpath};
  if (filesystem && realpath) return {C::kFilesystem, C::kRealpath};
  if (commands) return {C::kCommands};
  if (filesystem) return {C::kFilesystem};
  if (realpath) return {C::kRealpath};
  return {};
}

AdapterInfo parse_info(Connection& c, const rapidjson::Value& result) {
  AdapterInfo info;
  auto bad = [&](const std::string& what) { malformed(c, "initialize", what); };
  if (!result.IsObject()) bad("not an object");
  const rapidjson::Value* version = member(result, "protocol_version");
  if (version == nullptr || !version->IsString()) bad("no protocol_version string");
  info.protocol_version = version->GetString();
  if (info.protocol_version != kProtocolVersion) {
    throw ProtocolError(c.description() + " speaks protocol version " + info.protocol_version +
                        "; this runner speaks version " + kProtocolVersion +
                        " (docs/protocol.md, \"Versions\")");
  }
  if (const rapidjson::Value* name = member(result, "name")) {
    if (!name->IsString()) bad("name is not a string");
    // Shown in every report: one line of UTF-8, whatever was sent.
    info.name = protocol::one_line(
        workspace::repair_utf8(std::string_view(name->GetString(), name->GetStringLength())), 200);
  }
  if (const rapidjson::Value* profile = member(result, "profile")) {
    if (!profile->IsString()) bad("profile is not a string");
    info.profile = protocol::one_line(
        workspace::repair_utf8(std::string_view(profile->GetString(), profile->GetStringLength())),
        200);
  }
  const rapidjson::Value* caps = member(result, "capabilities");
  if (caps == nullptr || !caps->IsArray()) bad("no capabilities array");
  bool commands = false, filesystem = false, realpath = false;
  for (const auto& cap : caps->GetArray()) {
    const std::string text = cap.IsString() ? cap.GetString() : "";
    if (text == "commands") {
      commands = true;
    } else if (text == "filesystem") {
      filesystem = true;
    } else if (text == "realpath") {
      realpath = true;
    } else {
      bad("unknown capability '" + text + "'");
    }
  }
  info.capabilities = capabilities_of(commands, filesystem, realpath);
  if (const rapidjson::Value* dev = member(result, "deviations")) {
    if (!dev->IsObject()) bad("deviations is not an object");
    auto flag = [&](const char* name) {
      const rapidjson::Value* v = member(*dev, name);
      if (v != nullptr && !v->IsBool())
        bad(std::string("deviations.") + name + " is not a boolean");
      return v != nullptr && v->GetBool();
    };
    info.deviations.commands_run_as_root = flag("commands_run_as_root");
    info.deviations.no_posix_shell = flag("no_posix_shell");
    info.deviations.commands_have_own_filesystem = flag("commands_have_own_filesystem");
  }
  if (const rapidjson::Value* attach = member(result, "can_attach")) {
    if (!attach->IsBool()) bad("can_attach is not a boolean");
    info.can_attach = attach->GetBool();
  }
  if (const rapidjson::Value* dir = member(result, "working_dir")) {
    info.working_dir = protocol::read_text(*dir);
    if (!info.working_dir) bad("working_dir is not Text");
  }
  if (const rapidjson::Value* secrets = member(result, "secrets")) {
    if (!secrets->IsArray()) bad("secrets is not an array");
    for (const auto& s : secrets->GetArray()) {
      if (!s.IsString()) bad("a secret is not a string");
      info.secrets.emplace_back(s.GetString(), s.GetStringLength());
    }
  }
  return info;
}

}  // namespace

AdapterClient::AdapterClient(std::shared_ptr<Connection> connection, AdapterInfo info)
    : connection_(std::move(connection)), info_(std::move(info)) {}

AdapterClient::~AdapterClient() { shutdown(); }

std::shared_ptr<AdapterClient> AdapterClient::start(AdapterOptions options) {
  const std::string rule = options.rule;
  auto connection = std::make_shared<Connection>(std::move(options));
  const auto deadline = connection->deadline();
  try {
    Reply r = connection->call(
        "initialize",
        [&](Writer& w) {
          w.Key("protocol_version");
          w.String(kProtocolVersion);
          w.Key("suite_version");
          w.String(kSuiteVersion);
          if (!rule.empty()) {
            w.Key("rule");
            w.String(rule.c_str());
          }
        },
        {}, deadline);
    AdapterInfo info = parse_info(*connection, *r.result);
    connection->mark_started();
    return std::shared_ptr<AdapterClient>(new AdapterClient(connection, std::move(info)));
  } catch (const ProtocolError&) {
    connection->shutdown();
    throw;
  } catch (const std::exception& e) {
    const std::string tail = connection->stderr_tail();
    connection->shutdown();
    throw ProtocolError(connection->description() + " refused initialize: " + e.what() + tail);
  }
}

std::unique_ptr<WorkspaceBackend> AdapterClient::make(const BackendOverrides* overrides) {
  Reply r = connection_->call("backend/new", [&](Writer& w) {
    if (overrides == nullptr) return;
    w.Key("overrides");
    w.StartObject();
    if (overrides->size) {
      w.Key("size");
      protocol::write_text(w, *overrides->size);
    }
    if (overrides->lifetime) {
      w.Key("lifetime_ms");
      w.Int64(overrides->lifetime->count());
    }
    if (!overrides->env.empty()) {
      w.Key("env");
      protocol::write_env(w, overrides->env);
    }
    if (overrides->api_key) {
      w.Key("api_key");
      w.String(overrides->api_key->data(),
               static_cast<rapidjson::SizeType>(overrides->api_key->size()));
    }
    if (overrides->ref) {
      w.Key("ref");
      protocol::write_ref(w, *overrides->ref);
    }
    w.EndObject();
  });
  return backend_from(connection_, "backend/new", r, info_.capabilities);
}

std::unique_ptr<WorkspaceBackend> AdapterClient::attach(const WorkspaceRef& ref) {
  if (!info_.can_attach) throw std::logic_error("the adapter cannot attach by ref");
  Reply r = connection_->call("backend/attach", [&](Writer& w) {
    w.Key("ref");
    protocol::write_ref(w, ref);
  });
  return backend_from(connection_, "backend/attach", r, info_.capabilities);
}

void AdapterClient::destroy_environment(const WorkspaceRef& ref) {
  connection_->call("environment/destroy", [&](Writer& w) {
    w.Key("ref");
    protocol::write_ref(w, ref);
  });
}

std::string AdapterClient::fault() const { return connection_->first_fault(); }

std::vector<std::string> AdapterClient::stderr_lines() const { return connection_->stderr_lines(); }

void AdapterClient::watch_stderr_for(const std::vector<std::string>& secrets) {
  connection_->watch_stderr_for(secrets);
}

bool AdapterClient::stderr_carried_a_secret() const {
  return connection_->stderr_carried_a_secret();
}

void AdapterClient::shutdown() { connection_->shutdown(); }

void AdapterClient::kill() { connection_->kill_now(); }

}  // namespace lizard::conformance
