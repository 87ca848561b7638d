// ASCII case folding for what the API compares without case: HTTP header
// names, project references (ID, slug or name), header names quoted in a
// message. Bytes outside A-Z are left as they are (UTF-8 included).
//
// Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace lizard::api::internal {

inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace lizard::api::internal
