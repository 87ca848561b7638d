// Errors of the Lizard API client and the ONE function that maps a transport
// outcome (transport failure, HTTP status, error body) to them.
//
// The client raises the workspace contract's exception types where the
// contract has one (authentication, transient, not supported, cancelled) and
// ApiError for answers the caller has to interpret (404, 409, 400 with a code).
// Thread-safe (pure functions, immutable values).
#pragma once

#include <string>
#include <string_view>

#include "lizard/api/transport.h"
#include "lizard/workspace/errors.h"

namespace lizard::api {

// An HTTP error answer that is not authentication, rate limiting, 5xx or 501:
// 400, 402, 404, 409 and any other 4xx. status(), code() and api_message() come
// from the error body ({"error", "code"?, "message"?}); the what() text is
// redacted.
class ApiError : public workspace::WorkspaceError {
 public:
  ApiError(const std::string& what, int status, std::string code, std::string api_message)
      : WorkspaceError(what),
        status_(status),
        code_(std::move(code)),
        api_message_(std::move(api_message)) {}

  int status() const noexcept { return status_; }
  // The machine code: body "code", else "error" when it is all [A-Z0-9_]; may be empty.
  const std::string& code() const noexcept { return code_; }
  // The sentence: "message" when "error" is a code, else "error"; may be empty.
  const std::string& api_message() const noexcept { return api_message_; }

 private:
  int status_;
  std::string code_;
  std::string api_message_;
};

// HTTP 404 (unknown sandbox, missing file, unknown project, ...).
class NotFoundError : public ApiError {
 public:
  using ApiError::ApiError;
};

// HTTP 409 (a taken volume name, a volume in use).
class ConflictError : public ApiError {
 public:
  using ApiError::ApiError;
};

// HTTP 402.
class PaymentRequiredError : public ApiError {
 public:
  using ApiError::ApiError;
};

// The error body fields, decoded leniently (a non-JSON body gives the raw text
// as the message). Neither is cut nor redacted: throw_transport_error()
// redacts them whole, then cuts them to 300 bytes.
struct ErrorBody {
  std::string code;
  std::string message;
};
ErrorBody parse_error_body(std::string_view body);

// Replaces every occurrence of `secret` (when non-empty) and any value of an
// X-API-Key / Authorization header quoted in `text` by "[REDACTED]". Linear
// in the size of `text`.
std::string redact(std::string_view text, std::string_view secret);
// redact(), then cut to 300 bytes (and "..."), so that a message stays a
// message: redacted whole first, as a key cut short would no longer match.
std::string redacted_brief(std::string_view text, std::string_view secret);

// The mapping table. `what` names the operation ("POST /api/sandboxes");
// `secret` is redacted from every message. Never returns (a 2xx answer that
// reaches it is an ApiError: a caller's mistake, still a WorkspaceError).
//   kAnswerTooLarge                          workspace::WorkspaceError
//   kCancelled                               WorkspaceCancelledError
//   kCouldNotConnect                         WorkspaceTransientError(admitted=false)
//   kTimedOut, kConnectionFailed             WorkspaceTransientError(admitted=request_sent)
//   kOther                                   workspace::WorkspaceError
//   401, 403                                 WorkspaceAuthenticationError
//   402                                      PaymentRequiredError
//   404                                      NotFoundError
//   409                                      ConflictError
//   408                                      WorkspaceTransientError(admitted=false)
//   429                                      WorkspaceTransientError(admitted=false, retry_after
//                                            from body retryAfterS, else Retry-After header)
//   501                                      WorkspaceNotSupportedError
//   other 5xx (504 included)                 WorkspaceTransientError(admitted=true)
//   other non-2xx                            ApiError
[[noreturn]] void throw_transport_error(const TransportOutcome& outcome, std::string_view what,
                                        std::string_view secret);

}  // namespace lizard::api
