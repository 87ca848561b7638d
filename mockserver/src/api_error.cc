#include "api_error.h"

#include <cerrno>

#include "json.h"

namespace lizard::mock::internal {

void api_error(int status, std::string message, std::string code) {
  throw ApiError{status, std::move(message), std::move(code), ""};
}

void api_error_coded(int status, std::string code, std::string message) {
  throw ApiError{status, std::move(message), "", std::move(code)};
}

void not_found_sandbox() { api_error(404, "Sandbox not found", "SANDBOX_NOT_FOUND"); }

void method_not_allowed() { api_error(405, "Method not allowed", "METHOD_NOT_ALLOWED"); }

void path_error(const std::system_error& e) {
  const std::string msg = e.what();
  switch (e.code().value()) {
    case ENOENT:
      api_error(404, msg, "ENOENT");
    case EISDIR:
      api_error(400, msg, "EISDIR");
    case ENOTDIR:
      api_error(400, msg, "ENOTDIR");
    case EACCES:
    case EPERM:
    case EROFS:
    case EBUSY:
      api_error(400, msg, "EACCES");
    case EEXIST:
    case ENOTEMPTY:
      api_error(400, msg, "EEXIST");
    case ELOOP:
      api_error(400, msg, "ELOOP");
    default:
      api_error(400, msg, "EINVAL");
  }
}

std::string error_body(const ApiError& e) {
  JsonOut j;
  j.begin_object();
  if (!e.error_field.empty()) {
    j.kv("error", e.error_field).kv("message", e.message);
  } else {
    j.kv("error", e.message);
    if (!e.code.empty()) j.kv("code", e.code);
  }
  j.end_object();
  return j.text();
}

}  // namespace lizard::mock::internal
