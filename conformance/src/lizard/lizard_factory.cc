#include "lizard/conformance/lizard_factory.h"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "lizard/mock/mock_server.h"
#include "lizard_session.h"

namespace lizard::conformance {

namespace {

using internal::apply;
using internal::LizardSession;
using workspace::LizardOptions;
using workspace::LizardSandbox;
using workspace::LizardSandboxBackend;

class MockPlatform : public PlatformControl {
 public:
  MockPlatform(mock::MockServer& server, std::chrono::milliseconds exec_limit,
               const LizardOptions& options)
      : server_(server), exec_limit_(exec_limit), options_(options) {}

  std::vector<HttpRequestRecord> requests() const override {
    std::vector<HttpRequestRecord> out;
    for (const auto& e : server_.requests()) {
      out.push_back({e.method, e.path, e.query, e.status, e.body});
    }
    return out;
  }
  void clear_requests() override { server_.clear_journal(); }
  void expire_all() override { server_.advance_clock(std::chrono::hours(48)); }
  void add_fault(const FaultSpec& fault) override {
    mock::FaultRule rule;
    rule.method = fault.method;
    rule.path_pattern = fault.path_pattern;
    switch (fault.kind) {
      case FaultSpec::Kind::kRespond:
        rule.action = mock::FaultRule::Action::kRespond;
        break;
      case FaultSpec::Kind::kClose:
        rule.action = mock::FaultRule::Action::kClose;
        break;
      case FaultSpec::Kind::kCloseAfterHandling:
        rule.action = mock::FaultRule::Action::kCloseAfterHandling;
        break;
      case FaultSpec::Kind::kDelay:
        rule.action = mock::FaultRule::Action::kDelay;
        break;
    }
    rule.status = fault.status;
    rule.body = fault.body;
    rule.delay = fault.delay;
    rule.times = fault.times;
    server_.add_fault(rule);
  }
  void clear_faults() override { server_.clear_faults(); }
  std::chrono::milliseconds exec_limit() const override { return exec_limit_; }
  std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) override {
    return std::make_unique<LizardSandboxBackend>(apply(options_, overrides));
  }
  std::vector<std::string> log_lines() const override {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return log_;
  }
  void log(std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mutex_);
    log_.emplace_back(line);
  }

 private:
  mock::MockServer& server_;
  std::chrono::milliseconds exec_limit_;
  const LizardOptions& options_;
  mutable std::mutex log_mutex_;
  std::vector<std::string> log_;
};

mock::MockOptions mock_options(const RuleInfo& rule, const LizardMockFactoryOptions& factory) {
  mock::MockOptions options;
  options.era = factory.era;
  if (rule.wants_short_exec_limit) options.exec_limit = factory.short_exec_limit;
  return options;
}

// One embedded mock for one rule, with its PlatformControl view: the base of
// the in-process mock sessions, and the platform the command factory starts
// for adapters of the lizard profile.
class MockHost : public PlatformHost {
 public:
  MockHost(const RuleInfo& rule, const LizardMockFactoryOptions& factory)
      : server_(mock_options(rule, factory)),
        exec_limit_(rule.wants_short_exec_limit ? factory.short_exec_limit
                                                : mock::MockOptions{}.exec_limit) {
    options_.api_key = server_.api_key();
    options_.project = server_.project_id();
    options_.api_url = server_.url();
    platform_ = std::make_unique<MockPlatform>(server_, exec_limit_, options_);
    MockPlatform* platform = platform_.get();
    options_.log = [platform](std::string_view line) { platform->log(line); };
  }
  std::map<std::string, std::string> environment() const override {
    return {{"LIZARD_API_URL", options_.api_url},
            {"LIZARD_API_KEY", options_.api_key},
            {"LIZARD_PROJECT_ID", options_.project}};
  }
  std::vector<std::string> secrets() const override { return {options_.api_key}; }
  PlatformControl& control() override { return *platform_; }
  // The options a backend on this mock is built with (its log goes to the view).
  const LizardOptions& options() const { return options_; }

 private:
  mock::MockServer server_;
  std::chrono::milliseconds exec_limit_;
  LizardOptions options_;
  std::unique_ptr<MockPlatform> platform_;
};

class MockSession : public LizardSession, public LizardMockSessionAccess {
 public:
  MockSession(const RuleInfo& rule, const LizardMockFactoryOptions& factory)
      : host_(rule, factory) {
    options_ = host_.options();
  }
  void destroy_environment(const WorkspaceRef& ref) override {
    LizardSandbox(options_).destroy(ref);
  }
  PlatformControl* platform() override { return &host_.control(); }
  const LizardOptions& lizard_options() const override { return options_; }

 private:
  MockHost host_;
};

class MockFactory : public BackendFactory {
 public:
  explicit MockFactory(LizardMockFactoryOptions options) : options_(options) {}
  std::string name() const override {
    return options_.era == mock::Era::kFirecracker ? "lizard (embedded mock, firecracker era)"
                                                   : "lizard (embedded mock, kubernetes era)";
  }
  std::string profile() const override { return "lizard"; }
  void preflight() override {
    if (auto problem = mock::isolation_problem()) throw std::runtime_error(*problem);
  }
  std::unique_ptr<BackendSession> open(const RuleInfo& rule) override {
    return std::make_unique<MockSession>(rule, options_);
  }
  void abandon() override { mock::remove_state_directories(); }

 private:
  LizardMockFactoryOptions options_;
};

class MockProvider : public PlatformProvider {
 public:
  explicit MockProvider(LizardMockFactoryOptions options) : options_(options) {}
  std::string name() const override {
    return options_.era == mock::Era::kFirecracker ? "embedded mock, firecracker era"
                                                   : "embedded mock, kubernetes era";
  }
  void preflight() override {
    if (auto problem = mock::isolation_problem()) throw std::runtime_error(*problem);
  }
  std::unique_ptr<PlatformHost> open(const RuleInfo& rule) override {
    return std::make_unique<MockHost>(rule, options_);
  }
  void abandon() override { mock::remove_state_directories(); }

 private:
  LizardMockFactoryOptions options_;
};

// What an adapter of an existing endpoint can offer of a platform view:
// backends with overrides. The journal, faults and clock live with whoever
// started the platform (the runner).
class EndpointPlatform : public PlatformControl {
 public:
  explicit EndpointPlatform(const LizardOptions& options) : options_(options) {}
  unsigned facilities() const override { return kPlatformBackends; }
  std::vector<HttpRequestRecord> requests() const override { no_view(); }
  void clear_requests() override { no_view(); }
  void expire_all() override { no_view(); }
  void add_fault(const FaultSpec&) override { no_view(); }
  void clear_faults() override { no_view(); }
  std::chrono::milliseconds exec_limit() const override { no_view(); }
  std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) override {
    return std::make_unique<LizardSandboxBackend>(apply(options_, overrides));
  }

 private:
  [[noreturn]] static void no_view() {
    throw std::logic_error(
        "an endpoint session has no view of the platform's traffic, faults or clock");
  }
  const LizardOptions& options_;
};

class EndpointSession : public LizardSession, public LizardMockSessionAccess {
 public:
  explicit EndpointSession(LizardOptions options) {
    options_ = std::move(options);
    platform_ = std::make_unique<EndpointPlatform>(options_);
  }
  void destroy_environment(const WorkspaceRef& ref) override {
    LizardSandbox(options_).destroy(ref);
  }
  PlatformControl* platform() override { return platform_.get(); }
  const LizardOptions& lizard_options() const override { return options_; }

 private:
  std::unique_ptr<EndpointPlatform> platform_;
};

class EndpointFactory : public BackendFactory {
 public:
  explicit EndpointFactory(LizardOptions base) : base_(std::move(base)) {}
  std::string name() const override { return "lizard (" + base_.api_url + ")"; }
  std::string profile() const override { return "lizard"; }
  std::unique_ptr<BackendSession> open(const RuleInfo&) override {
    return std::make_unique<EndpointSession>(base_);
  }

 private:
  LizardOptions base_;
};

std::mutex g_endpoint_mutex;
std::optional<LizardOptions> g_endpoint;

}  // namespace

std::unique_ptr<BackendFactory> make_lizard_mock_factory(LizardMockFactoryOptions options) {
  {
    std::lock_guard<std::mutex> lock(g_endpoint_mutex);
    if (g_endpoint) return make_lizard_endpoint_factory(*g_endpoint);
  }
  return std::make_unique<MockFactory>(options);
}

std::shared_ptr<PlatformProvider> make_mock_platform_provider(LizardMockFactoryOptions options) {
  return std::make_shared<MockProvider>(options);
}

std::unique_ptr<BackendFactory> make_lizard_endpoint_factory(workspace::LizardOptions base) {
  return std::make_unique<EndpointFactory>(std::move(base));
}

void use_endpoint_for_mock_factories(workspace::LizardOptions endpoint) {
  std::lock_guard<std::mutex> lock(g_endpoint_mutex);
  g_endpoint = std::move(endpoint);
}

}  // namespace lizard::conformance
