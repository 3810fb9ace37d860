/*
 * list.h: every unit test case, registered once (after libuv's
 * test/test-list.h).
 *
 * TEST_LIST(X) expands X(name) for each case, in the order they run: the
 * lower layers first, so that the first failure points at the cause. A
 * case is defined in tests/unit/test_<module>.c with TEST(name) (check.h)
 * and named <module>_<what>, which groups the runner's output by module.
 * From this one list come the prototypes below, the enum that TEST()
 * checks a name against (a case missing here does not compile), and the
 * runner's table in main.c.
 */
#ifndef FERRY_TESTS_UNIT_LIST_H
#define FERRY_TESTS_UNIT_LIST_H

#define TEST_LIST(X) \
    /* test_alloc.c */ \
    X(alloc_fail_at) \
    X(alloc_env_probe) \
    X(alloc_fail_env) \
    X(alloc_grow) \
    X(arena_strings) \
    /* test_buf.c */ \
    X(buf_put_ints) \
    X(buf_growth) \
    X(buf_max) \
    X(buf_consume) \
    X(buf_unreserve_reset) \
    X(buf_str) \
    X(buf_empty_ptr) \
    X(buf_nomem) \
    /* test_rd.c */ \
    X(rd_ints) \
    X(rd_short) \
    X(rd_bytes) \
    X(rd_str16) \
    X(rd_str32) \
    /* test_text.c */ \
    X(text_escape) \
    X(text_escape_truncation) \
    X(text_escape_width) \
    X(text_escape_fit) \
    X(text_json_string) \
    X(text_lines) \
    X(text_bytes) \
    X(text_parse_size) \
    /* test_hash.c */ \
    X(hash_fd_tree) \
    X(hash_fd_errors) \
    X(keptsig_roundtrip) \
    X(keptsig_stale) \
    X(keptsig_store_rules) \
    X(hash_zero_block) \
    X(hash_is_zero) \
    X(hash_hex) \
    /* test_torrent.c */ \
    X(torrent_kat_tree) \
    X(torrent_kat_one_piece) \
    X(torrent_kat_odd) \
    X(torrent_empty_file) \
    X(torrent_order) \
    X(torrent_limits) \
    /* test_swarm.c */ \
    X(swarm_conduct_peers_and_pieces) \
    X(swarm_conduct_refusals) \
    X(swarm_conduct_done_released) \
    X(swarm_conduct_probe) \
    X(swarm_conduct_bundles) \
    X(swarm_conduct_window) \
    X(swarm_piece_len_aims) \
    X(swarm_window_follows_rate) \
    /* test_swarm_ca.c */ \
    X(swarm_ca_chain) \
    X(swarm_ca_names) \
    X(swarm_ca_fresh) \
    X(swarm_ca_limits) \
    X(swarm_ca_nomem) \
    /* test_swarm_line.c */ \
    X(swarm_line_good) \
    X(swarm_line_refused) \
    X(swarm_line_paths) \
    X(swarm_line_reader) \
    X(swarm_line_put) \
    X(swarm_line_put_reader) \
    X(swarm_line_put_big) \
    X(swarm_line_put_unframed) \
    /* test_fsx.c */ \
    X(fsx_path_check) \
    X(fsx_open_dir) \
    X(fsx_open_dir_symlink) \
    X(fsx_open_parent) \
    X(fsx_io) \
    X(fsx_split) \
    X(fsx_mkdir_p) \
    X(fsx_pipe_widen) \
    X(fsx_close_detached) \
    /* test_zst.c */ \
    X(zst_roundtrip) \
    X(zst_incompressible) \
    X(zst_bad_input) \
    X(zst_nomem) \
    X(zst_set_level) \
    /* test_frame.c */ \
    X(frame_parse_prefix) \
    X(frame_parse_limits) \
    X(frame_finish_limit) \
    X(frame_after_consume) \
    /* test_msg.c */ \
    X(msg_hello_roundtrip) \
    X(msg_open_roundtrip) \
    X(msg_open_ok_roundtrip) \
    X(msg_error_roundtrip) \
    X(msg_plan_roundtrip) \
    X(msg_ready_roundtrip) \
    X(msg_entry_roundtrip) \
    X(msg_reply_roundtrip) \
    X(msg_block_roundtrip) \
    X(msg_file_end_roundtrip) \
    X(msg_file_done_roundtrip) \
    X(msg_notice_roundtrip) \
    X(msg_end_roundtrip) \
    X(msg_summary_roundtrip) \
    X(msg_partial_roundtrip) \
    X(msg_mutate_every_type) \
    X(msg_rvmsg_rules) \
    X(msg_rvmsg_mutate) \
    X(msg_vol_bounds) \
    X(msg_sigs_roundtrip) \
    X(msg_sigs_fields) \
    X(msg_match_join_roundtrip) \
    X(msg_retire_roundtrip) \
    X(msg_delta_stop_roundtrip) \
    X(msg_delta_go_roundtrip) \
    X(msg_readback_roundtrip) \
    X(msg_stop_roundtrip) \
    X(msg_busy_roundtrip) \
    X(msg_basis_roundtrip) \
    X(msg_tensor_roundtrip) \
    X(msg_plan_live_totals) \
    X(msg_probe_bounds) \
    X(msg_types_covered) \
    X(msg_alloc_fail) \
    X(msg_encode_usage) \
    X(msg_block_reserve) \
    X(msg_entry_paths) \
    X(msg_entry_fields) \
    X(msg_reply_fields) \
    X(msg_block_fields) \
    X(msg_hello_fields) \
    X(msg_open_fields) \
    X(msg_open_bytes_limit) \
    X(msg_open_path_iter) \
    X(msg_ready_fields) \
    X(msg_plan_fields) \
    X(msg_partial_fields) \
    X(msg_err_wire) \
    X(msg_type_names) \
    /* test_msg_codec.c */ \
    X(msg_codec_table) \
    X(msg_codec_refusals) \
    X(msg_codec_checks) \
    X(msg_codec_delta_ops) \
    /* test_msg_doc.c */ \
    X(msg_doc_caps) \
    X(msg_doc_table) \
    /* test_journal.c */ \
    X(journal_roundtrip) \
    X(journal_mutate) \
    X(journal_header_fields) \
    X(journal_encode_limits) \
    X(journal_record_fields) \
    /* test_pathset.c */ \
    X(pathset_add_has) \
    X(plan_file_table) \
    X(plan_sent_before_cut) \
    X(plan_live_entries) \
    X(pathset_duplicates) \
    X(pathset_growth) \
    X(pathset_nomem) \
    /* test_partial.c */ \
    X(partial_any_order_resume) \
    X(partial_records_last_wins) \
    X(partial_probe_mismatch) \
    X(partial_hostile_state) \
    X(partial_light) \
    X(partial_zero_block) \
    X(partial_list_expire) \
    X(partial_key_salted) \
    /* test_dest_write.c */ \
    X(dest_write_commit) \
    X(dest_write_batch_limits) \
    X(dest_write_behind) \
    X(dest_write_one) \
    /* test_behind.c */ \
    X(behind_order) \
    /* test_waker.c */ \
    X(waker_set_away) \
    X(waker_behind_job) \
    X(waker_thread_wakes_loop) \
    X(waker_coalesces) \
    X(waker_wake_before_wait) \
    /* test_manifest.c */ \
    X(manifest_dir_form) \
    X(manifest_contents_form) \
    X(manifest_source_rule) \
    X(manifest_notices) \
    X(manifest_state_dir) \
    X(manifest_single_file) \
    X(manifest_listed_paths) \
    X(manifest_name_store) \
    X(manifest_top_clash) \
    /* test_tar.c */ \
    X(tar_roundtrip) \
    X(tar_piece_header) \
    X(tar_refused) \
    X(tar_mutate) \
    X(vman_roundtrip) \
    X(vman_refused) \
    /* test_volume.c */ \
    X(volume_roundtrip) \
    X(volume_frames) \
    X(volume_refused) \
    X(volume_pieces_refused) \
    X(volume_manifest_pieces) \
    X(volume_manifest_mismatch) \
    X(volume_damaged) \
    X(volume_writer_limits) \
    X(volume_mem_order) \
    X(volume_enc_reused) \
    X(volume_stage_behind) \
    X(volume_names) \
    X(volume_count_limit) \
    X(volume_zst_stream) \
    /* test_manifest_limits.c */ \
    X(manifest_link_target) \
    X(manifest_root) \
    X(manifest_max_entries) \
    X(manifest_too_deep) \
    X(manifest_local_paths) \
    X(manifest_scan_stops) \
    X(manifest_big_dir) \
    X(manifest_live_reader) \
    X(manifest_mtime_range) \
    /* test_adopt.c */ \
    X(adopt_receiver) \
    X(adopt_sender) \
    X(adopt_session) \
    X(adopt_dir_paths) \
    X(adopt_wire) \
    /* test_receiver_rules.c */ \
    X(receiver_rules) \
    X(receiver_data) \
    /* test_receiver_state.c */ \
    X(receiver_resume) \
    X(receiver_dest) \
    X(receiver_limits) \
    X(receiver_max_files) \
    X(receiver_max_pending) \
    X(receiver_sparse_work) \
    X(receiver_torture) \
    /* test_rollsum.c */ \
    X(rollsum_definition) \
    X(rollsum_long) \
    /* test_delta_rules.c */ \
    X(delta_receiver) \
    X(delta_sender) \
    X(tensor_receiver) \
    X(tensor_sender) \
    X(delta_kept) \
    X(delta_basis_file) \
    /* test_delta_work.c */ \
    X(delta_work_collide) \
    X(delta_work_zeros) \
    X(delta_work_moved) \
    X(delta_work_crowded) \
    /* test_volrecv.c */ \
    X(volrecv_rules) \
    X(volrecv_lost_then_blocks) \
    X(volrecv_second_volume) \
    X(volrecv_stream_bound) \
    X(volrecv_delivered_once) \
    /* test_volsend.c */ \
    X(volsend_rules) \
    X(volsend_changed) \
    X(volsend_block_level) \
    X(volsend_blocks_adapt) \
    /* test_sender_rules.c */ \
    X(sender_rules) \
    X(sender_torture) \
    /* test_side.c */ \
    X(side_sending) \
    X(side_sending_packs) \
    X(side_receiving) \
    /* test_filter.c */ \
    X(filter_glob) \
    X(filter_glob_budget) \
    X(filter_rules) \
    X(filter_scope) \
    X(filter_limits) \
    X(filter_ignore_file) \
    X(filter_exclude_from) \
    X(msg_filters_roundtrip) \
    X(msg_filters_mutate) \
    X(msg_filters_limits) \
    X(msg_space_codec) \
    /* test_ratelimit.c */ \
    X(ratelimit_debt_and_wait) \
    X(ratelimit_no_saving_up) \
    X(ratelimit_rate) \
    /* test_prune.c */ \
    X(prune_removes) \
    X(prune_refuses) \
    X(prune_depth) \
    X(prune_keeps_parent_mtime) \
    /* test_volkeep.c */ \
    X(volkeep_rules) \
    X(volkeep_sums) \
    X(volkeep_prunes_own) \
    X(volkeep_volume_bound) \
    X(volkeep_names) \
    X(volkeep_messages) \
    X(volkeep_sha256) \
    /* test_session_rules.c */ \
    X(session_agent) \
    X(session_client) \
    X(session_policy) \
    X(session_policy_delete) \
    /* test_width.c */ \
    X(width_push_long_links) \
    X(width_pull_long_links) \
    X(width_busy_box) \
    X(width_small_transfers) \
    X(width_short_link) \
    X(width_long_link_more) \
    /* test_streams.c */ \
    X(formcheck_zip) \
    X(formcheck_safetensors) \
    X(formcheck_npy) \
    X(formcheck_tar) \
    X(formcheck_volume) \
    X(formcheck_unknown) \
    X(formcheck_file_busy) \
    X(formcheck_read_error) \
    X(ckptfmt_read_bounds) \
    X(ckptfmt_read_shrunk) \
    /* test_tensor_piece.c */ \
    X(tensor_piece_roundtrip) \
    X(tensor_piece_shrinks) \
    X(tensor_piece_seq) \
    X(tensor_piece_refuses_fields) \
    X(tensor_piece_refuses_planes) \
    X(tensor_piece_refuses_seq) \
    X(tensor_piece_mutate) \
    /* test_tensor_layout.c */ \
    X(tensor_layout_safetensors) \
    X(tensor_layout_torch) \
    X(tensor_layout_npy) \
    X(tensor_layout_lookalikes) \
    X(tensor_layout_long_name) \
    X(tensor_layout_pair) \
    /* test_tensor_codec.c */ \
    X(tensor_codec_versions) \
    X(tensor_codec_changed_tensors) \
    X(tensor_codec_odd_blocks) \
    X(tensor_codec_torch_width) \
    X(tensor_codec_lookalike) \
    X(tensor_codec_many_tensors) \
    X(tensor_codec_wrong_basis) \
    X(tensor_codec_usage) \
    X(streams_group_full) \
    X(streams_handover_nobody) \
    X(streams_handover_too_large) \
    X(streams_handover) \
    X(streams_handover_other_ticket) \
    X(streams_rendezvous_admit) \
    X(streams_rendezvous_name) \
    X(streams_takeover_needs_ticket) \
    X(streams_write_fails_ends) \
    X(streams_wire_left) \
    X(streams_wire_left_compressed) \
    /* test_roles_push.c */ \
    X(push_one_stream) \
    X(push_three_streams) \
    X(push_compressed) \
    X(push_resume) \
    X(push_resume_streams) \
    X(push_delta_steps) \
    X(push_spare_stream0) \
    X(push_stream_lost) \
    X(push_stream_lost_answers) \
    X(push_volumes) \
    X(push_volumes_streams) \
    X(push_volumes_off_stream0) \
    X(push_volumes_resume) \
    /* test_client.c */ \
    X(client_parse_remote) \
    X(client_ssh_argv) \
    X(client_ssh_prefer_gcm) \
    X(client_cli_rules) \
    X(client_cli_basis_options) \
    X(client_cli_adopt_options) \
    X(client_sshcfg_parse) \
    X(client_shell_quote) \
    X(client_key_kind) \
    X(client_auth_would_ask) \
    X(client_key_kind_hostile) \
    X(client_login_link) \
    X(client_duration) \
    X(client_cli_retry_options) \
    /* test_client_status.c */ \
    X(client_status_role) \
    X(client_status_refuses) \
    X(client_status_print) \
    /* test_client_mirror.c */ \
    X(client_mirror_diff) \
    /* test_client_space.c */ \
    X(client_space_decision) \
    X(client_space_pull) \
    /* test_cli_habits.c */ \
    X(client_rate) \
    X(client_cli_habits) \
    X(client_compress_blocks) \
    X(client_space_fits) \
    X(client_cli_watch) \
    X(client_cli_letters) \
    X(client_cli_rsync_flags) \
    X(client_cli_options_first) \
    X(client_cli_volume_options) \
    X(client_pack_volume_size) \
    X(client_cli_dedupe) \
    X(client_cli_error_text) \
    X(client_retry_policy) \
    X(client_retry_signals) \
    X(client_retry_wait) \
    X(client_progress_line) \
    /* test_cli_boxes.c */ \
    X(client_cli_range) \
    X(client_cli_boxes_push) \
    X(client_cli_boxes_pull) \
    X(client_boxes_run) \
    X(client_boxes_status) \
    /* test_cli_opts.c */ \
    X(client_cli_help_rows) \
    X(client_cli_man_page) \
    /* test_bounds.c */ \
    X(bounds_zstd_window) \
    X(bounds_journal_records) \
    X(bounds_plan_window) \
    X(bounds_conn_inbox) \
    X(bounds_conn_inbox_shared) \
    /* test_owned.c */ \
    X(owned_round_trip) \
    X(owned_decode_mutations) \
    X(owned_decode_fields) \
    X(owned_put_bounds) \
    X(owned_put_bytes) \
    X(owned_check_changes) \
    X(owned_depth) \
    X(owned_file) \
    X(owned_kept_by_clean) \
    /* test_clean_state.c */ \
    X(clean_fails_partway) \
    /* test_policy.c */ \
    X(policy_restricted_paths) \
    X(policy_landlock) \
    X(policy_scope_fits) \
    /* test_watch.c */ \
    X(watch_readiness) \
    X(watch_framework_markers) \
    X(watch_stable_twice) \
    X(watch_changed_and_gone) \
    X(watch_markers) \
    X(watch_gives_up) \
    X(watch_basis_newest) \
    X(watch_look_n_log_n) \
    X(watch_look_stops) \
    X(watch_forgets_gone) \
    /* test_probe.c */ \
    X(probe_rounds_grow) \
    X(probe_slow_rounds_stop) \
    X(probe_client_rules) \
    X(probe_answer_rules) \
    /* test_key_clash.c */ \
    X(key_clash_one_stream) \
    X(key_clash_streams) \
    X(key_clash_resume) \
    /* test_known_hosts.c */ \
    X(client_known_lookup) \
    /* test_corpus.c */ \
    X(corpus_replay) \
    X(corpus_seeds_current)

#define TEST_DECLARE(name) void test_##name(void);
TEST_LIST(TEST_DECLARE)
#undef TEST_DECLARE

enum test_id {
#define TEST_ID(name) TEST_ID_##name,
    TEST_LIST(TEST_ID)
#undef TEST_ID
    TEST_ID_COUNT
};

#endif
