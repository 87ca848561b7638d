// The guest helpers: small POSIX sh programs (src/lizard/guest/*.sh) the
// backend runs inside the sandbox through the exec API, using sh, util-linux
// setsid (>= 2.31) and coreutils only, so templates without Python work.
// This header is the run protocol: how a run's request is encoded and its
// answer (the envelope) decoded. docs/backend.md explains it.
//
// Pure functions and constants; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lizard::workspace::internal {

// Where runs keep their files inside the sandbox (run_file): not /tmp,
// which commands clean up.
inline constexpr std::string_view kRunRoot = "/root/.lizard";

// The largest amount of raw output the envelope carries inline (both streams
// together, before base64), so that the helper's stdout stays under the API's
// 512 KiB per-stream cap: 360 KiB of bytes is 480 KiB of base64.
inline constexpr std::uint64_t kInlineBudgetBytes = 360u * 1024;

// execve(2) takes no single argument or environment string over
// MAX_ARG_STRLEN (128 KiB with its NUL), and at most ARG_MAX in all (2 MiB
// with the usual 8 MiB stack), counting each string and its pointer.
inline constexpr std::size_t kMaxArgumentString = 128 * 1024 - 1;
inline constexpr std::size_t kMaxArgumentTotal = 2 * 1024 * 1024 - 64 * 1024;

struct RunSpec {
  std::string run_id;             // [0-9a-f]+
  std::vector<std::string> argv;  // the program and its arguments, literal
  // The variables set on top of the sandbox's environment, exactly (names
  // without '=' or NUL, values without NUL).
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir = "/workspace";
  std::uint64_t timeout_ms = 0;      // 0: none
  std::uint64_t limit_bytes = 0;     // per stream
  std::vector<std::string> cleanup;  // run ids whose files may go
  std::uint64_t inline_budget = kInlineBudgetBytes;
  std::string state_dir = std::string(kRunRoot);
};

// The exec argv that starts (or, re-sent unchanged, re-attaches to) a run:
// ["/bin/sh", "-c", RUN_START, RUN, fields...]. run_start.sh moves the fields
// into its environment and starts run.sh detached, so no long-lived process
// of the helper has the command's text in its argument list. Fields that are
// valid UTF-8 travel as they are; others are base64-encoded and decoded
// inside the sandbox, because JSON cannot carry them.
std::vector<std::string> run_command(const RunSpec& spec);

// Why the command cannot start, or empty when it can: an argv item or an
// environment entry longer than kMaxArgumentString, or all of them (as the
// helper carries them) over kMaxArgumentTotal. The kernel would refuse it
// with E2BIG ("Argument list too long").
std::string argument_list_problem(const RunSpec& spec);

// One field in the helper's encoding: "r" + text, or "b" + base64(bytes).
std::string encode_item(std::string_view item);

// The helper's answer, parsed from the exec stdout.
struct Envelope {
  int exit_code = 0;
  bool timed_out = false;
  bool over_limit = false;
  std::uint64_t out_size = 0;
  std::uint64_t err_size = 0;
  // Non-zero when the command could not be started (7: E2BIG).
  int start_errno = 0;
  // The bytes (over the limit: the first 64 KiB) when inline; else read the files.
  std::optional<std::string> out;
  std::optional<std::string> err;
};

// Parses the helper's stdout. nullopt when the envelope is absent or cut
// short (the helper was killed: per-request limit, destroyed sandbox), or
// when its numbers are not what the helper prints (more than 18 digits,
// negative sizes). Throws std::runtime_error when the helper reported a
// failure of its own, or a complete envelope carries a stream that is not
// base64 or is shorter than its size says (its file was cut before the
// answer read it); never any other exception type.
std::optional<Envelope> parse_envelope(std::string_view text);

// A run's file in `state_dir`: "o" stdout, "e" stderr, "p" the claim (the
// helper's pid, the command's pid, "T"/"O" markers, the "S ..." status line;
// run.sh's header comment).
std::string run_file(std::string_view state_dir, std::string_view run_id, std::string_view suffix);

// Stops a run's process group: argv for exec.
std::vector<std::string> kill_command(std::string_view state_dir, std::string_view run_id);

// Prints one line per path: "d" (a directory, following links), "f SIZE"
// (anything else that exists), "l" (a link loop), "n" (absent / dangling).
std::vector<std::string> probe_command(const std::vector<std::string>& paths);

// mkdir -p; exit 0, or the errno as the exit status (17 EEXIST, 20 ENOTDIR,
// 13 EACCES, 40 ELOOP, 2 ENOENT), worked out from the disk, never from text.
std::vector<std::string> mkdir_command(std::string_view path);

// realpath -m; stdout the path and "\n"; else the errno as the exit status
// (40 for a link loop).
std::vector<std::string> realpath_command(std::string_view path);

// Writes the bytes whose base64 is in the sandbox file `staged` to `target`
// (write.sh): stdout "LZW ERRNO".
std::vector<std::string> write_command(std::string_view staged, std::string_view target);

// The errno of a write_command answer, or nullopt when the answer is not one.
std::optional<int> parse_write_answer(std::string_view text);

// The POSIX error a helper exit status names, if any.
std::optional<int> errno_of_helper_exit(int exit_code);

}  // namespace lizard::workspace::internal
