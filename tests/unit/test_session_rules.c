/*
 * The session (engine/session.c): HELLO, OPEN and JOIN on the agent's
 * side and on the client's, fed frame by frame (roles.h explains the
 * rows), with the agent's own policy (server/policy.c): "~" is the
 * scratch root. The tests of the policy itself follow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "roles.h"

#include "../../proto/msg_filter.h"

#define HI { F_HELLO }
#define PUSH { F_OPEN(OPEN_PUSH, "~/dest") }
#define PUSH_ON_1 F_OPEN(OPEN_PUSH, "~/dest"), ON(1)
#define READY_NONE { F_READY("") }

static void
said_version(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "speaks protocol 1-1") != NULL);
}

static void
said_join(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "JOIN of a transfer or stream") !=
        NULL);
}

/* A stream's role is its end's (side.h): one side for the transfer, a
 * role of its kind per stream that was taken; looked at after each step,
 * while the sessions are there. */
static int joined_seen;

static void
joined_step(struct rt *rt, unsigned k, int sends)
{
    struct side *sd = rt->sess[0] != NULL ? session_side(rt->sess[0]) :
        NULL;

    if (rt->sess[k] == NULL || !session_running(rt->sess[k]))
        return;
    CHECK(sd != NULL && side_is_sender(sd) == sends);
    CHECK(session_side(rt->sess[k]) == sd);
    CHECK_EQ_INT(session_stream(rt->sess[k]), k);
    CHECK(sends ? side_sender(sd, k) != NULL : side_receiver(sd, k) != NULL);
    CHECK(side_sender(sd, k == 1 ? 2 : 1) == NULL);
    joined_seen = 1;
}

static void
joined_push_step(struct rt *rt)
{
    joined_step(rt, 1, 0);
}

static void
joined_pull_step(struct rt *rt)
{
    joined_step(rt, 2, 1);
}

static void
joined(struct rt *rt)
{
    (void)rt;
    CHECK(joined_seen);
    joined_seen = 0;
}

static void
said_join_no_side(struct rt *rt)
{
    said_join(rt);
    CHECK(!joined_seen);
}

static void
said_state(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, ".ferry is not a private directory") !=
        NULL);
}

static void
said_busy(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "a transfer is running into it") !=
        NULL);
}

static void
peer_said(struct rt *rt)
{
    CHECK_EQ_STR(rt->x.peer_error, "peer says no");
    CHECK_EQ_ERR(rt->x.peer_error_code, FERRY_ERR_PROTOCOL);
}

static void
state_open(struct rt *rt)
{
    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/.ferry", 0777);
}

/* A transfer into dest holds its lock (this process, another open file
 * description: flock tells them apart). */
static int lock_fd = -1;

static void
state_locked(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    rt_mkdir(rt, "dest", 0755);
    rt_mkdir(rt, "dest/.ferry", 0700);
    rt_path(rt, "dest/.ferry/lock", p);
    CHECK((lock_fd = open(p, O_RDWR | O_CREAT, 0600)) >= 0);
    CHECK_EQ_INT(flock(lock_fd, LOCK_EX), 0);
}

static void
unlock(struct rt *rt)
{
    said_busy(rt);
    close(lock_fd);
    lock_fd = -1;
}

static void
unlock_only(struct rt *rt)
{
    (void)rt;
    close(lock_fd);
    lock_fd = -1;
}

static void
deleted_d(struct rt *rt)
{
    char p[CHECK_PATH_MAX];
    struct stat st;

    rt_path(rt, "src/d", p);
    CHECK(lstat(p, &st) != 0 && errno == ENOENT);
    rt_path(rt, "src/a", p);
    CHECK_EQ_INT(lstat(p, &st), 0);
}

/* The agent serves only the scratch root (serve --restrict), and src
 * holds a link out of it. */
static void
restricted_with_link(struct rt *rt)
{
    char msg[256];

    CHECK_OK(policy_restrict(&rt->pol, rt->root, msg, sizeof(msg)));
    rt_link(rt, "src/lnk", "../outside");
}

static void
unrestrict(struct rt *rt)
{
    policy_cleanup(&rt->pol);
}

static void
many_names(struct rt *rt)
{
    char p[CHECK_PATH_MAX + 16];
    unsigned i;
    int fd;

    rt_mkdir(rt, "src/many", 0755);
    for (i = 0; i <= SESSION_GLOB_MAX; i++) {
        rt_path(rt, "src/many", p);
        snprintf(p + strlen(p), 16, "/%u", i);
        CHECK((fd = open(p, O_WRONLY | O_CREAT, 0644)) >= 0);
        close(fd);
    }
}

static void
said_no_match(struct rt *rt)
{
    CHECK(strstr(rt->x.local_error, "~/src/zz*: no match") != NULL);
}

static void
state_in_src(struct rt *rt)
{
    rt_mkdir(rt, "src/.ferry", 0700);
}

/* A watched directory: a checkpoint cut short, a whole .npy, a file a
 * writer (this process) holds open, and a text file. */
static void
checkpoints_in_src(struct rt *rt)
{
    static const char npy[] = "\x93NUMPY\x01\x00\x3a\x00"
        "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }\n"
        "abcd";
    char p[CHECK_PATH_MAX];
    int fd;

    rt_mkdir(rt, "src/ck", 0755);
    rt_path(rt, "src/ck/cut.pth", p);
    CHECK((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0);
    CHECK_EQ_INT(write(fd, "PK\x03\x04 and no end record", 22), 22);
    close(fd);
    rt_path(rt, "src/ck/w.npy", p);
    CHECK((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0);
    CHECK_EQ_INT(write(fd, npy, sizeof(npy) - 1), (ssize_t)sizeof(npy) - 1);
    close(fd);
    rt_write(rt, "src/ck/log.txt", 100);
    rt_write(rt, "src/ck/open.bin", 100);
    rt_path(rt, "src/ck/open.bin", p);
    /* Left open for writing while the agent lists. */
    CHECK(open(p, O_WRONLY | O_APPEND) >= 0);
}

/* The program refuses to run the transfer once it is opened. */
static int
refuse(void *ctx, struct session *s)
{
    (void)ctx;
    (void)s;
    return -EADDRINUSE;
}

/* src's .ferryignore leaves out e. */
static void
ignore_e_in_src(struct rt *rt)
{
    char p[CHECK_PATH_MAX];

    rt_path(rt, "src/.ferryignore", p);
    check_write_file(p, "e\n", 2, 0);
}

static void
refusing_policy(struct rt *rt)
{
    rt->spol.opened = refuse;
}

static const struct rt_case session_agent[] = {
    { "push",
      .script = { HI, PUSH, { F_PLAN(0) }, { F_END } },
      .out = "HELLO OPEN_OK READY SUMMARY:0,0,0", .tree = "" },
    { "pull",
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/a") }, READY_NONE,
                  { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY } },
      .out = "HELLO OPEN_OK PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    /* FILTERS before OPEN: the pull's scan leaves out what they
     * exclude; bad or too many rules end the session. */
    { "pull_filtered",
      .script = { HI, { F_FILTERS(1, "a", 1) },
                  { F_OPEN(OPEN_PULL, "~/src/a") }, READY_NONE,
                  { F_SUMMARY } },
      .out = "HELLO OPEN_OK PLAN:0 END" },
    { "pull_filter_other_name",
      .script = { HI, { F_FILTERS(1, "/b", 1) },
                  { F_OPEN(OPEN_PULL, "~/src/a") }, READY_NONE,
                  { F_WANT(0) }, { F_DONE(0) }, { F_SUMMARY } },
      .out = "HELLO OPEN_OK PLAN:1 ENTRY:0:a BLOCK:0:0 FEND:0 END" },
    { "filters_twice",
      .script = { HI, { F_FILTERS(1, "a", 1) }, { F_FILTERS(1, "a", 1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO ERROR:PROTOCOL" },
    { "filters_after_open",
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/a") },
                  { F_FILTERS(1, "a", 1) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN_OK PLAN:1 ENTRY:0:a ERROR:PROTOCOL" },
    { "filter_pattern_only_slash",
      .script = { HI, { F_FILTERS(2, "/", 1) } },
      .err = FERRY_ERR_FORMAT, .out = "HELLO ERROR:FORMAT" },
    /* LIST: the entries a pull would offer; DELETE: beneath the first
     * path only, a NOTICE for what may not go. */
    { "list",
      .script = { HI, { F_OPEN(OPEN_LIST, "~/src/a") } },
      .out = "HELLO OPEN_OK ENTRY:0:a END" },
    /* A watch's look asks how each file stands. */
    { "list_readiness", .setup = checkpoints_in_src,
      .script = { HI, { F_OPEN(OPEN_LIST, "~/src/ck"),
                        .flags = OPEN_F_READINESS } },
      .out = "HELLO OPEN_OK ENTRY:0:ck ENTRY:1:ck/cut.pth!IT "
          "ENTRY:2:ck/log.txt!I ENTRY:3:ck/open.bin!B ENTRY:4:ck/w.npy!IW "
          "END" },
    /* A watch looks again: a glob with no match yet is a NOTICE. */
    { "list_glob_no_match",
      .script = { HI, { F_OPEN(OPEN_LIST, "~/src/*.nothing") } },
      .out = "HELLO OPEN_OK NOTICE END" },
    { "list_missing",
      .script = { HI, { F_OPEN(OPEN_LIST, "~/nothing") } },
      .out = "HELLO OPEN_OK NOTICE END" },
    /* The sources' ignore files, for a client with IGNORE only (FILTERS
     * is not IGNORE); with FILTERS' rules too. */
    { "list_ignore_file", .setup = ignore_e_in_src,
      .caps_on = PROTO_CAP_IGNORE,
      .script = { HI, { F_OPEN(OPEN_LIST, "~/src") } },
      .out = "HELLO OPEN_OK ENTRY:0:src ENTRY:1:src/.ferryignore "
          "ENTRY:2:src/a ENTRY:3:src/d ENTRY:4:src/d/b ENTRY:5:src/ln END" },
    { "list_ignore_file_needs_capability", .setup = ignore_e_in_src,
      .caps_on = PROTO_CAP_FILTERS,
      .script = { HI, { F_OPEN(OPEN_LIST, "~/src") } },
      .out = "HELLO OPEN_OK ENTRY:0:src ENTRY:1:src/.ferryignore "
          "ENTRY:2:src/a ENTRY:3:src/d ENTRY:4:src/d/b ENTRY:5:src/e "
          "ENTRY:6:src/ln END" },
    { "list_filters_and_ignore_file", .setup = ignore_e_in_src,
      .caps_on = PROTO_CAP_IGNORE,
      .script = { HI, { F_FILTERS(1, "b", 1) },
                  { F_OPEN(OPEN_LIST, "~/src") } },
      .out = "HELLO OPEN_OK ENTRY:0:src ENTRY:1:src/.ferryignore "
          "ENTRY:2:src/a ENTRY:3:src/d ENTRY:4:src/ln END" },
    { "list_filters_without_ignore_file", .setup = ignore_e_in_src,
      .script = { HI, { F_FILTERS(1, "b", 1) },
                  { F_OPEN(OPEN_LIST, "~/src") } },
      .out = "HELLO OPEN_OK ENTRY:0:src ENTRY:1:src/.ferryignore "
          "ENTRY:2:src/a ENTRY:3:src/d ENTRY:4:src/e ENTRY:5:src/ln END" },
    { "list_then_a_frame",
      .script = { HI, { F_OPEN(OPEN_LIST, "~/src/a") }, { F_END } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN_OK ENTRY:0:a END ERROR:PROTOCOL" },
    { "delete", .check = deleted_d,
      .script = { HI, { F_OPEN2(OPEN_DELETE, "~/src", "d") } },
      .out = "HELLO OPEN_OK END" },
    { "delete_state_dir", .setup = state_in_src,
      .script = { HI, { F_OPEN2(OPEN_DELETE, "~/src", ".ferry") } },
      .out = "HELLO OPEN_OK NOTICE END" },
    { "delete_dotdot",
      .script = { HI, { F_OPEN2(OPEN_DELETE, "~/src", "../src") } },
      .out = "HELLO OPEN_OK NOTICE END" },
    /* Globs in a pull's sources: expanded by the agent, in name order;
     * no match ends it before anything is sent; each match is confined
     * like any path; at most SESSION_GLOB_MAX of them. */
    { "pull_glob",
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/[ae]") }, READY_NONE,
                  { F_WANT(0) }, { F_WANT(1) }, { F_DONE(0) }, { F_DONE(1) },
                  { F_SUMMARY } },
      .out = "HELLO OPEN_OK PLAN:2 ENTRY:0:a ENTRY:1:e BLOCK:0:0 FEND:0 "
          "FEND:1 END" },
    { "pull_glob_no_match", .check = said_no_match,
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/zz*") } },
      .err = -ENOENT, .out = "HELLO ERROR:ENOENT" },
    { "pull_glob_through_link",
      .setup = restricted_with_link, .check = unrestrict,
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/l*/keep") } },
      .err = -EACCES, .out = "HELLO ERROR:EACCES" },
    { "pull_glob_too_many",
      .setup = many_names,
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/many/*") } },
      .err = FERRY_ERR_TOO_LARGE, .out = "HELLO ERROR:TOO_LARGE" },
    { "pull_missing_source",
      .script = { HI, { F_OPEN(OPEN_PULL, "~/nothing") }, READY_NONE,
                  { F_SUMMARY } },
      .out = "HELLO OPEN_OK PLAN:0 NOTICE END" },
    { "status_says_space",
      .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") } },
      .out = "HELLO OPEN_OK SPACE END" },
    /* After the END of a STATUS, with PROTO_CAP_PROBE: the probe's
     * answers, until the client's END. */
    { "status_space_needs_capability",
      .caps_on = PROTO_CAP_FILTERS,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") } },
      .out = "HELLO OPEN_OK END" },
    { "status_then_probe",
      .caps_on = PROTO_CAP_PROBE,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") }, { F_PROBE(1) },
                  { F_PROBE(0) }, { F_PROBE(5) }, { F_END } },
      .out = "HELLO OPEN_OK END PROBE:1 PROBE:5" },
    { "status_probe_other_frame",
      .caps_on = PROTO_CAP_PROBE,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") }, { F_PLAN(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN_OK END ERROR:PROTOCOL" },
    { "status_probe_closed",
      .caps_on = PROTO_CAP_PROBE,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") }, { F_EOF } },
      .err = FERRY_ERR_CLOSED, .out = "HELLO OPEN_OK END" },
    { "status_without_state",
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") } },
      .out = "HELLO OPEN_OK END" },
    { "clean_without_state",
      .script = { HI, { F_OPEN(OPEN_CLEAN, "~/outside") } },
      .out = "HELLO OPEN_OK END" },
    { "status_state_not_ours",
      .setup = state_open, .check = said_state,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/dest") } },
      .err = FERRY_ERR_STATE, .out = "HELLO ERROR:STATE",
      .tree = ".ferry/" },
    /* A client that knows BUSY hears that a transfer holds the
     * destination: in a STATUS, and before SPACE in a PUSH (whose
     * receiver will wait for the lock). */
    { "status_says_busy",
      .setup = state_locked, .check = unlock_only,
      .caps_on = PROTO_CAP_SPACE | PROTO_CAP_BUSY,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/dest") } },
      .out = "HELLO OPEN_OK SPACE BUSY END", .tree = ".ferry/" },
    { "status_busy_needs_capability",
      .setup = state_locked, .check = unlock_only,
      .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/dest") } },
      .out = "HELLO OPEN_OK SPACE END", .tree = ".ferry/" },
    { "status_not_busy",
      .caps_on = PROTO_CAP_SPACE | PROTO_CAP_BUSY,
      .script = { HI, { F_OPEN(OPEN_STATUS, "~/outside") } },
      .out = "HELLO OPEN_OK SPACE END" },
    { "push_says_busy",
      .setup = state_locked, .check = unlock_only,
      .caps_on = PROTO_CAP_SPACE | PROTO_CAP_BUSY,
      .script = { HI, PUSH },
      .out = "HELLO OPEN_OK BUSY SPACE", .tree = ".ferry/" },
    { "clean_while_locked",
      .setup = state_locked, .check = unlock,
      .script = { HI, { F_OPEN(OPEN_CLEAN, "~/dest") } },
      .err = -EBUSY, .out = "HELLO ERROR:ERROR", .tree = ".ferry/" },
    { "opened_refused",
      .setup = refusing_policy,
      .script = { HI, PUSH },
      .err = -EADDRINUSE, .out = "HELLO ERROR:PEER" },
    { "push_into_a_file",
      .script = { HI, { F_OPEN(OPEN_PUSH, "~/outside/keep/x") },
                  { F_PLAN(0) } },
      .err = -ENOTDIR, .out = "HELLO OPEN_OK ERROR:ENOTDIR" },
    /* HELLO first, once; the version ranges must meet. */
    { "open_before_hello",
      .script = { PUSH },
      .err = FERRY_ERR_PROTOCOL, .out = "ERROR:PROTOCOL" },
    { "hello_twice",
      .script = { HI, HI },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO ERROR:PROTOCOL" },
    { "hello_versions_too_old",
      .check = said_version,
      .script = { { F_HELLO_V(1, 1) } },
      .err = FERRY_ERR_VERSION, .out = "HELLO ERROR:VERSION" },
    { "hello_versions_too_new",
      .script = { { F_HELLO_V(PROTO_VERSION_MAX + 1, PROTO_VERSION_MAX + 5) } },
      .err = FERRY_ERR_VERSION, .out = "HELLO ERROR:VERSION" },
    { "hello_versions_overlap",
      .script = { { F_HELLO_V(1, PROTO_VERSION_MAX + 5) }, PUSH },
      .out = "HELLO OPEN_OK" },
    { "open_twice",
      .script = { HI, PUSH, PUSH },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN_OK ERROR:PROTOCOL" },
    { "peer_error_in_hello",
      .check = peer_said,
      .script = { HI, { F_ERROR } },
      .err = FERRY_ERR_PEER, .out = "HELLO" },
    { "closed_in_hello",
      .script = { HI, { F_EOF } },
      .err = FERRY_ERR_CLOSED, .out = "HELLO" },
    /* JOIN: a further stream of the transfer this process opened. */
    { "join", .each_step = joined_push_step, .check = joined,
      .script = { HI, PUSH, { F_PLAN(1) }, { F_FILE(0, "a", 100) },
                  { F_HELLO, ON(1) }, { F_JOIN(1), ON(1) },
                  { F_BLOCK(0, 0), ON(1) }, { F_FEND(0), ON(1) }, { F_END } },
      .out = "HELLO OPEN_OK READY WANT:0 HELLO@1 JOIN_OK@1 "
          "DONE:0 SUMMARY:1,0,0",
      .tree = "a=100" },
    { "join_pull", .each_step = joined_pull_step, .check = joined,
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/e") }, { F_HELLO, ON(2) },
                  { F_JOIN(2), ON(2) }, READY_NONE, { F_WANT(0) },
                  { F_DONE(0), ON(2) }, { F_SUMMARY } },
      .out = "HELLO OPEN_OK PLAN:1 ENTRY:0:e HELLO@2 JOIN_OK@2 FEND:0 END" },
    { "join_other_transfer", .each_step = joined_push_step,
      .check = said_join_no_side,
      .script = { HI, PUSH, { F_HELLO, ON(1) },
                  { F_JOIN(1), ON(1), .v = RV_OTHER } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN_OK HELLO@1 ERROR:PROTOCOL@1" },
    /* The id alone is not enough: the key is the transfer's secret. */
    { "join_other_key",
      .check = said_join,
      .script = { HI, PUSH, { F_HELLO, ON(1) },
                  { F_JOIN(1), ON(1), .v = RV_OTHER_KEY } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN_OK HELLO@1 ERROR:PROTOCOL@1" },
    { "join_stream_in_use",
      .check = said_join,
      .script = { HI, PUSH, { F_HELLO, ON(1) }, { F_JOIN(1), ON(1) },
                  { F_HELLO, ON(2) }, { F_JOIN(1), ON(2) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN_OK HELLO@1 JOIN_OK@1 HELLO@2 ERROR:PROTOCOL@2" },
    { "open_on_joined_stream",
      .script = { HI, PUSH, { F_HELLO, ON(1) }, { PUSH_ON_1 } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN_OK HELLO@1 ERROR:PROTOCOL@1" },
    { "join_where_nothing_was_opened",
      .unjoined = 1,
      .script = { { F_HELLO, ON(1) }, { F_JOIN(1), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO@1 ERROR:PROTOCOL@1" },
};

/* The client's side of a push (roles are senders of the scratch src). */
static const struct rt_case session_client[] = {
    { "open",
      .client = 1,
      .script = { HI, { F_OPEN_OK }, READY_NONE },
      .out = "HELLO OPEN PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d "
          "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln" },
    /* An agent with SPACE says it after OPEN_OK, before the role. */
    { "space",
      .client = 1, .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN_OK }, { F_SPACE(100, 200) }, READY_NONE },
      .out = "HELLO OPEN PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d "
          "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln" },
    /* BUSY: before SPACE, once, with its capability. */
    { "busy_then_space",
      .client = 1, .caps_on = PROTO_CAP_SPACE | PROTO_CAP_BUSY,
      .script = { HI, { F_OPEN_OK }, { F_BUSY }, { F_SPACE(100, 200) },
                  READY_NONE },
      .out = "HELLO OPEN PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d "
          "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln" },
    { "busy_twice",
      .client = 1, .caps_on = PROTO_CAP_SPACE | PROTO_CAP_BUSY,
      .script = { HI, { F_OPEN_OK }, { F_BUSY }, { F_BUSY } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN ERROR:PROTOCOL" },
    { "busy_without_capability",
      .client = 1, .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN_OK }, { F_BUSY } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN ERROR:PROTOCOL" },
    { "space_missing",
      .client = 1, .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN_OK }, READY_NONE },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN ERROR:PROTOCOL" },
    { "space_more_free_than_size",
      .client = 1, .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN_OK }, { F_SPACE(300, 200) } },
      .err = FERRY_ERR_FORMAT, .out = "HELLO OPEN ERROR:FORMAT" },
    /* The agent says SPACE to a client with SPACE, only; FILTERS is not
     * SPACE. */
    { "agent_says_space",
      .caps_on = PROTO_CAP_SPACE,
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/a") } },
      .out = "HELLO OPEN_OK SPACE PLAN:1 ENTRY:0:a" },
    { "agent_space_needs_capability",
      .caps_on = PROTO_CAP_FILTERS,
      .script = { HI, { F_OPEN(OPEN_PULL, "~/src/a") } },
      .out = "HELLO OPEN_OK PLAN:1 ENTRY:0:a" },
    { "space_needs_capability",
      .client = 1, .caps_on = PROTO_CAP_FILTERS,
      .script = { HI, { F_OPEN_OK }, READY_NONE },
      .out = "HELLO OPEN PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d "
          "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln" },
    { "join",
      .client = 1,
      .script = { { F_HELLO, ON(1) }, { F_JOIN_OK, ON(1) } },
      .out = "HELLO OPEN HELLO@1 JOIN@1" },
    { "not_hello_first",
      .client = 1,
      .script = { { F_OPEN_OK } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN ERROR:PROTOCOL" },
    { "join_ok_for_open",
      .client = 1,
      .script = { HI, { F_JOIN_OK } },
      .err = FERRY_ERR_PROTOCOL, .out = "HELLO OPEN ERROR:PROTOCOL" },
    { "open_ok_for_join",
      .client = 1,
      .script = { { F_HELLO, ON(1) }, { F_OPEN_OK, ON(1) } },
      .err = FERRY_ERR_PROTOCOL,
      .out = "HELLO OPEN HELLO@1 JOIN@1 ERROR:PROTOCOL@1" },
    { "versions_apart",
      .client = 1, .check = said_version,
      .script = { { F_HELLO_V(1, 1) } },
      .err = FERRY_ERR_VERSION, .out = "HELLO OPEN ERROR:VERSION" },
    { "agent_refuses",
      .client = 1, .check = peer_said,
      .script = { HI, { F_ERROR } },
      .err = FERRY_ERR_PEER, .out = "HELLO OPEN" },
};

TEST(session_agent)
{
    RT_RUN_TABLE(session_agent, rt_session_case);
}

TEST(session_client)
{
    RT_RUN_TABLE(session_client, rt_session_case);
}

/* The agent's policy: "~" and "~/" are $HOME, nothing else is touched. */
TEST(session_policy)
{
    static const struct {
        const char *home, *path;
        size_t len;
        const char *want;
    } cases[] = {
        { "/h", LIT("~"), "/h" },
        { "/h", LIT("~/"), "/h/" },
        { "/h", LIT("~/x/y"), "/h/x/y" },
        { "/h", LIT("~x"), "~x" },
        { "/h", LIT("~~"), "~~" },
        { "/h", LIT("a/~"), "a/~" },
        { "/h", LIT("/abs"), "/abs" },
        { "/h", "~/abc", 3, "/h/a" },
        { "", LIT("~/x"), "/x" },
        { NULL, LIT("~/x"), "~/x" },
        { NULL, LIT("~"), "~" },
    };
    struct policy pol;
    char msg[64], *out;
    size_t i;

    memset(&pol, 0, sizeof(pol));
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("case %zu", i);
        pol.home = cases[i].home;
        out = (char *)1;
        CHECK_OK(policy_resolve(&pol, OPEN_PUSH, cases[i].path,
            cases[i].len, &out, msg, sizeof(msg)));
        CHECK_EQ_STR(out, cases[i].want);
        free(out);
    }
    check_note_clear();
}

/* A read-only agent (serve --restrict --read-only) lists but does not
 * delete; DELETE and LIST are confined like every other path. */
TEST(session_policy_delete)
{
    struct policy pol;
    char dir[CHECK_PATH_MAX], msg[256], *out = NULL;

    check_tmpdir(dir);
    memset(&pol, 0, sizeof(pol));
    CHECK_OK(policy_restrict(&pol, dir, msg, sizeof(msg)));
    CHECK_OK(policy_resolve(&pol, OPEN_DELETE, LIT("~"), &out, msg,
        sizeof(msg)));
    free(out);
    CHECK_EQ_ERR(policy_resolve(&pol, OPEN_LIST, LIT("/etc"), &out, msg,
        sizeof(msg)), -EACCES);
    CHECK_EQ_ERR(policy_resolve(&pol, OPEN_DELETE, LIT("~/../x"), &out,
        msg, sizeof(msg)), -EACCES);
    pol.read_only = 1;
    CHECK_OK(policy_resolve(&pol, OPEN_LIST, LIT("~"), &out, msg,
        sizeof(msg)));
    free(out);
    CHECK_EQ_ERR(policy_resolve(&pol, OPEN_DELETE, LIT("~"), &out, msg,
        sizeof(msg)), -EACCES);
    CHECK(strstr(msg, "no push, clean or delete") != NULL);
    policy_cleanup(&pol);
}
