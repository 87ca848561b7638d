#include "lizard_support.h"

#include <algorithm>
#include <cctype>

namespace lizard::conformance {

std::string describe_facilities(unsigned bits) {
  static const std::pair<unsigned, const char*> kNames[] = {
      {kPlatformBackends, "backends with changed settings"},
      {kPlatformJournal, "request journal"},
      {kPlatformRequestContent, "request bodies"},
      {kPlatformFaults, "fault injection"},
      {kPlatformClock, "clock"},
      {kPlatformShortExecLimit, "short exec limit"}};
  std::string text;
  for (const auto& [bit, name] : kNames) {
    if (bits & bit) text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

}  // namespace lizard::conformance

namespace lizard::conformance::internal {

PlatformControl& platform(RuleContext& ctx) {
  auto* p = ctx.platform();
  if (p == nullptr) throw RuleAbort("the session offers no platform view");
  return *p;
}

std::string missing_facilities(RuleContext& ctx, unsigned needed) {
  const unsigned missing = needed & ~platform(ctx).facilities();
  if (missing == 0) return "";
  return "the session's platform view offers no " + describe_facilities(missing) +
         " (the embedded mock does; a live session does not)";
}

bool is_create(const HttpRequestRecord& r) {
  return r.method == "POST" && r.path == "/api/sandboxes";
}

int count_creates(const std::vector<HttpRequestRecord>& requests) {
  return static_cast<int>(std::count_if(requests.begin(), requests.end(), is_create));
}

std::string describe_requests(const std::vector<HttpRequestRecord>& requests) {
  std::string text;
  for (const auto& r : requests) {
    if (text.size() > 400) {
      text += " ...";
      break;
    }
    text += (text.empty() ? "" : ", ") + r.method + " " + r.path;
  }
  return "[" + text + "]";
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string base64_decode(const std::string& in, bool& ok) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = 0;
  ok = true;
  for (char c : in) {
    if (c == '=') break;
    if (c == '\n' || c == '\r') continue;
    const auto pos = kAlphabet.find(c);
    if (pos == std::string::npos) {
      ok = false;
      return out;
    }
    value = (value << 6) | static_cast<unsigned>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xFF);
    }
  }
  return out;
}

// Runs a first operation that needs the sandbox.
void first_use(RuleContext& ctx, const BackendPtr& b) {
  if (ctx.has(Capability::kCommands)) {
    ctx.run(b, Argv{{"true"}});
  } else {
    ctx.path_exists(b, b->working_dir());
  }
}

}  // namespace lizard::conformance::internal
