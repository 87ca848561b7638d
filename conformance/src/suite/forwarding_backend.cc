#include "lizard/conformance/forwarding_backend.h"

#include "lizard/conformance/platform_control.h"

#include <stdexcept>

namespace lizard::conformance {

using workspace::CommandResult;
using workspace::FileEntry;

void BackendSession::destroy_environment(const WorkspaceRef& ref) {
  if (!can_attach()) return;
  auto backend = attach(ref);
  if (backend) backend->destroy();
}

ForwardingBackend::ForwardingBackend(std::shared_ptr<WorkspaceBackend> inner)
    : inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("ForwardingBackend needs a backend");
}

workspace::SupportsCommands* ForwardingBackend::commands() {
  return inner_->commands() ? this : nullptr;
}
workspace::SupportsFilesystem* ForwardingBackend::filesystem() {
  return inner_->filesystem() ? this : nullptr;
}
workspace::SupportsRealpath* ForwardingBackend::realpath_support() {
  return inner_->realpath_support() ? this : nullptr;
}

namespace {

template <typename T>
T& require(T* capability, const char* name) {
  if (capability == nullptr) {
    throw std::logic_error(std::string("the wrapped backend does not offer ") + name);
  }
  return *capability;
}

}  // namespace

CommandResult ForwardingBackend::run(const workspace::Command& command,
                                     const workspace::RunOptions& options) {
  return require(current()->commands(), "commands").run(command, options);
}
std::string ForwardingBackend::read_bytes(const std::string& path) {
  return require(current()->filesystem(), "a filesystem").read_bytes(path);
}
void ForwardingBackend::write_bytes(const std::string& path, const std::string& data) {
  require(current()->filesystem(), "a filesystem").write_bytes(path, data);
}
FileEntry ForwardingBackend::stat(const std::string& path) {
  return require(current()->filesystem(), "a filesystem").stat(path);
}
std::vector<FileEntry> ForwardingBackend::list_dir(const std::string& path) {
  return require(current()->filesystem(), "a filesystem").list_dir(path);
}
void ForwardingBackend::make_dir(const std::string& path) {
  require(current()->filesystem(), "a filesystem").make_dir(path);
}
void ForwardingBackend::remove(const std::string& path) {
  require(current()->filesystem(), "a filesystem").remove(path);
}
bool ForwardingBackend::exists(const std::string& path) {
  return require(current()->filesystem(), "a filesystem").exists(path);
}
std::string ForwardingBackend::realpath(const std::string& path) {
  return require(current()->realpath_support(), "realpath").realpath(path);
}

namespace {

class DecoratedPlatform : public PlatformControl {
 public:
  DecoratedPlatform(PlatformControl& inner, BackendDecorator decorate)
      : inner_(inner), decorate_(std::move(decorate)) {}
  std::vector<HttpRequestRecord> requests() const override { return inner_.requests(); }
  void clear_requests() override { inner_.clear_requests(); }
  void expire_all() override { inner_.expire_all(); }
  void add_fault(const FaultSpec& fault) override { inner_.add_fault(fault); }
  void clear_faults() override { inner_.clear_faults(); }
  std::chrono::milliseconds exec_limit() const override { return inner_.exec_limit(); }
  std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) override {
    return decorate_(inner_.make_with(overrides));
  }
  std::vector<std::string> log_lines() const override { return inner_.log_lines(); }
  bool log_carried_a_secret() const override { return inner_.log_carried_a_secret(); }

 private:
  PlatformControl& inner_;
  BackendDecorator decorate_;
};

class DecoratedSession : public BackendSession {
 public:
  DecoratedSession(std::unique_ptr<BackendSession> inner, BackendDecorator decorate,
                   SessionTraits traits)
      : inner_(std::move(inner)), decorate_(std::move(decorate)), traits_(traits) {
    if (auto* p = inner_->platform())
      platform_ = std::make_unique<DecoratedPlatform>(*p, decorate_);
  }
  std::unique_ptr<WorkspaceBackend> make() override { return decorate_(inner_->make()); }
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref) override {
    auto b = inner_->attach(ref);
    return b ? decorate_(std::move(b)) : nullptr;
  }
  bool can_attach() const override { return inner_->can_attach(); }
  // Cleanup goes around the decoration: a broken destroy() must not leak environments.
  void destroy_environment(const WorkspaceRef& ref) override { inner_->destroy_environment(ref); }
  Capabilities capabilities() const override { return traits_.capabilities; }
  Deviations deviations() const override { return traits_.deviations; }
  std::vector<std::string> secrets() const override { return inner_->secrets(); }
  PlatformControl* platform() override { return platform_.get(); }

 private:
  std::unique_ptr<BackendSession> inner_;
  BackendDecorator decorate_;
  SessionTraits traits_;
  std::unique_ptr<DecoratedPlatform> platform_;
};

class DecoratedFactory : public BackendFactory {
 public:
  DecoratedFactory(std::shared_ptr<BackendFactory> inner, std::string name,
                   BackendDecorator decorate, std::function<void(SessionTraits&)> mutate)
      : inner_(std::move(inner)),
        name_(std::move(name)),
        decorate_(std::move(decorate)),
        mutate_(std::move(mutate)) {}
  std::string name() const override { return name_; }
  std::string profile() const override { return inner_->profile(); }
  std::unique_ptr<BackendSession> open(const RuleInfo& rule) override {
    auto session = inner_->open(rule);
    SessionTraits traits{session->capabilities(), session->deviations()};
    if (mutate_) mutate_(traits);
    return std::make_unique<DecoratedSession>(std::move(session), decorate_, traits);
  }
  std::vector<std::string> report_notes() const override { return inner_->report_notes(); }

 private:
  std::shared_ptr<BackendFactory> inner_;
  std::string name_;
  BackendDecorator decorate_;
  std::function<void(SessionTraits&)> mutate_;
};

}  // namespace

std::unique_ptr<BackendFactory> decorate_factory(std::shared_ptr<BackendFactory> inner,
                                                 std::string name, BackendDecorator decorate,
                                                 std::function<void(SessionTraits&)> mutate) {
  return std::make_unique<DecoratedFactory>(std::move(inner), std::move(name), std::move(decorate),
                                            std::move(mutate));
}

}  // namespace lizard::conformance
