/*
 * The sender (engine/sender.c, plan.c) against a receiver that breaks the
 * rules (roles.h explains the rows). The source is rt_make_source's:
 *
 *     id 0 src/, 1 src/a (100 bytes, one block), 2 src/d/, 3 src/d/b
 *     (150000 bytes, three blocks), 4 src/e (empty), 5 src/ln -> a
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "roles.h"

#define OFFERS "PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d " \
    "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln"
#define READY_ { F_READY("") }

/* After a STOP and the end of the transfer (plan_end): the file it
 * named counts as failed only when it was offered and is not finished. */
static void
stop_counts(struct rt *rt, uint64_t failed)
{
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_failed), failed);
    CHECK(rt->x.kept_known);
    CHECK_EQ_U64(rt->x.kept_files, 2);
    CHECK_EQ_U64(rt->x.kept_bytes, 2 * RT_BS);
}

static void
stop_failed_one(struct rt *rt)
{
    stop_counts(rt, 1);
}

static void
stop_failed_none(struct rt *rt)
{
    stop_counts(rt, 0);
}

static const struct rt_case sender_rules[] = {
    /* A live plan (a scan that goes on): PLAN says so, entries are
     * offered as the scan adds them, and TOTALS, then END, wait for its
     * end. */
    { "live_offers_as_scanned", .live = 1,
      .script = { READY_, { F_SKIP(0) }, { F_WANT(1) }, { F_SKIP(2) },
                  { F_WANT(3) }, { F_WANT(4) }, { F_SKIP(5) }, { F_DONE(1) },
                  { F_DONE(3), ON(1) }, { F_DONE(4) }, { F_SCAN_ADD("src/z") },
                  { F_IDLE }, { F_SKIP(6) }, { F_SCAN_END(0) }, { F_IDLE },
                  { F_SUMMARY } },
      .out = "PLAN+L ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d "
             "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln BLOCK:1:0 FEND:1 "
             "BLOCK:3:0-2 FEND:3 FEND:4 ENTRY:6:src/z TOTALS:7 END" },
    /* One entry may yet be a single file: PLAN waits for the scan. */
    { "live_single_waits", .live = 1, .src = "src/a",
      .script = { { F_IDLE }, { F_SCAN_END(0) }, { F_IDLE } },
      .out = "PLAN:1 ENTRY:0:a" },
    /* A receiver that does not know TOTALS gets the whole plan. */
    { "live_needs_cap", .live = 1, .caps_off = PROTO_CAP_LIVE,
      .script = { { F_IDLE }, { F_SCAN_END(0) }, { F_IDLE } },
      .out = OFFERS },
    { "live_scan_fails", .live = 1,
      .script = { READY_, { F_SCAN_END(FERRY_ERR_TOO_LARGE) }, { F_IDLE } },
      .err = FERRY_ERR_TOO_LARGE,
      .out = "PLAN+L ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d "
             "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln" },
    { "push_all",
      .script = { READY_, { F_SKIP(0) }, { F_WANT(1) }, { F_SKIP(2) },
                  { F_WANT(3) }, { F_WANT(4) }, { F_SKIP(5) }, { F_DONE(1) },
                  { F_DONE(3), ON(1) }, { F_DONE(4) }, { F_SUMMARY } },
      .out = OFFERS " BLOCK:1:0 FEND:1 BLOCK:3:0-2 FEND:3 FEND:4 END" },
    { "receiver_fails_some",
      .script = { READY_, { F_SKIP(0) }, { F_FAIL(1) }, { F_SKIP(2) },
                  { F_WANT(3) }, { F_FAIL(4) }, { F_FAIL(5) },
                  { .type = MSG_FILE_DONE, .id = 3, .code = -ENOSPC },
                  { F_SUMMARY } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3 END" },
    /* STOP: what the destination keeps, and the file the receiver's
     * error met (its ERROR follows), whatever stream it comes on. */
    { "stop_names_a_file_under_way", .caps_on = PROTO_CAP_STOP,
      .check = stop_failed_one,
      .script = { READY_, { F_WANT(3) }, { F_STOP(3, 2), ON(1) } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "stop_names_a_file_finished", .caps_on = PROTO_CAP_STOP,
      .check = stop_failed_none,
      .script = { READY_, { F_WANT(1) }, { F_DONE(1) }, { F_STOP(1, 2) } },
      .out = OFFERS " BLOCK:1:0 FEND:1" },
    { "stop_names_no_file", .caps_on = PROTO_CAP_STOP,
      .check = stop_failed_none,
      .script = { READY_, { F_STOP(MSG_STOP_NONE, 2) } }, .out = OFFERS },
    { "stop_names_a_directory", .caps_on = PROTO_CAP_STOP,
      .check = stop_failed_none,
      .script = { READY_, { F_STOP(0, 2) } }, .out = OFFERS },
    { "stop_names_no_entry", .caps_on = PROTO_CAP_STOP,
      .check = stop_failed_none,
      .script = { READY_, { F_STOP(4000000000u, 2) } }, .out = OFFERS },
    { "stop_without_capability",
      .script = { READY_, { F_STOP(3, 2) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "ready_twice",
      .script = { READY_, READY_ },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "ready_rename_many_files",
      .script = { { F_READY("x") } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "ready_rename_single_file",
      .src = "src/a", .caps_off = PROTO_CAP_SINGLE_EARLY,
      .script = { { F_READY("new") }, { F_WANT(0) }, { F_DONE(0) },
                  { F_SUMMARY } },
      .out = "PLAN:1 ENTRY:0:new BLOCK:0:0 FEND:0 END" },
    /* Offers follow PLAN without waiting for READY, but for a single file
     * to a receiver that does not rename it itself (READY may rename it);
     * READY still comes first. */
    { "single_file_waits_for_ready",
      .src = "src/a", .caps_off = PROTO_CAP_SINGLE_EARLY,
      .script = { { F_SKIP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1" },
    { "single_file_early",
      .src = "src/a",
      .script = { { F_READY("new") }, { F_WANT(0) }, { F_DONE(0) },
                  { F_SUMMARY } },
      .out = "PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    { "single_file_early_reply_before_ready",
      .src = "src/a",
      .script = { { F_SKIP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:a" },
    { "reply_before_ready",
      .script = { { F_SKIP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    /* After END every entry is answered: a REPLY answers nothing. */
    { "reply_after_end",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SKIP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "reply_after_summary",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY },
                  { F_SKIP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "reply_never_offered",
      .script = { READY_, { F_SKIP(6) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "want_never_offered",
      .script = { READY_, { F_WANT(7) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "reply_twice",
      .script = { READY_, { F_WANT(1) }, { F_SKIP(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:1:0 FEND:1" },
    { "want_directory",
      .script = { READY_, { F_WANT(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "want_symlink",
      .script = { READY_, { F_WANT(5) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "resume_without_capability",
      .caps_off = PROTO_CAP_RESUME,
      .script = { READY_, { F_WANT_R(3) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "resume_empty_file",
      .script = { READY_, { F_WANT_R(4) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    /* SIGS describe each block of a file wanted with RESUME, once. */
    { "resume_matched_and_needed",
      .script = { READY_, { F_WANT_R(3) }, { F_HAVE(3, 0, 1) },
                  { F_NEED(3, 1, 2) }, { F_DONE(3) } },
      .out = OFFERS " MATCH:3:0+1 BLOCK:3:1-2 FEND:3" },
    { "resume_held_blocks_differ",
      .script = { READY_, { F_WANT_R(3) }, { F_HAVE(3, 0, 2), .v = RV_BADHASH },
                  { F_NEED(3, 2, 1) }, { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sigs_without_resume",
      .script = { READY_, { F_WANT(3) }, { F_NEED(3, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sigs_before_reply",
      .script = { READY_, { F_NEED(3, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_never_offered",
      .script = { READY_, { F_NEED(6, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_first_past_the_end",
      .script = { READY_, { F_WANT_R(3) }, { F_NEED(3, 3, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_first_far_past_the_end",
      .script = { READY_, { F_WANT_R(3) }, { F_NEED(3, 1000, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_before_ready",
      .script = { { F_NEED(3, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_run_past_the_end",
      .script = { READY_, { F_WANT_R(3) }, { F_NEED(3, 2, 2) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_block_twice",
      .script = { READY_, { F_WANT_R(3) }, { F_NEED(3, 0, 2) },
                  { F_HAVE(3, 1, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:3:0-1" },
    { "sigs_after_file_given_up",
      .script = { READY_, { F_WANT_R(3) }, { F_TOUCH("src/d/b") },
                  { F_NEED(3, 0, 1) }, { F_NEED(3, 1, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " FEND:3:CHANGED" },
    { "source_changed",
      .script = { READY_, { F_TOUCH("src/a") }, { F_WANT(1) },
                  { .type = MSG_FILE_DONE, .id = 1, .code = FERRY_ERR_CHANGED },
                  { F_SKIP(0) }, { F_SKIP(2) }, { F_SKIP(3) }, { F_SKIP(4) },
                  { F_SKIP(5) }, { F_SUMMARY } },
      .out = OFFERS " FEND:1:CHANGED END" },
    /* FILE_DONE answers a FILE_END, once. */
    { "file_done_before_ready",
      .script = { { F_DONE(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "file_done_never_offered",
      .script = { READY_, { F_DONE(6) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "file_done_not_ended",
      .script = { READY_, { F_WANT_R(3) }, { F_DONE(3) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "file_done_skipped",
      .script = { READY_, { F_SKIP(1) }, { F_DONE(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "file_done_twice",
      .script = { READY_, { F_WANT(1) }, { F_DONE(1) }, { F_DONE(1), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:1:0 FEND:1" },
    /* The conversation is on stream 0, in its order. */
    { "summary_before_end",
      .script = { READY_, { F_SUMMARY } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "frame_after_summary",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY },
                  { F_DONE(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    /* READBACK: once, after END, before SUMMARY, with its capability. */
    /* After END (every entry answered, every file done) and after
     * SUMMARY, what asks for data or stops a file comes too late. */
    { "sigs_after_end",
      .src = "src/a",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_NEED(0, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    { "delta_sigs_after_end",
      .src = "src/a",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) },
                  { F_DSIGS(0, 64, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    { "delta_blocks_after_end",
      .src = "src/a",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) },
                  { F_DBLOCKS(0, 64, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    { "basis_after_end",
      .src = "src/a",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) },
                  { F_BASIS(0, "src/a", 100, NULL) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    { "stop_after_summary", .caps_on = PROTO_CAP_STOP,
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY },
                  { F_STOP(0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "retire_after_summary", .caps_on = PROTO_CAP_RETIRE,
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY },
                  { F_RETIRE(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "readback_then_summary",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_READBACK(4) },
                  { F_SUMMARY } },
      .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "readback_twice",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_READBACK(4) },
                  { F_READBACK(4) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "readback_before_end",
      .script = { READY_, { F_READBACK(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "readback_after_summary",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY },
                  { F_READBACK(4) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "readback_without_capability",
      .src = "src/e", .caps_off = PROTO_CAP_READBACK,
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_READBACK(4) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "readback_on_stream_1",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) },
                  { F_READBACK(4), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "ready_on_stream_1",
      .script = { { F_READY(""), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "reply_on_stream_1",
      .script = { READY_, { F_SKIP(0), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sigs_on_stream_1",
      .script = { READY_, { F_WANT_R(3) }, { F_NEED(3, 0, 3), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "summary_on_stream_1",
      .src = "src/e",
      .script = { READY_, { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY, ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e FEND:0 END" },
    { "receiver_frame_unknown",
      .script = { READY_, { F_PLAN(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "peer_error",
      .script = { READY_, { F_ERROR } },
      .err = FERRY_ERR_PEER, .out = OFFERS },
    { "lost_stream_0",
      .script = { READY_, { F_EOF } },
      .err = FERRY_ERR_CLOSED, .out = OFFERS },
    { "lost_stream_1",
      .src = "src/a",
      .script = { READY_, { F_EOF, ON(1) }, { F_WANT(0) }, { F_DONE(0) },
                  { F_SUMMARY } },
      .out = "PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    /* Its connection died outside a step (side_stream_lost): what it
     * sent of a file not done goes again on another stream. */
    { "lost_stream_1_gives_back", .flags = OPEN_F_SPARE_STREAM0,
      .src = "src/a",
      .script = { READY_, { F_IDLE, ON(1) }, { F_WANT(0) },
                  { F_LOST, ON(1) }, { F_DONE(0) }, { F_SUMMARY } },
      .out = "PLAN:1 ENTRY:0:a BLOCK:0:0@1 FEND:0@1 FEND:0 BLOCK:0:0 END" },
};

TEST(sender_rules)
{
    RT_RUN_TABLE(sender_rules, rt_sender_case);
}

/* Every allocation of a sender's push fails in turn (roles.h). */
TEST(sender_torture)
{
    static const struct rt_case c = {
        .name = "torture",
        .script = { READY_, { F_SKIP(0) }, { F_WANT(1) }, { F_SKIP(2) },
                    { F_WANT_R(3) }, { F_HAVE(3, 0, 1) }, { F_NEED(3, 1, 2) },
                    { F_WANT(4) }, { F_SKIP(5) }, { F_DONE(1) }, { F_DONE(3) },
                    { F_DONE(4) }, { F_SUMMARY } },
    };

    rt_torture(&c, 1);
}
