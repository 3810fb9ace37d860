/*
 * --adopt DIR: a receiver that finds a file it lacks staged at DIR/path
 * beneath the destination, of the entry's size and hash, moves it into
 * place instead of asking for it (engine/dest.c dest_adopt), and leaves
 * anything else where it is. Rows as roles.h explains; the staging
 * directory is dest/stage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/fsx.h"
#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "roles.h"

#define STAGE "stage"
#define OLD_MTIME 1600000000

/* rt->root/rel holds the bytes the script sends for path `as`, n of
 * them, with mode 0600 and an mtime the entry does not have. */
static void
stage_as(struct rt *rt, const char *rel, const char *as, uint64_t n)
{
    char p[CHECK_PATH_MAX];
    uint8_t buf[256];
    struct timespec ts[2] = { { OLD_MTIME, 0 }, { OLD_MTIME, 0 } };
    int fd;

    CHECK(n <= sizeof(buf));
    rt_content(as, 0, buf, (size_t)n);
    rt_path(rt, rel, p);
    CHECK((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
    CHECK_EQ_INT(write(fd, buf, (size_t)n), (int)n);
    CHECK_EQ_INT(fchmod(fd, 0600), 0);
    CHECK_EQ_INT(futimens(fd, ts), 0);
    close(fd);
}

static void
stage_dirs(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/" STAGE, 0755);
}

/* The staged copy of a, as the sources have it. */
static void
staged_a(struct rt *rt)
{
    stage_dirs(rt);
    stage_as(rt, "dest/" STAGE "/a", "a", 100);
}

/* ... one byte short. */
static void
staged_a_short(struct rt *rt)
{
    stage_dirs(rt);
    stage_as(rt, "dest/" STAGE "/a", "a", 99);
}

/* ... of the right size, other bytes. */
static void
staged_a_other(struct rt *rt)
{
    stage_dirs(rt);
    stage_as(rt, "dest/" STAGE "/a", "x", 100);
}

/* ... with a byte more: what was hashed is not all there is. */
static void
staged_a_long(struct rt *rt)
{
    stage_dirs(rt);
    stage_as(rt, "dest/" STAGE "/a", "a", 101);
}

/* A symlink at stage/a to a good copy beside it. */
static void
staged_a_link(struct rt *rt)
{
    stage_dirs(rt);
    stage_as(rt, "dest/" STAGE "/real", "a", 100);
    rt_link(rt, "dest/" STAGE "/a", "real");
}

/* stage/d a symlink to a directory beside it (dest/real) holding a good
 * copy of `as`: inside the destination, and still never followed. */
static void
stage_dir_link(struct rt *rt, const char *as)
{
    stage_dirs(rt);
    rt_mkdir(rt, "dest/real", 0755);
    stage_as(rt, "dest/real/a", as, 100);
    rt_link(rt, "dest/" STAGE "/d", "../real");
}

/* ... of d/a, for the path d/a beneath DIR. */
static void
staged_dir_link(struct rt *rt)
{
    stage_dir_link(rt, "d/a");
}

/* ... of a, with DIR itself the link. */
static void
staged_dir_link_a(struct rt *rt)
{
    stage_dir_link(rt, "a");
}

/* A FIFO at stage/a: never opened (it would block). */
static void
staged_fifo(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    struct timespec ts[2] = { { OLD_MTIME, 0 }, { OLD_MTIME, 0 } };

    stage_dirs(rt);
    rt_path(rt, "dest/" STAGE "/a", p);
    CHECK_EQ_INT(mkfifo(p, 0600), 0);
    CHECK_EQ_INT(chmod(p, 0600), 0);
    CHECK_EQ_INT(utimensat(AT_FDCWD, p, ts, 0), 0);
}

/* A good copy with a second name outside the staging directory. */
static void
staged_two_names(struct rt *rt)
{
    char p[CHECK_PATH_MAX], q[CHECK_PATH_MAX];

    staged_a(rt);
    rt_path(rt, "dest/" STAGE "/a", p);
    rt_path(rt, "dest/other", q);
    CHECK_EQ_INT(link(p, q), 0);
}

/* A good copy, and dest/a already current (its size and mtime). */
static void
staged_and_current(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    struct timespec ts[2] = { { RT_MTIME, 0 }, { RT_MTIME, 0 } };

    staged_a(rt);
    stage_as(rt, "dest/a", "a", 100);
    rt_path(rt, "dest/a", p);
    CHECK_EQ_INT(utimensat(AT_FDCWD, p, ts, 0), 0);
}

/* A good copy, and an older dest/a of other bytes. */
static void
staged_and_old(struct rt *rt)
{
    staged_a(rt);
    stage_as(rt, "dest/a", "y", 100);
}

/* A good copy, and a directory at dest/a. */
static void
staged_and_dir(struct rt *rt)
{
    staged_a(rt);
    rt_mkdir(rt, "dest/a", 0755);
}

/* The adopted file has the entry's mode and mtime, and was counted. */
static void
adopted_a(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    struct stat st;

    rt_path(rt, "dest/a", p);
    CHECK_EQ_INT(lstat(p, &st), 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0640);
    CHECK_EQ_U64((uint64_t)st.st_mtim.tv_sec, RT_MTIME);
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_adopted), 1);
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_skipped), 1);
}

/* Nothing adopted; what is staged at stage/a (but a link) is as it
 * was: not even its mode and mtime were touched. */
static void
left_alone(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    struct stat st;

    CHECK_EQ_U64(xfer_get(&rt->x.st.files_adopted), 0);
    rt_path(rt, "dest/" STAGE "/a", p);
    if (lstat(p, &st) == 0 && !S_ISLNK(st.st_mode)) {
        CHECK_EQ_INT(st.st_mode & 07777, 0600);
        CHECK_EQ_U64((uint64_t)st.st_mtim.tv_sec, OLD_MTIME);
    }
}

/* Adopted, and the staged name kept: one file under both names. */
static void
adopted_a_kept(struct rt *rt)
{
    char p[CHECK_PATH_MAX], q[CHECK_PATH_MAX];
    struct stat st, sst;

    adopted_a(rt);
    rt_path(rt, "dest/a", p);
    rt_path(rt, "dest/" STAGE "/a", q);
    CHECK_EQ_INT(lstat(p, &st), 0);
    CHECK_EQ_INT(lstat(q, &sst), 0);
    CHECK(st.st_ino == sst.st_ino && st.st_dev == sst.st_dev);
    CHECK_EQ_INT((int)st.st_nlink, 2);
}

#define ADOPT_FLAGS OPEN_F_ADOPT

static const struct rt_case adopt_rows[] = {
    /* Moved into place with the entry's mode and mtime; nothing wanted,
     * the staged name gone. */
    { "adopt_match", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_a, .check = adopted_a,
      .script = { { F_PLAN(1) }, { F_FILE_MODE(0, "a", 100, 0640) },
                  { F_END } },
      .out = "READY SKIP+A:0 SUMMARY:0,1,0", .tree = "a=100 stage/" },
    /* An older file of the destination is replaced, as a commit would. */
    { "adopt_replaces_old", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_and_old, .check = adopted_a,
      .script = { { F_PLAN(1) }, { F_FILE_MODE(0, "a", 100, 0640) },
                  { F_END } },
      .out = "READY SKIP+A:0 SUMMARY:0,1,0", .tree = "a=100 stage/" },
    /* Kept (a swarm's helper still seeds from the staged name): linked
     * into place, over an older file too, and no second name left. */
    { "adopt_keep", .flags = ADOPT_FLAGS | OPEN_F_ADOPT_KEEP, .adopt = STAGE,
      .setup = staged_a, .check = adopted_a_kept,
      .script = { { F_PLAN(1) }, { F_FILE_MODE(0, "a", 100, 0640) },
                  { F_END } },
      .out = "READY SKIP+A:0 SUMMARY:0,1,0",
      .tree = "a=100 stage/ stage/a=100" },
    { "adopt_keep_replaces_old", .flags = ADOPT_FLAGS | OPEN_F_ADOPT_KEEP,
      .adopt = STAGE, .setup = staged_and_old, .check = adopted_a_kept,
      .script = { { F_PLAN(1) }, { F_FILE_MODE(0, "a", 100, 0640) },
                  { F_END } },
      .out = "READY SKIP+A:0 SUMMARY:0,1,0",
      .tree = "a=100 stage/ stage/a=100" },
    /* A file already current is not touched, nor is its staged copy. */
    { "adopt_not_when_current", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_and_current, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) }, { F_END } },
      .out = "READY SKIP:0 SUMMARY:0,1,0",
      .tree = "a=100 stage/ stage/a=100" },
    /* The entry's hash is not the staged file's. */
    { "adopt_wrong_hash", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_a_other, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "stage/ stage/a=100" },
    { "adopt_wrong_entry_hash", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_a, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100), .v = RV_BADHASH } },
      .out = "READY WANT:0", .tree = "stage/ stage/a=100" },
    { "adopt_wrong_size", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_a_short, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "stage/ stage/a=99" },
    { "adopt_longer", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_a_long, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "stage/ stage/a=101" },
    /* No staging directory: none is made. */
    { "adopt_no_dir", .flags = ADOPT_FLAGS, .adopt = STAGE "/x",
      .setup = stage_dirs, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "stage/" },
    { "adopt_symlink", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_a_link, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "stage/ stage/a->real stage/real=100" },
    { "adopt_symlinked_dir", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_dir_link, .check = left_alone,
      .script = { { F_PLAN(2) }, { F_DIR(0, "d") },
                  { F_FILE(1, "d/a", 100) } },
      .out = "READY SKIP:0 WANT:1",
      .tree = "d/ real/ real/a=100 stage/ stage/d->../real" },
    /* The staging directory itself a link. */
    { "adopt_dir_is_link", .flags = ADOPT_FLAGS, .adopt = STAGE "/d",
      .setup = staged_dir_link_a, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0",
      .tree = "real/ real/a=100 stage/ stage/d->../real" },
    /* An empty file's: its size and hash would match. */
    { "adopt_fifo", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_fifo, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 0) } },
      .out = "READY WANT:0", .tree = "stage/ stage/a?" },
    { "adopt_two_names", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_two_names, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "other=100 stage/ stage/a=100" },
    /* A directory in the way follows the rules without --adopt. */
    { "adopt_dir_in_way", .flags = ADOPT_FLAGS, .adopt = STAGE,
      .setup = staged_and_dir, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY FAIL:0:EISDIR", .tree = "a/ stage/ stage/a=100" },
    { "adopt_dir_replaced", .flags = ADOPT_FLAGS | OPEN_F_REPLACE_DIRS,
      .adopt = STAGE, .setup = staged_a, .check = adopted_a,
      .script = { { F_PLAN(1) }, { F_FILE_MODE(0, "a", 100, 0640) },
                  { F_END } },
      .out = "READY SKIP+A:0 SUMMARY:0,1,0", .tree = "a=100 stage/" },
    /* Without --adopt nothing is taken. */
    { "adopt_not_asked", .flags = OPEN_F_CHECKSUM,
      .setup = staged_a, .check = left_alone,
      .script = { { F_PLAN(1) }, { F_FILE(0, "a", 100) } },
      .out = "READY WANT:0", .tree = "stage/ stage/a=100" },
};

TEST(adopt_receiver)
{
    RT_RUN_TABLE(adopt_rows, rt_receiver_case);
}

#define OFFERS "PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d " \
    "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln"

/* Counted as skipped and adopted. */
static void
sender_counted(struct rt *rt)
{
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_adopted), 1);
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_skipped), 1);
    CHECK_EQ_U64(xfer_get(&rt->x.st.files_sent), 0);
}

/* A hash hint (a swarm's pass hashed the files already): asked for each
 * regular file with its path, size and mtime, and none is read for it. */
static int hint_calls, hint_sizes_ok;

static int
hint_given(void *ctx, const char *rel, uint64_t size, int64_t mtime_sec,
    uint32_t mtime_nsec, struct hash128 *out)
{
    (void)ctx;
    (void)mtime_nsec;
    hint_calls++;
    hint_sizes_ok += (strcmp(rel, "src/a") == 0 && size == 100) ||
        (strcmp(rel, "src/d/b") == 0 && mtime_sec > 0);
    memset(out, 0x5a, sizeof(*out));
    return strcmp(rel, "src/a") == 0 ? 0 : 1;
}

static void
sender_hinted(struct rt *rt)
{
    sender_counted(rt);
    CHECK_EQ_INT(hint_calls, 3);
    CHECK_EQ_INT(hint_sizes_ok, 2);
    hint_calls = hint_sizes_ok = 0;
}

/* The sender counts what the receiver adopted, and refuses it from a
 * receiver it did not ask, or for something not a file. */
static const struct rt_case adopt_sender_rows[] = {
    { "adopted_counted", .flags = OPEN_F_ADOPT, .check = sender_counted,
      .script = { { F_READY("") },
                  { F_REPLY(1, REPLY_SKIP, REPLY_F_ADOPTED) } },
      .out = OFFERS },
    { "adopted_hinted", .flags = OPEN_F_ADOPT, .check = sender_hinted,
      .hint = hint_given,
      .script = { { F_READY("") },
                  { F_REPLY(1, REPLY_SKIP, REPLY_F_ADOPTED) } },
      .out = OFFERS },
    { "adopted_not_asked",
      .script = { { F_READY("") },
                  { F_REPLY(1, REPLY_SKIP, REPLY_F_ADOPTED) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "adopted_dir", .flags = OPEN_F_ADOPT,
      .script = { { F_READY("") },
                  { F_REPLY(0, REPLY_SKIP, REPLY_F_ADOPTED) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
};

TEST(adopt_sender)
{
    RT_RUN_TABLE(adopt_sender_rows, rt_sender_case);
}

static void
said_adopt(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "cannot take staged files (--adopt)") !=
        NULL);
}

static void
said_bad_dir(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "--adopt .ferry/part: not a path "
        "beneath the destination") != NULL);
}

/* A client asks the agent for ADOPT before it counts on it (an older
 * agent gets a VERSION error: ours is uploaded, or the user is told in
 * one line); the agent refuses a DIR outside the destination. */
static const struct rt_case adopt_session_rows[] = {
    { "adopt_agent_lacks_it", .client = 1, .flags = OPEN_F_ADOPT,
      .adopt = STAGE, .check = said_adopt,
      .script = { { F_HELLO } },
      .err = FERRY_ERR_VERSION, .out = "HELLO OPEN ERROR:VERSION" },
    { "adopt_keep_agent_lacks_it", .client = 1,
      .flags = OPEN_F_ADOPT | OPEN_F_ADOPT_KEEP, .adopt = STAGE,
      .caps_on = PROTO_CAP_ADOPT, .check = said_adopt,
      .script = { { F_HELLO } },
      .err = FERRY_ERR_VERSION, .out = "HELLO OPEN ERROR:VERSION" },
    { "adopt_agent_has_it", .client = 1, .flags = OPEN_F_ADOPT,
      .adopt = STAGE, .caps_on = PROTO_CAP_ADOPT,
      .script = { { F_HELLO }, { F_OPEN_OK }, { F_READY("") } },
      .out = "HELLO OPEN " OFFERS },
    { "adopt_dir_refused", .check = said_bad_dir,
      .script = { { F_HELLO },
                  { F_OPEN2(OPEN_PUSH, "~/dest", ".ferry/part"),
                    .flags = OPEN_F_ADOPT } },
      .err = FERRY_ERR_BAD_PATH, .out = "HELLO ERROR:BAD_PATH" },
};

TEST(adopt_session)
{
    RT_RUN_TABLE(adopt_session_rows, rt_session_case);
}

/* DIR is beneath the destination, never its state directory. */
TEST(adopt_dir_paths)
{
    static const struct { const char *dir; int ok; } rows[] = {
        { "stage", 1 }, { ".ferry-swarm/x1", 1 }, { "a/b/c", 1 },
        { "/abs", 0 }, { "..", 0 }, { "a/../b", 0 }, { "a/..", 0 },
        { "", 0 }, { ".", 0 }, { "a//b", 0 }, { ".ferry", 0 },
        { ".ferry/part", 0 }, { ".ferryx", 1 },
    };
    uint8_t tid[16] = { 0 };
    struct xfer x;
    struct dest *d;
    size_t i;

    memset(&x, 0, sizeof(x));
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        CHECK((d = dest_new("unused", OPEN_F_ADOPT, tid, &x)) != NULL);
        if (rows[i].ok)
            CHECK_OK(dest_set_adopt(d, rows[i].dir));
        else
            CHECK_EQ_ERR(dest_set_adopt(d, rows[i].dir), FERRY_ERR_BAD_PATH);
        dest_free(d);
    }
}

/* On the wire: ADOPTED with SKIP only (OPEN's ADOPT: msg_open_fields). */
TEST(adopt_wire)
{
    struct msg_reply r;
    struct buf b;
    static const struct { uint8_t action, flags; int ok; } replies[] = {
        { REPLY_SKIP, REPLY_F_ADOPTED, 1 },
        { REPLY_WANT, REPLY_F_ADOPTED, 0 },
        { REPLY_SKIP, REPLY_F_ADOPTED | REPLY_F_RESUME, 0 },
        { REPLY_SKIP, REPLY_F_RESUME, 0 },
    };
    size_t i;

    for (i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
        struct msg_reply out;
        struct frame f;
        size_t used;

        memset(&r, 0, sizeof(r));
        r.id = 3;
        r.action = replies[i].action;
        r.flags = replies[i].flags;
        buf_init(&b, 1 << 16);
        CHECK_OK(msg_reply_encode(&b, &r));
        CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
        if (replies[i].ok)
            CHECK_OK(msg_reply_decode(f.payload, f.len, &out));
        else
            CHECK_EQ_ERR(msg_reply_decode(f.payload, f.len, &out),
                FERRY_ERR_FORMAT);
        buf_cleanup(&b);
    }
}
