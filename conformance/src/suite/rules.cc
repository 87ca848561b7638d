#include "lizard/conformance/rules.h"

#include <cctype>

namespace lizard::conformance {
namespace {

constexpr unsigned kCmd = kNeedCommands;
constexpr unsigned kSh = kNeedCommands | kNeedShell;
constexpr unsigned kFs = kNeedFilesystem;
constexpr unsigned kFsSh = kNeedFilesystem | kNeedCommands | kNeedShell;
constexpr unsigned kRp = kNeedRealpath | kNeedCommands | kNeedShell;
constexpr unsigned kPf = kNeedPlatform;

std::vector<RuleInfo> make_table() {
  return {
      // Environment and ref
      {"env.ref-stable",
       "the ref is empty or final before first use, set once the environment exists, never changes",
       0, ""},
      {"env.working-dir-canonical",
       "working_dir() is absolute, normalized, symlink-free; pwd -P prints it", 0, ""},
      {"env.concurrent-first-use",
       "8 operations started at once on a fresh backend reach one environment", 0, ""},
      {"env.attach-by-ref",
       "a backend built from the ref sees the same files and commands; same ref", kNeedAttach, ""},
      {"env.attach-destroyed-unavailable",
       "attaching to a destroyed environment is WorkspaceUnavailableError and creates nothing",
       kNeedAttach, ""},
      {"env.destroy-during-command",
       "destroying the environment while a command runs makes run raise WorkspaceUnavailableError",
       kSh, ""},
      {"env.outlives-backend-object",
       "dropping the backend object does not destroy the environment", kNeedAttach, ""},
      // Commands
      {"cmd.result-fields", "printf out; printf err >&2; exit 7 gives (7, out, err)", kSh, ""},
      {"cmd.stdin-at-eof", "read value || printf eof prints eof", kSh, ""},
      {"cmd.missing-program-127", "an argv whose program does not exist returns 127, no throw",
       kCmd, ""},
      {"cmd.not-executable-126", "an argv naming a non-executable file returns 126", kSh, ""},
      {"cmd.signal-exit-code", "a command killed by signal N returns 128+N", kSh, ""},
      {"cmd.argv-literal",
       "argv items with shell syntax, newlines, a leading '-' and 100 KiB arrive byte for byte",
       kCmd, ""},
      {"cmd.utf8-replacement",
       "invalid UTF-8 becomes U+FFFD on both streams; valid characters stay intact anywhere", kSh,
       ""},
      {"cmd.nul-preserved", "a NUL byte in the output is kept", kSh, ""},
      {"cmd.streams-separate",
       "interleaved writes to stdout and stderr arrive whole, in order, unmixed", kSh, ""},
      {"cmd.output-complete", "9 KiB and 5 MiB on each stream come back complete", kSh, ""},
      {"cmd.output-limit",
       "over 10 MiB raises WorkspaceOutputLimitError (limit, 64 KiB heads), stops the group; 10 "
       "MiB exactly is fine",
       kSh, ""},
      {"cmd.background-child-does-not-hold",
       "a background child holding stdout does not hold the result; it keeps running", kSh, ""},
      {"cmd.timeout",
       "a command over its timeout raises WorkspaceTimeoutError soon after the deadline", kSh, ""},
      {"cmd.timeout-partial-output", "output written before the deadline is in the timeout error",
       kSh, ""},
      {"cmd.timeout-stops-group",
       "after a timeout the command and its foreground children are gone", kSh, ""},
      {"cmd.timeout-invalid",
       "zero, negative, NaN and infinite timeouts are std::invalid_argument and nothing runs", kSh,
       ""},
      {"cmd.cancellation",
       "stop on the token stops the process group within seconds; run raises a cancellation error",
       kSh, ""},
      {"cmd.env-added", "a variable passed in env is visible to the command", kSh, ""},
      {"cmd.env-not-inherited",
       "host variables (a random canary, the API key) are not visible to the command", kCmd, ""},
      {"cmd.starts-in-working-dir", "a command starts in working_dir()", kSh, ""},
      {"cmd.concurrent", "16 commands at once each get their own output and exit code", kSh, ""},
      // Files
      {"fs.bytes-round-trip",
       "all 256 byte values round-trip to a path with missing parents; overwrite replaces", kFs,
       ""},
      {"fs.empty-file", "an empty file round-trips and stats with size 0", kFs, ""},
      {"fs.large-round-trip", "8 MiB and 64 MiB round-trip exactly", kFs, ""},
      {"fs.exists", "true for a file and a directory, false for an absent path", kFs, ""},
      {"fs.stat-and-list",
       "stat and list_dir report name, absolute path, is_dir, size; one level, sorted by name", kFs,
       ""},
      {"fs.make-dir", "make_dir creates parents; a second call is a no-op", kFs, ""},
      {"fs.shared-with-commands",
       "files written by the files API are seen by commands and the other way round", kFsSh, ""},
      {"fs.missing-not-found",
       "read_bytes, stat, list_dir, remove of a missing path raise no_such_file_or_directory", kFs,
       ""},
      {"fs.read-dir-is-a-directory", "read_bytes of a directory is is_a_directory", kFs, ""},
      {"fs.write-dir-is-a-directory", "write_bytes to a directory is is_a_directory", kFs, ""},
      {"fs.list-file-not-a-directory", "list_dir of a file is not_a_directory", kFs, ""},
      {"fs.file-as-parent-not-a-directory", "a file used as a parent directory is not_a_directory",
       kFs, ""},
      {"fs.make-dir-over-file-exists", "make_dir over a file is file_exists", kFs, ""},
      {"fs.permission-denied",
       "chmod 000 makes read and write raise permission_denied (skipped when commands run as root)",
       kFsSh, ""},
      {"fs.fifo-read-does-not-hang", "reading a FIFO with no writer fails within seconds", kFsSh,
       ""},
      {"fs.symlink-loop-listing",
       "a self-referencing link lists as a non-directory and does not break the listing", kFsSh,
       ""},
      {"fs.remove-file-or-tree", "remove removes a file, and a directory with its contents", kFs,
       ""},
      {"fs.remove-link-not-target", "removing a symlink leaves its target", kFsSh, ""},
      {"fs.remove-refuses-working-dir",
       "removing the working dir, '.', an ancestor or '/' is std::invalid_argument; nothing "
       "removed",
       kFs, ""},
      {"fs.write-through-symlink", "writing to a link changes the target", kFsSh, ""},
      {"fs.write-keeps-mode", "overwriting an executable file keeps its mode bits", kFsSh, ""},
      {"fs.odd-names", "odd names round-trip through write, list, stat and remove", kFs, ""},
      {"fs.relative-path-rejected", "a relative path is std::invalid_argument", kFs, ""},
      // Realpath
      {"path.realpath",
       "realpath resolves links from the link's directory, link/.. from the target, keeps missing "
       "parts",
       kRp, ""},
      {"path.realpath-loop",
       "a link loop ends within seconds, with an error or a path inside the loop's directory", kRp,
       ""},
      {"path.entries-follow-links", "stat and list_dir report a link to a directory as a directory",
       kFsSh, ""},
      // The lizard profile
      {"lizard.no-request-at-construction", "building a backend sends nothing", kPf, "lizard"},
      {"lizard.one-create", "concurrent first use sends exactly one create", kPf, "lizard"},
      {"lizard.create-body",
       "the create asks for template interpreter, the size, the lifetime; envs only what the "
       "caller passed",
       kPf, "lizard"},
      {"lizard.root-in-workspace", "commands run as root in /workspace", kSh, "lizard"},
      {"lizard.unknown-ref",
       "an unknown or expired ref raises WorkspaceUnavailableError and sends no create", kPf,
       "lizard"},
      {"lizard.no-renew-on-attach", "attaching sends no lifetime change", kPf, "lizard"},
      {"lizard.run-end-keeps-sandbox", "no delete is sent unless destroy() is called", kPf,
       "lizard"},
      {"lizard.destroy",
       "destroy() deletes the sandbox; later operations are unavailable; twice is fine", kPf,
       "lizard"},
      {"lizard.key-stays-on-host", "the API key is in no request body, error message or log line",
       kPf | kSh, "lizard"},
      {"lizard.output-past-server-cap",
       "output far beyond the 512 KiB exec cap comes back complete through the files API",
       kPf | kSh, "lizard"},
      {"lizard.binary-files",
       "file bytes travel through the files API (base64 write, raw read), not command output",
       kPf | kFs, "lizard"},
      {"lizard.expired-mid-session",
       "a sandbox that expires between operations makes the next one unavailable", kPf, "lizard"},
      {"lizard.credentials-rejected",
       "a rejected key: unavailable on attach, a clear authentication error on create", kPf,
       "lizard"},
      {"lizard.transient-errors",
       "5xx, 429 and dropped connections raise the transient error; a failed create is not "
       "repeated",
       kPf, "lizard"},
      {"lizard.no-rerun-after-drop", "a command whose connection dropped is not started twice",
       kPf | kSh, "lizard"},
      {"lizard.long-command",
       "a command longer than the per-request exec limit completes with its full output", kPf | kSh,
       "lizard", true},
      {"lizard.unsupported-501",
       "operations the API answers with 501 are a clear not-supported error", kPf, "lizard"},
  };
}

}  // namespace

const std::vector<RuleInfo>& all_rules() {
  static const std::vector<RuleInfo> table = make_table();
  return table;
}

const RuleInfo* find_rule(std::string_view id) {
  for (const RuleInfo& rule : all_rules()) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

std::string gtest_name(std::string_view id) {
  std::string name;
  bool upper = true;
  for (char c : id) {
    if (c == '.' || c == '-') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return name;
}

const RuleInfo* find_rule_by_gtest_name(std::string_view name) {
  for (const RuleInfo& rule : all_rules()) {
    if (gtest_name(rule.id) == name) return &rule;
  }
  return nullptr;
}

}  // namespace lizard::conformance
