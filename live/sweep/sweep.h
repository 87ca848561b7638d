// The live-run sweeper: deletes sandboxes that earlier conformance runs
// tagged ("lizard-conformance-run") and that are older than a given age, and
// says what it deleted and what it kept. Untagged sandboxes are never
// touched. The tag is read from the sandbox's metadata, or (on platforms
// that drop metadata, such as the kubernetes era) from the tags file the
// backend writes inside it (LizardOptions::tags, kTagsFile): one more
// request per sandbox without the metadata tag. Used by lizard-sweep and
// scripts/sweep-live.
//
// Thread safety: sweep() is reentrant; it uses its own API client.
#pragma once

#include <chrono>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "lizard/api/client.h"

namespace lizard::sweep {

// The metadata key the live conformance factory tags every sandbox with.
inline constexpr const char* kRunTag = "lizard-conformance-run";

struct SweepOptions {
  api::ClientOptions client;  // key, URL and project (ClientOptions::from_environment())
  // Only sandboxes at least this old are deleted.
  std::chrono::minutes older_than{30};
  // Only this run's sandboxes; empty: every tagged run.
  std::string run_id;
  // Report what would be deleted, delete nothing.
  bool dry_run = false;
  // "Now", to measure ages against (the platform's clock in tests).
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

struct SweptSandbox {
  std::string id;
  std::string run;   // the run tag
  std::string rule;  // "lizard-conformance-rule", when present
  std::chrono::minutes age{0};
};

struct SweepResult {
  std::vector<SweptSandbox> deleted;  // (or, in a dry run, would be)
  std::vector<SweptSandbox> kept_young;
  std::vector<SweptSandbox> failed;  // the delete raised
  int untagged = 0;                  // sandboxes without the tag, left alone
  int other_runs = 0;                // tagged by another run than options.run_id
};

// Lists the project's sandboxes and deletes the tagged ones at least
// options.older_than old. Writes one line per sandbox it deleted, kept or
// failed to delete to `log` (may be null). A sandbox already gone counts as
// deleted. Throws what the client throws when the list itself fails
// (authentication, transport); never prints the key.
SweepResult sweep(const SweepOptions& options, std::ostream* log);

// Parses the API's timestamps ("2025-01-31T12:34:56.789Z", fraction optional).
// std::nullopt when malformed.
std::optional<std::chrono::system_clock::time_point> parse_time(const std::string& text);

}  // namespace lizard::sweep
