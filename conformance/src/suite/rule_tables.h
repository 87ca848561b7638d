// The parts of the rule table, in contract order (table_*.cc); all_rules()
// joins them.
#pragma once

#include <vector>

#include "lizard/conformance/rules.h"

namespace lizard::conformance::internal {

// The `needs` of a row, in short (every table uses some of them).
inline constexpr unsigned kCmd = kNeedCommands;
inline constexpr unsigned kSh = kNeedCommands | kNeedShell;
inline constexpr unsigned kFs = kNeedFilesystem;
inline constexpr unsigned kFsSh = kNeedFilesystem | kNeedCommands | kNeedShell;
inline constexpr unsigned kRp = kNeedRealpath | kNeedCommands | kNeedShell;
inline constexpr unsigned kPf = kNeedPlatform;

std::vector<RuleInfo> env_and_command_rules();
std::vector<RuleInfo> files_and_realpath_rules();
std::vector<RuleInfo> lizard_profile_rules();

}  // namespace lizard::conformance::internal
