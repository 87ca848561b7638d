// The rule bodies, one function per rule (the rows in table_*.cc name them).
#pragma once

#include <string>
#include <utility>

#include "rule_context.h"

namespace lizard::conformance::internal {

// The host variable cmd.env-not-inherited looks for: {name, value}, set in
// this process's environment on the first call (with LIZARD_API_KEY, when unset) (thread-safe; call
// it before backends are made, as run_conformance and register_suite do).
std::pair<std::string, std::string> host_canary();

void env_ref_stable(RuleContext& ctx);
void env_working_dir_canonical(RuleContext& ctx);
void env_concurrent_first_use(RuleContext& ctx);
void env_attach_by_ref(RuleContext& ctx);
void env_attach_destroyed_unavailable(RuleContext& ctx);
void env_destroy_during_command(RuleContext& ctx);
void env_outlives_backend_object(RuleContext& ctx);
void cmd_result_fields(RuleContext& ctx);
void cmd_stdin_at_eof(RuleContext& ctx);
void cmd_missing_program_127(RuleContext& ctx);
void cmd_not_executable_126(RuleContext& ctx);
void cmd_signal_exit_code(RuleContext& ctx);
void cmd_argv_literal(RuleContext& ctx);
void cmd_utf8_replacement(RuleContext& ctx);
void cmd_nul_preserved(RuleContext& ctx);
void cmd_streams_separate(RuleContext& ctx);
void cmd_output_complete(RuleContext& ctx);
void cmd_output_limit(RuleContext& ctx);
void cmd_background_child_does_not_hold(RuleContext& ctx);
void cmd_timeout(RuleContext& ctx);
void cmd_timeout_partial_output(RuleContext& ctx);
void cmd_timeout_stops_group(RuleContext& ctx);
void cmd_timeout_invalid(RuleContext& ctx);
void cmd_cancellation(RuleContext& ctx);
void cmd_env_added(RuleContext& ctx);
void cmd_env_not_inherited(RuleContext& ctx);
void cmd_starts_in_working_dir(RuleContext& ctx);
void cmd_concurrent(RuleContext& ctx);
void cmd_env_exact(RuleContext& ctx);
void cmd_command_cannot_break_the_backend(RuleContext& ctx);
void cmd_argument_list_too_long(RuleContext& ctx);
void fs_bytes_round_trip(RuleContext& ctx);
void fs_empty_file(RuleContext& ctx);
void fs_large_round_trip(RuleContext& ctx);
void fs_exists(RuleContext& ctx);
void fs_stat_and_list(RuleContext& ctx);
void fs_make_dir(RuleContext& ctx);
void fs_shared_with_commands(RuleContext& ctx);
void fs_missing_not_found(RuleContext& ctx);
void fs_read_dir_is_a_directory(RuleContext& ctx);
void fs_write_dir_is_a_directory(RuleContext& ctx);
void fs_list_file_not_a_directory(RuleContext& ctx);
void fs_file_as_parent_not_a_directory(RuleContext& ctx);
void fs_make_dir_over_file_exists(RuleContext& ctx);
void fs_permission_denied(RuleContext& ctx);
void fs_fifo_read_does_not_hang(RuleContext& ctx);
void fs_symlink_loop_listing(RuleContext& ctx);
void fs_remove_file_or_tree(RuleContext& ctx);
void fs_remove_link_not_target(RuleContext& ctx);
void fs_remove_refuses_working_dir(RuleContext& ctx);
void fs_write_through_symlink(RuleContext& ctx);
void fs_write_keeps_mode(RuleContext& ctx);
void fs_odd_names(RuleContext& ctx);
void fs_relative_path_rejected(RuleContext& ctx);
void fs_names_that_look_like_errors(RuleContext& ctx);
void fs_unrepresentable_paths(RuleContext& ctx);
void path_realpath(RuleContext& ctx);
void path_realpath_loop(RuleContext& ctx);
void path_entries_follow_links(RuleContext& ctx);
void lizard_no_request_at_construction(RuleContext& ctx);
void lizard_one_create(RuleContext& ctx);
void lizard_create_body(RuleContext& ctx);
void lizard_root_in_workspace(RuleContext& ctx);
void lizard_unknown_ref(RuleContext& ctx);
void lizard_no_renew_on_attach(RuleContext& ctx);
void lizard_run_end_keeps_sandbox(RuleContext& ctx);
void lizard_destroy(RuleContext& ctx);
void lizard_key_stays_on_host(RuleContext& ctx);
void lizard_output_past_server_cap(RuleContext& ctx);
void lizard_binary_files(RuleContext& ctx);
void lizard_ref_shapes(RuleContext& ctx);
void lizard_expired_mid_session(RuleContext& ctx);
void lizard_credentials_rejected(RuleContext& ctx);
void lizard_transient_errors(RuleContext& ctx);
void lizard_no_rerun_after_drop(RuleContext& ctx);
void lizard_long_command(RuleContext& ctx);
void lizard_unsupported_501(RuleContext& ctx);

}  // namespace lizard::conformance::internal
