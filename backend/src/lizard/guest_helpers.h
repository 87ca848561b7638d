// The guest helpers: small POSIX sh programs the backend runs inside the
// sandbox through the exec API (sh, util-linux setsid >= 2.31 and coreutils
// only, so templates without Python work). docs/backend.md explains the
// protocol.
//
// Pure functions and constants; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lizard::workspace::internal {

// Where a run keeps its files inside the sandbox: kRunRoot + "/" + run id +
// "." + suffix (run_file).
inline constexpr std::string_view kRunRoot = "/tmp/.lizard";

// The largest amount of raw output the envelope carries inline (both streams
// together, before base64), so that the wrapper's stdout stays under the API's
// 512 KiB per-stream cap: 360 KiB of bytes is 480 KiB of base64.
inline constexpr std::uint64_t kInlineBudgetBytes = 360u * 1024;

struct RunSpec {
  std::string run_id;                // [0-9a-f]+
  std::vector<std::string> argv;     // the program and its arguments, literal
  std::uint64_t timeout_ms = 0;      // 0: none
  std::uint64_t limit_bytes = 0;     // per stream
  std::vector<std::string> cleanup;  // run ids whose directories may go
  std::uint64_t inline_budget = kInlineBudgetBytes;
};

// The exec argv that starts (or, re-sent unchanged, re-attaches to) a run:
// ["setsid", "-f", "-w", "/bin/sh", "-c", HELPER, "lizard-run", RUNID, ...]. Argv items that
// are valid UTF-8 travel as they are; others are base64-encoded and decoded
// inside the sandbox, because JSON cannot carry them.
std::vector<std::string> run_command(const RunSpec& spec);

// One argv item in the wrapper's encoding: "r" + item, or "b" + base64(item).
std::string encode_item(std::string_view item);

// The wrapper's answer, parsed from the exec stdout.
struct Envelope {
  int exit_code = 0;
  bool timed_out = false;
  bool over_limit = false;
  std::uint64_t out_size = 0;
  std::uint64_t err_size = 0;
  // The bytes (over the limit: the first 64 KiB) when inline; else read the files.
  std::optional<std::string> out;
  std::optional<std::string> err;
};

// Parses the wrapper's stdout. nullopt when the envelope is absent or cut
// short (the wrapper was killed: per-request limit, destroyed sandbox), or
// when its numbers are not what the wrapper prints (more than 18 digits,
// negative sizes). Throws std::runtime_error when the wrapper reported a
// failure of its own, or a complete envelope carries a stream that is not
// base64; never any other exception type.
std::optional<Envelope> parse_envelope(std::string_view text);

// A run's file: "o" stdout, "e" stderr, "s" status, "p" claim and pid.
std::string run_file(std::string_view run_id, std::string_view suffix);

// Stops a run's process group: argv for exec.
std::vector<std::string> kill_command(std::string_view run_id);

// Prints one line per path: "d" (a directory, following links), "f SIZE"
// (anything else that exists), "l" (a link loop), "n" (absent / dangling).
std::vector<std::string> probe_command(const std::vector<std::string>& paths);

// mkdir -p; exit 0, or 17 EEXIST, 20 ENOTDIR, 13 EACCES, 40 ELOOP, 2 ENOENT, 30 EROFS, 1 other.
std::vector<std::string> mkdir_command(std::string_view path);

// realpath -m; stdout the path and "\n"; exit 40 on a loop, 1 other failures.
std::vector<std::string> realpath_command(std::string_view path);

// The POSIX error a helper exit code names, if any.
std::optional<int> errno_of_helper_exit(int exit_code);

}  // namespace lizard::workspace::internal
