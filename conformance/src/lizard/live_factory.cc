// The live factory: LizardSandboxBackend against a real Lizard API (or the
// standalone mock, through the same path). Before any rule, a preflight
// checks the variables, the key, the project and one probe create; every
// create goes through the ledger's budget; sessions offer the part of the
// platform view a client can have (PlatformControl::facilities()).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <random>
#include <sstream>

#include "live_ledger.h"
#include "live_preflight.h"
#include "lizard/conformance/forwarding_backend.h"
#include "lizard/conformance/lizard_factory.h"
#include "lizard_session.h"

namespace lizard::conformance {

namespace {

using internal::apply;
using internal::LiveLedger;
using workspace::LizardOptions;
using workspace::LizardSandbox;
using workspace::LizardSandboxBackend;

// The API's longest exec (timeoutMs accepts 1000..600000).
constexpr std::chrono::milliseconds kApiExecLimit{600000};

// The requests the session's backends sent, from their log lines
// ("METHOD /path -> STATUS N ms"): method, path and status; no body or
// query (a client's log never holds them). Thread-safe.
class LiveJournal {
 public:
  void record(std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.emplace_back(line);
    std::istringstream in{std::string(line)};
    std::string method, path, arrow, status;
    in >> method >> path >> arrow >> status;
    const bool request =
        !method.empty() && path.rfind('/', 0) == 0 && arrow == "->" &&
        std::all_of(method.begin(), method.end(), [](unsigned char c) { return std::isupper(c); });
    if (!request) return;
    HttpRequestRecord r;
    r.method = method;
    r.path = path;
    r.status = std::isdigit(static_cast<unsigned char>(status.empty() ? 'x' : status[0]))
                   ? std::atoi(status.c_str())
                   : 0;  // a transport failure
    requests_.push_back(std::move(r));
  }
  std::vector<HttpRequestRecord> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.clear();
  }
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<HttpRequestRecord> requests_;
  std::vector<std::string> lines_;
};

// A backend whose first create is counted by the ledger, and refused once
// the budget is spent. Building it, ref() and working_dir() do no I/O and
// count nothing; a backend with a ref (attached) never creates. After each
// operation, a sandbox the create made is entered in the ledger.
class BudgetedBackend : public ForwardingBackend {
 public:
  BudgetedBackend(std::unique_ptr<WorkspaceBackend> inner, std::shared_ptr<LiveLedger> ledger)
      : ForwardingBackend(std::move(inner)), ledger_(std::move(ledger)) {}

  workspace::CommandResult run(const workspace::Command& command,
                               const workspace::RunOptions& options) override {
    return counted([&] { return ForwardingBackend::run(command, options); });
  }
  std::string read_bytes(const std::string& path) override {
    return counted([&] { return ForwardingBackend::read_bytes(path); });
  }
  void write_bytes(const std::string& path, const std::string& data) override {
    counted([&] { ForwardingBackend::write_bytes(path, data); });
  }
  workspace::FileEntry stat(const std::string& path) override {
    return counted([&] { return ForwardingBackend::stat(path); });
  }
  std::vector<workspace::FileEntry> list_dir(const std::string& path) override {
    return counted([&] { return ForwardingBackend::list_dir(path); });
  }
  void make_dir(const std::string& path) override {
    counted([&] { ForwardingBackend::make_dir(path); });
  }
  void remove(const std::string& path) override {
    counted([&] { ForwardingBackend::remove(path); });
  }
  bool exists(const std::string& path) override {
    return counted([&] { return ForwardingBackend::exists(path); });
  }
  std::string realpath(const std::string& path) override {
    return counted([&] { return ForwardingBackend::realpath(path); });
  }

 private:
  // Reserves a create before the first operation of a backend without a
  // sandbox (BudgetReached past the budget), and enters the sandbox once
  // one exists, whether the operation returned or threw.
  template <typename Operation>
  auto counted(Operation&& operation) -> decltype(operation()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!since_ && !original()->ref()) since_ = ledger_->reserve();
    }
    struct Enter {
      BudgetedBackend* self;
      ~Enter() { self->enter(); }
    } enter{this};
    return operation();
  }
  void enter() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!since_ || entered_) return;
    if (auto ref = original()->ref()) {
      ledger_->created(ref->to_string(), *since_);
      entered_ = true;
    }
  }

  std::shared_ptr<LiveLedger> ledger_;
  std::mutex mutex_;
  std::optional<LiveLedger::Clock::time_point> since_;
  bool entered_ = false;
};

// A live session's platform view: backends with overrides (budgeted like
// the session's own) and the journal of its backends' requests.
class LivePlatform : public PlatformControl {
 public:
  LivePlatform(const LizardOptions& options, std::shared_ptr<LiveJournal> journal,
               std::shared_ptr<LiveLedger> ledger)
      : options_(options), journal_(std::move(journal)), ledger_(std::move(ledger)) {}
  unsigned facilities() const override { return kPlatformBackends | kPlatformJournal; }
  std::vector<HttpRequestRecord> requests() const override { return journal_->requests(); }
  void clear_requests() override { journal_->clear(); }
  void expire_all() override { no_facility("the platform's clock"); }
  void add_fault(const FaultSpec&) override { no_facility("fault injection"); }
  void clear_faults() override { no_facility("fault injection"); }
  std::chrono::milliseconds exec_limit() const override { return kApiExecLimit; }
  std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) override {
    auto backend = std::make_unique<LizardSandboxBackend>(apply(options_, overrides));
    if (overrides.ref) return backend;
    return std::make_unique<BudgetedBackend>(std::move(backend), ledger_);
  }
  std::vector<std::string> log_lines() const override { return journal_->lines(); }

 private:
  [[noreturn]] static void no_facility(const std::string& what) {
    throw std::logic_error("a live session offers no " + what);
  }
  const LizardOptions& options_;
  std::shared_ptr<LiveJournal> journal_;
  std::shared_ptr<LiveLedger> ledger_;
};

class LiveSession : public internal::LizardSession {
 public:
  LiveSession(LizardOptions options, std::shared_ptr<LiveLedger> ledger)
      : journal_(std::make_shared<LiveJournal>()), ledger_(std::move(ledger)) {
    options_ = std::move(options);
    auto journal = journal_;
    options_.log = [journal](std::string_view line) { journal->record(line); };
    platform_ = std::make_unique<LivePlatform>(options_, journal_, ledger_);
  }
  std::unique_ptr<WorkspaceBackend> make() override {
    return std::make_unique<BudgetedBackend>(internal::LizardSession::make(), ledger_);
  }
  void destroy_environment(const WorkspaceRef& ref) override {
    bool ok = true;
    try {
      LizardSandbox(options_).destroy(ref);
    } catch (...) {
      ok = false;
    }
    ledger_->deleted(ref.to_string(), ok);
  }
  PlatformControl* platform() override { return platform_.get(); }

 private:
  std::shared_ptr<LiveJournal> journal_;
  std::shared_ptr<LiveLedger> ledger_;
  std::unique_ptr<LivePlatform> platform_;
};

class LiveFactory : public BackendFactory {
 public:
  explicit LiveFactory(LizardLiveFactoryOptions options)
      : options_(std::move(options)),
        ledger_(std::make_shared<LiveLedger>(
            internal::LiveBudget{options_.max_sandboxes, options_.max_sandbox_seconds})) {
    if (options_.run_id.empty()) {
      std::random_device rd;
      std::ostringstream id;
      id << "lc-" << std::hex << rd() << rd();
      options_.run_id = id.str();
    }
  }
  std::string name() const override { return "lizard (live API)"; }
  std::string profile() const override { return "lizard"; }
  void preflight() override {
    // Said first, on stderr: a run killed before its report still named the
    // tag its sandboxes carry (live/README.md, "Cleanup").
    std::cerr << "live run " << options_.run_id << ": sandboxes tagged " << internal::kRunTag << "="
              << options_.run_id << "; if this run is killed, `scripts/sweep-live --run "
              << options_.run_id << " --older-than 0` deletes them\n";
    internal::live_preflight(options_, *ledger_);
  }
  std::unique_ptr<BackendSession> open(const RuleInfo& rule) override {
    LizardOptions options = options_.base;
    options.size = options_.size;
    options.lifetime = options_.lifetime;
    // Tags, not metadata alone: platforms that drop metadata keep them in a
    // file inside the sandbox, where lizard-sweep finds them.
    options.tags[internal::kRunTag] = options_.run_id;
    options.tags[internal::kRuleTag] = std::string(rule.id);
    return std::make_unique<LiveSession>(options, ledger_);
  }
  std::string exhausted_budget() const override { return ledger_->exhausted(); }
  std::vector<std::string> report_notes() const override {
    return ledger_->notes(options_.run_id, options_.size, options_.dollars_per_hour);
  }

 private:
  LizardLiveFactoryOptions options_;
  std::shared_ptr<LiveLedger> ledger_;
};

}  // namespace

std::unique_ptr<BackendFactory> make_lizard_live_factory(LizardLiveFactoryOptions options) {
  return std::make_unique<LiveFactory>(std::move(options));
}

}  // namespace lizard::conformance
