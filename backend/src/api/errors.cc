#include "lizard/api/errors.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

#include "ascii.h"
#include "bounded_json.h"

namespace lizard::api {

namespace {

// A day: a longer wait than that is not advice a caller can act on.
constexpr double kMaxRetryAfterS = 86400;

bool is_code_text(std::string_view text) {
  if (text.empty()) return false;
  if (!std::isupper(static_cast<unsigned char>(text.front()))) return false;
  for (const char c : text) {
    if (!(std::isupper(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

std::string string_member(const rapidjson::Value& object, const char* name) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return {};
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

std::optional<std::chrono::seconds> retry_after(const TransportOutcome& outcome) {
  rapidjson::Document doc;
  if (internal::parse_bounded(doc, outcome.body) && doc.IsObject()) {
    auto it = doc.FindMember("retryAfterS");
    // Checked before the cast (a double out of range is undefined behaviour);
    // a negative or absurd value is ignored like a missing one.
    if (it != doc.MemberEnd() && it->value.IsNumber()) {
      const double seconds = it->value.GetDouble();
      if (seconds >= 0 && seconds <= kMaxRetryAfterS) {
        return std::chrono::seconds(static_cast<long long>(seconds));
      }
    }
  }
  const auto header = outcome.headers.find("retry-after");
  if (header != outcome.headers.end()) {
    char* end = nullptr;
    const long long value = std::strtoll(header->second.c_str(), &end, 10);
    if (end != header->second.c_str() && value >= 0 && value <= kMaxRetryAfterS) {
      return std::chrono::seconds(value);
    }
  }
  return std::nullopt;
}

// The failures of an exchange without a (complete) HTTP answer.
[[noreturn]] void throw_failure(const TransportOutcome& outcome, const std::string& op,
                                std::string_view secret) {
  const std::string detail = redact(outcome.detail, secret);
  switch (outcome.failure) {
    case TransportFailure::kAnswerTooLarge:
      // Not transient: the same request gets the same oversized answer.
      throw workspace::WorkspaceError(op + ": the answer is larger than " +
                                      std::to_string(outcome.answer_limit) +
                                      " bytes; the transfer was stopped");
    case TransportFailure::kCancelled:
      throw workspace::WorkspaceCancelledError(op + ": cancelled");
    case TransportFailure::kCouldNotConnect:
      throw workspace::WorkspaceTransientError(
          op + ": could not connect to the Lizard API (" + detail + ")", false);
    case TransportFailure::kTimedOut:
      throw workspace::WorkspaceTransientError(
          op + ": no answer before the deadline (" + detail + ")", outcome.request_sent);
    case TransportFailure::kConnectionFailed:
      throw workspace::WorkspaceTransientError(op + ": the connection failed (" + detail + ")",
                                               outcome.request_sent);
    case TransportFailure::kNone:
    case TransportFailure::kOther:
      break;
  }
  throw workspace::WorkspaceError(op + ": transport failure (" + detail + ")");
}

}  // namespace

ErrorBody parse_error_body(std::string_view body) {
  ErrorBody out;
  rapidjson::Document doc;
  if (!internal::parse_bounded(doc, body) || !doc.IsObject()) {
    out.message = std::string(body);
    return out;
  }
  const std::string error = string_member(doc, "error");
  const std::string message = string_member(doc, "message");
  const std::string code = string_member(doc, "code");
  const bool error_is_code = is_code_text(error);
  if (error_is_code) {
    out.message = message.empty() ? error : message;
  } else {
    out.message = error.empty() ? message : error;
  }
  out.code = !code.empty() ? code : (error_is_code ? error : std::string());
  return out;
}

// In one pass each (an answer of many megabytes full of the header names
// must not make this quadratic): the secret wherever it is, then the value
// after each header name, found in one lower-cased copy.
std::string redact(std::string_view text, std::string_view secret) {
  constexpr std::string_view kMask = "[REDACTED]";
  constexpr std::size_t npos = std::string::npos;
  std::string out;
  if (secret.empty()) {
    out = text;
  } else {
    out.reserve(text.size());
    std::size_t from = 0;
    for (std::size_t at = text.find(secret); at != npos; at = text.find(secret, from)) {
      out.append(text.substr(from, at - from)).append(kMask);
      from = at + secret.size();
    }
    out.append(text.substr(from));
  }
  // Header values quoted in a message (curl verbose text, an echoing proxy).
  constexpr std::array<std::string_view, 2> kHeaders = {"x-api-key:", "authorization:"};
  const std::string lower = internal::ascii_lower(out);
  std::array<std::size_t, 2> next = {lower.find(kHeaders[0]), lower.find(kHeaders[1])};
  std::string result;
  std::size_t from = 0;
  while (true) {
    const std::size_t which = next[0] <= next[1] ? 0 : 1;
    const std::size_t at = next[which];
    if (at == npos) break;
    std::size_t value = at + kHeaders[which].size();
    while (value < out.size() && out[value] == ' ') ++value;
    std::size_t end = value;
    while (end < out.size() && out[end] != '\r' && out[end] != '\n' && out[end] != '"' &&
           out[end] != ',') {
      ++end;
    }
    result.append(out, from, value - from).append(kMask);
    from = end;
    // A header name inside a masked value is gone with it.
    for (std::size_t h = 0; h < kHeaders.size(); ++h) {
      if (next[h] != npos && next[h] < from) next[h] = lower.find(kHeaders[h], from);
    }
  }
  if (from == 0) return out;
  result.append(out, from);
  return result;
}

std::string redacted_brief(std::string_view text, std::string_view secret) {
  constexpr std::size_t kMax = 300;
  std::string out = redact(text, secret);
  if (out.size() > kMax) {
    out.resize(kMax);
    out += "...";
  }
  return out;
}

void throw_transport_error(const TransportOutcome& outcome, std::string_view what,
                           std::string_view secret) {
  const std::string op(what);
  if (outcome.failure != TransportFailure::kNone) throw_failure(outcome, op, secret);
  const ErrorBody body = parse_error_body(outcome.body);
  const int status = static_cast<int>(outcome.status);
  // Redacted whole, then cut: a cut first could leave all of the key but
  // its last characters, which no longer match it.
  const std::string sentence = redacted_brief(body.message, secret);
  const std::string code = redacted_brief(body.code, secret);
  const std::string code_part = code.empty() ? "" : " [" + code + "]";
  const std::string message = op + ": HTTP " + std::to_string(status) + code_part +
                              (sentence.empty() ? "" : ": ") + sentence;
  switch (status) {
    case 401:
    case 403:
      throw workspace::WorkspaceAuthenticationError(
          message + " (the Lizard API rejected the credentials; check LIZARD_API_KEY)");
    case 402:
      throw PaymentRequiredError(message, status, code, sentence);
    case 404:
      throw NotFoundError(message, status, code, sentence);
    case 409:
      throw ConflictError(message, status, code, sentence);
    case 408:
      throw workspace::WorkspaceTransientError(message, false, status);
    case 429:
      throw workspace::WorkspaceTransientError(message, false, status, retry_after(outcome));
    case 501:
      throw workspace::WorkspaceNotSupportedError(
          op + ": not supported by this platform (HTTP 501" +
          (sentence.empty() ? std::string(")") : "): " + sentence));
    default:
      break;
  }
  if (status >= 500) throw workspace::WorkspaceTransientError(message, true, status);
  throw ApiError(message, status, code, sentence);
}

}  // namespace lizard::api
