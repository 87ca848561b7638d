// The live run's preflight (live_preflight.cc): one check of the variables,
// the key, the project and the permission to create, before any rule.
#pragma once

#include "live_ledger.h"
#include "lizard/conformance/lizard_factory.h"

namespace lizard::conformance::internal {

// The tags of a live run's sandboxes (lizard-sweep reads them).
inline constexpr const char* kRunTag = "lizard-conformance-run";
inline constexpr const char* kRuleTag = "lizard-conformance-rule";

// Checks, in order and with one request each: LIZARD_API_KEY and
// LIZARD_PROJECT_ID are set; the key is accepted (GET /api/projects); the
// project is one the key sees; a sandbox of the run's template and size can
// be created in it (one probe sandbox, tagged, deleted at once, counted by
// `ledger`). Throws std::runtime_error with one sentence naming the
// variable to fix at the first step that fails; nothing after it is sent,
// so a wrong key or project creates nothing.
void live_preflight(const LizardLiveFactoryOptions& options, LiveLedger& ledger);

}  // namespace lizard::conformance::internal
