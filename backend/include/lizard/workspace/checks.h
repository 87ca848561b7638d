// Argument checks every backend applies the same way, so that the
// std::invalid_argument rules of the contract hold identically everywhere.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "lizard/workspace/types.h"

namespace lizard::workspace {

// Throws std::invalid_argument for an empty argv, an argv item or script
// containing NUL, a timeout that is not positive and finite, or an env name
// that is empty or holds '=' or NUL, or an env value holding NUL.
void validate_run(const Command& command, const RunOptions& options);

// Throws std::invalid_argument, naming `what` (e.g. "LocalOptions::env"),
// when a name is empty or holds '=' or NUL, or a value holds NUL.
void validate_env(const std::map<std::string, std::string>& env, std::string_view what);

// Throws std::invalid_argument unless `path` is absolute and free of NUL.
void require_absolute_path(std::string_view path);

// Lexically normalizes an absolute path: collapses "//", drops ".", applies
// ".." (never above "/"), drops a trailing "/". "/a/./b/../c/" -> "/a/c".
std::string normalize_path(std::string_view absolute_path);

// True when `path` ends in "/" or "/." (not "/" itself): the kernel then
// takes its last component for a directory ("file/" is ENOTDIR to open(2)
// and stat(2), any "name/" EISDIR to a create), which normalize_path drops.
bool names_a_directory(std::string_view path);

// True when `path` (normalized) is `dir` or one of its ancestors, "/" included.
bool is_self_or_ancestor(std::string_view path, std::string_view dir);

// Throws std::invalid_argument when removing `path` would remove `working_dir`
// (the path is the working directory, ".", an ancestor of it, or "/").
// Checks the lexical form; backends also resolve links before removing.
void refuse_remove_of_working_dir(std::string_view path, std::string_view working_dir);

}  // namespace lizard::workspace
