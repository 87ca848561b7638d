// The error types of the workspace contract.
//
//   std::runtime_error
//   └── WorkspaceError                 a deliberate refusal or failure
//       ├── WorkspaceUnavailableError  the environment is gone or unusable; retrying cannot help
//       │   └── WorkspaceAuthenticationError   credentials rejected
//       ├── WorkspaceTimeoutError      the command outlived its timeout (carries partial output)
//       ├── WorkspaceOutputLimitError  output over the limit (carries limit and 64 KiB heads)
//       ├── WorkspaceReadOnlyError     a read-only policy refused a change
//       ├── WorkspaceCancelledError    the caller's stop token was triggered
//       ├── WorkspaceNotSupportedError the platform does not offer this operation (HTTP 501)
//       └── WorkspaceTransientError    connection refused/reset, 5xx, 429: may succeed later
//
// Path errors are std::filesystem::filesystem_error with the POSIX std::errc
// (see make_path_error). Invalid arguments are std::invalid_argument.
//
// No message ever contains a credential: implementations redact before
// constructing these.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include "lizard/workspace/types.h"

namespace lizard::workspace {

class WorkspaceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WorkspaceUnavailableError : public WorkspaceError {
 public:
  using WorkspaceError::WorkspaceError;
};

// The API rejected the credentials (HTTP 401/403). Retrying with the same
// key cannot help, so it is a kind of WorkspaceUnavailableError.
class WorkspaceAuthenticationError : public WorkspaceUnavailableError {
 public:
  using WorkspaceUnavailableError::WorkspaceUnavailableError;
};

class WorkspaceTimeoutError : public WorkspaceError {
 public:
  WorkspaceTimeoutError(const std::string& message, std::string partial_out,
                        std::string partial_err, Seconds timeout)
      : WorkspaceError(message),
        out_(std::move(partial_out)),
        err_(std::move(partial_err)),
        timeout_(timeout) {}

  // What the command wrote before the deadline (valid UTF-8).
  const std::string& out() const noexcept { return out_; }
  const std::string& err() const noexcept { return err_; }
  // The timeout that was enforced.
  Seconds timeout() const noexcept { return timeout_; }

 private:
  std::string out_;
  std::string err_;
  Seconds timeout_;
};

class WorkspaceOutputLimitError : public WorkspaceError {
 public:
  WorkspaceOutputLimitError(const std::string& message, std::size_t limit, std::string out_head,
                            std::string err_head)
      : WorkspaceError(message),
        limit_(limit),
        out_head_(std::move(out_head)),
        err_head_(std::move(err_head)) {}

  // The per-stream limit in bytes that was exceeded.
  std::size_t limit() const noexcept { return limit_; }
  // The first kOutputHeadBytes (at most) of each stream, valid UTF-8.
  const std::string& out_head() const noexcept { return out_head_; }
  const std::string& err_head() const noexcept { return err_head_; }

 private:
  std::size_t limit_;
  std::string out_head_;
  std::string err_head_;
};

class WorkspaceReadOnlyError : public WorkspaceError {
 public:
  using WorkspaceError::WorkspaceError;
};

class WorkspaceCancelledError : public WorkspaceError {
 public:
  using WorkspaceError::WorkspaceError;
};

class WorkspaceNotSupportedError : public WorkspaceError {
 public:
  using WorkspaceError::WorkspaceError;
};

// A failure of the transport that may pass: connection refused or reset,
// HTTP 5xx, 429, a deadline on the wire. `may_have_been_admitted()` tells
// whether the server could have received and acted on the request; when it
// is true, a mutation must not be repeated blindly.
class WorkspaceTransientError : public WorkspaceError {
 public:
  WorkspaceTransientError(const std::string& message, bool may_have_been_admitted,
                          std::optional<int> http_status = std::nullopt,
                          std::optional<std::chrono::seconds> retry_after = std::nullopt)
      : WorkspaceError(message),
        may_have_been_admitted_(may_have_been_admitted),
        http_status_(http_status),
        retry_after_(retry_after) {}

  bool may_have_been_admitted() const noexcept { return may_have_been_admitted_; }
  std::optional<int> http_status() const noexcept { return http_status_; }
  std::optional<std::chrono::seconds> retry_after() const noexcept { return retry_after_; }

 private:
  bool may_have_been_admitted_;
  std::optional<int> http_status_;
  std::optional<std::chrono::seconds> retry_after_;
};

// The path error the contract requires: a std::filesystem::filesystem_error
// whose code() is std::make_error_code(code) and whose path1() is `path`.
std::filesystem::filesystem_error make_path_error(const std::string& what, const std::string& path,
                                                  std::errc code);

}  // namespace lizard::workspace
