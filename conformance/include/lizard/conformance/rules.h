// The rule table: the single source of the contract's rules
// (docs/contract.md). Tests, --list-rules, reports and the mutation report
// all read it.
//
// Thread safety: the table is immutable; every function here is thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lizard::conformance {

// What a rule needs before it can say anything; a need the session cannot
// meet makes the rule SKIP with the reason.
enum Need : unsigned {
  kNeedCommands = 1u << 0,    // SupportsCommands
  kNeedFilesystem = 1u << 1,  // SupportsFilesystem
  kNeedRealpath = 1u << 2,    // SupportsRealpath
  kNeedShell = 1u << 3,       // shell strings (Deviations::no_posix_shell unset)
  kNeedAttach = 1u << 4,      // BackendSession::can_attach()
  kNeedPlatform = 1u << 5,    // BackendSession::platform() (the lizard profile's view)
};

namespace internal {
class RuleContext;
}

// One rule: the single place its ID, texts, needs and body live. The runner,
// the gtest registration, --list-rules and docs/contract.md's tables are all
// produced from these rows.
struct RuleInfo {
  std::string_view id;           // "cmd.output-limit"
  std::string_view summary;      // one line: what the test checks
  std::string_view why;          // one sentence: why the rule exists
  std::string_view counterpart;  // the Pydantic AI behaviour it renders ("" for none)
  unsigned needs = 0;            // Need bits
  std::string_view profile;      // "" for every backend, "lizard" for the lizard profile
  void (*body)(internal::RuleContext&) = nullptr;  // the test
  // The rule exercises the platform's per-request execution limit; a
  // factory that can shorten it for this session should (lizard.long-command).
  bool wants_short_exec_limit = false;
  // How long the body waits by design on the embedded mock: the total it
  // notes with note_wait (a timeout run out, a process group watched after a
  // stop). The runner starts the rules that wait longest first, so a run at
  // --jobs N ends sooner; nothing but the order depends on it. ctest
  // suite.wait-hints checks every row against a run of the suite.
  double wait_seconds = 0;
};

// Every rule, in contract order.
const std::vector<RuleInfo>& all_rules();

// The rule with this ID, or nullptr.
const RuleInfo* find_rule(std::string_view id);

// The GoogleTest name of a rule ID: each part between '.' and '-' capitalized
// and joined, "cmd.output-limit" -> "CmdOutputLimit" (gtest names cannot hold
// '.' or '-').
std::string gtest_name(std::string_view id);

// The rule whose gtest_name() is `name`, or nullptr.
const RuleInfo* find_rule_by_gtest_name(std::string_view name);

// The rule tables of docs/contract.md (one Markdown table per section, with
// its heading), produced from the rows.
std::string rule_tables_markdown();

// The suite's version, reported as "suite_version".
inline constexpr const char* kSuiteVersion = "1.0.0";

}  // namespace lizard::conformance
