#include "lizard/conformance/rules.h"

#include "rule_tables.h"

#include <cctype>

namespace lizard::conformance {
const std::vector<RuleInfo>& all_rules() {
  static const std::vector<RuleInfo> table = [] {
    std::vector<RuleInfo> rows = internal::env_and_command_rules();
    for (auto&& part : {internal::files_and_realpath_rules(), internal::lizard_profile_rules()}) {
      rows.insert(rows.end(), part.begin(), part.end());
    }
    return rows;
  }();
  return table;
}

const RuleInfo* find_rule(std::string_view id) {
  for (const RuleInfo& rule : all_rules()) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

std::string gtest_name(std::string_view id) {
  std::string name;
  bool upper = true;
  for (char c : id) {
    if (c == '.' || c == '-') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return name;
}

const RuleInfo* find_rule_by_gtest_name(std::string_view name) {
  for (const RuleInfo& rule : all_rules()) {
    if (gtest_name(rule.id) == name) return &rule;
  }
  return nullptr;
}

}  // namespace lizard::conformance
