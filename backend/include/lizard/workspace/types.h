// The value types of the workspace contract (see docs/contract.md).
//
// This header, errors.h and backend.h make up the contract target
// `lizard::workspace`: standard library only, so a third party who implements
// a backend never pulls in curl, RapidJSON or httplib.
//
// Thread safety: these are plain values; copies may be used from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace lizard::workspace {

// Names one environment. Never carries credentials: a ref can be logged,
// stored and handed to another process. The Lizard backend's ref is
// {"lizard", <sandboxId>}.
struct WorkspaceRef {
  std::string provider;
  std::string id;

  // "provider:id", the form scripts and reports print.
  std::string to_string() const { return provider + ":" + id; }
  // Parses "provider:id". Throws std::invalid_argument when either part is empty.
  static WorkspaceRef parse(const std::string& text);

  friend bool operator==(const WorkspaceRef&, const WorkspaceRef&) = default;
};

// The outcome of a command that ran to its end. A non-zero exit code is a
// result, not an error. `out` and `err` hold valid UTF-8 (bytes that were not
// are replaced by U+FFFD) and may contain NUL bytes. (The fields are not named
// stdout/stderr because those are macros in <cstdio>.)
struct CommandResult {
  int exit_code = 0;
  std::string out;
  std::string err;

  friend bool operator==(const CommandResult&, const CommandResult&) = default;
};

// One directory entry or the answer of stat(). `path` is absolute.
// `size` is the file size in bytes; it may be absent for directories.
struct FileEntry {
  std::string name;
  std::string path;
  bool is_dir = false;
  std::optional<std::uint64_t> size;

  friend bool operator==(const FileEntry&, const FileEntry&) = default;
};

// An argv: items are passed to the program literally, with no shell. The
// program (items[0]) is looked up on PATH. An empty argv is rejected by run()
// with std::invalid_argument.
struct Argv {
  std::vector<std::string> items;
};

// A shell script, run by `/bin/sh -c <script>`.
struct Shell {
  std::string script;
};

// A command is an Argv or a Shell; the type makes the two impossible to mix
// up: run(Argv{{"rm", "--", name}}) can never be reinterpreted by a shell.
class Command {
 public:
  Command(Argv argv) : value_(std::move(argv)) {}     // NOLINT(google-explicit-constructor)
  Command(Shell shell) : value_(std::move(shell)) {}  // NOLINT(google-explicit-constructor)

  bool is_shell() const { return std::holds_alternative<Shell>(value_); }
  // Precondition: !is_shell().
  const std::vector<std::string>& argv() const { return std::get<Argv>(value_).items; }
  // Precondition: is_shell().
  const std::string& script() const { return std::get<Shell>(value_).script; }

  // A one-line human description for logs and reports (not a shell quoting).
  std::string describe() const;

 private:
  std::variant<Argv, Shell> value_;
};

// Seconds, as a double so that NaN and infinity can be passed (and rejected).
using Seconds = std::chrono::duration<double>;

struct RunOptions {
  // Added on top of the backend's own environment for this command only.
  // Names must be non-empty and contain neither '=' nor NUL; values no NUL.
  std::map<std::string, std::string> env;
  // Positive and finite, else run() throws std::invalid_argument before
  // anything runs. Absent: no timeout.
  std::optional<Seconds> timeout;
  // Requesting stop stops the command's foreground process group and makes
  // run() throw WorkspaceCancelledError.
  std::stop_token stop;
};

// The output limit every conforming backend enforces per stream, and the
// size of the heads an output-limit error carries.
inline constexpr std::size_t kOutputLimitBytes = 10u * 1024 * 1024;
inline constexpr std::size_t kOutputHeadBytes = 64u * 1024;

// What a backend can do, discoverable at run time.
enum class Capability : unsigned {
  kCommands = 1u << 0,
  kFilesystem = 1u << 1,
  kRealpath = 1u << 2,
};

class Capabilities {
 public:
  constexpr Capabilities() = default;
  constexpr Capabilities(std::initializer_list<Capability> caps) {
    for (Capability c : caps) bits_ |= static_cast<unsigned>(c);
  }
  constexpr bool has(Capability c) const { return (bits_ & static_cast<unsigned>(c)) != 0; }
  friend constexpr bool operator==(Capabilities, Capabilities) = default;

 private:
  unsigned bits_ = 0;
};

}  // namespace lizard::workspace
