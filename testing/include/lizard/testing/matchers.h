// gMock matchers for the contract's errors, used on a callable:
//
//   EXPECT_THAT([&] { fs.read_bytes("/workspace/missing"); },
//               ThrowsPathError(std::errc::no_such_file_or_directory));
//   EXPECT_THAT([&] { backend.run(Argv{{"true"}}); }, ThrowsUnavailable());
//   EXPECT_THAT([&] { backend.run(Argv{{"true"}}); }, ThrowsTransient(false, 429));
//
// ThrowsPathError(errc), ThrowsPathError() (any errc), ThrowsUnavailable(part),
// ThrowsInvalidArgument(part), ThrowsTransient(admitted[, http_status]),
// ThrowsWorkspaceError(part), ThrowsNonTransientError(part). A `part` is a
// substring of what(); "" (the default) accepts any message.
//
// Each failure message names what was thrown instead. A matcher is also a
// predicate where an assertion cannot report (a forked child):
// ::testing::Value(callable, ThrowsPathError(errc)) is a bool.
#pragma once

#include <gmock/gmock.h>

#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "lizard/workspace/errors.h"

namespace lizard::testing {

namespace internal {

// A filesystem_error's code; a mismatch is explained with the error's own
// message (its code in words, and the paths).
class PathErrorCode {
 public:
  using is_gtest_matcher = void;
  explicit PathErrorCode(std::errc code) : code_(std::make_error_code(code)) {}
  bool MatchAndExplain(const std::filesystem::filesystem_error& error, std::ostream* os) const {
    if (os != nullptr) *os << "whose code is " << error.code().message() << ": " << error.what();
    return error.code() == code_;
  }
  void DescribeTo(std::ostream* os) const { *os << "whose code is " << code_.message(); }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "whose code is not " << code_.message();
  }

 private:
  std::error_code code_;
};

}  // namespace internal

// A std::filesystem::filesystem_error whose code() is `code`.
inline auto ThrowsPathError(std::errc code) {
  return ::testing::Throws<std::filesystem::filesystem_error>(internal::PathErrorCode(code));
}

// A std::filesystem::filesystem_error of any code.
inline auto ThrowsPathError() { return ::testing::Throws<std::filesystem::filesystem_error>(); }

// A WorkspaceUnavailableError (or a subclass, such as WorkspaceAuthenticationError).
inline auto ThrowsUnavailable() {
  return ::testing::Throws<workspace::WorkspaceUnavailableError>();
}

// The same, whose message contains `part`.
inline auto ThrowsUnavailable(const std::string& part) {
  return ::testing::ThrowsMessage<workspace::WorkspaceUnavailableError>(::testing::HasSubstr(part));
}

// A std::invalid_argument whose message contains `part` ("" for any).
inline auto ThrowsInvalidArgument(const std::string& part = "") {
  return ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(part));
}

// A WorkspaceTransientError that says whether the request may have been admitted.
inline auto ThrowsTransient(bool may_have_been_admitted) {
  return ::testing::Throws<workspace::WorkspaceTransientError>(::testing::Property(
      "may_have_been_admitted", &workspace::WorkspaceTransientError::may_have_been_admitted,
      ::testing::Eq(may_have_been_admitted)));
}

// The same, raised for an HTTP answer with `http_status`.
inline auto ThrowsTransient(bool may_have_been_admitted, int http_status) {
  return ::testing::Throws<workspace::WorkspaceTransientError>(::testing::AllOf(
      ::testing::Property("may_have_been_admitted",
                          &workspace::WorkspaceTransientError::may_have_been_admitted,
                          ::testing::Eq(may_have_been_admitted)),
      ::testing::Property("http_status", &workspace::WorkspaceTransientError::http_status,
                          ::testing::Eq(std::optional<int>(http_status)))));
}

// A WorkspaceError (any kind) whose message contains `part`.
inline auto ThrowsWorkspaceError(const std::string& part = "") {
  return ::testing::ThrowsMessage<workspace::WorkspaceError>(::testing::HasSubstr(part));
}

// A WorkspaceError that is not a WorkspaceTransientError (retrying cannot
// help: an answer that cannot be decoded, or one over its size cap), whose
// message contains `part`.
inline auto ThrowsNonTransientError(const std::string& part = "") {
  return ::testing::Throws<workspace::WorkspaceError>(::testing::AllOf(
      ::testing::Not(
          ::testing::WhenDynamicCastTo<const workspace::WorkspaceTransientError&>(::testing::_)),
      ::testing::Property("what", &workspace::WorkspaceError::what, ::testing::HasSubstr(part))));
}

}  // namespace lizard::testing
