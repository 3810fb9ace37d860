/*
 * Delta (engine/delta/incoming_delta.c, plan_delta.c) frame by frame: the
 * receiver signs its basis and builds DELTA blocks from it, refusing
 * copies of what it never described; the sender takes DELTA_SIGS only in
 * order and for files wanted so (roles.h explains the rows).
 *
 * Receiver rows: the destination holds "b" as a basis of BASIS bytes
 * whose first 150000 are the model's bytes of "b" (so a DELTA that
 * copies block k from k * 65536 is right); the new "b" has 150000 bytes
 * in three blocks. A committed file shows as b=150000, the untouched
 * basis as b=200000!. Pieces are 4 KiB: 49 of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "roles.h"

#define B_SIZE 150000
#define BASIS 200000
#define ALWAYS OPEN_F_DELTA_ALWAYS
#define WANT_B { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) }
#define SIGNED "READY WANT+D:0 DSIGS:0:0+49"

/* dest/NAME: the model's bytes of NAME, then more (n bytes). */
static void
basis_write_n(struct rt *rt, const char *name, size_t n)
{
    char p[CHECK_PATH_MAX], rel[64];
    uint8_t *buf = check_alloc(n);

    rt_content(name, 0, buf, n);
    snprintf(rel, sizeof(rel), "dest/%s", name);
    rt_path(rt, rel, p);
    check_write_file(p, buf, n, 0);
    free(buf);
}

static void
basis_write(struct rt *rt, const char *name)
{
    basis_write_n(rt, name, BASIS);
}

/* dest/b and dest/c of 20 MiB: more than a step signs
 * (INCOMING_SIGS_STEP), in pieces of 8 KiB. */
#define BASIS_20M (20u << 20)

/* dest/a and dest/b, of n bytes each. */
static void
basis_two(struct rt *rt, const char *a, const char *b, size_t n)
{
    rt_mkdir(rt, "dest", 0755);
    basis_write_n(rt, a, n);
    basis_write_n(rt, b, n);
}

static void
basis_setup_big_bc(struct rt *rt)
{
    basis_two(rt, "b", "c", BASIS_20M);
}

static void
basis_setup(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    basis_write(rt, "b");
}

/* ... and dest/c, another. */
static void
basis_setup_bc(struct rt *rt)
{
    basis_setup(rt);
    basis_write(rt, "c");
}

/* An empty destination, and src/prev/b (a watch's last unit) holding
 * what basis_setup puts in dest/b; src/prev/c, a link to it. */
static void
basis_dir_setup(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    uint8_t *buf = check_alloc(BASIS);

    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "src", 0755);
    rt_mkdir(rt, "src/prev", 0755);
    rt_content("b", 0, buf, BASIS);
    rt_path(rt, "src/prev/b", p);
    check_write_file(p, buf, BASIS, 0);
    rt_link(rt, "src/prev/c", "b");
    free(buf);
}

/* dest/s1.bin of 2 MiB, and dest/s1.txt: the only neighbours --basis
 * auto can guess for new .bin and .txt files. */
#define SHARD (2u << 20)

static void
shard_setup(struct rt *rt)
{
    basis_two(rt, "s1.bin", "s1.txt", SHARD);
}

/* The new b of 20 MiB, beside the basis b of 20 MiB: its probe is 16
 * blocks, searched in 2 MiB, 256 pieces of 8 KiB. */
#define WANT_B20 { F_PLAN(1) }, { F_FILE(0, "b", BASIS_20M) }
#define PROBE_SIGNED "READY WANT+D:0 DSIGS:0:0+64"

static void
probe_part_read(struct rt *rt)
{
    CHECK_EQ_U64(xfer_get(&rt->x.st.basis_read), 64 * 8192);
}

/* What the receiver read of bases to sign them: nothing, or b alone. */
static void
basis_not_read(struct rt *rt)
{
    CHECK_EQ_U64(xfer_get(&rt->x.st.basis_read), 0);
    /* It crosses whole, and counts so. */
    CHECK_EQ_U64(xfer_get(&rt->x.st.bytes_reusable), 0);
    CHECK_EQ_U64(xfer_get(&rt->x.st.bytes_whole), B_SIZE);
}

static void
basis_b_read(struct rt *rt)
{
    CHECK_EQ_U64(xfer_get(&rt->x.st.basis_read), BASIS);
}

/* dest/h1: a basis of 100 KiB for a file too big to track. */
static void
basis_h1(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    uint8_t *buf = check_alloc(102400);

    rt_mkdir(rt, "dest", 0755);
    rt_content("h1", 0, buf, 102400);
    rt_path(rt, "dest/h1", p);
    check_write_file(p, buf, 102400, 0);
    free(buf);
}

/* dest/big: a basis for the resumable file. */
static void
basis_big(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    uint8_t *buf = check_alloc(RT_BIG);

    rt_mkdir(rt, "dest", 0755);
    rt_content("big", 0, buf, RT_BIG);
    rt_path(rt, "dest/big", p);
    check_write_file(p, buf, RT_BIG - 1, 0);
    free(buf);
}

#define HALF_BLOCKS (INCOMING_MAX_BLOCKS / 2)

static const struct rt_case delta_receiver[] = {
    { "delta_built_from_basis", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_IDLE }, { F_DELTA(0, 0, 0) },
                  { F_DELTA(0, 1, 65536) }, { F_DELTA(0, 2, 131072) },
                  { F_FEND(0) } },
      .out = SIGNED " DONE:0", .tree = "b=150000" },
    /* The end before the last block (it came on another stream): the
     * block is written behind the step, and settled before the step
     * ends, so the file is committed then, not when more input comes. */
    { "delta_last_after_end", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DELTA(0, 0, 0) }, { F_DELTA(0, 1, 65536) },
                  { F_FEND(0) }, { F_DELTA(0, 2, 131072) } },
      .out = SIGNED " DONE:0", .tree = "b=150000" },
    /* All of it in one step after the end: the file is committed once
     * the last of its blocks written behind is settled, not the first. */
    { "delta_all_after_end", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_FEND(0) }, { F_DELTA(0, 0, 0), BATCH },
                  { F_DELTA(0, 1, 65536), BATCH },
                  { F_DELTA(0, 2, 131072) } },
      .out = SIGNED " DONE:0", .tree = "b=150000" },
    { "delta_block_twice", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DELTA(0, 0, 0) }, { F_DELTA(0, 0, 0) },
                  { F_BLOCK(0, 1) }, { F_DELTA(0, 2, 131072) },
                  { F_FEND(0) } },
      .out = SIGNED " DONE:0", .tree = "b=150000" },
    { "delta_auto_small_file", .setup = basis_setup,
      .script = { WANT_B },
      .out = "READY WANT:0", .tree = "b=200000!" },
    { "delta_never", .flags = OPEN_F_DELTA_NEVER, .setup = basis_setup,
      .script = { WANT_B },
      .out = "READY WANT:0", .tree = "b=200000!" },
    { "delta_without_capability", .flags = ALWAYS, .setup = basis_setup,
      .caps_off = PROTO_CAP_DELTA,
      .script = { WANT_B },
      .out = "READY WANT:0", .tree = "b=200000!" },
    /* Hostile senders: nothing is committed. */
    { "delta_copy_past_basis_end", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DELTA(0, 2, BASIS - 1000) } },
      .err = FERRY_ERR_PROTOCOL, .out = SIGNED,
      .tree = "b=200000!" },
    { "delta_copy_not_yet_signed", .flags = ALWAYS, .setup = basis_setup,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE), BATCH },
                  { F_DELTA(0, 0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+D:0",
      .tree = "b=200000!" },
    { "delta_for_file_without_basis", .flags = ALWAYS,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_DELTA(0, 0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "delta_for_file_not_wanted", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DELTA(1, 0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = SIGNED,
      .tree = "b=200000!" },
    { "delta_past_file_end", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DELTA(0, 3, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = SIGNED,
      .tree = "b=200000!" },
    { "delta_blocks_tracked_over", .flags = ALWAYS, .setup = basis_h1,
      .script = { { F_PLAN(2) }, { F_FILE(0, "h0", HALF_BLOCKS * RT_BS) },
                  { F_FILE(1, "h1", (HALF_BLOCKS + 1) * RT_BS) },
                  { F_BLOCK(0, 0) }, { F_DELTA(1, 0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 WANT+D:1 DSIGS:1:0+25",
      .tree = ".ferry/ h1=102400!" },
    /* A resumed file: a block the receiver has not described yet (it
     * holds it, and has not read it back: the DELTA comes in the step of
     * the ENTRY) cannot come as DELTA, even one that copies nothing. */
    { "delta_block_not_described", .flags = ALWAYS, .setup = basis_big,
      .before = { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG) },
                  { F_BLOCKS(0, 0, 4) } },
      .script = { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG), BATCH },
                  { F_LITDELTA(0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+RD:0 NEED:0:4+124",
      .tree = ".ferry/ big=8388607!" },
    { "delta_literal_only", .flags = ALWAYS, .setup = basis_setup,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE), BATCH },
                  { F_LITDELTA(0, 0) }, { F_DELTA(0, 1, 65536) },
                  { F_DELTA(0, 2, 131072) }, { F_FEND(0) } },
      .out = "READY WANT+D:0 DSIGS:0:0+49 DONE:0", .tree = "b=150000" },
    { "delta_block_wrong", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_BADDELTA(0, 0, 0) },
                  { F_DELTA(0, 1, 65536) }, { F_DELTA(0, 2, 131072) },
                  { F_FEND(0) } },
      .out = SIGNED " DONE:0:CHANGED", .tree = "b=200000!" },
    { "delta_basis_shrank", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_TRUNCATE("dest/b", 1000) }, { F_DELTA(0, 0, 0) },
                  { F_DELTA(0, 1, 65536) }, { F_DELTA(0, 2, 131072) },
                  { F_FEND(0) } },
      .out = SIGNED " DONE:0:CHANGED", .tree = "b=1000!" },
    /* A basis directory (a watch's last unit): a file new to the
     * destination is built from the one at its path there, with --basis
     * auto only, and never through a link. */
    { "delta_basis_dir", .flags = ALWAYS | OPEN_F_BASIS_AUTO,
      .setup = basis_dir_setup, .basis_dir = "src/prev",
      .script = { WANT_B, { F_IDLE }, { F_DELTA(0, 0, 0) },
                  { F_DELTA(0, 1, 65536) }, { F_DELTA(0, 2, 131072) },
                  { F_FEND(0) } },
      .out = SIGNED " DONE:0", .tree = "b=150000" },
    { "delta_basis_dir_without_auto", .flags = ALWAYS,
      .setup = basis_dir_setup, .basis_dir = "src/prev",
      .script = { WANT_B }, .out = "READY WANT:0", .tree = "" },
    { "delta_basis_dir_link", .flags = ALWAYS | OPEN_F_BASIS_AUTO,
      .setup = basis_dir_setup, .basis_dir = "src/prev",
      .script = { { F_PLAN(1) }, { F_FILE(0, "c", B_SIZE) } },
      .out = "READY WANT:0", .tree = "" },
    /* DELTA_STOP: the sender gave up on the basis. Before it was signed,
     * it is never read, and nothing of it may be copied; after, the stop
     * changes nothing. */
    { "delta_stop_before_signing", .flags = ALWAYS, .setup = basis_setup,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE), BATCH },
                  { F_DSTOP(0) }, { F_BLOCKS(0, 0, 3) }, { F_FEND(0) } },
      .out = "READY WANT+D:0 DONE:0", .tree = "b=150000",
      .check = basis_not_read },
    { "delta_stop_copy_unsigned", .flags = ALWAYS, .setup = basis_setup,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE), BATCH },
                  { F_DSTOP(0) }, { F_DELTA(0, 0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+D:0",
      .tree = "b=200000!" },
    { "delta_stop_after_signed", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DSTOP(0) }, { F_DELTA(0, 0, 0) },
                  { F_DELTA(0, 1, 65536) }, { F_DELTA(0, 2, 131072) },
                  { F_FEND(0) } },
      .out = SIGNED " DONE:0", .tree = "b=150000" },
    /* A file whose basis waits behind another's is taken off the queue
     * when it comes to its head: never read. */
    { "delta_stop_queued", .flags = ALWAYS, .setup = basis_setup_bc,
      .script = { { F_PLAN(2) }, { F_FILE(0, "b", B_SIZE), BATCH },
                  { F_FILE(1, "c", B_SIZE), BATCH }, { F_DSTOP(1) },
                  { F_BLOCKS(1, 0, 3) }, { F_FEND(1) } },
      .out = "READY WANT+D:0 WANT+D:1 DSIGS:0:0+49 DONE:1",
      .tree = "b=200000! c=150000", .check = basis_b_read },
    /* Bases take turns, a step's worth (16 MiB) each, so that the sender
     * sees the start of each soon, and may stop the rest. */
    { "delta_bases_take_turns", .flags = ALWAYS,
      .setup = basis_setup_big_bc,
      .script = { { F_PLAN(2) }, { F_FILE(0, "b", BASIS_20M), BATCH },
                  { F_FILE(1, "c", BASIS_20M) } },
      .out = "READY WANT+D:0 WANT+D:1 DSIGS:0:0+2048 DSIGS:1:0+2048 "
          "DSIGS:0:2048+512 DSIGS:1:2048+512",
      .tree = "b=20971520 c=20971520" },
    /* --basis auto guesses no more in a place (a directory, an
     * extension) once two probes in a row there found nothing (the
     * sender stopped them): s4.bin goes whole, s2.txt is still guessed.
     * A probe that found something (DELTA_GO) starts the count again. */
    { "delta_place_cold_no_guess", .flags = OPEN_F_BASIS_AUTO,
      .setup = shard_setup,
      .script = { { F_PLAN(4) }, { F_FILE(0, "s2.bin", SHARD), BATCH },
                  { F_DSTOP(0) }, { F_FILE(1, "s3.bin", SHARD), BATCH },
                  { F_DSTOP(1) }, { F_FILE(2, "s4.bin", SHARD), BATCH },
                  { F_FILE(3, "s2.txt", SHARD) } },
      .out = "READY WANT+D:0 WANT+D:1 WANT:2 WANT+D:3 DSIGS:3:0+128",
      .tree = "s1.bin=2097152 s1.txt=2097152" },
    { "delta_place_found_counts_again", .flags = OPEN_F_BASIS_AUTO,
      .setup = shard_setup,
      .script = { { F_PLAN(4) }, { F_FILE(0, "s2.bin", SHARD), BATCH },
                  { F_DSTOP(0) }, { F_FILE(1, "s3.bin", SHARD), BATCH },
                  { F_DGO(1) }, { F_FILE(2, "s4.bin", SHARD), BATCH },
                  { F_DSTOP(2) }, { F_FILE(3, "s5.bin", SHARD) } },
      .out = "READY WANT+D:0 WANT+D:1 DSIGS:1:0+512 WANT+D:2 WANT+D:3 "
          "DSIGS:3:0+128",
      .tree = "s1.bin=2097152 s1.txt=2097152" },
    /* One probe at a time in a place where none found anything yet:
     * s3.bin's basis is held unread while s2.bin's probe waits for its
     * verdict; stopped meanwhile, it is never read. */
    { "delta_place_one_probe_at_a_time", .flags = OPEN_F_BASIS_AUTO,
      .setup = shard_setup,
      .script = { { F_PLAN(2) }, { F_FILE(0, "s2.bin", SHARD), BATCH },
                  { F_FILE(1, "s3.bin", SHARD) }, { F_IDLE },
                  { F_DSTOP(1) }, { F_DSTOP(0) }, { F_IDLE } },
      .out = "READY WANT+D:0 WANT+D:1 DSIGS:0:0+128",
      .tree = "s1.bin=2097152 s1.txt=2097152" },
    /* ... and read once the verdict came: DELTA_GO makes the place
     * warm, and its bases are signed as they come. */
    { "delta_place_verdict_releases", .flags = OPEN_F_BASIS_AUTO,
      .setup = shard_setup,
      .script = { { F_PLAN(2) }, { F_FILE(0, "s2.bin", SHARD), BATCH },
                  { F_FILE(1, "s3.bin", SHARD) }, { F_IDLE },
                  { F_DGO(0) }, { F_IDLE } },
      .out = "READY WANT+D:0 WANT+D:1 DSIGS:0:0+128 DSIGS:1:0+128 "
          "DSIGS:0:128+384",
      .tree = "s1.bin=2097152 s1.txt=2097152" },
    /* ... or once the probing file is done without one (sent whole). */
    { "delta_place_probe_done_releases", .flags = OPEN_F_BASIS_AUTO,
      .setup = shard_setup,
      .script = { { F_PLAN(2) }, { F_FILE(0, "s2.bin", SHARD), BATCH },
                  { F_FILE(1, "s3.bin", SHARD) }, { F_IDLE },
                  { F_BLOCKS(0, 0, SHARD / RT_BS) }, { F_FEND(0) },
                  { F_IDLE } },
      .out = "READY WANT+D:0 WANT+D:1 DSIGS:0:0+128 DSIGS:1:0+128 DONE:0",
      .tree = "s1.bin=2097152 s1.txt=2097152 s2.bin=2097152" },
    /* Without DELTA_ALWAYS the receiver signs the part of the basis the
     * sender's probe is searched in (512 KiB here: 4 blocks of 64 KiB,
     * twice), and the rest only when asked. */
    { "delta_signs_probe_part",
      .setup = basis_setup_big_bc, .script = { WANT_B20, { F_IDLE } },
      .out = PROBE_SIGNED, .tree = "b=20971520 c=20971520", .check = probe_part_read },
    { "delta_go_signs_rest",
      .setup = basis_setup_big_bc,
      .script = { WANT_B20, { F_IDLE }, { F_DGO(0) } },
      .out = PROBE_SIGNED " DSIGS:0:64+2048 DSIGS:0:2112+448",
      .tree = "b=20971520 c=20971520" },
    /* Asked before the probe's part was signed: no wait. */
    { "delta_go_before_signing",
      .setup = basis_setup_big_bc,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", BASIS_20M), BATCH },
                  { F_DGO(0) } },
      .out = "READY WANT+D:0 DSIGS:0:0+2048 DSIGS:0:2048+512",
      .tree = "b=20971520 c=20971520" },
    { "delta_go_twice", .setup = basis_setup_big_bc,
      .script = { WANT_B20, { F_DGO(0) }, { F_DGO(0) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = PROBE_SIGNED " DSIGS:0:64+2048 DSIGS:0:2112+448", .tree = "b=20971520 c=20971520" },
    { "delta_go_after_stop", .setup = basis_setup_big_bc,
      .script = { WANT_B20, { F_DSTOP(0) }, { F_DGO(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = PROBE_SIGNED,
      .tree = "b=20971520 c=20971520" },
    { "delta_go_never_offered", .setup = basis_setup_big_bc,
      .script = { WANT_B20, { F_DGO(7) } },
      .err = FERRY_ERR_PROTOCOL, .out = PROBE_SIGNED,
      .tree = "b=20971520 c=20971520" },
    { "delta_go_file_without_basis",
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) }, { F_DGO(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    /* A sender that cannot say DELTA_GO gets the whole basis, and may not
     * say it. */
    { "delta_go_without_capability", .setup = basis_setup_big_bc,
      .caps_off = PROTO_CAP_DELTA_GO,
      .script = { WANT_B20, { F_IDLE }, { F_DGO(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+D:0 DSIGS:0:0+2048 "
          "DSIGS:0:2048+512", .tree = "b=20971520 c=20971520" },
    { "delta_stop_file_without_basis", .flags = ALWAYS,
      .script = { { F_PLAN(1) }, { F_FILE(0, "b", B_SIZE) },
                  { F_DSTOP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0", .tree = "" },
    { "delta_stop_never_offered", .flags = ALWAYS, .setup = basis_setup,
      .script = { WANT_B, { F_DSTOP(7) } },
      .err = FERRY_ERR_PROTOCOL, .out = SIGNED, .tree = "b=200000!" },
    { "delta_stop_without_capability", .flags = ALWAYS,
      .setup = basis_setup, .caps_off = PROTO_CAP_DELTA_STOP,
      .script = { WANT_B, { F_DSTOP(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = SIGNED, .tree = "b=200000!" },
};

/* A receiver that kept the signatures of "big" when it wrote it sends
 * them, and its block hashes, without reading it (a new version, a block
 * longer). */
#define KEPT_BEFORE { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG) }, \
    { F_BLOCKS(0, 0, RT_BIG_BLOCKS) }, { F_FEND(0) } }
#define KEPT_NEW { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG + RT_BS) } }

static const struct rt_case delta_kept[] = {
    { "delta_kept_blocks_sent", .kept = 1, .before = KEPT_BEFORE,
      .script = KEPT_NEW,
      .out = "READY WANT+D:0 DSIGS:0:0+2048 DBLOCKS:0:0+128", .tree = "big=8388608!" },
    { "delta_kept_blocks_without_capability", .kept = 1,
      .caps_off = PROTO_CAP_DELTA_BLOCKS, .before = KEPT_BEFORE,
      .script = KEPT_NEW,
      .out = "READY WANT+D:0 DSIGS:0:0+2048",
      .tree = "big=8388608!" },
};

/* The sender: DELTA_SIGS in order, of a file wanted with DELTA. The
 * source is rt_make_source's (3: src/d/b, 150000 bytes). */
#define OFFERS "PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d " \
    "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln"
#define READY_ { F_READY("") }
#define WANT_D(i) F_REPLY(i, REPLY_WANT, REPLY_F_DELTA)

/* src/d/b as a file of two runs: 16 MiB and a block. */
#define BIG_B ((16u << 20) + RT_BS)
#define BIG_B_KIB (BIG_B >> 10)
#define BIG_B_PIECES (BIG_B / PROTO_MIN_SIG_BLOCK)
#define PIECES_PER_BLOCK (RT_BS / PROTO_MIN_SIG_BLOCK)

static void
big_b(struct rt *rt)
{
    rt_write(rt, "src/d/b", BIG_B);
}

/* ... whose first 20 blocks were all rewritten (pseudo-random bytes, found
 * nowhere in the model's). */
static void
big_b_head_changed(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    uint8_t *buf = check_alloc(BIG_B);
    uint64_t x = 88172645463325252ull;
    size_t i;

    rt_content("src/d/b", 0, buf, BIG_B);
    for (i = 0; i < 20 * RT_BS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    rt_path(rt, "src/d/b", p);
    check_write_file(p, buf, BIG_B, 0);
    free(buf);
}

/* ... whose first 16 blocks (its probe) are zeros. */
static void
big_b_head_zeros(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    uint8_t *buf = check_alloc(BIG_B);

    rt_content("src/d/b", 0, buf, BIG_B);
    memset(buf, 0, 16 * RT_BS);
    rt_path(rt, "src/d/b", p);
    check_write_file(p, buf, BIG_B, 0);
    free(buf);
}

/* Its basis described up to a piece past the first run, where the
 * sender takes that run up; then the rest. */
#define BIG_B_SIGS(hole, nhole) \
    { F_DSIGS_MODEL(3, BIG_B_KIB, 0, 4096, "src/d/b", hole, nhole) }, \
    { F_DSIGS_MODEL(3, BIG_B_KIB, 4096, 1, "src/d/b", hole, nhole) }, \
    { F_DSIGS_MODEL(3, BIG_B_KIB, 4097, BIG_B_PIECES - 4097, "src/d/b", \
        hole, nhole) }

/* The probe of src/d/b (plan.h): its first DELTA_PROBE_TRIES blocks,
 * glanced at in the first DELTA_PROBE_SPAN times as many blocks of the
 * basis while the rest is described. */
#define PROBE_PIECES (DELTA_PROBE_SPAN * DELTA_PROBE_TRIES * \
    PIECES_PER_BLOCK)

/* The search rolled over a piece's length of offsets in each block of
 * the probe, and no further; the file counts as crossing whole. */
static void
searched_probe_only(struct rt *rt)
{
    uint64_t n = xfer_get(&rt->x.st.bytes_searched);

    CHECK(n >= DELTA_PROBE_TRIES);
    CHECK(n <= DELTA_PROBE_TRIES * PROTO_MIN_SIG_BLOCK);
    CHECK_EQ_U64(xfer_get(&rt->x.st.bytes_reusable), 0);
    CHECK_EQ_U64(xfer_get(&rt->x.st.bytes_whole), BIG_B);
}

/* s/p1.bin, p2.bin and p3.bin of BIG_B bytes: three files of one place
 * (delta_places), in a source of their own. */
static void
three_shards(struct rt *rt)
{
    rt_mkdir(rt, "src/s", 0755);
    rt_write(rt, "src/s/p1.bin", BIG_B);
    rt_write(rt, "src/s/p2.bin", BIG_B);
    rt_write(rt, "src/s/p3.bin", BIG_B);
}

/* ... and p4.bin. */
static void
four_shards(struct rt *rt)
{
    three_shards(rt);
    rt_write(rt, "src/s/p4.bin", BIG_B);
}

#define SHARD_OFFERS(n) "PLAN:" #n " ENTRY:0:s ENTRY:1:s/p1.bin ENTRY:2:s/p2.bin " \
    "ENTRY:3:s/p3.bin"

static const struct rt_case delta_sender[] = {
    /* Two probes in a row found nothing in one place (a directory, an
     * extension): the third file's basis is given up without one, its
     * DELTA_STOP goes at once (the receiver holds that basis unread
     * until it hears how the second probe went) and its blocks go whole,
     * though none of its basis was described. */
    { "sender_delta_place_cold", .setup = three_shards, .src = "src/s",
      .script = { READY_, { WANT_D(1), BATCH }, { WANT_D(2), BATCH },
                  { WANT_D(3) },
                  { F_DSIGS(1, BIG_B_KIB, 0, PROBE_PIECES) },
                  { F_DSIGS(2, BIG_B_KIB, 0, PROBE_PIECES) },
                  { F_DONE(1) }, { F_DONE(2) }, { F_DONE(3) } },
      .out = SHARD_OFFERS(4) " DSTOP:1 BLOCK:1:3-256 BLOCK:1:0-2 FEND:1 "
          "DSTOP:2 BLOCK:2:3 DSTOP:3 BLOCK:2:4-256 BLOCK:2:0-2 FEND:2 "
          "BLOCK:3:0-256 FEND:3" },
    /* ... unless a probe between them found something: p4 waits for
     * its basis (a miss, a find, a miss is one miss in a row). */
    { "sender_delta_place_found_between", .setup = four_shards,
      .src = "src/s",
      .script = { READY_, { WANT_D(1), BATCH }, { WANT_D(2), BATCH },
                  { WANT_D(3), BATCH }, { WANT_D(4) },
                  { F_DSIGS(1, BIG_B_KIB, 0, PROBE_PIECES) },
                  { F_DSIGS_SHIFTED(2, BIG_B_KIB, 0, PROBE_PIECES,
                    "src/s/p2.bin", 1000) },
                  { F_DSIGS(3, BIG_B_KIB, 0, PROBE_PIECES) },
                  { F_DONE(1) }, { F_DONE(3) } },
      .out = SHARD_OFFERS(5) " ENTRY:4:s/p4.bin DSTOP:1 BLOCK:1:3-256 "
          "BLOCK:1:0-2 FEND:1 DGO:2 DSTOP:3 BLOCK:3:3-256 BLOCK:3:0-2 "
          "FEND:3" },
    /* A basis with nothing of the file (other data of the same shape):
     * its probe finds nothing in the part described first, so the search
     * gives up, the receiver is told to stop signing before any of the
     * probe's data (held until then) goes, and the blocks go whole at
     * once; signatures already on their way are taken and left. (Before,
     * the file waited for all of the basis, then searched 16 blocks at
     * every offset.) */
    { "sender_delta_probe_gives_up", .setup = big_b,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS(3, BIG_B_KIB, 0, PROBE_PIECES) },
                  { F_DSIGS(3, BIG_B_KIB, PROBE_PIECES, 100) },
                  { F_DONE(3) } },
      .out = OFFERS " DSTOP:3 BLOCK:3:3-256 BLOCK:3:0-2 FEND:3",
      .check = searched_probe_only },
    /* A probe of zeros decides nothing: once its blocks went, the rest
     * of the basis is asked for (the receiver waits after the probe's
     * part), and the blocks after it are glanced at in all of it. */
    { "sender_delta_probe_zeros_asks_rest", .setup = big_b_head_zeros,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS(3, BIG_B_KIB, 0, PROBE_PIECES) }, { F_IDLE },
                  { F_DSIGS(3, BIG_B_KIB, PROBE_PIECES,
                    BIG_B_PIECES - PROBE_PIECES) },
                  { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-3 DGO:3 BLOCK:3:4-256 FEND:3" },
    /* The probe goes before what waits in the queue (src/a here): its
     * DELTA_STOP saves the other side a read. */
    { "sender_delta_probe_first", .setup = big_b,
      .script = { READY_, { F_WANT(1), BATCH }, { WANT_D(3), BATCH },
                  { F_DSIGS(3, BIG_B_KIB, 0, PROBE_PIECES) },
                  { F_DONE(1) }, { F_DONE(3) } },
      .out = OFFERS " DSTOP:3 BLOCK:3:3 BLOCK:1:0 FEND:1 BLOCK:3:4-256 "
          "BLOCK:3:0-2 FEND:3" },
    /* An insert at the start (the basis is the file from byte 1000 on):
     * the probe finds the file in what is described, so the search goes
     * on, and the blocks not where expected wait for the rest of the
     * basis as before. */
    { "sender_delta_probe_finds_insert", .setup = big_b,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS_SHIFTED(3, BIG_B_KIB, 0, PROBE_PIECES,
                    "src/d/b", 1000) }, { F_IDLE },
                  { F_DSIGS_SHIFTED(3, BIG_B_KIB, PROBE_PIECES,
                    BIG_B_PIECES - PROBE_PIECES, "src/d/b", 1000) },
                  { F_DONE(3) } },
      .out = OFFERS " DGO:3 DELTA:3:4-256 DELTA:3:0-3 FEND:3" },
    /* Every weight of the first 20 blocks moved and the rest did not
     * (frozen layers), the basis described in full at once (its
     * signatures kept): the search gives up after the probe, and what
     * is at its own place is still copied. */
    { "sender_delta_frozen_layers", .setup = big_b_head_changed,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 0, BIG_B_PIECES, "src/d/b",
                    0, 0) },
                  { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-19 DELTA:3:20-256 FEND:3" },
    /* The same while the basis is being described: the search gives up
     * on the probe's blocks and stops the receiver; what was described
     * by then (256 blocks here) is still copied, the rest goes whole. */
    { "sender_delta_frozen_stops", .setup = big_b_head_changed,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 0, 4096, "src/d/b", 0, 0) },
                  { F_DONE(3) } },
      .out = OFFERS " DSTOP:3 BLOCK:3:3-19 DELTA:3:20-255 BLOCK:3:256 "
          "BLOCK:3:0-2 FEND:3" },
    /* Signatures no data has: every block goes whole, after the last. */
    { "sender_delta_nothing_matches",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DSIGS(3, 9, 2, 1) }, { F_DONE(3) } },
      .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    /* Rewritten in place (block 2 of the basis, in the probe, is other
     * data): block 2 is not all found while the basis is still being
     * described, and waits for the rest of it alone; the run goes on
     * without it, then block 2. */
    { "sender_delta_rewrite_goes_on", .setup = big_b,
      .script = { READY_, { WANT_D(3) },
                  BIG_B_SIGS(2 * PIECES_PER_BLOCK, 2), { F_DONE(3) } },
      .out = OFFERS " DGO:3 DELTA:3:0-1 DELTA:3:3-256 DELTA:3:2 FEND:3" },
    /* Blocks 1 and 2 so: two in a row look like data that moved, and the
     * rest of the run (the probe's, to 3) waits with them. */
    { "sender_delta_moved_waits", .setup = big_b,
      .script = { READY_, { WANT_D(3) },
                  BIG_B_SIGS(1 * PIECES_PER_BLOCK, PIECES_PER_BLOCK + 2),
                  { F_DONE(3) } },
      .out = OFFERS " DGO:3 DELTA:3:0 DELTA:3:4-256 DELTA:3:1-3 FEND:3" },
    { "sender_delta_waits_for_basis",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) } },
      .out = OFFERS },
    { "sender_delta_without_capability", .caps_off = PROTO_CAP_DELTA,
      .script = { READY_, { WANT_D(3) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_delta_empty_file",
      .script = { READY_, { WANT_D(4) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dsigs_not_wanted_so",
      .script = { READY_, { F_WANT(3) }, { F_DSIGS(3, 9, 0, 3) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sender_dsigs_out_of_order",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 1, 2) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dsigs_twice",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DSIGS(3, 9, 0, 2) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dsigs_other_basis",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DSIGS(3, 12, 2, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dsigs_too_many_pieces",
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS(3, (1u << 26) + 4, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dsigs_never_offered",
      .script = { READY_, { F_DSIGS(9, 9, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    /* The basis's block hashes: block 2, whose pieces the signatures do
     * not find, is the basis's block there by its hash, and goes in
     * order as one COPY (without them it waits for the whole basis, as
     * in sender_delta_rewrite_goes_on). */
    { "sender_dblocks_copy_whole", .setup = big_b,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 0, 1, "src/d/b",
                    2 * PIECES_PER_BLOCK, PIECES_PER_BLOCK) },
                  { F_DBLOCKS_MODEL(3, BIG_B_KIB, 0, BIG_B / RT_BS,
                    "src/d/b") },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 1, 4096, "src/d/b",
                    2 * PIECES_PER_BLOCK, PIECES_PER_BLOCK) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 4097, BIG_B_PIECES - 4097,
                    "src/d/b", 2 * PIECES_PER_BLOCK, PIECES_PER_BLOCK) },
                  { F_DONE(3) } },
      .out = OFFERS " DGO:3 DELTA:3:0-256 FEND:3" },
    /* Hashes that are not the blocks': block 2 waits for the whole basis
     * as without them. */
    { "sender_dblocks_other_hashes", .setup = big_b,
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 0, 4096, "src/d/b",
                    2 * PIECES_PER_BLOCK, PIECES_PER_BLOCK) },
                  { F_DBLOCKS(3, BIG_B_KIB, 0, BIG_B / RT_BS) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 4096, 1, "src/d/b",
                    2 * PIECES_PER_BLOCK, PIECES_PER_BLOCK) },
                  { F_DSIGS_MODEL(3, BIG_B_KIB, 4097, BIG_B_PIECES - 4097,
                    "src/d/b", 2 * PIECES_PER_BLOCK, PIECES_PER_BLOCK) },
                  { F_DONE(3) } },
      .out = OFFERS " DGO:3 DELTA:3:0-1 DELTA:3:3-256 DELTA:3:2 FEND:3" },
    { "sender_dblocks_before_dsigs",
      .script = { READY_, { WANT_D(3) }, { F_DBLOCKS(3, 9, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dblocks_out_of_order",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DBLOCKS(3, 9, 1, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dblocks_past_basis_end",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DBLOCKS(3, 9, 0, 2) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dblocks_other_block_size",
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DBLOCKS_BS(3, 9, 0, 1, 2 * RT_BS) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    /* Blocks smaller than the pieces would hold more hashes than
     * signatures. */
    { "sender_dblocks_smaller_than_pieces",
      .script = { READY_, { WANT_D(3) },
                  { F_DSIGS_PIECE(3, 1024, 0, 1, 2 * RT_BS) },
                  { F_DBLOCKS(3, 1024, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dblocks_not_wanted_so",
      .script = { READY_, { F_WANT(3) }, { F_DBLOCKS(3, 9, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " BLOCK:3:0-2 FEND:3" },
    { "sender_dblocks_never_offered",
      .script = { READY_, { F_DBLOCKS(9, 9, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "sender_dblocks_without_capability",
      .caps_off = PROTO_CAP_DELTA_BLOCKS,
      .script = { READY_, { WANT_D(3) }, { F_DSIGS(3, 9, 0, 2) },
                  { F_DBLOCKS(3, 9, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
};

TEST(delta_receiver)
{
    RT_RUN_TABLE(delta_receiver, rt_receiver_case);
}

TEST(delta_kept)
{
    RT_RUN_TABLE(delta_kept, rt_receiver_case);
}

TEST(delta_sender)
{
    RT_RUN_TABLE(delta_sender, rt_sender_case);
}

/* --basis FILE: only a path beneath the destination; in OPEN, only with
 * a push, as its second path. */
TEST(delta_basis_file)
{
    static const char *const one[] = { "dest" };
    static const char *const two[] = { "dest", "old.bin" };
    char root[CHECK_PATH_MAX];
    struct msg_open m, out;
    struct xfer x;
    struct dest *d;
    struct buf b;
    uint8_t tid[16] = { 1 };

    memset(&x, 0, sizeof(x));
    check_tmpdir(root);
    CHECK((d = dest_new(root, 0, tid, &x)) != NULL);
    CHECK_EQ_ERR(dest_set_basis(d, "../x"), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(dest_set_basis(d, "/etc/passwd"), FERRY_ERR_BAD_PATH);
    CHECK(dest_basis(d) == NULL);
    CHECK_OK(dest_set_basis(d, "sub/old.bin"));
    CHECK_EQ_STR(dest_basis(d), "sub/old.bin");
    dest_free(d);

    memset(&m, 0, sizeof(m));
    m.op = OPEN_PUSH;
    m.block_size = PROTO_DEFAULT_BLOCK;
    m.flags = OPEN_F_BASIS_FILE;
    m.npaths = 2;
    buf_init(&b, 1 << 20);
    CHECK_OK(msg_open_encode(&b, &m, two));
    CHECK_OK(msg_open_decode(buf_ptr(&b) + PROTO_FRAME_HEADER,
        buf_used(&b) - PROTO_FRAME_HEADER, &out));
    buf_reset(&b);
    m.npaths = 1;
    CHECK_OK(msg_open_encode(&b, &m, one));
    CHECK_EQ_ERR(msg_open_decode(buf_ptr(&b) + PROTO_FRAME_HEADER,
        buf_used(&b) - PROTO_FRAME_HEADER, &out), FERRY_ERR_FORMAT);
    buf_reset(&b);
    m.op = OPEN_PULL;
    m.npaths = 2;
    CHECK_OK(msg_open_encode(&b, &m, two));
    CHECK_EQ_ERR(msg_open_decode(buf_ptr(&b) + PROTO_FRAME_HEADER,
        buf_used(&b) - PROTO_FRAME_HEADER, &out), FERRY_ERR_FORMAT);
    buf_cleanup(&b);
}
