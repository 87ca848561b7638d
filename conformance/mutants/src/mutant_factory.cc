#include "mutant_factory.h"

#include <mutex>
#include <stdexcept>

#include "lizard/conformance/lizard_factory.h"
#include "lizard/conformance/local_factory.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::conformance::mutants {

using workspace::CommandResult;
using workspace::FileEntry;

namespace {

// ---------------------------------------------------------------------------
// The wrapper.

class MutantSession;

class MutantPlatform : public PlatformControl {
 public:
  MutantPlatform(MutantSession& session, PlatformControl& inner)
      : session_(session), inner_(inner) {}
  std::vector<HttpRequestRecord> requests() const override { return inner_.requests(); }
  void clear_requests() override { inner_.clear_requests(); }
  void expire_all() override { inner_.expire_all(); }
  void add_fault(const FaultSpec& fault) override { inner_.add_fault(fault); }
  void clear_faults() override { inner_.clear_faults(); }
  std::chrono::milliseconds exec_limit() const override { return inner_.exec_limit(); }
  std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) override;
  std::vector<std::string> log_lines() const override { return inner_.log_lines(); }

 private:
  MutantSession& session_;
  PlatformControl& inner_;
};

class MutantSession : public BackendSession {
 public:
  MutantSession(std::unique_ptr<BackendSession> inner, const MutantSpec& spec)
      : inner_(std::move(inner)), spec_(spec) {
    traits_ = {inner_->capabilities(), inner_->deviations()};
    if (spec_.traits) spec_.traits(traits_);
    if (auto* p = inner_->platform()) platform_ = std::make_unique<MutantPlatform>(*this, *p);
  }

  Origin origin(bool attached, BackendOverrides fresh_overrides) {
    Origin o;
    o.attached = attached;
    o.platform = inner_->platform();
    o.secrets = inner_->secrets();
    o.endpoint = endpoint_of(*inner_);
    fresh_overrides.ref.reset();
    o.make_fresh = [this, fresh_overrides] { return raw_make_with(fresh_overrides); };
    return o;
  }

  // A backend of the base with the mutant's overrides applied (no decoration).
  std::unique_ptr<WorkspaceBackend> raw_make_with(BackendOverrides overrides) {
    if (!spec_.overrides && !overrides.ref && overrides.env.empty() && !overrides.size &&
        !overrides.lifetime && !overrides.api_key) {
      return inner_->make();
    }
    auto* p = inner_->platform();
    if (p == nullptr) throw std::logic_error("this mutant needs a platform view");
    if (spec_.overrides)
      spec_.overrides(overrides, origin_without_fresh(overrides.ref.has_value()));
    return p->make_with(overrides);
  }

  std::unique_ptr<WorkspaceBackend> decorate(std::unique_ptr<WorkspaceBackend> b, Origin o) {
    if (!b || !spec_.decorate) return b;
    return spec_.decorate(std::move(b), std::move(o));
  }

  std::unique_ptr<WorkspaceBackend> make() override {
    return decorate(raw_make_with({}), origin(false, {}));
  }
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref) override {
    std::unique_ptr<WorkspaceBackend> b;
    if (spec_.attach) {
      b = spec_.attach(*inner_, ref);
    } else if (spec_.overrides) {
      BackendOverrides o;
      o.ref = ref;
      b = raw_make_with(o);
    } else {
      b = inner_->attach(ref);
    }
    return decorate(std::move(b), origin(true, {}));
  }
  bool can_attach() const override { return inner_->can_attach(); }
  // Cleanup goes around the mutant: a broken destroy() must not leak environments.
  void destroy_environment(const WorkspaceRef& ref) override { inner_->destroy_environment(ref); }
  Capabilities capabilities() const override { return traits_.capabilities; }
  Deviations deviations() const override { return traits_.deviations; }
  std::vector<std::string> secrets() const override { return inner_->secrets(); }
  PlatformControl* platform() override { return platform_.get(); }

 private:
  Origin origin_without_fresh(bool attached) {
    Origin o;
    o.attached = attached;
    o.platform = inner_->platform();
    o.secrets = inner_->secrets();
    o.endpoint = endpoint_of(*inner_);
    return o;
  }

  std::unique_ptr<BackendSession> inner_;
  const MutantSpec& spec_;
  SessionTraits traits_;
  std::unique_ptr<MutantPlatform> platform_;
};

std::unique_ptr<WorkspaceBackend> MutantPlatform::make_with(const BackendOverrides& overrides) {
  return session_.decorate(session_.raw_make_with(overrides),
                           session_.origin(overrides.ref.has_value(), overrides));
}

class MutantFactory : public BackendFactory {
 public:
  MutantFactory(std::shared_ptr<BackendFactory> base, std::string name, MutantSpec spec)
      : base_(std::move(base)), name_(std::move(name)), spec_(std::move(spec)) {}
  std::string name() const override { return name_ + " (mutant of " + base_->name() + ")"; }
  std::string profile() const override { return base_->profile(); }
  std::unique_ptr<BackendSession> open(const RuleInfo& rule) override {
    return std::make_unique<MutantSession>(base_->open(rule), spec_);
  }
  std::vector<std::string> report_notes() const override { return base_->report_notes(); }

 private:
  std::shared_ptr<BackendFactory> base_;
  std::string name_;
  MutantSpec spec_;
};

}  // namespace

std::unique_ptr<BackendFactory> wrap(std::shared_ptr<BackendFactory> base, std::string name,
                                     MutantSpec spec) {
  return std::make_unique<MutantFactory>(std::move(base), std::move(name), std::move(spec));
}

std::shared_ptr<BackendFactory> local_base() { return make_local_factory(); }
std::shared_ptr<BackendFactory> lizard_base() { return make_lizard_mock_factory(); }

std::optional<Endpoint> endpoint_of(BackendSession& session) {
  const auto* lizard = dynamic_cast<const LizardMockSessionAccess*>(&session);
  if (lizard == nullptr) return std::nullopt;
  const auto& options = lizard->lizard_options();
  return Endpoint{options.api_url, options.api_key, options.project};
}

}  // namespace lizard::conformance::mutants
