// The API's error answers. A handler throws ApiError; the dispatcher turns
// it into `{"error": "<sentence>", "code": "<CODE>"}` (or, for the routes
// that put an upper-case code in `error`, `{"error": "<CODE>", "message":
// "<sentence>"}`). Thread-safe: no shared state.
#pragma once

#include <string>
#include <system_error>

namespace lizard::mock::internal {

struct ApiError {
  int status;
  std::string message;
  std::string code;
  std::string error_field;  // when set, "error" carries this and "message" the sentence
};

[[noreturn]] void api_error(int status, std::string message, std::string code = "");
// 403 {"error": code, "message": message}: the shape of ACCOUNT_SCOPE_REQUIRED.
[[noreturn]] void api_error_coded(int status, std::string code, std::string message);
[[noreturn]] void not_found_sandbox();
[[noreturn]] void method_not_allowed();
// A file operation's errno as the API's path error: ENOENT is 404, the
// others 400 with EISDIR, ENOTDIR, EACCES (also EPERM, EROFS, and EBUSY
// for a mount point), EEXIST (also
// ENOTEMPTY), ELOOP, or EINVAL for anything else.
[[noreturn]] void path_error(const std::system_error& e);

std::string error_body(const ApiError& e);

}  // namespace lizard::mock::internal
