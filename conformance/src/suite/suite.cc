#include "lizard/conformance/suite.h"

#include <gtest/gtest.h>

#include <mutex>

#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance {

namespace {

// The reason a rule cannot run against this session, or "".
std::string unmet_need(const RuleInfo& rule, BackendFactory& factory, BackendSession& session) {
  if (!rule.profile.empty() && factory.profile() != rule.profile) {
    return "a rule of the '" + std::string(rule.profile) +
           "' profile; this backend's profile is '" + factory.profile() + "'";
  }
  const Capabilities caps = session.capabilities();
  if ((rule.needs & kNeedCommands) && !caps.has(Capability::kCommands)) {
    return "the backend does not offer commands";
  }
  if ((rule.needs & kNeedFilesystem) && !caps.has(Capability::kFilesystem)) {
    return "the backend does not offer a filesystem";
  }
  if ((rule.needs & kNeedRealpath) && !caps.has(Capability::kRealpath)) {
    return "the backend does not offer realpath";
  }
  if ((rule.needs & kNeedShell) && session.deviations().no_posix_shell) {
    return "the backend has no POSIX shell (declared deviation)";
  }
  if ((rule.needs & kNeedAttach) && !session.can_attach()) {
    return "the factory cannot attach to an environment by ref";
  }
  if ((rule.needs & kNeedPlatform) && session.platform() == nullptr) {
    return "no view of the platform's HTTP traffic (only the embedded mock offers one)";
  }
  return "";
}

}  // namespace

void execute_rule(BackendFactory& factory, const RuleInfo& rule, bool in_gtest_test) {
  if (in_gtest_test) testing::Test::RecordProperty("rule", std::string(rule.id));
  internal::host_canary();
  const internal::RuleBody body = internal::find_body(rule.id);
  if (body == nullptr) {
    ADD_FAILURE() << "the suite has no body for rule " << rule.id;
    return;
  }
  std::unique_ptr<BackendSession> session;
  try {
    session = factory.open(rule);
  } catch (...) {
    ADD_FAILURE() << "the factory could not open a session: "
                  << internal::one_line(internal::describe_throw([] { throw; }));
    return;
  }
  if (!session) {
    ADD_FAILURE() << "the factory returned no session";
    return;
  }
  std::string unmet;
  try {  // capabilities(), deviations(), can_attach(): the backend's code
    unmet = unmet_need(rule, factory, *session);
  } catch (...) {
    ADD_FAILURE() << "the session could not say what it offers: "
                  << internal::one_line(internal::describe_throw([] { throw; }));
    return;
  }
  if (!unmet.empty()) GTEST_SKIP() << unmet;
  bool abandoned = false;
  {
    internal::RuleContext ctx(rule, *session);
    try {
      body(ctx);
    } catch (const internal::RuleAbort& e) {
      ADD_FAILURE() << e.what();
    } catch (const std::exception&) {
      ADD_FAILURE() << "unexpected exception: "
                    << internal::one_line(internal::describe_throw([] { throw; }));
    } catch (...) {
      ADD_FAILURE() << "unexpected exception of unknown type";
    }
    abandoned = ctx.abandoned();
  }
  // A thread still inside the session may use it: leak rather than crash.
  if (abandoned) (void)session.release();
}

bool register_suite(const std::string& suite_name, FactoryMaker make_factory) {
  internal::host_canary();
  struct Holder {
    std::once_flag once;
    FactoryMaker maker;
    std::unique_ptr<BackendFactory> factory;
    BackendFactory& get() {
      std::call_once(once, [this] { factory = maker(); });
      return *factory;
    }
  };
  auto holder = std::make_shared<Holder>();
  holder->maker = std::move(make_factory);
  class RuleTest : public testing::Test {
   public:
    RuleTest(std::shared_ptr<Holder> holder, const RuleInfo* rule)
        : holder_(std::move(holder)), rule_(rule) {}
    void TestBody() override { execute_rule(holder_->get(), *rule_, true); }

   private:
    std::shared_ptr<Holder> holder_;
    const RuleInfo* rule_;
  };
  for (const RuleInfo& rule : all_rules()) {
    const RuleInfo* r = &rule;
    testing::RegisterTest(suite_name.c_str(), gtest_name(rule.id).c_str(), nullptr,
                          std::string(rule.id).c_str(), __FILE__, __LINE__,
                          [holder, r]() -> testing::Test* { return new RuleTest(holder, r); });
  }
  return true;
}

}  // namespace lizard::conformance
