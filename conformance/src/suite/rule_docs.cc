// docs/contract.md's rule tables, produced from the rows of the rule table.
#include <sstream>
#include <string>
#include <string_view>

#include "lizard/conformance/rules.h"

namespace lizard::conformance {
namespace {

struct Section {
  std::string_view prefix;   // "cmd."
  std::string_view heading;  // "Commands"
  std::string_view intro;    // a paragraph under the heading, or ""
};

constexpr Section kSections[] = {
    {"env.", "Environment and ref", ""},
    {"cmd.", "Commands", ""},
    {"fs.", "Files", ""},
    {"path.", "Realpath", ""},
    {"lizard.", "The lizard profile",
     "Checked through the embedded mock: its request journal, fault injection and clock."},
};

// A table cell: '|' escaped, "—" for nothing.
std::string cell(std::string_view text) {
  if (text.empty()) return "—";
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string rule_tables_markdown() {
  std::ostringstream out;
  bool first = true;
  for (const Section& section : kSections) {
    out << (first ? "" : "\n") << "## " << section.heading << "\n\n";
    first = false;
    if (!section.intro.empty()) out << section.intro << "\n\n";
    out << "| rule | what the test checks | why | Pydantic AI |\n|---|---|---|---|\n";
    for (const RuleInfo& rule : all_rules()) {
      if (rule.id.substr(0, section.prefix.size()) != section.prefix) continue;
      out << "| `" << rule.id << "` | " << cell(rule.summary) << " | " << cell(rule.why) << " | "
          << cell(rule.counterpart) << " |\n";
    }
  }
  return out.str();
}

}  // namespace lizard::conformance
