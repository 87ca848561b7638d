// The rows of the lizard profile (lizard.*): rules about the reference backend's HTTP traffic.
// Each body asks the session's platform view for what it needs (LIZARD_NEED_PLATFORM); a
// live session offers backends with overrides and its own requests' journal, so only the
// rules that need request bodies, faults or a short exec limit SKIP live.
// One row per rule: its ID, what it checks, why, the Pydantic AI counterpart,
// what it needs, its profile and its body. docs/contract.md's tables are
// generated from these rows (see rule_docs.cc).
#include "rule_bodies.h"
#include "rule_tables.h"

namespace lizard::conformance::internal {
std::vector<RuleInfo> lizard_profile_rules() {
  return {
      {.id = "lizard.no-request-at-construction",
       .summary = "building a backend sends nothing",
       .why = "Building a backend must be free: agents build many and use few.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_no_request_at_construction},
      {.id = "lizard.one-create",
       .summary = "concurrent first use sends exactly one create",
       .why = "Each sandbox costs money; concurrency must not double it.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_one_create},
      {.id = "lizard.create-body",
       .summary = "the create asks for template interpreter, the size, the lifetime; envs only "
                  "what the caller passed",
       .why =
           "The sandbox must be what was configured; envs carry nothing the caller did not pass.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_create_body},
      {.id = "lizard.root-in-workspace",
       .summary = "commands run as root in /workspace",
       .why = "The documented environment of the reference backend.",
       .needs = kSh,
       .profile = "lizard",
       .body = &lizard_root_in_workspace},
      {.id = "lizard.unknown-ref",
       .summary = "an unknown or expired ref raises WorkspaceUnavailableError and sends no create",
       .why = "Attaching must never create a replacement sandbox.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_unknown_ref},
      {.id = "lizard.no-renew-on-attach",
       .summary = "attaching sends no lifetime change",
       .why = "Attaching must not extend a lifetime the owner chose (and pays for).",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_no_renew_on_attach},
      {.id = "lizard.run-end-keeps-sandbox",
       .summary = "no delete is sent unless destroy() is called",
       .why = "Only `destroy()` deletes; the sandbox may be resumed later.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_run_end_keeps_sandbox},
      {.id = "lizard.destroy",
       .summary = "destroy() deletes the sandbox; later operations are unavailable; twice is fine",
       .why = "Deleting is the only way to stop paying; idempotent so cleanup can retry.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_destroy},
      {.id = "lizard.key-stays-on-host",
       .summary = "the API key is in no request body, error message or log line",
       .why = "The key grants the whole account; sandboxed code must never see it.",
       .needs = kPf | kSh,
       .profile = "lizard",
       .body = &lizard_key_stays_on_host,
       .wait_seconds = 1.0},
      {.id = "lizard.output-past-server-cap",
       .summary =
           "output far beyond the 512 KiB exec cap comes back complete through the files API",
       .why = "The API caps each stream at 512 KiB; the contract promises 10 MiB.",
       .needs = kPf | kSh,
       .profile = "lizard",
       .body = &lizard_output_past_server_cap},
      {.id = "lizard.binary-files",
       .summary =
           "every byte value round-trips on both eras: raw reads; UTF-8 writes in one request, "
           "other bytes as text decoded in the sandbox",
       .why = "Command output is text-only JSON and the kubernetes era takes only UTF-8 uploads; "
              "bytes must still arrive exact.",
       .needs = kPf | kFs,
       .profile = "lizard",
       .body = &lizard_binary_files},
      {.id = "lizard.ref-shapes",
       .summary = "refs whose id is empty, ., .., or holds / ? # % are unavailable or "
                  "invalid_argument and reach no other route",
       .why = "A ref comes from storage an agent can write; a crafted id must not turn into a "
              "list, another sandbox or another route.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_ref_shapes},
      {.id = "lizard.expired-mid-session",
       .summary = "a sandbox that expires between operations makes the next one unavailable (the "
                  "mock's clock moves; live, a 10 s lifetime is waited out)",
       .why = "Expiry is normal on a cloud platform and must be reported as unavailable.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_expired_mid_session},
      {.id = "lizard.credentials-rejected",
       .summary = "a rejected key: unavailable on attach, a clear authentication error on create",
       .why = "A bad key must be a clear error, never a retry loop or a hang.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_credentials_rejected},
      {.id = "lizard.transient-errors",
       .summary = "5xx, 429 and dropped connections raise the transient error; a failed create is "
                  "not repeated",
       .why =
           "Callers retry transient errors; a blind retry of an admitted create doubles sandboxes.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_transient_errors},
      {.id = "lizard.no-rerun-after-drop",
       .summary = "a command whose connection dropped is not started twice",
       .why = "Re-running a non-idempotent command after a dropped connection corrupts state.",
       .needs = kPf | kSh,
       .profile = "lizard",
       .body = &lizard_no_rerun_after_drop,
       .wait_seconds = 1.0},
      {.id = "lizard.long-command",
       .summary = "a command longer than the per-request exec limit completes with its full output",
       .why = "Commands may outlive the API's per-request exec limit (the mock's is shortened to "
              "1.5 s for this rule).",
       .needs = kPf | kSh,
       .profile = "lizard",
       .body = &lizard_long_command,
       .wants_short_exec_limit = true,
       .wait_seconds = 3.5},
      {.id = "lizard.unsupported-501",
       .summary = "operations the API answers with 501 are a clear not-supported error",
       .why = "Platforms differ by era; a 501 must read as \"not supported\", not as a bug.",
       .needs = kPf,
       .profile = "lizard",
       .body = &lizard_unsupported_501},
  };
}

}  // namespace lizard::conformance::internal
