#include "lizard/conformance/command_factory.h"

#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>

namespace lizard::conformance {

namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) text += (text.empty() ? "" : " ") + a;
  return text;
}

// The platform's view, with the two members that concern backends answered
// by the adapter: make_with() is backend/new with overrides, and the log
// lines are what the adapter wrote to stderr.
class CommandPlatform : public PlatformControl {
 public:
  CommandPlatform(PlatformHost& host, std::shared_ptr<AdapterClient> client)
      : host_(host), client_(std::move(client)) {}
  std::vector<HttpRequestRecord> requests() const override { return host_.control().requests(); }
  void clear_requests() override { host_.control().clear_requests(); }
  void expire_all() override { host_.control().expire_all(); }
  void add_fault(const FaultSpec& fault) override { host_.control().add_fault(fault); }
  void clear_faults() override { host_.control().clear_faults(); }
  std::chrono::milliseconds exec_limit() const override { return host_.control().exec_limit(); }
  std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) override {
    return client_->make(&overrides);
  }
  std::vector<std::string> log_lines() const override { return client_->stderr_lines(); }
  bool log_carried_a_secret() const override { return client_->stderr_carried_a_secret(); }

 private:
  PlatformHost& host_;
  std::shared_ptr<AdapterClient> client_;
};

class CommandSession : public BackendSession {
 public:
  CommandSession(std::unique_ptr<PlatformHost> host, std::shared_ptr<AdapterClient> client)
      : host_(std::move(host)), client_(std::move(client)) {
    if (host_) platform_ = std::make_unique<CommandPlatform>(*host_, client_);
  }
  // Ends the adapter, then its platform. A protocol fault during the session
  // fails the rule here, whatever the rule's own checks concluded: an
  // exception a rule accepted (a crash during a call the rule expects to
  // fail) must not pass for the contract's behaviour.
  ~CommandSession() override {
    client_->shutdown();
    const std::string fault = client_->fault();
    platform_.reset();
    host_.reset();
    if (!fault.empty()) ADD_FAILURE() << "protocol fault: " << fault;
  }

  std::unique_ptr<WorkspaceBackend> make() override { return client_->make(); }
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref) override {
    if (!client_->info().can_attach) return nullptr;
    return client_->attach(ref);
  }
  bool can_attach() const override { return client_->info().can_attach; }
  void destroy_environment(const WorkspaceRef& ref) override { client_->destroy_environment(ref); }
  Capabilities capabilities() const override { return client_->info().capabilities; }
  Deviations deviations() const override { return client_->info().deviations; }
  std::vector<std::string> secrets() const override {
    std::vector<std::string> all = client_->info().secrets;
    if (host_) {
      for (auto& s : host_->secrets()) all.push_back(std::move(s));
    }
    return all;
  }
  PlatformControl* platform() override { return platform_.get(); }

 private:
  std::unique_ptr<PlatformHost> host_;
  std::shared_ptr<AdapterClient> client_;
  std::unique_ptr<CommandPlatform> platform_;
};

class CommandFactory : public BackendFactory {
 public:
  explicit CommandFactory(CommandFactoryOptions options) : options_(std::move(options)) {}

  std::string name() const override {
    const std::string command = "`" + joined(options_.adapter.argv) + "`";
    const AdapterInfo* info = probe();
    if (info == nullptr || info->name.empty()) return "the adapter " + command;
    return info->name + " via " + command;
  }
  std::string profile() const override {
    const AdapterInfo* info = probe();
    return info ? info->profile : "";
  }
  void preflight() override {
    if (probe() == nullptr) throw std::runtime_error(probe_error_);
    if (auto* provider = provider_for(probe()->profile)) provider->preflight();
  }
  std::unique_ptr<BackendSession> open(const RuleInfo& rule) override {
    const AdapterInfo* info = probe();
    if (info == nullptr) throw std::runtime_error(probe_error_);
    std::unique_ptr<PlatformHost> host;
    if (auto* provider = provider_for(info->profile)) host = provider->open(rule);
    AdapterOptions options = options_.adapter;
    options.rule = std::string(rule.id);
    if (host) {
      options.env = host->environment();
      options.stderr_secrets = host->secrets();
    }
    auto client = AdapterClient::start(std::move(options));
    client->watch_stderr_for(client->info().secrets);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      live_.push_back(client);
      std::erase_if(live_, [](const auto& weak) { return weak.expired(); });
    }
    if (client->info().profile != info->profile) {
      client->shutdown();
      throw std::runtime_error("the adapter answered profile '" + client->info().profile +
                               "' but '" + info->profile + "' at the start of the run");
    }
    // What a backend offers is one property of the backend, not of a rule:
    // an adapter (told the rule's ID) that offered less for one rule would
    // turn its FAIL into a SKIP.
    const AdapterInfo& now = client->info();
    const auto& was = *info;
    if (!(now.capabilities == was.capabilities) || !(now.deviations == was.deviations) ||
        now.can_attach != was.can_attach) {
      client->shutdown();
      throw std::runtime_error(
          "the adapter answered other capabilities, deviations or can_attach for this rule than "
          "at the start of the run (they are one property of the backend)");
    }
    return std::make_unique<CommandSession>(std::move(host), std::move(client));
  }
  void abandon() override {
    std::vector<std::shared_ptr<AdapterClient>> live;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& weak : live_) {
        if (auto client = weak.lock()) live.push_back(std::move(client));
      }
    }
    for (auto& client : live) client->kill();
    for (auto& [profile, provider] : options_.platforms) provider->abandon();
  }
  std::vector<std::string> report_notes() const override {
    std::vector<std::string> notes = {"adapter: `" + joined(options_.adapter.argv) +
                                      "`, backend protocol version " + kProtocolVersion};
    const AdapterInfo* info = probe();
    if (info != nullptr) {
      if (auto* provider = provider_for(info->profile)) {
        notes.push_back("platform for the " + info->profile + " profile: " + provider->name());
      }
    }
    return notes;
  }

 private:
  PlatformProvider* provider_for(const std::string& profile) const {
    auto it = options_.platforms.find(profile);
    return it == options_.platforms.end() ? nullptr : it->second.get();
  }

  // The adapter's answer to initialize, learned once from an adapter started
  // without a platform; nullptr (with probe_error_) when that failed.
  const AdapterInfo* probe() const {
    std::lock_guard<std::mutex> lock(probe_mutex_);
    if (!probed_) {
      probed_ = true;
      try {
        AdapterOptions options = options_.adapter;
        auto client = AdapterClient::start(std::move(options));
        info_ = client->info();
        client->shutdown();
      } catch (const std::exception& e) {
        probe_error_ = e.what();
      }
    }
    return info_ ? &*info_ : nullptr;
  }

  CommandFactoryOptions options_;
  mutable std::mutex probe_mutex_;
  mutable bool probed_ = false;
  mutable std::optional<AdapterInfo> info_;
  mutable std::string probe_error_;
  std::mutex mutex_;
  std::vector<std::weak_ptr<AdapterClient>> live_;
};

}  // namespace

std::unique_ptr<BackendFactory> make_command_factory(CommandFactoryOptions options) {
  if (options.adapter.argv.empty()) throw std::invalid_argument("no adapter program given");
  return std::make_unique<CommandFactory>(std::move(options));
}

}  // namespace lizard::conformance
