#include "rule_bodies.h"

#include <cstdlib>
#include <mutex>
#include <string_view>

namespace lizard::conformance::internal {

std::pair<std::string, std::string> host_canary() {
  static std::once_flag once;
  static std::pair<std::string, std::string> canary;
  std::call_once(once, [] {
    canary = {"LIZARD_CONFORMANCE_CANARY_" + random_hex(8), "canary-" + random_hex(16)};
    ::setenv(canary.first.c_str(), canary.second.c_str(), 1);
    // A backend that passes the host environment on would also pass the key;
    // give the host one to leak when it has none (cmd.env-not-inherited).
    ::setenv("LIZARD_API_KEY", ("liz_conformance_canary_" + random_hex(16)).c_str(), 0);
  });
  return canary;
}

RuleBody find_body(std::string_view id) {
  struct Entry {
    std::string_view id;
    RuleBody body;
  };
  static const Entry kBodies[] = {
      {"env.ref-stable", &env_ref_stable},
      {"env.working-dir-canonical", &env_working_dir_canonical},
      {"env.concurrent-first-use", &env_concurrent_first_use},
      {"env.attach-by-ref", &env_attach_by_ref},
      {"env.attach-destroyed-unavailable", &env_attach_destroyed_unavailable},
      {"env.destroy-during-command", &env_destroy_during_command},
      {"env.outlives-backend-object", &env_outlives_backend_object},
      {"cmd.result-fields", &cmd_result_fields},
      {"cmd.stdin-at-eof", &cmd_stdin_at_eof},
      {"cmd.missing-program-127", &cmd_missing_program_127},
      {"cmd.not-executable-126", &cmd_not_executable_126},
      {"cmd.signal-exit-code", &cmd_signal_exit_code},
      {"cmd.argv-literal", &cmd_argv_literal},
      {"cmd.utf8-replacement", &cmd_utf8_replacement},
      {"cmd.nul-preserved", &cmd_nul_preserved},
      {"cmd.streams-separate", &cmd_streams_separate},
      {"cmd.output-complete", &cmd_output_complete},
      {"cmd.output-limit", &cmd_output_limit},
      {"cmd.background-child-does-not-hold", &cmd_background_child_does_not_hold},
      {"cmd.timeout", &cmd_timeout},
      {"cmd.timeout-partial-output", &cmd_timeout_partial_output},
      {"cmd.timeout-stops-group", &cmd_timeout_stops_group},
      {"cmd.timeout-invalid", &cmd_timeout_invalid},
      {"cmd.cancellation", &cmd_cancellation},
      {"cmd.env-added", &cmd_env_added},
      {"cmd.env-not-inherited", &cmd_env_not_inherited},
      {"cmd.starts-in-working-dir", &cmd_starts_in_working_dir},
      {"cmd.concurrent", &cmd_concurrent},
      {"fs.bytes-round-trip", &fs_bytes_round_trip},
      {"fs.empty-file", &fs_empty_file},
      {"fs.large-round-trip", &fs_large_round_trip},
      {"fs.exists", &fs_exists},
      {"fs.stat-and-list", &fs_stat_and_list},
      {"fs.make-dir", &fs_make_dir},
      {"fs.shared-with-commands", &fs_shared_with_commands},
      {"fs.missing-not-found", &fs_missing_not_found},
      {"fs.read-dir-is-a-directory", &fs_read_dir_is_a_directory},
      {"fs.write-dir-is-a-directory", &fs_write_dir_is_a_directory},
      {"fs.list-file-not-a-directory", &fs_list_file_not_a_directory},
      {"fs.file-as-parent-not-a-directory", &fs_file_as_parent_not_a_directory},
      {"fs.make-dir-over-file-exists", &fs_make_dir_over_file_exists},
      {"fs.permission-denied", &fs_permission_denied},
      {"fs.fifo-read-does-not-hang", &fs_fifo_read_does_not_hang},
      {"fs.symlink-loop-listing", &fs_symlink_loop_listing},
      {"fs.remove-file-or-tree", &fs_remove_file_or_tree},
      {"fs.remove-link-not-target", &fs_remove_link_not_target},
      {"fs.remove-refuses-working-dir", &fs_remove_refuses_working_dir},
      {"fs.write-through-symlink", &fs_write_through_symlink},
      {"fs.write-keeps-mode", &fs_write_keeps_mode},
      {"fs.odd-names", &fs_odd_names},
      {"fs.relative-path-rejected", &fs_relative_path_rejected},
      {"path.realpath", &path_realpath},
      {"path.realpath-loop", &path_realpath_loop},
      {"path.entries-follow-links", &path_entries_follow_links},
      {"lizard.no-request-at-construction", &lizard_no_request_at_construction},
      {"lizard.one-create", &lizard_one_create},
      {"lizard.create-body", &lizard_create_body},
      {"lizard.root-in-workspace", &lizard_root_in_workspace},
      {"lizard.unknown-ref", &lizard_unknown_ref},
      {"lizard.no-renew-on-attach", &lizard_no_renew_on_attach},
      {"lizard.run-end-keeps-sandbox", &lizard_run_end_keeps_sandbox},
      {"lizard.destroy", &lizard_destroy},
      {"lizard.key-stays-on-host", &lizard_key_stays_on_host},
      {"lizard.output-past-server-cap", &lizard_output_past_server_cap},
      {"lizard.binary-files", &lizard_binary_files},
      {"lizard.expired-mid-session", &lizard_expired_mid_session},
      {"lizard.credentials-rejected", &lizard_credentials_rejected},
      {"lizard.transient-errors", &lizard_transient_errors},
      {"lizard.no-rerun-after-drop", &lizard_no_rerun_after_drop},
      {"lizard.long-command", &lizard_long_command},
      {"lizard.unsupported-501", &lizard_unsupported_501},
  };
  for (const auto& entry : kBodies) {
    if (entry.id == id) return entry.body;
  }
  return nullptr;
}

}  // namespace lizard::conformance::internal
