#include "lizard/workspace/types.h"

#include <stdexcept>

#include "lizard/workspace/errors.h"

namespace lizard::workspace {

WorkspaceRef WorkspaceRef::parse(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument("a workspace ref has the form provider:id");
  }
  return WorkspaceRef{text.substr(0, colon), text.substr(colon + 1)};
}

std::string Command::describe() const {
  if (is_shell()) return "sh -c " + script();
  std::string text = "argv[";
  for (std::size_t i = 0; i < argv().size(); ++i) {
    if (i != 0) text += ", ";
    text += argv()[i];
  }
  return text + "]";
}

std::filesystem::filesystem_error make_path_error(const std::string& what, const std::string& path,
                                                  std::errc code) {
  return std::filesystem::filesystem_error(what, std::filesystem::path(path),
                                           std::make_error_code(code));
}

}  // namespace lizard::workspace
