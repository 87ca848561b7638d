// How mutants are built: a factory whose sessions are the base factory's
// sessions, with every backend (made, attached, or made by the platform view
// with overrides) passed through a decorator that knows where it came from.
// Internal to lizard_conformance_mutants.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/forwarding_backend.h"
#include "lizard/conformance/mutants.h"
#include "lizard/conformance/platform_control.h"

namespace lizard::conformance::mutants {

// The endpoint of the embedded mock a lizard session talks to, for mutants
// that send requests of their own (a lifetime renewal, a plain exec).
struct Endpoint {
  std::string api_url;
  std::string api_key;
  std::string project;
};

// Where a backend came from, handed to the decorator.
struct Origin {
  bool attached = false;  // built from a ref (attach or overrides.ref)
  // Makes another backend like this one but with a fresh environment (the
  // session's make(), or make_with() of the same overrides minus the ref).
  std::function<std::unique_ptr<WorkspaceBackend>()> make_fresh;
  // The base session's view of the platform (not decorated); may be null.
  PlatformControl* platform = nullptr;
  std::vector<std::string> secrets;
  std::optional<Endpoint> endpoint;  // lizard base only
};

using Decorator =
    std::function<std::unique_ptr<WorkspaceBackend>(std::unique_ptr<WorkspaceBackend>, Origin)>;

struct MutantSpec {
  Decorator decorate;  // empty: backends unchanged
  // Changes the session's declared capabilities and deviations.
  std::function<void(SessionTraits&)> traits;
  // Changes the overrides of every backend the session makes (make() goes
  // through make_with() when this is set, so it needs a platform view).
  std::function<void(BackendOverrides&, const Origin&)> overrides;
  // Replaces attach(ref) (e.g. with a fresh environment); empty: the base's.
  std::function<std::unique_ptr<WorkspaceBackend>(BackendSession&, const WorkspaceRef&)> attach;
};

std::unique_ptr<BackendFactory> wrap(std::shared_ptr<BackendFactory> base, std::string name,
                                     MutantSpec spec);

// The base factories: LocalWorkspaceBackend, and LizardSandboxBackend on one
// embedded mock per session (make_lizard_mock_factory).
std::shared_ptr<BackendFactory> local_base();
std::shared_ptr<BackendFactory> lizard_base();
// The endpoint of a lizard_base() session; empty for other sessions.
std::optional<Endpoint> endpoint_of(BackendSession& session);

using workspace::Command;
using workspace::CommandResult;
using workspace::FileEntry;
using workspace::RunOptions;

// Ends the environment when the backend object goes away (used by lizard too).
class DestroysOnDrop : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  ~DestroysOnDrop() override {
    try {
      inner().destroy();
    } catch (...) {
    }
  }
};

// Retries an operation once after WorkspaceUnavailableError when recover()
// says it repaired something (used by lizard too).
class RecoversFromUnavailable : public ForwardingBackend {
 public:
  explicit RecoversFromUnavailable(std::shared_ptr<WorkspaceBackend> inner)
      : ForwardingBackend(std::move(inner)) {}

  CommandResult run(const Command& c, const RunOptions& o) override {
    return guard([&] { return ForwardingBackend::run(c, o); });
  }
  std::string read_bytes(const std::string& p) override {
    return guard([&] { return ForwardingBackend::read_bytes(p); });
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    guard([&] {
      ForwardingBackend::write_bytes(p, d);
      return 0;
    });
  }
  FileEntry stat(const std::string& p) override {
    return guard([&] { return ForwardingBackend::stat(p); });
  }
  std::vector<FileEntry> list_dir(const std::string& p) override {
    return guard([&] { return ForwardingBackend::list_dir(p); });
  }
  bool exists(const std::string& p) override {
    return guard([&] { return ForwardingBackend::exists(p); });
  }

 protected:
  // Repairs the environment after it was found unavailable; true to retry.
  virtual bool recover() = 0;
  std::shared_ptr<WorkspaceBackend> current() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return replacement_ ? replacement_ : original();
  }
  void replace(std::shared_ptr<WorkspaceBackend> b) {
    std::lock_guard<std::mutex> lock(mutex_);
    replacement_ = std::move(b);
  }

 private:
  template <typename F>
  auto guard(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const workspace::WorkspaceUnavailableError&) {
      if (!recover()) throw;
    }
    return f();
  }

  mutable std::mutex mutex_;
  std::shared_ptr<WorkspaceBackend> replacement_;
};

// Catalogue part of lizard_mutants.cc (the others are in mutant_support.h).
void add_lizard_mutants(std::vector<Mutant>& out);

}  // namespace lizard::conformance::mutants
