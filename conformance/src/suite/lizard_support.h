// Helpers shared by the lizard profile rules (lizard_rules.cc,
// lizard_traffic_rules.cc).
#pragma once

#include <string>
#include <vector>

#include "rule_context.h"

namespace lizard::conformance::internal {

// The session's platform view; RuleAbort when it has none.
PlatformControl& platform(RuleContext& ctx);
// Why the view cannot serve a rule that needs the PlatformFacility bits
// `needed` ("" when it can): the skip reason of LIZARD_NEED_PLATFORM.
std::string missing_facilities(RuleContext& ctx, unsigned needed);
// A sandbox create (POST /api/sandboxes).
bool is_create(const HttpRequestRecord& r);
int count_creates(const std::vector<HttpRequestRecord>& requests);
// "[METHOD path, ...]", cut after about 400 characters.
std::string describe_requests(const std::vector<HttpRequestRecord>& requests);
std::string lower(std::string text);
// Decodes standard base64 (line breaks skipped); ok is false on a bad character.
std::string base64_decode(const std::string& in, bool& ok);
// Runs a first operation that needs the sandbox.
void first_use(RuleContext& ctx, const BackendPtr& b);

}  // namespace lizard::conformance::internal

// SKIPs the rule (returns from the body) when the session's platform view
// lacks one of the PlatformFacility bits `needed`.
#define LIZARD_NEED_PLATFORM(ctx, needed)                                     \
  do {                                                                        \
    const std::string lizard_missing_ =                                       \
        ::lizard::conformance::internal::missing_facilities((ctx), (needed)); \
    if (!lizard_missing_.empty()) GTEST_SKIP() << lizard_missing_;            \
  } while (false)
