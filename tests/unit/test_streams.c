/*
 * What carries the streams of a transfer: the group of conns that share
 * it (engine/conn.c) and the agents' rendezvous (server/rendezvous.c),
 * through which an agent that got a JOIN hands its connection to the one
 * that runs the transfer.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "../../engine/conn.h"
#include "../../engine/xfer.h"
#include "../../server/rendezvous.h"
#include "check.h"

static int
never_step(void *role, struct conn_step *st)
{
    (void)role;
    (void)st;
    return FERRY_ERR_USAGE;
}

/* A group holds CONN_GROUP_MAX conns; one more is refused before
 * anything is set up. */
TEST(streams_group_full)
{
    struct conn_group g;
    struct conn c;
    uv_loop_t loop;
    int sv[2];

    CHECK_OK(uv_loop_init(&loop));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    memset(&g, 0, sizeof(g));
    g.n = CONN_GROUP_MAX;
    memset(&c, 0, sizeof(c));
    c.group = &g;
    CHECK_EQ_ERR(conn_start_fds(&c, &loop, sv[0], sv[0], never_step, NULL,
        NULL), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_INT(g.n, CONN_GROUP_MAX);
    close(sv[0]);
    close(sv[1]);
    CHECK_OK(uv_loop_close(&loop));
}

/* A ticket of a new transfer, random as the client draws one. */
static void
new_ticket(struct rendezvous_ticket *t, const char *scope)
{
    memset(t, 0, sizeof(*t));
    CHECK_EQ_INT(getrandom(t->id, sizeof(t->id), 0), (int)sizeof(t->id));
    CHECK_EQ_INT(getrandom(t->key, sizeof(t->key), 0), (int)sizeof(t->key));
    snprintf(t->scope, sizeof(t->scope), "%s", scope);
}

/* Nobody runs the transfer: the JOIN cannot be handed over. */
TEST(streams_handover_nobody)
{
    struct rendezvous_ticket t;

    new_ticket(&t, "any");
    CHECK_EQ_ERR(rendezvous_handover(&t, 0, 1, "x", 1), -ECONNREFUSED);
}

/* The bytes an agent forwards are bounded (HELLO and JOIN fit). */
TEST(streams_handover_too_large)
{
    static char bytes[RVMSG_MAX_BYTES + 1];
    struct rendezvous_ticket t;
    struct rendezvous rv;

    new_ticket(&t, "any");
    CHECK_OK(rendezvous_bind(&rv, &t));
    CHECK_EQ_ERR(rendezvous_handover(&t, 0, 1, bytes, sizeof(bytes)),
        FERRY_ERR_TOO_LARGE);
    rendezvous_close(&rv);
}

struct adopted {
    int rfd, wfd, token, n, stops;
    char bytes[16];
    uv_timer_t timer;
    struct rendezvous *rv;
};

static void
adopt(void *ctx, int rfd, int wfd, const uint8_t *bytes, size_t n,
    int token)
{
    struct adopted *a = ctx;

    a->rfd = rfd;
    a->wfd = wfd;
    a->token = token;
    a->n = (int)n;
    memcpy(a->bytes, bytes, n < sizeof(a->bytes) ? n : sizeof(a->bytes));
    uv_timer_stop(&a->timer);
}

static void
stop(void *ctx, int token)
{
    (void)ctx;
    (void)token;
    check_fail(__FILE__, __LINE__, "asked to stop");
}

/* A takeover: the listener stops as an agent would, then lets go. */
static void
stop_counted(void *ctx, int token)
{
    struct adopted *a = ctx;

    a->stops++;
    rendezvous_close(a->rv);
    rendezvous_release(token);
    uv_timer_stop(&a->timer);
}

static void
give_up(uv_timer_t *t)
{
    (void)t;
}

/* Runs loop until the listener acted or ms passed. */
static void
run_listener(uv_loop_t *loop, struct adopted *a, int ms)
{
    CHECK_OK(uv_timer_init(loop, &a->timer));
    CHECK_OK(uv_timer_start(&a->timer, give_up, (uint64_t)ms, 0));
    CHECK_OK(uv_run(loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
}

static void
close_listener(uv_loop_t *loop, struct adopted *a)
{
    uv_close((uv_handle_t *)&a->timer, NULL);
    CHECK_OK(uv_run(loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
    CHECK_OK(uv_loop_close(loop));
}

static int
child_status(pid_t pid)
{
    int status;

    CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* A connection handed over arrives with the bytes read before, and the
 * agent that handed it waits until it is let go. */
TEST(streams_handover)
{
    struct rendezvous_ticket t;
    struct adopted a;
    struct rendezvous rv;
    uv_loop_t loop;
    int sv[2];
    char c;
    pid_t pid;

    new_ticket(&t, "rw:/srv/data");
    memset(&a, 0, sizeof(a));
    a.token = -1;
    CHECK_OK(uv_loop_init(&loop));
    CHECK_OK(rendezvous_bind(&rv, &t));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK((pid = fork()) >= 0);
    if (pid == 0)
        _exit(rendezvous_handover(&t, sv[1], sv[1], "HELLO", 5) == 0 ? 0 :
            1);
    close(sv[1]);
    CHECK_OK(rendezvous_start(&rv, &loop, adopt, stop, &a));
    /* The listener does not keep a loop alive on its own. */
    run_listener(&loop, &a, 5000);
    CHECK(a.token >= 0);
    CHECK_EQ_INT(a.n, 5);
    CHECK_EQ_MEM(a.bytes, "HELLO", 5);
    /* The fds are the child's end of the pair. */
    CHECK_EQ_INT(write(a.wfd, "!", 1), 1);
    CHECK_EQ_INT(read(sv[0], &c, 1), 1);
    CHECK_EQ_INT(c, '!');
    close(a.rfd);
    if (a.wfd != a.rfd)
        close(a.wfd);
    rendezvous_release(a.token);
    CHECK_EQ_INT(child_status(pid), 0);
    rendezvous_close(&rv);
    close_listener(&loop, &a);
    close(sv[0]);
}

/* Only the whole ticket finds the transfer: the id with another key (a
 * guess, or an id read off the box), or the right id and key from an
 * agent of another scope (a restricted key's agent joining an
 * unrestricted transfer, another root, another mode) find nobody, and
 * the listener adopts nothing. */
TEST(streams_handover_other_ticket)
{
    static const char *scopes[] = { "any", "ro:/srv/data", "rw:/srv",
        "rw:/srv/data/x", "wo:/srv/data" };
    struct rendezvous_ticket t, o;
    struct adopted a;
    struct rendezvous rv;
    uv_loop_t loop;
    size_t i;

    new_ticket(&t, "rw:/srv/data");
    memset(&a, 0, sizeof(a));
    a.token = -1;
    CHECK_OK(uv_loop_init(&loop));
    CHECK_OK(rendezvous_bind(&rv, &t));
    CHECK_OK(rendezvous_start(&rv, &loop, adopt, stop, &a));
    o = t;
    o.key[31] ^= 1;
    CHECK_EQ_ERR(rendezvous_handover(&o, 0, 1, "x", 1), -ECONNREFUSED);
    for (i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
        o = t;
        snprintf(o.scope, sizeof(o.scope), "%s", scopes[i]);
        CHECK_EQ_ERR(rendezvous_handover(&o, 0, 1, "x", 1), -ECONNREFUSED);
    }
    run_listener(&loop, &a, 50);
    CHECK_EQ_INT(a.token, -1);
    rendezvous_close(&rv);
    close_listener(&loop, &a);
}

/* The listener checks every datagram against its ticket too, field by
 * field, whatever name it came by. */
TEST(streams_rendezvous_admit)
{
    struct rendezvous_ticket t;
    struct rvmsg m;

    new_ticket(&t, "wo:/srv/data");
    memset(&m, 0, sizeof(m));
    m.kind = RVMSG_JOIN;
    memcpy(m.transfer_id, t.id, sizeof(t.id));
    memcpy(m.transfer_key, t.key, sizeof(t.key));
    m.scope = t.scope;
    m.scope_len = strlen(t.scope);
    CHECK_OK(rendezvous_admit(&t, &m));
    m.transfer_id[15] ^= 0x80;
    CHECK_EQ_ERR(rendezvous_admit(&t, &m), FERRY_ERR_PROTOCOL);
    m.transfer_id[15] ^= 0x80;
    m.transfer_key[0] ^= 1;
    CHECK_EQ_ERR(rendezvous_admit(&t, &m), FERRY_ERR_PROTOCOL);
    m.transfer_key[0] ^= 1;
    m.scope = "any";
    m.scope_len = 3;
    CHECK_EQ_ERR(rendezvous_admit(&t, &m), FERRY_ERR_PROTOCOL);
    m.scope = "wo:/srv/data/";
    m.scope_len = strlen(m.scope);
    CHECK_EQ_ERR(rendezvous_admit(&t, &m), FERRY_ERR_PROTOCOL);
    m.scope_len--;  /* "wo:/srv/data" again */
    CHECK_OK(rendezvous_admit(&t, &m));
    m.scope_len--;  /* a prefix of it */
    CHECK_EQ_ERR(rendezvous_admit(&t, &m), FERRY_ERR_PROTOCOL);
}

/* The socket's name, which /proc/net/unix lists to every local user,
 * shows neither the id nor the key, and depends on every part of the
 * ticket. */
TEST(streams_rendezvous_name)
{
    char name[RENDEZVOUS_NAME_LEN + 1], other[RENDEZVOUS_NAME_LEN + 1];
    char idhex[2 * 16 + 1], line[512];
    struct rendezvous_ticket t, o;
    struct rendezvous rv;
    FILE *f;
    int found = 0, i;

    new_ticket(&t, "any");
    rendezvous_name(&t, name);
    CHECK_EQ_INT((int)strlen(name), RENDEZVOUS_NAME_LEN);
    for (i = 0; i < 16; i++)
        snprintf(idhex + 2 * i, 3, "%02x", t.id[i]);
    /* No run of 8 hex digits of the id (4 bytes) appears in it. */
    for (i = 0; i + 8 <= 32; i += 2)
        CHECK(memmem(name, strlen(name), idhex + i, 8) == NULL);
    rendezvous_name(&t, other);
    CHECK_EQ_STR(name, other);
    o = t;
    o.key[7] ^= 4;
    rendezvous_name(&o, other);
    CHECK(strcmp(name, other) != 0);
    o = t;
    snprintf(o.scope, sizeof(o.scope), "ro:/");
    rendezvous_name(&o, other);
    CHECK(strcmp(name, other) != 0);
    /* Bound, the name is what the kernel lists; the id is not there. */
    CHECK_OK(rendezvous_bind(&rv, &t));
    CHECK((f = fopen("/proc/net/unix", "r")) != NULL);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, name) != NULL)
            found = 1;
        CHECK(strstr(line, idhex) == NULL);
    }
    fclose(f);
    CHECK(found);
    rendezvous_close(&rv);
}

/* An agent that opens a running transfer's id with another key binds
 * a name of its own and never asks the running one to stop; the same
 * ticket (the same client, reconnected) does take over. */
TEST(streams_takeover_needs_ticket)
{
    struct rendezvous_ticket t, o;
    struct rendezvous rv, rv2;
    struct adopted a;
    uv_loop_t loop;
    pid_t pid;

    new_ticket(&t, "any");
    memset(&a, 0, sizeof(a));
    a.token = -1;
    a.rv = &rv;
    CHECK_OK(uv_loop_init(&loop));
    CHECK_OK(rendezvous_bind(&rv, &t));
    CHECK_OK(rendezvous_start(&rv, &loop, adopt, stop_counted, &a));
    o = t;
    o.key[0] ^= 0x10;
    /* Not run by the loop meanwhile: an asker would wait its full time
     * for an answer and fail. */
    CHECK((pid = fork()) >= 0);
    if (pid == 0) {
        int r = rendezvous_bind(&rv2, &o);

        rendezvous_close(&rv2);
        _exit(r == 0 ? 0 : 1);
    }
    CHECK_EQ_INT(child_status(pid), 0);
    run_listener(&loop, &a, 50);
    CHECK_EQ_INT(a.stops, 0);
    uv_close((uv_handle_t *)&a.timer, NULL);
    CHECK_OK(uv_run(&loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
    /* The same ticket again: asked, stopped, and the name passes on. */
    CHECK((pid = fork()) >= 0);
    if (pid == 0) {
        int r;

        /* The listener's socket, copied by fork, would hold the name
         * for ever (an agent is a process of its own). */
        close(rv.fd);
        r = rendezvous_bind(&rv2, &t);

        rendezvous_close(&rv2);
        _exit(r == 0 ? 0 : 1);
    }
    run_listener(&loop, &a, 5000);
    CHECK_EQ_INT(a.stops, 1);
    /* The listener's socket closes as the loop ends. */
    close_listener(&loop, &a);
    CHECK_EQ_INT(child_status(pid), 0);
}

/* A role that always has more to say and does not end at the EOF (as
 * the agent's answer to a status probe that still owes data). */
struct owing {
    int steps_at_eof, closed, close_err;
};

static int
owing_step(void *role, struct conn_step *st)
{
    struct owing *o = role;
    uint8_t *p;
    int r;

    /* A second step after the EOF: the conn went on stepping into the
     * void, which ends here rather than at the case's timeout. */
    if (st->eof && o->steps_at_eof++ > 0)
        return FERRY_ERR_USAGE;
    if ((r = buf_reserve(st->out, CONN_STEP_BUDGET, &p)) != 0)
        return r;
    memset(p, 0, CONN_STEP_BUDGET);
    st->more = 1;
    return 0;
}

static void
owing_closed(struct conn *c, int err)
{
    struct owing *o = c->data;

    o->closed = 1;
    o->close_err = err;
}

/* A peer that goes away while CONN_TX_HIGH bytes wait to be written
 * fails the write: the role hears the EOF once, and as nothing can be
 * written or read any more the conn ends as closed (it stepped the role
 * for ever, dropping what it wrote). */
TEST(streams_write_fails_ends)
{
    struct owing o;
    struct conn c;
    uv_loop_t loop;
    int sv[2];

    signal(SIGPIPE, SIG_IGN);
    memset(&o, 0, sizeof(o));
    CHECK_OK(uv_loop_init(&loop));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    memset(&c, 0, sizeof(c));
    c.data = &o;
    CHECK_OK(conn_start_fds(&c, &loop, sv[0], sv[0], owing_step, &o,
        owing_closed));
    while (c.tx_pending < CONN_TX_HIGH && !o.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK(!o.closed);
    close(sv[1]);
    while (!o.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK_EQ_ERR(o.close_err, FERRY_ERR_CLOSED);
    CHECK_EQ_INT(o.steps_at_eof, 1);
    CHECK_OK(uv_run(&loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
    CHECK_OK(uv_loop_close(&loop));
}

/* What a further stream would carry: all that is left while no file can
 * reuse data; else that scaled by the share of the data since the mark
 * that crossed the wire, judged once XFER_SHARE_SAMPLE bytes came. */
TEST(streams_wire_left)
{
    struct xfer x;
    struct xfer_mark m;
    uint64_t wire = 1;

    memset(&x, 0, sizeof(x));
    xfer_add(&x.st.bytes_moved, 5);
    xfer_mark_now(&x, &m);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
    /* A delta: nothing to judge by yet, then too little. */
    xfer_add(&x.st.bytes_reusable, 1u << 30);
    wire = 1;
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    CHECK_EQ_U64(wire, 1);
    xfer_add(&x.st.bytes_spared, XFER_SHARE_SAMPLE - 2);
    xfer_add(&x.st.bytes_moved, 1);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    /* A third of the data since the mark crossed: a third of left. */
    xfer_add(&x.st.bytes_moved, (XFER_SHARE_SAMPLE + 2) / 2 - 1);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 333);
    /* All spared since a new mark: none. */
    xfer_mark_now(&x, &m);
    xfer_add(&x.st.bytes_spared, XFER_SHARE_SAMPLE);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 0);
    /* All moved since another: all of it. */
    xfer_mark_now(&x, &m);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
}

/* Compression counts like reuse: what it saved of the data since the
 * mark did not cross; with files packed in volumes the share is judged
 * even where no file could reuse data, and not before XFER_SHARE_SAMPLE
 * bytes came. */
TEST(streams_wire_left_compressed)
{
    struct xfer x;
    struct xfer_mark m;
    uint64_t wire = 1;

    memset(&x, 0, sizeof(x));
    xfer_add(&x.st.bytes_compressed, 7);
    xfer_mark_now(&x, &m);
    /* Nothing could shrink: all of it, at once. */
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
    wire = 1;
    xfer_add(&x.st.bytes_packed, 1u << 30);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    CHECK_EQ_U64(wire, 1);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE - 1);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    /* Three quarters of the sample saved: a quarter of left crosses. */
    xfer_add(&x.st.bytes_moved, 1);
    xfer_add(&x.st.bytes_compressed, XFER_SHARE_SAMPLE / 4 * 3);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 250);
    /* With a delta beside it: half spared, a quarter of the rest saved. */
    xfer_mark_now(&x, &m);
    xfer_sub(&x.st.bytes_packed, 1u << 30);
    xfer_add(&x.st.bytes_reusable, 1u << 30);
    xfer_add(&x.st.bytes_spared, XFER_SHARE_SAMPLE);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE);
    xfer_add(&x.st.bytes_compressed, XFER_SHARE_SAMPLE / 4);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 375);
    /* A saving taken back below the mark's counts as none. */
    xfer_mark_now(&x, &m);
    xfer_sub(&x.st.bytes_reusable, 1u << 30);
    xfer_add(&x.st.bytes_packed, 1u << 30);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE);
    xfer_sub(&x.st.bytes_compressed, 3);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
}
