// The live-run sweeper: deletes sandboxes that earlier conformance runs
// tagged ("lizard-conformance-run") and that are older than a given age, and
// says what it deleted and what it kept. Untagged sandboxes are never
// touched. The tag is read from the sandbox's metadata or, only when it has
// no metadata at all (platforms that drop it, such as the kubernetes era),
// from the tags file the backend writes inside it (LizardOptions::tags,
// kTagsFile): one more request per such sandbox. A sandbox whose metadata
// lacks the tag is untagged whatever its files say (code running in it
// could write that file). Used by lizard-sweep and scripts/sweep-live.
//
// Thread safety: sweep() is reentrant; it uses its own API client.
#pragma once

#include <chrono>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/api/client.h"

namespace lizard::sweep {

// The metadata key the live conformance factory tags every sandbox with.
inline constexpr const char* kRunTag = "lizard-conformance-run";

struct SweepOptions {
  api::ClientOptions client;  // key, URL and project (ClientOptions::from_environment())
  // Only sandboxes at least this old are deleted.
  std::chrono::minutes older_than{30};
  // Only this run's sandboxes; empty: every tagged run (lizard-sweep refuses
  // an empty --run, which would mean every run).
  std::string run_id;
  // Report what would be deleted, delete nothing.
  bool dry_run = false;
  // "Now", to measure ages against (the platform's clock in tests).
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

struct SweptSandbox {
  std::string id;
  std::string run;                          // the run tag
  std::string rule;                         // "lizard-conformance-rule", when present
  std::optional<std::chrono::minutes> age;  // when its start time was read
};

struct SweepResult {
  std::vector<SweptSandbox> deleted;  // (or, in a dry run, would be)
  std::vector<SweptSandbox> kept_young;
  std::vector<SweptSandbox> failed;  // the delete raised (after retries)
  // Left alone because their tags could not be read (the tags file's read
  // failed other than 404 after retries, or the listing gave an ID that
  // names no route): they may be a run's, so the sweep did not finish.
  std::vector<SweptSandbox> unchecked;
  int untagged = 0;    // sandboxes without the tag, left alone
  int other_runs = 0;  // tagged by another run than options.run_id
};

// Lists the project's sandboxes and deletes the tagged ones at least
// options.older_than old. Writes one line per sandbox it deleted, kept or
// failed to delete or could not check to `log` (may be null), with every
// control character and non-ASCII byte of what the sandbox or the server
// gave (tags, IDs, times, messages) written as \xNN. A sandbox already gone
// counts as deleted. Reads of tags files and deletes are tried again after
// a transient failure (429, 5xx, a lost connection; Retry-After honoured up
// to 10 s), 4 times in all. Throws what the client throws when the list
// itself fails (authentication, transport, an answer that is not a list);
// never prints the key.
SweepResult sweep(const SweepOptions& options, std::ostream* log);

// Parses the API's timestamps, RFC 3339: "2025-01-31T12:34:56.789Z", the
// fraction optional (any number of digits, read to the millisecond), Z or
// an offset (+02:00, -10:00). std::nullopt when malformed, when anything
// follows, or when the year is outside 1970..2200 (a time_point of
// nanoseconds would overflow past 2262: "9999-12-31" is no start time).
std::optional<std::chrono::system_clock::time_point> parse_time(const std::string& text);

// `text` for a terminal: printable ASCII as is, every other byte (and the
// backslash) as \xNN, cut at about `max_bytes` with "...". What a sandbox
// holds must not move the cursor or forge a line of the sweep's output.
std::string printable(std::string_view text, std::size_t max_bytes = 200);

}  // namespace lizard::sweep
