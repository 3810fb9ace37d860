/*
 * The receiver (engine/receiver.c, incoming.c, dest.c) fed frame by
 * frame: what it answers, the rules it enforces, and what the destination
 * holds afterwards (roles.h explains the rows).
 *
 * Files of the scripts: "a" of 100 bytes (one block), "b" of 150000 bytes
 * (blocks 0 and 1 of 65536 bytes, block 2 of 18928), "big" of RT_BIG
 * bytes (128 blocks, journaled, so resumable).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/manifest.h"
#include "roles.h"

#define B_SIZE 150000
#define B_LAST (B_SIZE - 2 * RT_BS)

/* The rules of the conversation (stream 0) and of file data. */
static const struct rt_case receiver_rules[] = {
    { "entry_before_plan",
      .script = { { F_FILE(0, "a", 100) } },
      .err = FERRY_ERR_PROTOCOL },
    { "end_before_plan",
      .script = { { F_END } },
      .err = FERRY_ERR_PROTOCOL },
    { "block_before_plan",
      .script = { { F_BLOCK(0, 0) } },
      .err = FERRY_ERR_PROTOCOL },
    { "notice_before_plan",
      .script = { { F_NOTICE } },
      .err = FERRY_ERR_PROTOCOL },
    { "totals_before_plan",
      .script = { { F_TOTALS(0) } },
      .err = FERRY_ERR_PROTOCOL },
    /* Data of a kind whose capability one side lacks. */
    { "match_without_resume", .caps_off = PROTO_CAP_RESUME,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) },
                  { F_MATCH(0, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "totals_without_live", .caps_off = PROTO_CAP_LIVE,
      .script = { { F_PLAN(1) }, { F_TOTALS(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "plan_twice",
      .script = { { F_PLAN(1) }, { F_PLAN(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "entry_id_equal",
      .script = { { F_PLAN(2) }, { F_FILE(1, "a", 100) },
                  { F_FILE(1, "b", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:1", .tree = "" },
    /* An id no manifest has: the receiver would hold a bit for each id
     * below it. */
    { "entry_id_past_manifest",
      .script = { { F_PLAN(1) }, { F_FILE(MANIFEST_MAX_ENTRIES, "a", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "entry_id_max",
      .script = { { F_PLAN(1) }, { F_FILE(UINT32_MAX, "a", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "entry_id_down",
      .script = { { F_PLAN(2) }, { F_FILE(2, "a", 100) },
                  { F_FILE(1, "b", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:2", .tree = "" },
    { "entry_more_than_plan",
      .script = { { F_PLAN(1) }, { F_DIR(0, "d") }, { F_DIR(1, "e") } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0", .tree = "d/" },
    /* A live PLAN: entries without a bound until TOTALS, then within
     * it; END only after TOTALS, which comes once and counts at least
     * what came. */
    { "live_plan_totals",
      .script = { { F_PLAN_LIVE }, { F_DIR(0, "d") }, { F_DIR(1, "e") },
                  { F_TOTALS(2) }, { F_END } },
      .out = "READY SKIP:0 SKIP:1 SUMMARY:0,0,0", .tree = "d/ e/" },
    { "live_plan_not_asked_for", .caps_off = PROTO_CAP_LIVE,
      .script = { { F_PLAN_LIVE } },
      .err = FERRY_ERR_PROTOCOL, .tree = "-" },
    { "live_end_before_totals",
      .script = { { F_PLAN_LIVE }, { F_DIR(0, "d") }, { F_END } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0", .tree = "d/" },
    { "live_empty_end_before_totals",
      .script = { { F_PLAN_LIVE }, { F_END } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "totals_without_live_plan",
      .script = { { F_PLAN(1) }, { F_TOTALS(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "totals_twice",
      .script = { { F_PLAN_LIVE }, { F_TOTALS(0) }, { F_TOTALS(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "totals_below_received",
      .script = { { F_PLAN_LIVE }, { F_DIR(0, "d") }, { F_DIR(1, "e") },
                  { F_TOTALS(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0 SKIP:1",
      .tree = "d/ e/" },
    { "totals_past_manifest",
      .script = { { F_PLAN_LIVE }, { F_TOTALS(MANIFEST_MAX_ENTRIES + 1ull) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "entry_past_totals",
      .script = { { F_PLAN_LIVE }, { F_TOTALS(1) }, { F_DIR(0, "d") },
                  { F_DIR(1, "e") } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0", .tree = "d/" },
    { "totals_on_stream_1",
      .script = { { F_PLAN_LIVE }, { F_TOTALS(0), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "end_while_file_pending",
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_END } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "end_entries_missing",
      .script = { { F_PLAN(2) }, { F_DIR(0, "d") }, { F_END } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0", .tree = "d/" },
    { "frame_after_end",
      .script = { { F_PLAN(1) }, { F_DIR(0, "d") }, { F_END, BATCH },
                  { F_NOTICE } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0 SUMMARY:0,0,0",
      .tree = "d/" },
    { "frame_after_end_step",
      .script = { { F_PLAN(1) }, { F_DIR(0, "d") }, { F_END },
                  { F_NOTICE } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0 SUMMARY:0,0,0",
      .tree = "d/" },
    { "sender_frame_unknown",
      .script = { { F_PLAN(1) }, { F_READY("") } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    /* A transfer that fails before any file takes back the destination
     * it made; one whose link was lost keeps it for the retry. */
    { "peer_error",
      .script = { { F_PLAN(1) }, { F_ERROR } },
      .err = FERRY_ERR_PEER, .out = "READY", .tree = "-" },
    { "lost_stream_0",
      .script = { { F_PLAN(1) }, { F_EOF } },
      .err = FERRY_ERR_CLOSED, .out = "READY", .tree = "" },
    /* Conversation frames only on stream 0; data on any stream. */
    { "plan_on_stream_1",
      .script = { { F_PLAN(1), ON(1) } },
      .err = FERRY_ERR_PROTOCOL },
    { "entry_on_stream_1",
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "end_on_stream_1",
      .script = { { F_PLAN(0) }, { F_END, ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "notice_on_stream_1",
      .script = { { F_PLAN(0) }, { F_NOTICE, ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "" },
    { "data_on_stream_1_before_its_plan",
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) },
                  { F_BLOCK(0, 0), ON(1) }, { F_FEND(0), ON(2) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    { "stream_1_lost",
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_EOF, ON(1) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    /* A stream whose connection died outside a step (side_stream_lost):
     * stream 0 tells the sender, which may not see it die, where it
     * knows RETIRE. */
    { "stream_1_lost_told", .caps_on = PROTO_CAP_RETIRE,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_LOST, ON(1) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 RETIRE DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    { "stream_1_lost_untold",
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_LOST, ON(1) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    /* With whole formats asked for, a file of a known format cut short
     * fails, and nothing is committed; without, or of no known format, it
     * is committed as it came. */
    { "torn_fails_whole_formats", .whole_formats = 1,
      .script = { { F_PLAN(1) }, { F_FILE(0, "torn.pt", 100) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0:TORN SUMMARY:0,0,1", .tree = "-" },
    { "torn_taken_otherwise",
      .script = { { F_PLAN(1) }, { F_FILE(0, "torn.pt", 100) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "torn.pt=100" },
    { "unknown_format_whole_formats", .whole_formats = 1,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    /* Entries only under the names asked for; never .ferry. */
    { "entry_not_requested",
      .tops = "a",
      .script = { { F_PLAN(2) }, { F_FILE(0, "a", 100) },
                  { F_FILE(1, "b", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "-" },
    { "entry_under_requested",
      .tops = "x d",
      .script = { { F_PLAN(2) }, { F_DIR(0, "d") }, { F_DIR(1, "d/x") },
                  { F_END } },
      .out = "READY SKIP:0 SKIP:1 SUMMARY:0,0,0", .tree = "d/ d/x/" },
    { "entry_named_like_requested",
      .tops = "d",
      .script = { { F_PLAN(1) }, { F_DIR(0, "dd") } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "-" },
    /* A glob source (box:'ckpt/s-*'): the names it matches, as glob(3)
     * would: no leading dot for a wildcard, nothing else. */
    { "entry_matches_glob",
      .tops = "s-*",
      .script = { { F_PLAN(2) }, { F_DIR(0, "s-1") }, { F_DIR(1, "s-2/x") },
                  { F_END } },
      .out = "READY SKIP:0 SKIP:1 SUMMARY:0,0,0", .tree = "s-1/ s-2/ s-2/x/" },
    { "entry_outside_glob",
      .tops = "s-*",
      .script = { { F_PLAN(2) }, { F_DIR(0, "s-1") }, { F_DIR(1, "t-1") } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0", .tree = "s-1/" },
    { "entry_dot_under_glob",
      .tops = "*",
      .script = { { F_PLAN(1) }, { F_DIR(0, ".hidden") } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY", .tree = "-" },
    { "state_dir_as_top",
      .script = { { F_PLAN(3) }, { F_DIR(0, ".ferry") },
                  { F_FILE(1, ".ferry/salt", 16) },
                  { F_DIR(2, ".ferryx") }, { F_END } },
      .out = "READY FAIL:0:BAD_PATH FAIL:1:BAD_PATH SKIP:2 "
          "SUMMARY:0,0,2",
      .tree = ".ferryx/" },
};

/* A file that fails its hash is a failure of the destination, and the
 * worst kind: the client exits with its own status for it. */
static void
counted_mismatch(struct rt *rt)
{
    CHECK_EQ_U64(xfer_get(&rt->x.st.failed_dest), 1);
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_sent), 0);
    CHECK_EQ_ERR(atomic_load(&rt->x.st.worst_error),
        FERRY_ERR_HASH_MISMATCH);
}

/* Setuid and setgid bits are not taken from the other side; the sticky
 * bit and the rest are. */
static void
modes_kept(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    struct stat st;

    rt_path(rt, "dest/a", p);
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK_EQ_INT(st.st_mode & 07777, 01750);
}

/* File data: what may come for which file, and what a file that went
 * wrong leaves (nothing under its final name). */
static const struct rt_case receiver_data[] = {
    { "push_small_tree",
      .script = { { F_PLAN(4) }, { F_DIR(0, "d") }, { F_FILE(1, "d/a", 100) },
                  { F_FILE(2, "b", B_SIZE) }, { F_LINK(3, "ln", "d/a") },
                  { F_BLOCK(1, 0) }, { F_FEND(1) }, { F_BLOCKS(2, 0, 3) },
                  { F_FEND(2) }, { F_END } },
      .out = "READY SKIP:0 WANT:1 WANT:2 SKIP:3 DONE:1 DONE:2 "
          "SUMMARY:2,0,0",
      .tree = "b=150000 d/ d/a=100 ln->d/a" },
    { "blocks_any_order_end_first",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) }, { F_FEND(0) },
                  { F_BLOCK(0, 2) }, { F_BLOCK(0, 0) }, { F_BLOCK(0, 1) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "b=150000" },
    { "duplicates_ignored",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_BLOCK(0, 1) }, { F_BLOCK(0, 1), ON(1) }, { F_FEND(0) },
                  { F_FEND(0), ON(1) }, { F_BLOCK(0, 0) }, { F_BLOCK(0, 2) },
                  { F_IDLE }, { F_BLOCK(0, 2), ON(1) }, { F_FEND(0) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "b=150000" },
    { "zero_and_compressed_blocks",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) }, { F_ZERO(0, 1) },
                  { F_ZSTD(0, 0) }, { F_ZERO(0, 2) }, { F_FEND(0) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "b=150000" },
    { "setuid_dropped", .check = modes_kept,
      .script = { { F_PLAN(1) }, { F_FILE_MODE(0, "a", 100, 07750) },
                  { F_BLOCK(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    /* Two files of one path in flight (a sender's bug) do not share a
     * staging file: each arrives whole, the later one wins. */
    { "same_path_twice",
      .script = { { F_PLAN(2) }, { F_FILE(0, "a", 100) },
                  { F_FILE(1, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_BLOCK(1, 0) }, { F_FEND(0) }, { F_FEND(1) },
                  { F_END } },
      .out = "READY WANT:0 WANT:1 DONE:0 DONE:1 SUMMARY:2,0,0",
      .tree = "a=100" },
    { "empty_file",
      .script = { { F_PLAN(1) }, { F_FILE(0, "e", 0) }, { F_FEND(0) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "e=0" },
    /* A pull of a missing source: nothing to put in the destination
     * this run made, which goes again. */
    { "notice_from_sender",
      .script = { { F_PLAN(0) }, { F_NOTICE }, { F_END } },
      .out = "READY SUMMARY:0,0,0", .tree = "-" },
    { "sender_gave_up",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_BLOCK(0, 0) }, { F_FEND_CODE(0, FERRY_ERR_CHANGED) },
                  { F_BLOCK(0, 1) }, { F_END } },
      .out = "READY WANT:0 DONE:0:CHANGED SUMMARY:0,0,1", .tree = "-" },
    { "block_bad_hash", .check = counted_mismatch,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_BLOCK(0, 0) }, { F_BADBLOCK(0, 1) }, { F_BLOCK(0, 2) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0:HASH_MISMATCH SUMMARY:0,0,1",
      .tree = "-" },
    { "file_hash_mismatch", .check = counted_mismatch,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND_BAD(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0:HASH_MISMATCH SUMMARY:0,0,1",
      .tree = "-" },
    { "zstd_does_not_inflate", .check = counted_mismatch,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) },
                  { F_BADZSTD(0, 0) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0:HASH_MISMATCH SUMMARY:0,0,1",
      .tree = "-" },
    { "zstd_without_capability",
      .caps_off = PROTO_CAP_ZSTD,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_ZSTD(0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_never_wanted",
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) },
                  { F_RAWBLOCK(1, 0, 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_for_a_directory",
      .script = { { F_PLAN(1) }, { F_DIR(0, "d") },
                  { F_RAWBLOCK(0, 0, 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0", .tree = "d/" },
    { "block_misaligned",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_RAWBLOCK(0, 100, RT_BS) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_past_the_end",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_RAWBLOCK(0, 3 * RT_BS, 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_past_the_end_full",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_RAWBLOCK(0, 3 * RT_BS, RT_BS) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_too_long_for_last",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_RAWBLOCK(0, 2 * RT_BS, B_LAST + 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_short_not_last",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_RAWBLOCK(0, RT_BS, B_LAST) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "block_after_violation_not_committed",
      .script = { { F_PLAN(2) }, { F_FILE(0, "a", 100) },
                  { F_FILE(1, "b", B_SIZE) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_BLOCKS(1, 0, 2) }, { F_FEND(1) },
                  { F_RAWBLOCK(1, 2 * RT_BS, 100) } },
      /* a, whole and checked, is committed as the transfer ends, and
       * answered before the error. */
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 WANT:1 DONE:0",
      .tree = "a=100" },
    { "match_without_resume",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_MATCH(0, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "symlink_in_the_way",
      .script = { { F_PLAN(3) }, { F_LINK(0, "ln", "../outside") },
                  { F_FILE(1, "ln/x", 100) }, { F_DIR(2, "ln/d") },
                  { F_END } },
      .out = "READY SKIP:0 FAIL:1:ENOTDIR FAIL:2:ENOTDIR SUMMARY:0,0,2",
      .tree = "ln->../outside" },
};

TEST(receiver_rules)
{
    RT_RUN_TABLE(receiver_rules, rt_receiver_case);
}

TEST(receiver_data)
{
    RT_RUN_TABLE(receiver_data, rt_receiver_case);
}
