#include "lizard/workspace/checks.h"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace lizard::workspace {

namespace {

bool has_nul(std::string_view text) { return text.find('\0') != std::string_view::npos; }

}  // namespace

void validate_run(const Command& command, const RunOptions& options) {
  if (command.is_shell()) {
    if (has_nul(command.script())) throw std::invalid_argument("a shell script cannot contain NUL");
  } else {
    if (command.argv().empty()) throw std::invalid_argument("an argv needs at least the program");
    if (command.argv().front().empty()) throw std::invalid_argument("the program name is empty");
    for (const auto& item : command.argv()) {
      if (has_nul(item)) throw std::invalid_argument("an argv item cannot contain NUL");
    }
  }
  if (options.timeout) {
    const double seconds = options.timeout->count();
    if (!std::isfinite(seconds) || seconds <= 0) {
      throw std::invalid_argument("a timeout must be positive and finite");
    }
  }
  validate_env(options.env, "RunOptions::env");
}

void validate_env(const std::map<std::string, std::string>& env, std::string_view what) {
  for (const auto& [name, value] : env) {
    if (name.empty() || name.find('=') != std::string::npos || has_nul(name)) {
      throw std::invalid_argument(std::string(what) +
                                  ": an environment variable name must be non-empty, without "
                                  "'=' or NUL");
    }
    if (has_nul(value)) {
      throw std::invalid_argument(std::string(what) +
                                  ": an environment variable value cannot contain NUL");
    }
  }
}

void require_absolute_path(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    throw std::invalid_argument("path must be absolute: " + std::string(path));
  }
  if (has_nul(path)) throw std::invalid_argument("path contains a NUL byte");
}

bool names_a_directory(std::string_view path) {
  return path.size() > 1 &&
         (path.back() == '/' || (path.size() > 2 && path.substr(path.size() - 2) == "/."));
}

std::string normalize_path(std::string_view absolute_path) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < absolute_path.size()) {
    while (i < absolute_path.size() && absolute_path[i] == '/') ++i;
    std::size_t j = i;
    while (j < absolute_path.size() && absolute_path[j] != '/') ++j;
    const std::string_view part = absolute_path.substr(i, j - i);
    if (part.empty() || part == ".") {
      // nothing
    } else if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else {
      parts.push_back(part);
    }
    i = j;
  }
  if (parts.empty()) return "/";
  std::string out;
  for (const auto part : parts) {
    out += '/';
    out += part;
  }
  return out;
}

bool is_self_or_ancestor(std::string_view path, std::string_view dir) {
  if (path == "/") return true;
  if (dir.size() < path.size() || dir.substr(0, path.size()) != path) return false;
  return dir.size() == path.size() || dir[path.size()] == '/';
}

void refuse_remove_of_working_dir(std::string_view path, std::string_view working_dir) {
  const std::string normal = normalize_path(path);
  if (is_self_or_ancestor(normal, normalize_path(working_dir))) {
    throw std::invalid_argument("refusing to remove " + std::string(path) +
                                ": it is the working directory or contains it");
  }
}

}  // namespace lizard::workspace
