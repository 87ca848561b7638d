// How the API's values look on the wire: ISO-8601 times, project slugs, and
// the base64 `content` of file writes. Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lizard::mock::internal {

// Milliseconds since the Unix epoch, by the system clock.
std::int64_t real_now_ms();
// "2026-11-30T12:00:00.000Z".
std::string iso_time(std::int64_t ms);
// ASCII lower case.
std::string lower(std::string s);
// A project slug: lower case, runs of other characters as one '-'.
std::string slugify(const std::string& name);
// Standard or URL alphabet, padding optional, whitespace ignored. False when
// `in` is not base64.
bool decode_base64(std::string_view in, std::string& out);

}  // namespace lizard::mock::internal
