// Mutants of LizardSandboxBackend on the embedded mock, for the lizard
// profile (and the common rules only a platform view can prove: one
// environment under concurrent first use). Mutants that misuse the HTTP API
// send their requests with lizard::api::Client to the session's mock.
#include <atomic>
#include <mutex>
#include <thread>

#include "lizard/api/client.h"
#include "lizard/workspace/checks.h"
#include "mutant_support.h"

namespace lizard::conformance::mutants {

namespace {

using workspace::Argv;
using workspace::Command;
using workspace::CommandResult;
using workspace::FileEntry;
using workspace::RunOptions;
using workspace::Shell;

// Creates the sandbox on first use without a lock: every caller that finds
// none yet makes its own backend (and sandbox); the last one wins.
class RacyFirstUse : public ForwardingBackend {
 public:
  RacyFirstUse(std::unique_ptr<WorkspaceBackend> placeholder, Origin origin)
      : ForwardingBackend(std::shared_ptr<WorkspaceBackend>(std::move(placeholder))),
        origin_(std::move(origin)) {}
  // Neither may create the sandbox (they never block on I/O).
  std::optional<WorkspaceRef> ref() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return chosen_ ? chosen_->ref() : std::nullopt;
  }
  std::string working_dir() const override { return original()->working_dir(); }

 protected:
  std::shared_ptr<WorkspaceBackend> current() const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (chosen_) return chosen_;
    }
    // The check-then-act race, widened so concurrent callers all get in.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::shared_ptr<WorkspaceBackend> mine = origin_.make_fresh();
    std::lock_guard<std::mutex> lock(mutex_);
    chosen_ = mine;
    return mine;
  }

 private:
  Origin origin_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<WorkspaceBackend> chosen_;
};

// The constructor already creates the sandbox (an eager "connect").
class ConstructsEagerly : public ForwardingBackend {
 public:
  explicit ConstructsEagerly(std::unique_ptr<WorkspaceBackend> inner)
      : ForwardingBackend(std::move(inner)) {
    try {
      if (auto* f = ForwardingBackend::filesystem()) f->exists(working_dir());
    } catch (...) {
    }
  }
};

// An attached backend whose sandbox is unknown or gone gets a new one.
class ReplacesUnavailable : public RecoversFromUnavailable {
 public:
  ReplacesUnavailable(std::unique_ptr<WorkspaceBackend> inner, Origin origin)
      : RecoversFromUnavailable(std::shared_ptr<WorkspaceBackend>(std::move(inner))),
        origin_(std::move(origin)) {}

 protected:
  bool recover() override {
    std::shared_ptr<WorkspaceBackend> fresh = origin_.make_fresh();
    replace(fresh);
    return true;
  }

 private:
  Origin origin_;
};

// Extends the sandbox's lifetime before the first operation of an attached backend.
class RenewsOnAttach : public ForwardingBackend {
 public:
  RenewsOnAttach(std::unique_ptr<WorkspaceBackend> inner, const Endpoint& endpoint)
      : ForwardingBackend(std::move(inner)), endpoint_(endpoint) {}
  CommandResult run(const Command& c, const RunOptions& o) override {
    renew();
    return ForwardingBackend::run(c, o);
  }
  bool exists(const std::string& p) override {
    renew();
    return ForwardingBackend::exists(p);
  }
  std::string read_bytes(const std::string& p) override {
    renew();
    return ForwardingBackend::read_bytes(p);
  }

 private:
  void renew() {
    std::call_once(once_, [this] {
      const auto r = ref();
      if (!r) return;
      try {
        client_for(endpoint_).set_sandbox_timeout(r->id, 3600 * 1000);
      } catch (...) {
      }
    });
  }
  Endpoint endpoint_;
  std::once_flag once_;
};

// destroy() only forgets the sandbox: no delete is sent.
class DestroyWithoutDelete : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void destroy() override { destroyed_ = true; }
  CommandResult run(const Command& c, const RunOptions& o) override {
    check();
    return ForwardingBackend::run(c, o);
  }
  std::string read_bytes(const std::string& p) override {
    check();
    return ForwardingBackend::read_bytes(p);
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    check();
    ForwardingBackend::write_bytes(p, d);
  }
  bool exists(const std::string& p) override {
    check();
    return ForwardingBackend::exists(p);
  }

 private:
  void check() const {
    if (destroyed_) throw workspace::WorkspaceUnavailableError("the sandbox was destroyed");
  }
  std::atomic<bool> destroyed_{false};
};

// Every command runs as one plain exec request, taking what comes back
// (cut at the server's 512 KiB per stream, or at its exec limit) as the result.
// With `resend_after_drop`, an exec whose connection dropped is sent again.
class SingleExecRequest : public ForwardingBackend {
 public:
  SingleExecRequest(std::unique_ptr<WorkspaceBackend> inner, const Endpoint& endpoint,
                    bool resend_after_drop = false)
      : ForwardingBackend(std::move(inner)),
        endpoint_(endpoint),
        resend_after_drop_(resend_after_drop) {}
  CommandResult run(const Command& c, const RunOptions& o) override {
    workspace::validate_run(c, o);
    ForwardingBackend::exists(working_dir());  // makes sure the sandbox exists
    const auto r = ref();
    if (!r) throw workspace::WorkspaceUnavailableError("no sandbox");
    api::ExecRequest request;
    if (c.is_shell()) {
      request.cmd = c.script();
    } else {
      request.cmd = c.argv();
    }
    request.envs = o.env;
    request.workdir = working_dir();
    auto client = client_for(endpoint_);
    api::ExecResult result;
    try {
      result = client.exec(r->id, request);
    } catch (const workspace::WorkspaceTransientError&) {
      if (!resend_after_drop_) throw;
      result = client.exec(r->id, request);
    }
    return {result.exit_code, result.out, result.err};
  }

 private:
  Endpoint endpoint_;
  bool resend_after_drop_;
};

// Relies on what the exec API's fields do in the firecracker era: a run with
// env passes it as the exec's `envs`, or every run gives its working
// directory as the exec's `workdir` instead of entering it itself. The
// kubernetes era ignores both.
class TrustsExecFields : public ForwardingBackend {
 public:
  enum class Field { kEnvs, kWorkdir };
  TrustsExecFields(std::unique_ptr<WorkspaceBackend> inner, const Endpoint& endpoint, Field field)
      : ForwardingBackend(std::move(inner)), endpoint_(endpoint), field_(field) {}
  CommandResult run(const Command& c, const RunOptions& o) override {
    if (field_ == Field::kEnvs && o.env.empty()) return ForwardingBackend::run(c, o);
    workspace::validate_run(c, o);
    ForwardingBackend::exists(working_dir());  // makes sure the sandbox exists
    const auto r = ref();
    if (!r) throw workspace::WorkspaceUnavailableError("no sandbox");
    api::ExecRequest request;
    if (c.is_shell()) {
      request.cmd =
          field_ == Field::kEnvs ? "cd " + working_dir() + " || exit 1\n" + c.script() : c.script();
    } else {
      std::vector<std::string> argv = c.argv();
      if (field_ == Field::kEnvs) {
        argv.insert(argv.begin(), {"sh", "-c", "cd \"$0\" && exec \"$@\"", working_dir()});
      }
      request.cmd = argv;
    }
    if (field_ == Field::kEnvs) request.envs = o.env;
    if (field_ == Field::kWorkdir) request.workdir = working_dir();
    const auto result = client_for(endpoint_).exec(r->id, request);
    return {result.exit_code, result.out, result.err};
  }

 private:
  Endpoint endpoint_;
  Field field_;
};

// Uploads every write as base64 bytes through the files API, which the
// kubernetes era refuses for content that is not UTF-8.
class UploadsBinary : public ForwardingBackend {
 public:
  UploadsBinary(std::unique_ptr<WorkspaceBackend> inner, const Endpoint& endpoint)
      : ForwardingBackend(std::move(inner)), endpoint_(endpoint) {}
  void write_bytes(const std::string& p, const std::string& d) override {
    workspace::require_absolute_path(p);
    ForwardingBackend::exists(working_dir());
    const auto r = ref();
    if (!r) throw workspace::WorkspaceUnavailableError("no sandbox");
    client_for(endpoint_).write_file(r->id, p, d);
  }

 private:
  Endpoint endpoint_;
};

// File bytes travel through commands (base64 in argv, base64 on stdout).
class FilesThroughCommands : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::string read_bytes(const std::string& p) override {
    workspace::require_absolute_path(p);
    auto r = ForwardingBackend::run(Argv{{"base64", "-w0", "--", p}}, {});
    if (r.exit_code != 0) return ForwardingBackend::read_bytes(p);
    return decode(r.out);
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    workspace::require_absolute_path(p);
    auto r = ForwardingBackend::run(
        Argv{{"sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && printf %s \"$2\" | base64 -d > \"$1\"",
              "sh", p, encode(d)}},
        {});
    if (r.exit_code != 0) ForwardingBackend::write_bytes(p, d);
  }

 private:
  static constexpr const char* kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static std::string encode(const std::string& in) {
    std::string out;
    unsigned value = 0;
    int bits = -6;
    for (unsigned char c : in) {
      value = (value << 8) + c;
      bits += 8;
      while (bits >= 0) {
        out += kAlphabet[(value >> bits) & 0x3F];
        bits -= 6;
      }
    }
    if (bits > -6) out += kAlphabet[((value << 8) >> (bits + 8)) & 0x3F];
    while (out.size() % 4) out += '=';
    return out;
  }
  static std::string decode(const std::string& in) {
    const std::string alphabet = kAlphabet;
    std::string out;
    unsigned value = 0;
    int bits = -8;
    for (char c : in) {
      const auto pos = alphabet.find(c);
      if (pos == std::string::npos) break;
      value = (value << 6) + static_cast<unsigned>(pos);
      bits += 6;
      if (bits >= 0) {
        out += static_cast<char>((value >> bits) & 0xFF);
        bits -= 8;
      }
    }
    return out;
  }
};

// A backend that was used and then finds its sandbox gone makes a new one.
class ReplacesExpired : public RecoversFromUnavailable {
 public:
  ReplacesExpired(std::unique_ptr<WorkspaceBackend> inner, Origin origin)
      : RecoversFromUnavailable(std::shared_ptr<WorkspaceBackend>(std::move(inner))),
        origin_(std::move(origin)) {}

 protected:
  bool recover() override {
    if (!original()->ref()) return false;  // never created: nothing to replace
    replace(std::shared_ptr<WorkspaceBackend>(origin_.make_fresh()));
    return true;
  }

 private:
  Origin origin_;
};

// Runs every call through `edit`, which gets the forwarded call as a thunk.
class CallEditor : public ForwardingBackend {
 public:
  // Calls `call` and returns its result, or changes what happens.
  using Edit = std::function<void(const std::function<void()>& call)>;
  CallEditor(std::unique_ptr<WorkspaceBackend> inner, Edit edit)
      : ForwardingBackend(std::move(inner)), edit_(std::move(edit)) {}
  CommandResult run(const Command& c, const RunOptions& o) override {
    CommandResult r;
    edit_([&] { r = ForwardingBackend::run(c, o); });
    return r;
  }
  std::string read_bytes(const std::string& p) override {
    std::string r;
    edit_([&] { r = ForwardingBackend::read_bytes(p); });
    return r;
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    edit_([&] { ForwardingBackend::write_bytes(p, d); });
  }
  bool exists(const std::string& p) override {
    bool r = false;
    edit_([&] { r = ForwardingBackend::exists(p); });
    return r;
  }
  FileEntry stat(const std::string& p) override {
    FileEntry r;
    edit_([&] { r = ForwardingBackend::stat(p); });
    return r;
  }

 private:
  Edit edit_;
};

Decorator call_editor(CallEditor::Edit edit) {
  return [edit](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
    return std::make_unique<CallEditor>(std::move(b), edit);
  };
}

}  // namespace

void add_lizard_mutants(std::vector<Mutant>& out) {
  using workspace::WorkspaceAuthenticationError;
  using workspace::WorkspaceError;
  using workspace::WorkspaceNotSupportedError;
  using workspace::WorkspaceTransientError;

  out.push_back(lizard_mutant(
      "racy-first-use",
      "the sandbox is created on first use without a lock, so concurrent first uses each create "
      "one",
      {"env.concurrent-first-use", "lizard.one-create"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (origin.attached) return b;
        return std::make_unique<RacyFirstUse>(std::move(b), std::move(origin));
      }));
  out.push_back(lizard_mutant(
      "constructs-eagerly", "building a backend already creates its sandbox",
      {"lizard.no-request-at-construction"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
        return std::make_unique<ConstructsEagerly>(std::move(b));
      }));
  {
    MutantSpec spec;
    spec.overrides = [](BackendOverrides& o, const Origin&) { o.lifetime.reset(); };
    out.push_back(lizard_mutant(
        "ignores-lifetime", "the configured lifetime is ignored; every create asks for the default",
        {"lizard.create-body"}, spec));
  }
  out.push_back(lizard_mutant(
      "runs-in-tmp", "commands start in /tmp instead of /workspace", {"lizard.root-in-workspace"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
        class RunsInTmp : public ForwardingBackend {
         public:
          using ForwardingBackend::ForwardingBackend;
          CommandResult run(const Command& c, const RunOptions& o) override {
            if (c.is_shell())
              return ForwardingBackend::run(Shell{"cd /tmp || exit 1\n" + c.script()}, o);
            std::vector<std::string> items = {"sh", "-c", "cd /tmp && exec \"$@\"", "sh"};
            items.insert(items.end(), c.argv().begin(), c.argv().end());
            return ForwardingBackend::run(Argv{items}, o);
          }
        };
        return std::make_unique<RunsInTmp>(std::move(b));
      }));
  out.push_back(lizard_mutant(
      "replacement-for-unknown-ref",
      "an attached backend whose sandbox is unknown or gone creates a new sandbox instead",
      {"lizard.unknown-ref", "env.attach-destroyed-unavailable"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.attached) return b;
        return std::make_unique<ReplacesUnavailable>(std::move(b), std::move(origin));
      }));
  out.push_back(lizard_mutant(
      "renews-on-attach", "an attached backend extends the sandbox's lifetime on first use",
      {"lizard.no-renew-on-attach"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.attached || !origin.endpoint) return b;
        return std::make_unique<RenewsOnAttach>(std::move(b), *origin.endpoint);
      }));
  out.push_back(lizard_mutant(
      "destroys-on-drop-lizard", "the backend's destructor calls destroy(), deleting the sandbox",
      {"lizard.run-end-keeps-sandbox"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
        return std::make_unique<DestroysOnDrop>(std::move(b));
      }));
  out.push_back(lizard_mutant(
      "destroy-without-delete", "destroy() marks the backend unusable but sends no delete",
      {"lizard.destroy"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
        return std::make_unique<DestroyWithoutDelete>(std::move(b));
      }));
  out.push_back(lizard_mutant(
      "key-in-command-env", "every command gets LIZARD_API_KEY in its env (in the exec body)",
      {"lizard.key-stays-on-host", "cmd.env-not-inherited"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        const std::string key = origin.secrets.empty() ? "" : origin.secrets.front();
        class KeyInEnv : public ForwardingBackend {
         public:
          KeyInEnv(std::unique_ptr<WorkspaceBackend> inner, std::string key)
              : ForwardingBackend(std::move(inner)), key_(std::move(key)) {}
          CommandResult run(const Command& c, const RunOptions& o) override {
            RunOptions with_key = o;
            with_key.env["LIZARD_API_KEY"] = key_;
            return ForwardingBackend::run(c, with_key);
          }

         private:
          std::string key_;
        };
        return std::make_unique<KeyInEnv>(std::move(b), key);
      }));
  {
    MutantSpec spec;
    spec.overrides = [](BackendOverrides& o, const Origin& origin) {
      if (!origin.secrets.empty()) o.env["LIZARD_API_KEY"] = origin.secrets.front();
    };
    out.push_back(lizard_mutant("key-in-create-envs",
                                "the create request puts LIZARD_API_KEY into the sandbox's envs",
                                {"lizard.key-stays-on-host", "lizard.create-body"}, spec));
  }
  out.push_back(lizard_mutant(
      "single-exec-request",
      "a command is one plain exec request; output cut at the 512 KiB cap or at the exec limit "
      "is returned as a success",
      {"lizard.output-past-server-cap", "lizard.long-command"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.endpoint) return b;
        return std::make_unique<SingleExecRequest>(std::move(b), *origin.endpoint);
      }));
  out.push_back(lizard_mutant(
      "resends-exec-after-drop",
      "a command is one exec request, sent again when its connection drops (it runs twice)",
      {"lizard.no-rerun-after-drop"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.endpoint) return b;
        return std::make_unique<SingleExecRequest>(std::move(b), *origin.endpoint, true);
      }));
  out.push_back(lizard_mutant(
      "files-through-commands",
      "file bytes travel base64-encoded through commands, not the files API",
      {"lizard.binary-files"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
        return std::make_unique<FilesThroughCommands>(std::move(b));
      }));
  out.push_back(lizard_mutant(
      "env-through-exec-envs",
      "a run's env travels as the exec's `envs` field (which the kubernetes era ignores)",
      {"cmd.env-added", "cmd.env-exact"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.endpoint) return b;
        return std::make_unique<TrustsExecFields>(std::move(b), *origin.endpoint,
                                                  TrustsExecFields::Field::kEnvs);
      }));
  out.push_back(lizard_mutant(
      "workdir-through-exec",
      "commands are sent with the exec's `workdir` field and never enter the directory "
      "themselves (the kubernetes era runs them in /)",
      {"cmd.starts-in-working-dir", "lizard.root-in-workspace"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.endpoint) return b;
        return std::make_unique<TrustsExecFields>(std::move(b), *origin.endpoint,
                                                  TrustsExecFields::Field::kWorkdir);
      }));
  out.push_back(lizard_mutant(
      "binary-upload-base64",
      "every write uploads its bytes base64-encoded through the files API (the kubernetes era "
      "takes UTF-8 only)",
      {"lizard.binary-files", "fs.bytes-round-trip"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (!origin.endpoint) return b;
        return std::make_unique<UploadsBinary>(std::move(b), *origin.endpoint);
      }));
  out.push_back(lizard_mutant(
      "replaces-expired-sandbox", "a used backend whose sandbox expired silently creates a new one",
      {"lizard.expired-mid-session"},
      [](std::unique_ptr<WorkspaceBackend> b, Origin origin) -> std::unique_ptr<WorkspaceBackend> {
        if (origin.attached) return b;
        return std::make_unique<ReplacesExpired>(std::move(b), std::move(origin));
      }));
  out.push_back(lizard_mutant(
      "auth-error-vague", "a rejected key becomes a generic WorkspaceError(\"request failed\")",
      {"lizard.credentials-rejected"}, call_editor([](const std::function<void()>& call) {
        try {
          call();
        } catch (const WorkspaceAuthenticationError&) {
          throw WorkspaceError("request failed");
        }
      })));
  out.push_back(lizard_mutant(
      "retries-after-transient",
      "a call that failed transiently is sent again (up to 2 more times), even when it may "
      "have been admitted",
      {"lizard.transient-errors"}, call_editor([](const std::function<void()>& call) {
        for (int attempt = 0;; ++attempt) {
          try {
            call();
            return;
          } catch (const WorkspaceTransientError&) {
            if (attempt == 2) throw;
          }
        }
      })));
  out.push_back(
      lizard_mutant("transient-as-unavailable",
                    "5xx, 429 and dropped connections are reported as WorkspaceUnavailableError",
                    {"lizard.transient-errors"}, call_editor([](const std::function<void()>& call) {
                      try {
                        call();
                      } catch (const WorkspaceTransientError& e) {
                        throw workspace::WorkspaceUnavailableError(e.what());
                      }
                    })));
  out.push_back(lizard_mutant("swallows-501", "an operation answered 501 returns an empty success",
                              {"lizard.unsupported-501"},
                              call_editor([](const std::function<void()>& call) {
                                try {
                                  call();
                                } catch (const WorkspaceNotSupportedError&) {
                                }
                              })));
}

}  // namespace lizard::conformance::mutants
