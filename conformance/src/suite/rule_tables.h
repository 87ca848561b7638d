// The parts of the rule table, in contract order (table_*.cc); all_rules()
// joins them.
#pragma once

#include <vector>

#include "lizard/conformance/rules.h"

namespace lizard::conformance::internal {

std::vector<RuleInfo> env_and_command_rules();
std::vector<RuleInfo> files_and_realpath_rules();
std::vector<RuleInfo> lizard_profile_rules();

}  // namespace lizard::conformance::internal
