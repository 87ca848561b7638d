// Escaping, number formatting and globs shared by the runner, the report
// writers and readers, and the expectations.
#pragma once

#include <string>
#include <string_view>

namespace lizard::conformance::internal {

std::string json_escape(const std::string& text);
std::string xml_escape(const std::string& text);
// '|' escaped, so the text can stand in a Markdown table cell.
std::string md_escape(const std::string& text);
// md_escape, with line breaks as spaces: one line of a Markdown table or list.
std::string md_line(const std::string& text);
// `value` with `digits` decimals.
std::string fixed(double value, int digits);
// The rule filter's glob: '*' any run of characters, '?' one (runner.cc).
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace lizard::conformance::internal
