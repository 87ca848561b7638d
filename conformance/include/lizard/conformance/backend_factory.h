// How the conformance suite gets backends: a BackendFactory per run, and a
// BackendSession per rule.
//
// A rule opens one session, makes the backends it needs from it, and closes
// it when it ends. Sessions isolate rules from each other: the reference
// factory starts one embedded mock of the Lizard API per session, so request
// journals, faults and the mock clock never mix between rules running in
// parallel. A third party usually needs only `make()`, `capabilities()` and
// `deviations()`:
//
//   class MySession : public lizard::conformance::BackendSession {
//    public:
//     std::unique_ptr<WorkspaceBackend> make() override { return std::make_unique<MyBackend>(); }
//     Capabilities capabilities() const override { return {Capability::kCommands}; }
//   };
//   class MyFactory : public lizard::conformance::BackendFactory {
//    public:
//     std::string name() const override { return "mine"; }
//     std::unique_ptr<BackendSession> open(const RuleInfo&) override {
//       return std::make_unique<MySession>();
//     }
//   };
//
// Thread safety: `BackendFactory::open` may be called from several threads at
// once (rules run in parallel). A session is used by one rule, but that rule
// may call `make`, `attach` and the PlatformControl from several threads at
// once (the concurrency rules do), so those must be thread-safe too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lizard/conformance/rules.h"
#include "lizard/workspace/backend.h"

namespace lizard::conformance {

using workspace::Capabilities;
using workspace::Capability;
using workspace::WorkspaceBackend;
using workspace::WorkspaceRef;

// Ways a backend knowingly differs from an ordinary POSIX environment. Each
// one turns the rules that cannot hold under it into a SKIP with the reason.
struct Deviations {
  // Commands run as uid 0, so `chmod 000` does not keep them (or the files
  // API, when it acts as the same user) out: fs.permission-denied is skipped.
  bool commands_run_as_root = false;
  // Shell strings cannot run (`/bin/sh -c` missing); rules that need one skip.
  bool no_posix_shell = false;
  // Not a deviation but a promise: commands see a file system of their own
  // (a sandbox), not the host's, so a rule may let a command empty `/tmp`
  // (cmd.command-cannot-break-the-backend). Leave it false unless that holds:
  // on a backend running commands on the host the rule would empty the host's /tmp.
  bool commands_have_own_filesystem = false;

  friend bool operator==(const Deviations&, const Deviations&) = default;
};

// The lizard profile's view of the platform (journal, faults, clock,
// backend settings): platform_control.h. Generic factories never need it.
class PlatformControl;

// The backends one rule works with. Destroying the session ends everything
// it started (the reference factory stops its mock here).
class BackendSession {
 public:
  virtual ~BackendSession() = default;

  // A backend that uses a fresh environment (created on first use, or
  // already existing but unused by any other backend of this session).
  virtual std::unique_ptr<WorkspaceBackend> make() = 0;
  // A backend for an existing environment, or nullptr when the backend
  // cannot attach by ref (rules that need it SKIP). Must not do I/O
  // beyond what the backend's own first operation does.
  virtual std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& /*ref*/) { return nullptr; }
  virtual bool can_attach() const { return false; }
  // Ends an environment by ref. The default attaches and calls destroy();
  // without attach support it does nothing. Must not throw for an
  // environment that is already gone.
  virtual void destroy_environment(const WorkspaceRef& ref);

  // What every backend of this session offers (a rule needing a capability
  // not listed here SKIPs; a listed capability that is missing FAILs).
  virtual Capabilities capabilities() const = 0;
  virtual Deviations deviations() const { return {}; }
  // Strings that must never reach a command's environment (the API key).
  virtual std::vector<std::string> secrets() const { return {}; }
  // nullptr when no view of the platform exists (see PlatformControl).
  virtual PlatformControl* platform() { return nullptr; }
};

class BackendFactory {
 public:
  virtual ~BackendFactory() = default;

  // Shown in reports, e.g. "lizard (embedded mock)".
  virtual std::string name() const = 0;
  // The profile whose rules apply in addition to the common ones: "lizard"
  // for the Lizard backend; empty for none.
  virtual std::string profile() const { return {}; }
  // Checks, before any rule, that sessions can be opened at all (the
  // platform reachable, credentials accepted, sandboxes isolable); throws
  // std::runtime_error with a sentence that says what to fix. The runner
  // stops there (exit 2) instead of failing every rule the same way.
  virtual void preflight() {}
  // A session for one rule. Thread-safe; may throw (the rule then FAILs with
  // the message).
  virtual std::unique_ptr<BackendSession> open(const RuleInfo& rule) = 0;
  // The process is about to end without destroying its sessions (an
  // interrupt, or a rule abandoned past its deadline): release at once what
  // would outlive it (the mock's state directories). Thread-safe.
  virtual void abandon() {}
  // Lines appended to the reports after the rule table (e.g. sandboxes
  // created and deleted, a cost estimate). Called once all rules ended.
  virtual std::vector<std::string> report_notes() const { return {}; }
  // Why no further rule may start, or "" (the default): a spending limit
  // of the factory is reached ("budget reached: 20 of 20 sandboxes"). The
  // runner asks before starting each rule; a rule that cannot start FAILs
  // with this reason and no session is opened for it. Thread-safe. (Added
  // for live budgets; factories without one need not override it.)
  virtual std::string exhausted_budget() const { return {}; }
};

}  // namespace lizard::conformance
