// gMock matchers for the contract's errors, used on a callable:
//
//   EXPECT_THAT([&] { fs.read_bytes("/workspace/missing"); },
//               ThrowsPathError(std::errc::no_such_file_or_directory));
//   EXPECT_THAT([&] { backend.run(Argv{{"true"}}); }, ThrowsUnavailable());
//
// Each failure message names what was thrown instead.
#pragma once

#include <gmock/gmock.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "lizard/workspace/errors.h"

namespace lizard::testing {

// A std::filesystem::filesystem_error whose code() is `code`.
inline auto ThrowsPathError(std::errc code) {
  return ::testing::Throws<std::filesystem::filesystem_error>(::testing::Property(
      "code", &std::filesystem::filesystem_error::code, ::testing::Eq(std::make_error_code(code))));
}

// A WorkspaceUnavailableError (or a subclass, such as WorkspaceAuthenticationError).
inline auto ThrowsUnavailable() {
  return ::testing::Throws<workspace::WorkspaceUnavailableError>();
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

// A WorkspaceError (any kind) whose message contains `part`.
inline auto ThrowsWorkspaceError(const std::string& part = "") {
  return ::testing::ThrowsMessage<workspace::WorkspaceError>(::testing::HasSubstr(part));
}

}  // namespace lizard::testing
