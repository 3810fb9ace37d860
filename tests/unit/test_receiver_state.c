/*
 * The receiver over what it finds on disk (roles.h explains the rows):
 * a partial file left by an earlier run and its resume (SIGS, MATCH), the
 * destination's naming rules, a state directory that is not ours, and
 * the limits a hostile sender cannot push past.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../engine/delta/delta_index.h"
#include "roles.h"

#define BIG_LEFT (RT_BIG_BLOCKS - 4)
/* An earlier run that received the first four blocks of "big". */
#define EARLIER { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG) }, \
    { F_BLOCKS(0, 0, 4) } }
#define WANT_BIG { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG) }
/* The same, with what follows in the same step: before the receiver has
 * read back what it holds (at the end of a step). */
#define WANT_BIG_WITH { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG), BATCH }
/* A file whose kept blocks take more than one step to read back. */
#define HUGE_BLOCKS 1152
#define HUGE ((uint64_t)HUGE_BLOCKS * RT_BS)
#define HUGE_HELD 1100
#define HUGE_LEFT (HUGE_BLOCKS - HUGE_HELD - 1)
_Static_assert(HUGE_HELD * RT_BS > INCOMING_VERIFY_BYTES,
    "the read-back of HUGE_HELD blocks takes two steps");

/* Block 1 of the partial that the earlier run left is damaged on disk. */
static void
damage_partial(struct rt *rt)
{
    char p[CHECK_PATH_MAX], part[CHECK_PATH_MAX];
    struct dirent *de;
    DIR *dir;
    int fd, n = 0;

    rt_path(rt, "dest/.ferry/part", p);
    CHECK((dir = opendir(p)) != NULL);
    while ((de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len < 5 || strcmp(de->d_name + len - 5, ".part") != 0)
            continue;
        CHECK(snprintf(part, sizeof(part), "%s/%s", p, de->d_name) <
            (int)sizeof(part));
        CHECK((fd = open(part, O_WRONLY)) >= 0);
        CHECK_EQ_INT(pwrite(fd, "x", 1, RT_BS + 7), 1);
        close(fd);
        n++;
    }
    closedir(dir);
    CHECK_EQ_INT(n, 1);
}

static const struct rt_case receiver_resume[] = {
    { "resume_matches_held",
      .before = EARLIER,
      .script = { WANT_BIG, { F_MATCH(0, 0, 4) },
                  { F_BLOCKS(0, 4, BIG_LEFT) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4 DONE:0 SUMMARY:1,0,0,read:4",
      .tree = "big=8388608" },
    { "resume_held_sent_again",
      .before = EARLIER,
      .script = { WANT_BIG, { F_BLOCKS(0, 0, RT_BIG_BLOCKS) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4 DONE:0 SUMMARY:1,0,0,read:4",
      .tree = "big=8388608" },
    { "resume_damaged_block_needed",
      .before = EARLIER, .between = damage_partial,
      .script = { WANT_BIG, { F_MATCH(0, 0, 1) },
                  { F_BLOCK(0, 1) }, { F_MATCH(0, 2, 2) },
                  { F_BLOCKS(0, 4, BIG_LEFT) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+1 NEED:0:1+1 HAVE:0:2+2 "
          "DONE:0 SUMMARY:1,0,0,read:4",
      .tree = "big=8388608" },
    { "resume_damaged_block_matched",
      .before = EARLIER, .between = damage_partial,
      .script = { WANT_BIG, { F_MATCH(0, 1, 1) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+1 NEED:0:1+1 HAVE:0:2+2",
      .tree = ".ferry/" },
    { "resume_not_first_file",
      .before = { { F_PLAN(2) }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FILE(1, "big", RT_BIG) }, { F_BLOCKS(1, 0, 4) } },
      .script = { WANT_BIG, { F_MATCH(0, 0, 4) },
                  { F_BLOCKS(0, 4, BIG_LEFT) }, { F_FEND(0) }, { F_END } },
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4 DONE:0 SUMMARY:1,0,0,read:4",
      .tree = "big=8388608" },
    { "resume_without_capability",
      .before = EARLIER, .caps_off = PROTO_CAP_RESUME,
      .script = { WANT_BIG, { F_BLOCKS(0, 0, RT_BIG_BLOCKS) }, { F_FEND(0) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "big=8388608" },
    { "resume_other_version",
      .before = EARLIER,
      .script = { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG + 1) },
                  { F_BLOCKS(0, 0, RT_BIG_BLOCKS + 1) }, { F_FEND(0) },
                  { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "big=8388609" },
    { "resume_block_not_described",
      .before = EARLIER,
      .script = { WANT_BIG_WITH, { F_BLOCK(0, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+R:0 NEED:0:4+124",
      .tree = ".ferry/" },
    { "resume_match_before_described",
      .before = EARLIER,
      .script = { WANT_BIG_WITH, { F_MATCH(0, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+R:0 NEED:0:4+124",
      .tree = ".ferry/" },
    { "resume_match_past_the_end",
      .before = EARLIER,
      .script = { WANT_BIG, { F_MATCH(0, RT_BIG_BLOCKS - 1, 2) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4", .tree = ".ferry/" },
    { "resume_match_runs_past_the_end",
      .before = { { F_PLAN(1) }, { F_FILE(0, "big", RT_BIG) },
                  { F_BLOCKS(0, RT_BIG_BLOCKS - 4, 4) } },
      .script = { WANT_BIG, { F_MATCH(0, RT_BIG_BLOCKS - 4, 5) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "READY WANT+R:0 NEED:0:0+124 HAVE:0:124+4", .tree = ".ferry/" },
    { "resume_match_needed_block",
      .before = EARLIER,
      .script = { WANT_BIG, { F_MATCH(0, 3, 2) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4", .tree = ".ferry/" },
    { "resume_match_twice",
      .before = EARLIER,
      .script = { WANT_BIG, { F_MATCH(0, 0, 4) },
                  { F_MATCH(0, 1, 1) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4", .tree = ".ferry/" },
    { "resume_match_after_block",
      .before = EARLIER,
      .script = { WANT_BIG, { F_BLOCK(0, 0) },
                  { F_MATCH(0, 0, 1) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "READY WANT+R:0 NEED:0:4+124 HAVE:0:0+4", .tree = ".ferry/" },
    { "resume_file_end_early",
      .before = EARLIER,
      .script = { WANT_BIG_WITH, { F_BLOCKS(0, 4, BIG_LEFT), BATCH },
                  { F_FEND(0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT+R:0 NEED:0:4+124",
      .tree = ".ferry/" },
    /* The file fails (a block that does not check out) before the
     * read-back of what it holds is done, which takes more than one
     * step here (INCOMING_VERIFY_BYTES): the rest is said to be needed
     * unread, so the sender can end the file, which fails alone. */
    { "resume_fails_during_readback",
      .before = { { F_PLAN(1) }, { F_FILE(0, "huge", HUGE) },
                  { F_BLOCKS(0, 0, HUGE_HELD) } },
      .script = { { F_PLAN(1) }, { F_FILE(0, "huge", HUGE), BATCH },
                  { F_BADBLOCK(0, HUGE_HELD) },
                  { F_BLOCKS(0, 0, HUGE_HELD) },
                  { F_BLOCKS(0, HUGE_HELD + 1, HUGE_LEFT) }, { F_FEND(0) },
                  { F_END } },
      .out = "READY WANT+R:0 NEED:0:1100+52 NEED:0:0+1100 "
          "DONE:0:HASH_MISMATCH SUMMARY:0,0,1",
      .tree = "" },
};

/* Destinations that exist before the transfer. */

/* A state directory of ours, with its salt and part directory. */
static void
state_dir(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/.ferry", 0700);
    rt_mkdir(rt, "dest/.ferry/part", 0700);
}

static void
salt(struct rt *rt, size_t n, mode_t mode)
{
    char p[CHECK_PATH_MAX];

    state_dir(rt);
    rt_path(rt, "dest/.ferry/salt", p);
    check_write_file(p, NULL, n, 1);
    CHECK_EQ_INT(chmod(p, mode), 0);
}

static void
dest_dir(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
}

/* dest/a and dest/ln are directories, with a file and a link beneath. */
static void
dirs_in_the_way(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/a", 0755);
    rt_mkdir(rt, "dest/ln", 0755);
    rt_write(rt, "dest/a/old", 10);
    rt_link(rt, "dest/ln/up", "../../outside");
}

static void
dest_file(struct rt *rt)
{
    rt_write(rt, "dest", 10);
}

static void
dest_up_to_date(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    struct timespec ts[2] = { { RT_MTIME, 0 }, { RT_MTIME, 0 } };

    uint8_t a[100];

    rt_mkdir(rt, "dest", 0755);
    rt_content("a", 0, a, sizeof(a));
    rt_path(rt, "dest/a", p);
    check_write_file(p, a, sizeof(a), 0);
    CHECK_EQ_INT(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static void
state_link(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_link(rt, "dest/.ferry", "../outside");
}

static void
state_file(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_write(rt, "dest/.ferry", 0);
}

static void
state_open(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/.ferry", 0777);
}

static void
state_foreign(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/.ferry", 0700);
    rt_path(rt, "dest/.ferry", p);
    CHECK_EQ_INT(chown(p, 4242, 4242), 0);
}

static void
part_link(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/.ferry", 0700);
    rt_link(rt, "dest/.ferry/part", "../../outside");
}

static void
salt_link(struct rt *rt)
{
    state_dir(rt);
    rt_link(rt, "dest/.ferry/salt", "../../outside/keep");
}

static void
salt_dir(struct rt *rt)
{
    state_dir(rt);
    rt_mkdir(rt, "dest/.ferry/salt", 0700);
}

static void
salt_foreign(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    salt(rt, 16, 0600);
    rt_path(rt, "dest/.ferry/salt", p);
    CHECK_EQ_INT(chown(p, 4242, 4242), 0);
}

/* A device that reads as 16 bytes (of zeros), where the salt should be
 * a file of ours. */
static void
salt_device(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    state_dir(rt);
    rt_path(rt, "dest/.ferry/salt", p);
    CHECK_EQ_INT(mknod(p, S_IFCHR | 0600, makedev(1, 5)), 0);
}

static void
salt_open(struct rt *rt)
{
    salt(rt, 16, 0644);
}

static void
salt_short(struct rt *rt)
{
    salt(rt, 3, 0600);
}

static void
lock_link(struct rt *rt)
{
    state_dir(rt);
    rt_link(rt, "dest/.ferry/lock", "../../outside/keep");
}

static void
lock_fifo(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    state_dir(rt);
    rt_path(rt, "dest/.ferry/lock", p);
    CHECK_EQ_INT(mkfifo(p, 0600), 0);
}

static void
lock_foreign(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    state_dir(rt);
    rt_path(rt, "dest/.ferry/lock", p);
    check_write_file(p, NULL, 0, 0);
    CHECK_EQ_INT(chown(p, 4242, 4242), 0);
}

/* The message says what is wrong where. */
static void
said_state(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "/dest/.ferry: not a private "
        "directory") != NULL);
}

static void
said_bad_name(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "invalid file name") != NULL);
}

/* A missing parent of the destination is named, with the way out. */
static void
said_missing(struct rt *rt, const char *name)
{
    char want[64];

    snprintf(want, sizeof(want), "/%s: no such directory", name);
    CHECK(strstr(rt->x.local_error, want) != NULL);
    CHECK(strstr(rt->x.local_error, "--mkpath") != NULL);
}

static void
said_no_dest(struct rt *rt)
{
    said_missing(rt, "dest");
}

static void
said_no_typo(struct rt *rt)
{
    said_missing(rt, "dest/typo");
}

/* A state directory that is not ours stops the transfer at the first
 * file it would stage. */
#define WANT_A .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } }, \
    .err = FERRY_ERR_STATE, .out = "READY"

/* Blocks tracked over the wanted files: INCOMING_MAX_BLOCKS at most (a
 * byte each). Two files of half as many each fit; one block more does
 * not. */
#define HALF_BLOCKS (INCOMING_MAX_BLOCKS / 2)

static const struct rt_case receiver_limits[] = {
    { "blocks_tracked_fit",
      .script = { { F_PLAN(2) }, { F_FILE(0, "h0", HALF_BLOCKS * RT_BS) },
                  { F_FILE(1, "h1", HALF_BLOCKS * RT_BS) },
                  { F_BLOCK(0, 0) }, { F_BLOCK(1, 0) } },
      .out = "READY WANT:0 WANT:1", .tree = ".ferry/" },
    { "blocks_tracked_over",
      .script = { { F_PLAN(2) }, { F_FILE(0, "h0", HALF_BLOCKS * RT_BS) },
                  { F_FILE(1, "h1", (HALF_BLOCKS + 1) * RT_BS) },
                  { F_BLOCK(0, 0) }, { F_BLOCK(1, 0) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 WANT:1",
      .tree = ".ferry/" },
};

static const struct rt_case receiver_dest[] = {
    /* rsync's naming rules. */
    { "single_file_renamed",
      .dest = "dest/new", .tops = "a", .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "new", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY:new WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "new=100" },
    /* Offered under its own name (SINGLE_EARLY: not waiting for READY),
     * it is written under DEST's; without the capability, or under a name
     * not asked for, or beneath a directory, it is refused. */
    { "single_file_renamed_old_name",
      .dest = "dest/new", .tops = "a", .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY:new WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "new=100" },
    { "single_file_old_name_without_early",
      .dest = "dest/new", .tops = "a", .setup = dest_dir,
      .caps_off = PROTO_CAP_SINGLE_EARLY,
      .script = { { F_PLAN1 }, { F_FILE(0, "a", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY:new", .tree = "" },
    { "single_file_name_not_asked",
      .dest = "dest/new", .tops = "a", .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "b", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY:new", .tree = "" },
    { "single_file_name_beneath",
      .dest = "dest/new", .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "a/b", 100) } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY:new", .tree = "" },
    { "single_file_any_name_pushed",
      .dest = "dest/new", .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "x", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY:new WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "new=100" },
    /* The last component of DEST is made, a missing parent is not
     * (rsync), unless MKPATH (--mkpath) says so. A file renamed makes
     * nothing: its name is DEST's last component. */
    { "dest_made",
      .dest = "dest/new", .setup = dest_dir,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "new/ new/a=100" },
    { "dest_parent_missing",
      .dest = "dest/typo/new", .setup = dest_dir, .check = said_no_typo,
      .script = { { F_PLAN(1) } },
      .err = -ENOENT, .tree = "" },
    { "dest_parents_mkpath",
      .dest = "dest/typo/new", .flags = OPEN_F_MKPATH,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0",
      .tree = "typo/ typo/new/ typo/new/a=100" },
    { "single_file_parent_missing",
      .dest = "dest/new", .tops = "a", .check = said_no_dest,
      .script = { { F_PLAN1 } },
      .err = -ENOENT, .tree = "-" },
    { "single_file_dir_parent_missing",
      .dest = "dest/new/", .flags = OPEN_F_DEST_DIR, .check = said_no_dest,
      .script = { { F_PLAN1 } },
      .err = -ENOENT, .tree = "-" },
    { "single_file_parents_mkpath",
      .dest = "dest/x/new", .tops = "a", .flags = OPEN_F_MKPATH,
      .script = { { F_PLAN1 }, { F_FILE(0, "new", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY:new WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "x/ x/new=100" },
    { "single_file_into_directory",
      .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "a=100" },
    { "single_file_dest_dir_flag",
      .dest = "dest/new", .flags = OPEN_F_DEST_DIR, .setup = dest_dir,
      .script = { { F_PLAN1 }, { F_FILE(0, "a", 100) }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 DONE:0 SUMMARY:1,0,0", .tree = "new/ new/a=100" },
    { "single_file_named_state",
      .dest = "dest/.ferry", .check = said_bad_name,
      .script = { { F_PLAN1 } },
      .err = FERRY_ERR_BAD_PATH },
    { "single_file_named_dotdot",
      .dest = "dest/x/..", .check = said_bad_name,
      .script = { { F_PLAN1 } },
      .err = FERRY_ERR_BAD_PATH },
    { "dest_is_a_file",
      .setup = dest_file,
      .script = { { F_PLAN(1) } },
      .err = -ENOTDIR, .tree = "!dir" },
    /* A directory where the sources send a file or a link fails it,
     * unless a mirror (--delete: REPLACE_DIRS) asked: then it goes, with
     * what it holds, never through its links. */
    { "dirs_in_the_way",
      .setup = dirs_in_the_way,
      .script = { { F_PLAN(2) }, { F_FILE(0, "a", 100) },
                  { F_LINK(1, "ln", "a") }, { F_END } },
      .out = "READY FAIL:0:EISDIR FAIL:1:EISDIR SUMMARY:0,0,2",
      .tree = "a/ a/old=10 ln/ ln/up->../../outside" },
    { "dirs_in_the_way_replaced",
      .setup = dirs_in_the_way, .flags = OPEN_F_REPLACE_DIRS,
      .script = { { F_PLAN(2) }, { F_FILE(0, "a", 100) },
                  { F_LINK(1, "ln", "a") }, { F_BLOCK(0, 0) },
                  { F_FEND(0) }, { F_END } },
      .out = "READY WANT:0 SKIP:1 DONE:0 SUMMARY:1,0,0",
      .tree = "a=100 ln->a" },
    { "up_to_date_skipped",
      .setup = dest_up_to_date,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_END } },
      .out = "READY SKIP:0 SUMMARY:0,1,0", .tree = "a=100" },
    { "state_dir_link", .setup = state_link, .check = said_state,
      WANT_A, .tree = ".ferry->../outside" },
    { "state_dir_file", .setup = state_file, .check = said_state,
      WANT_A, .tree = ".ferry=0" },
    { "state_dir_writable_by_others", .setup = state_open,
      .check = said_state, WANT_A, .tree = ".ferry/" },
    { "state_dir_of_another_user", .setup = state_foreign,
      .check = said_state, WANT_A, .tree = ".ferry/" },
    { "part_dir_link", .setup = part_link, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "salt_link", .setup = salt_link, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "salt_readable_by_others", .setup = salt_open, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "salt_directory", .setup = salt_dir, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "salt_device", .setup = salt_device, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "salt_of_another_user", .setup = salt_foreign, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "salt_short", .setup = salt_short, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "lock_link", .setup = lock_link, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "lock_fifo", .setup = lock_fifo, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    { "lock_of_another_user", .setup = lock_foreign, .check = said_state,
      WANT_A, .tree = ".ferry/" },
    /* A symlink is made through the state directory: without one the
     * transfer cannot go on. */
    { "link_without_state_dir", .setup = lock_link, .check = said_state,
      .script = { { F_PLAN(1) }, { F_LINK(0, "ln", "a") } },
      .err = FERRY_ERR_STATE, .out = "READY", .tree = ".ferry/" },
    /* A sender that knows STOP hears that nothing is kept there, and of
     * no file. */
    { "state_stop_said", .setup = lock_link, .check = said_state,
      .caps_on = PROTO_CAP_STOP,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .err = FERRY_ERR_STATE, .out = "READY STOP:-,0", .tree = ".ferry/" },
};

TEST(receiver_resume)
{
    RT_RUN_TABLE(receiver_resume, rt_receiver_case);
}

TEST(receiver_dest)
{
    RT_RUN_TABLE(receiver_dest, rt_receiver_case);
}

TEST(receiver_limits)
{
    RT_RUN_TABLE(receiver_limits, rt_receiver_case);
}

/* More files wanted and not ended than INCOMING_MAX_FILES. */
TEST(receiver_max_files)
{
    static const struct rt_case c = { .name = "max_files" };
    struct rt *rt = check_alloc(sizeof(*rt));
    struct rt_frame fr;
    char name[32];
    uint32_t i;

    rt_init(rt, &c);
    rt_open_receiver(rt, 1);
    memset(&fr, 0, sizeof(fr));
    fr.type = MSG_PLAN;
    fr.a = INCOMING_MAX_FILES + 1;
    CHECK_OK(rt_feed(rt, &fr));
    fr.type = MSG_ENTRY;
    fr.kind = ENTRY_FILE;
    fr.a = 1;
    fr.s = name;
    for (i = 0; i <= INCOMING_MAX_FILES; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        fr.id = i;
        rt->nfiles = 0;
        rt->out_len = 0;
        CHECK_EQ_ERR(rt_feed(rt, &fr), i < INCOMING_MAX_FILES ? 0 :
            FERRY_ERR_PROTOCOL);
    }
    rt_close(rt);
    rt_finish(rt);
    free(rt);
}

/* A receiver of one stream over rt->root/dest, told of one file of size
 * bytes at path (PLAN and ENTRY, the answers left in rt->out). */
static void
open_one_file(struct rt *rt, const char *path, uint64_t size)
{
    struct rt_frame fr;

    rt_open_receiver(rt, 1);
    memset(&fr, 0, sizeof(fr));
    fr.type = MSG_PLAN;
    fr.a = 1;
    CHECK_OK(rt_feed(rt, &fr));
    fr.type = MSG_ENTRY;
    fr.kind = ENTRY_FILE;
    fr.a = size;
    fr.s = path;
    CHECK_OK(rt_feed(rt, &fr));
}

/* Blocks far ahead of a gap wait for it in memory: no more than
 * INCOMING_MAX_PENDING of them. Zero blocks, so that the frames are
 * small. */
TEST(receiver_max_pending)
{
    static const struct rt_case c = { .name = "max_pending" };
    struct rt *rt = check_alloc(sizeof(*rt));
    uint64_t k = 1, n = INCOMING_MAX_PENDING + 1, batch;
    struct msg_block m;
    struct buf b;
    int r = 0;

    rt_init(rt, &c);
    open_one_file(rt, "p", (n + 1) * RT_BS);
    memset(&m, 0, sizeof(m));
    m.flags = BLOCK_F_ZERO;
    m.raw_len = RT_BS;
    hash_zero_block(RT_BS, &m.hash);
    buf_init(&b, (size_t)1 << 30);
    /* Blocks 1..n, block 0 never comes: the last one is one too many. */
    while (k <= n && r == 0) {
        buf_reset(&b);
        for (batch = 0; batch < 65536 && k <= n; batch++, k++) {
            m.offset = k * RT_BS;
            CHECK_OK(msg_block_encode(&b, &m));
        }
        r = rt_feed_bytes(rt, 0, buf_ptr(&b), buf_used(&b));
        CHECK(r == 0 || k > n);
    }
    CHECK_EQ_ERR(r, FERRY_ERR_PROTOCOL);
    buf_cleanup(&b);
    rt_close(rt);
    rt_finish(rt);
    free(rt);
}

/* ZERO blocks of a sparse file of 1 GiB, its signatures kept for a later
 * delta (keptsig.h): the receiver hashes the zeros of each length once
 * (the block, the piece, and the shorter last ones), not each block's, so
 * what it hashes is bounded by the frames' bytes, not by the size they
 * describe; and the signatures kept are those of zeros. */
TEST(receiver_sparse_work)
{
    static const struct rt_case c = { .name = "sparse_work", .kept = 1 };
    const uint64_t nblocks = 16384, size = nblocks * RT_BS - 1000;
    const uint32_t piece = delta_index_sig_block(size, RT_BS);
    struct rt *rt = check_alloc(sizeof(*rt));
    uint8_t *zeros = check_alloc(RT_BS), *sigs, zsig[DELTA_SIG_LEN];
    uint64_t k = 0, batch, input = 0, hashed, before, count;
    char p[CHECK_PATH_MAX];
    struct msg_file_end fe;
    struct hash_file *hf;
    struct msg_block m;
    struct stat st;
    struct buf b;

    /* Pieces and blocks of other lengths, which take turns. */
    CHECK(piece < RT_BS);
    rt_init(rt, &c);
    open_one_file(rt, "s", size);
    memset(&m, 0, sizeof(m));
    m.flags = BLOCK_F_ZERO;
    CHECK((hf = hash_file_new(size, RT_BS)) != NULL);
    buf_init(&b, (size_t)1 << 30);
    hashed = 0;
    while (k < nblocks) {
        buf_reset(&b);
        for (batch = 0; batch < 4096 && k < nblocks; batch++, k++) {
            m.offset = k * RT_BS;
            m.raw_len = k + 1 < nblocks ? RT_BS : (uint32_t)(size - m.offset);
            hash_zero_block(m.raw_len, &m.hash);
            CHECK_OK(msg_block_encode(&b, &m));
            hash_file_add(hf, &m.hash);
        }
        input += buf_used(&b);
        before = hash_counted();
        CHECK_OK(rt_feed_bytes(rt, 0, buf_ptr(&b), buf_used(&b)));
        hashed += hash_counted() - before;
    }
    check_note("%llu bytes hashed for %llu bytes of ZERO frames",
        (unsigned long long)hashed, (unsigned long long)input);
    CHECK(hashed <= 4 * RT_BS);
    memset(&fe, 0, sizeof(fe));
    hash_file_final(hf, &fe.hash);
    buf_reset(&b);
    CHECK_OK(msg_file_end_encode(&b, &fe));
    CHECK_OK(rt_feed_bytes(rt, 0, buf_ptr(&b), buf_used(&b)));
    CHECK_OK(rt_feed_bytes(rt, 0, NULL, 0));
    check_note_clear();
    CHECK(strstr(rt->out, "DONE:0") != NULL);
    rt_path(rt, "dest/s", p);
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK_EQ_U64(st.st_size, size);
    CHECK_OK(keptsig_load(rt->ks, &st, piece, RT_BS, &sigs, &count));
    CHECK_EQ_U64(count, (size + piece - 1) / piece);
    memset(zeros, 0, RT_BS);
    delta_sign(zeros, piece, zsig);
    CHECK_EQ_MEM(sigs, zsig, DELTA_SIG_LEN);
    delta_sign(zeros, size - (count - 1) * piece, zsig);
    CHECK_EQ_MEM(sigs + (count - 1) * DELTA_SIG_LEN, zsig, DELTA_SIG_LEN);
    xfree(sigs);
    hash_file_free(hf);
    buf_cleanup(&b);
    free(zeros);
    rt_close(rt);
    rt_finish(rt);
    free(rt);
}

/* Every allocation of a receiver's push fails in turn, then of a resume. */
TEST(receiver_torture)
{
    static const struct rt_case push = {
        .name = "torture",
        .script = { { F_PLAN(5) }, { F_DIR(0, "d") },
                    { F_FILE(1, "d/a", 100) }, { F_FILE(2, "b", 150000) },
                    { F_LINK(3, "ln", "d/a") }, { F_FILE(4, "e", 0) },
                    { F_BLOCK(1, 0) }, { F_ZERO(2, 1) }, { F_FEND(2) },
                    { F_BLOCK(2, 0) }, { F_FEND(1) }, { F_FEND(4) },
                    { F_BLOCK(2, 2) }, { F_END } },
    };
    static const struct rt_case resume = {
        .name = "torture_resume",
        .before = EARLIER,
        .script = { WANT_BIG, { F_MATCH(0, 0, 4) },
                    { F_BLOCKS(0, 4, BIG_LEFT) }, { F_FEND(0) }, { F_END } },
    };

    rt_torture(&push, 0);
    rt_torture(&resume, 0);
}
