/*
 * The client's role in STATUS and CLEAN (client/status.c), fed the frames
 * an agent sends: what it collects, where it refuses (a bound on the
 * list, frames out of place, an end cut short), a retry's restart, and
 * what status_print makes of the list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../client/output.h"
#include "../../client/status.h"
#include "../../common/buf.h"
#include "../../engine/conn.h"
#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "../../proto/msg_space.h"
#include "check.h"

static void
put_partial(struct buf *b, const char *path, uint64_t size, uint64_t done,
    int64_t age_s)
{
    struct msg_partial m = { { path, strlen(path) }, size, done, age_s };

    CHECK_OK(msg_partial_encode(b, &m));
}

/* One step of s's role over the frames in in; its result. */
static int
step(struct status *s, const struct buf *in, int eof, struct conn_step *st)
{
    static struct buf out;

    buf_init(&out, 1 << 20);
    memset(st, 0, sizeof(*st));
    st->in = in->data;
    st->in_len = in->len;
    st->eof = eof;
    st->out = &out;
    return status_step(s, st);
}

TEST(client_status_role)
{
    struct msg_space sp = { 1000, 5000, 0 };
    struct conn_step st;
    struct status s;
    struct xfer x;
    struct buf in;

    memset(&x, 0, sizeof(x));
    status_init(&s, &x);
    buf_init(&in, 1 << 20);
    put_partial(&in, "a/one", 100, 40, 30);
    put_partial(&in, "two", 7, 7, 7200);
    CHECK_OK(msg_space_encode(&in, &sp));
    /* Not done before END. */
    CHECK_OK(step(&s, &in, 0, &st));
    CHECK_EQ_INT(st.done, 0);
    CHECK_EQ_INT(s.n, 2);
    CHECK_EQ_STR(s.v[0].path, "a/one");
    CHECK_EQ_U64(s.v[0].size, 100);
    CHECK_EQ_U64(s.v[0].done, 40);
    CHECK_EQ_U64(s.v[1].age_s, 7200);
    CHECK_EQ_INT(s.have_space, 1);
    CHECK_EQ_U64(s.avail, 1000);
    CHECK_EQ_U64(s.size, 5000);
    buf_reset(&in);
    CHECK_OK(msg_end_encode(&in));
    CHECK_OK(step(&s, &in, 0, &st));
    CHECK_EQ_INT(st.done, 1);

    /* A retry starts the list again. */
    CHECK_OK(status_restart(&s));
    CHECK_EQ_INT(s.n, 0);
    CHECK_EQ_INT(s.have_space, 0);
    CHECK(s.x == &x);
    status_cleanup(&s);
    buf_cleanup(&in);
}

/* What the agent may not do: more than STATUS_MAX_PARTIALS files, a
 * frame that is no answer to STATUS, bytes after END, BUSY unannounced,
 * an end without END. */
TEST(client_status_refuses)
{
    struct conn_step st;
    struct status s;
    struct xfer x;
    struct buf in;
    char path[32];
    unsigned i;

    memset(&x, 0, sizeof(x));
    status_init(&s, &x);
    buf_init(&in, 64u << 20);
    for (i = 0; i < STATUS_MAX_PARTIALS; i++) {
        snprintf(path, sizeof(path), "f%u", i);
        put_partial(&in, path, 10, 1, 0);
    }
    CHECK_OK(step(&s, &in, 0, &st));
    CHECK_EQ_U64(s.n, STATUS_MAX_PARTIALS);
    buf_reset(&in);
    put_partial(&in, "one-more", 10, 1, 0);
    CHECK_EQ_ERR(step(&s, &in, 0, &st), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(s.n, STATUS_MAX_PARTIALS);
    CHECK(strstr(x.local_error, "more than") != NULL);
    status_cleanup(&s);

    /* A frame of a transfer. */
    status_init(&s, &x);
    buf_reset(&in);
    {
        size_t mark;

        CHECK_OK(frame_begin(&in, MSG_FILE_DONE, &mark));
        CHECK_OK(frame_finish(&in, mark));
    }
    CHECK_EQ_ERR(step(&s, &in, 0, &st), FERRY_ERR_PROTOCOL);
    status_cleanup(&s);

    /* Bytes after END. */
    status_init(&s, &x);
    buf_reset(&in);
    CHECK_OK(msg_end_encode(&in));
    put_partial(&in, "late", 1, 1, 0);
    CHECK_EQ_ERR(step(&s, &in, 0, &st), FERRY_ERR_PROTOCOL);
    status_cleanup(&s);

    /* BUSY from an agent that did not say it knows BUSY. */
    status_init(&s, &x);
    buf_reset(&in);
    {
        struct msg_busy b = { { "pid 1", 5 } };

        CHECK_OK(msg_busy_encode(&in, &b));
    }
    CHECK_EQ_ERR(step(&s, &in, 0, &st), FERRY_ERR_PROTOCOL);
    status_cleanup(&s);

    /* The agent gone before END. */
    status_init(&s, &x);
    buf_reset(&in);
    put_partial(&in, "cut", 1, 1, 0);
    CHECK_EQ_ERR(step(&s, &in, 1, &st), FERRY_ERR_CLOSED);
    status_cleanup(&s);
    buf_cleanup(&in);
}

/* Reads what fd 1 or 2 got since redirect into buf (NUL-ended). */
static void
captured(FILE *f, const char *path, char *buf, size_t n)
{
    FILE *r;
    size_t got;

    fflush(f);
    CHECK((r = fopen(path, "r")) != NULL);
    got = fread(buf, 1, n - 1, r);
    buf[got] = '\0';
    fclose(r);
}

/* The list as lines (and the totals for the summary), and as events. */
TEST(client_status_print)
{
    char errpath[] = "/tmp/ferry-status-err.XXXXXX";
    char outpath[] = "/tmp/ferry-status-out.XXXXXX";
    char text[8192];
    struct output o;
    struct status s;
    struct xfer x;
    struct partial_info *v = NULL;
    size_t n = 0, cap = 0;
    int efd, ofd;

    CHECK((efd = mkstemp(errpath)) >= 0);
    CHECK((ofd = mkstemp(outpath)) >= 0);
    CHECK(dup2(efd, 2) == 2);
    CHECK(dup2(ofd, 1) == 1);
    memset(&x, 0, sizeof(x));
    status_init(&s, &x);
    CHECK_OK(partial_list_add(&v, &n, &cap, "big.bin", 7, 1000, 250, 90));
    s.v = v;
    s.n = n;
    s.cap = cap;
    memset(&o, 0, sizeof(o));
    output_init(&o, &x);
    status_print(&s, &o, "box:/d", 0);
    captured(stdout, outpath, text, sizeof(text));
    CHECK(strstr(text, "25%") != NULL);
    CHECK(strstr(text, "big.bin") != NULL);
    captured(stderr, errpath, text, sizeof(text));
    CHECK(strstr(text, "box:/d: 1 unfinished file; the same transfer run "
        "again resumes them") != NULL);
    CHECK_EQ_INT(x.kept_known, 1);
    CHECK_EQ_U64(x.kept_files, 1);
    CHECK_EQ_U64(x.kept_bytes, 250);

    /* clean: the same files, removed, and nothing kept. */
    CHECK(ftruncate(ofd, 0) == 0 && lseek(ofd, 0, SEEK_SET) == 0);
    o.json = 1;
    status_print(&s, &o, "box:/d", 1);
    captured(stdout, outpath, text, sizeof(text));
    CHECK(strstr(text, "\"event\":\"partial\"") != NULL);
    CHECK(strstr(text, "\"path\":\"big.bin\"") != NULL);
    CHECK(strstr(text, "\"done\":250") != NULL);
    CHECK(strstr(text, "\"removed\":true") != NULL);
    CHECK_EQ_U64(x.kept_files, 0);
    status_cleanup(&s);
    unlink(errpath);
    unlink(outpath);
}
