// Typed access to a JSON request body, parsed in place. Every accessor
// answers 400 (by throwing ApiError) when the field has the wrong type; a
// missing or null field is std::nullopt. Thread-compatible.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lizard::mock::internal {

class RequestBody {
 public:
  // Parses `text` in place (json.h: 400 BAD_REQUEST when it is not a JSON
  // object; invalid UTF-8 and NUL are malformed): `text` is garbage
  // afterwards, and must outlive this RequestBody. `allow_empty`: an empty
  // body is an empty object.
  explicit RequestBody(std::string& text, bool allow_empty = false);

  const rapidjson::Value* get(const char* name) const;
  std::optional<std::string> str(const char* name) const;
  // The same without a copy: valid while this RequestBody lives.
  std::optional<std::string_view> view(const char* name) const;
  std::optional<std::int64_t> integer(const char* name) const;
  std::optional<bool> boolean(const char* name) const;
  // An object of strings; names must be non-empty without '=' or NUL, values
  // without NUL.
  std::vector<std::pair<std::string, std::string>> env_map(const char* name) const;
  std::vector<std::string> string_list(const char* name) const;

 private:
  rapidjson::Document doc_;
};

}  // namespace lizard::mock::internal
