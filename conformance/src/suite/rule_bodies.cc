#include "rule_bodies.h"

#include <cstdlib>
#include <mutex>
#include <string_view>

namespace lizard::conformance::internal {

std::pair<std::string, std::string> host_canary() {
  static std::once_flag once;
  static std::pair<std::string, std::string> canary;
  std::call_once(once, [] {
    canary = {"LIZARD_CONFORMANCE_CANARY_" + random_hex(8), "canary-" + random_hex(16)};
    ::setenv(canary.first.c_str(), canary.second.c_str(), 1);
    // A backend that passes the host environment on would also pass the key;
    // give the host one to leak when it has none (cmd.env-not-inherited).
    ::setenv("LIZARD_API_KEY", ("liz_conformance_canary_" + random_hex(16)).c_str(), 0);
  });
  return canary;
}

RuleBody find_body(std::string_view id) {
  const RuleInfo* rule = find_rule(id);
  return rule != nullptr ? rule->body : nullptr;
}

}  // namespace lizard::conformance::internal
