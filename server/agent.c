/*
 * ferry-agent: the remote side, started by ferry over SSH (or as a local
 * child) as "ferry-agent serve". It never listens on a port: stdin and
 * stdout carry the protocol, stderr carries diagnostics.
 *
 * The first two frames are read here, before any event loop: a JOIN
 * means this process carries a further stream of a transfer another
 * agent runs, and the connection is handed to that agent (rendezvous.h);
 * anything else starts a session here, which may later adopt the
 * connections other agents hand over.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "../common/alloc.h"
#include "../common/buf.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/version.h"
#include "../engine/conn.h"
#include "../engine/delta/keptsig.h"
#include "../engine/side.h"
#include "../engine/session.h"
#include "../engine/xfer.h"
#include "../proto/frame.h"
#include "../proto/limits.h"
#include "../proto/msg.h"
#include "policy.h"
#include "rendezvous.h"

/* Exit statuses of the agent (the client reports its own). */
#define AGENT_EXIT_OK 0
#define AGENT_EXIT_FAIL 1
#define AGENT_EXIT_USAGE 2

/* How long the first frames may take to arrive. */
#define AGENT_FIRST_FRAMES_MS 60000

struct agent_stream {
    struct conn c;
    struct session *s;
    int token;             /* the rendezvous connection it came by */
    int used, closed;
    struct agent *a;
};

struct agent {
    uv_loop_t *loop;
    struct xfer x;
    struct policy pol;
    struct session_policy spol;
    struct conn_group group;
    struct rendezvous rv;
    int bound, listening;
    uv_async_t listen_async;
    struct agent_stream streams[PROTO_MAX_STREAMS];
    int result;
    uv_signal_t sigterm, sighup;
};

static void
agent_abort_all(struct agent *a, int err)
{
    int i;

    for (i = 0; i < (int)PROTO_MAX_STREAMS; i++)
        if (a->streams[i].used && !a->streams[i].closed)
            conn_abort(&a->streams[i].c, err);
}

static void
agent_stop_listening(struct agent *a)
{
    if (a->listening || a->bound) {
        rendezvous_close(&a->rv);
        a->listening = a->bound = 0;
    }
    if (!uv_is_closing((uv_handle_t *)&a->listen_async))
        uv_close((uv_handle_t *)&a->listen_async, NULL);
}

static void
agent_closed(struct conn *c, int err)
{
    struct agent_stream *st = c->data;
    struct agent *a = st->a;

    st->closed = 1;
    if (st == &a->streams[0]) {
        /* The transfer is over: no more streams, and the others end. */
        a->result = err;
        agent_stop_listening(a);
        agent_abort_all(a, err == 0 ? FERRY_ERR_CLOSED : err);
        return;
    }
    /* However it ended (a read that saw EOF retires it in a step, but a
     * write into a reset connection does not), what it was sending goes
     * back to the others, who must hear of it even if they are idle.
     * Twice costs nothing: blocks already handed on are not its own. */
    if (session_side(st->s) != NULL &&
        side_stream_lost(session_side(st->s), session_stream(st->s)))
        conn_group_poke(&a->group);
    rendezvous_release(st->token);
    st->token = -1;
    session_free(st->s);
    st->s = NULL;
}

/* SIGTERM or SIGHUP (sshd ending the session), or another attempt of
 * the same transfer taking over: stop like a lost connection, so
 * journals are synced and partial files kept. */
static void
agent_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    agent_abort_all(h->data, FERRY_ERR_INTERRUPTED);
}

/* The asker waits until token closes: it stays open until this process
 * is gone, its journals synced. */
static void
agent_takeover(void *ctx, int token)
{
    (void)token;
    agent_abort_all(ctx, FERRY_ERR_INTERRUPTED);
}

static void
agent_adopt(void *ctx, int rfd, int wfd, const uint8_t *bytes, size_t n,
    int token)
{
    struct agent *a = ctx;
    struct agent_stream *st = NULL;
    int i;

    for (i = 1; i < (int)PROTO_MAX_STREAMS && st == NULL; i++)
        if (!a->streams[i].used)
            st = &a->streams[i];
    if (st == NULL || a->streams[0].closed ||
        (st->s = session_agent_join(a->streams[0].s)) == NULL) {
        close(rfd);
        if (wfd != rfd)
            close(wfd);
        rendezvous_release(token);
        return;
    }
    st->used = 1;
    st->a = a;
    st->token = token;
    st->c.data = st;
    st->c.group = &a->group;
    st->c.preload = bytes;
    st->c.preload_len = n;
    if (conn_start_fds(&st->c, a->loop, rfd, wfd, session_step, st->s,
        agent_closed) != 0) {
        session_free(st->s);
        st->s = NULL;
        st->used = 0;
        close(rfd);
        if (wfd != rfd)
            close(wfd);
        rendezvous_release(token);
    }
}

static void
agent_listen_now(uv_async_t *h)
{
    struct agent *a = h->data;

    if (a->bound && !a->listening && !a->streams[0].closed) {
        if (rendezvous_start(&a->rv, a->loop, agent_adopt, agent_takeover,
            a) == 0)
            a->listening = 1;
    }
}

/* session_policy.opened: in the step's worker thread. The name is taken
 * here (an old attempt's agent is asked to go first); accepting starts on
 * the loop thread. */
/* The ticket of the transfer s runs (or joins) under this agent's
 * policy. Wiped by the caller. */
static int
agent_ticket(const struct agent *a, const uint8_t *id, const uint8_t *key,
    struct rendezvous_ticket *t)
{
    int r;

    memset(t, 0, sizeof(*t));
    memcpy(t->id, id, sizeof(t->id));
    memcpy(t->key, key, sizeof(t->key));
    r = policy_scope(&a->pol, t->scope, sizeof(t->scope));
    return r < 0 ? r : 0;
}

/* session_policy.opened: in the step's worker thread. The name is taken
 * here (an old attempt's agent is asked to go first); accepting starts on
 * the loop thread. */
static int
agent_opened(void *ctx, struct session *s)
{
    struct agent *a = ctx;
    struct rendezvous_ticket t;
    int r;

    if ((r = agent_ticket(a, session_transfer_id(s),
        session_transfer_key(s), &t)) == 0)
        r = rendezvous_bind(&a->rv, &t);
    explicit_bzero(&t, sizeof(t));
    if (r != 0) {
        log_debug("cannot accept further streams: %s", ferry_strerror(r));
        return 0;  /* one stream still works */
    }
    a->bound = 1;
    uv_async_send(&a->listen_async);
    return 0;
}

static int
agent_policy_resolve(void *ctx, uint8_t op, const char *path, size_t len,
    char **out, char *msg, size_t msglen)
{
    struct agent *a = ctx;

    return policy_resolve(&a->pol, op, path, len, out, msg, msglen);
}

static void
agent_problem(void *ctx, enum xfer_side side, const char *path, int code,
    const char *text)
{
    (void)ctx;
    (void)side;
    /* The client reports per-file problems to the user; here they are
     * only worth a debug line. */
    log_debug("%s: %s (%s)", path, text, ferry_errname(code));
}

/* Reads from fd until buf holds want whole frames (or fewer at EOF),
 * within the deadline. */
static int
agent_read_frames(int fd, struct buf *b, int want, int *got)
{
    struct frame f;
    size_t used, off;
    struct pollfd p = { fd, POLLIN, 0 };
    uint8_t *dst;
    ssize_t n;
    int r;

    *got = 0;
    for (;;) {
        for (off = 0, *got = 0; *got < want; (*got)++) {
            r = frame_parse(buf_ptr(b) + off, buf_used(b) - off, &f, &used);
            if (r == FERRY_ERR_SHORT)
                break;
            if (r != 0)
                return r;
            off += used;
        }
        if (*got == want)
            return 0;
        if ((r = poll(&p, 1, AGENT_FIRST_FRAMES_MS)) <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return r == 0 ? FERRY_ERR_TIMEOUT : -errno;
        }
        if ((r = buf_reserve(b, 64 << 10, &dst)) != 0)
            return r;
        n = read(fd, dst, 64 << 10);
        buf_unreserve(b, (64 << 10) - (n > 0 ? (size_t)n : 0));
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -errno;
    }
}

/* The second frame, if it is a JOIN: hand the connection over. Returns
 * 1 if it was one (then the process is done). */
static int
agent_try_join(const struct agent *a, struct buf *b, int *status)
{
    struct frame hello, second;
    struct rendezvous_ticket t;
    struct msg_join j;
    struct buf out;
    size_t used;
    const char *text = "no transfer to join on this box (it ended, or "
        "its agent runs elsewhere)";
    struct msg_error e;
    int r;

    if (frame_parse(buf_ptr(b), buf_used(b), &hello, &used) != 0 ||
        frame_parse(buf_ptr(b) + used, buf_used(b) - used, &second,
        &used) != 0 || second.type != MSG_JOIN)
        return 0;
    *status = AGENT_EXIT_FAIL;
    if (msg_join_decode(second.payload, second.len, &j) != 0)
        return 0;  /* the session says what is wrong with it */
    if (buf_used(b) > RVMSG_MAX_BYTES)
        r = FERRY_ERR_TOO_LARGE;
    else if ((r = agent_ticket(a, j.transfer_id, j.transfer_key,
        &t)) == 0)
        r = rendezvous_handover(&t, STDIN_FILENO, STDOUT_FILENO,
            buf_ptr(b), buf_used(b));
    explicit_bzero(&t, sizeof(t));
    explicit_bzero(&j, sizeof(j));
    if (r == 0) {
        *status = AGENT_EXIT_OK;
        return 1;
    }
    log_debug("JOIN: no agent of this transfer to hand it to: %s",
        ferry_strerror(r));
    /* Nobody to hand it to: say so on the connection. */
    buf_init(&out, 4096);
    memset(&e, 0, sizeof(e));
    e.code = proto_err_to_wire(FERRY_ERR_STATE);
    e.text.p = text;
    e.text.len = strlen(text);
    if (msg_error_encode(&out, &e) == 0 &&
        fsx_write_all(STDOUT_FILENO, buf_ptr(&out), buf_used(&out)) != 0)
        log_debug("cannot answer the JOIN");
    buf_cleanup(&out);
    return 1;
}

struct agent_opts {
    const char *restrict_root;
    int read_only, write_only;
};

static int
agent_serve(const struct agent_opts *o)
{
    struct agent *a = xcalloc(1, sizeof(*a));
    char msg[PATH_MAX + 64];
    struct agent_stream *s0;
    struct buf first;
    int r, nframes, status = AGENT_EXIT_FAIL, i;

    if (a == NULL)
        return AGENT_EXIT_FAIL;
    buf_init(&first, 2 * PROTO_MAX_FRAME + 2 * PROTO_FRAME_HEADER);
    a->pol.read_only = o->read_only;
    a->pol.write_only = o->write_only;
    if (o->restrict_root != NULL) {
        /* Before a byte of the client's is read. */
        if (policy_restrict(&a->pol, o->restrict_root, msg,
            sizeof(msg)) != 0) {
            log_error("%s", msg);
            goto out;
        }
        if ((r = policy_confine(&a->pol)) < 0) {
            log_error_r(r, "cannot confine to %s", a->pol.root);
            goto out;
        }
        /* Either line tells a test (and a user with -v) which of the two
         * confinements this agent runs under. */
        if (r == 0)
            log_debug("no Landlock here: path checks alone confine");
        else
            log_debug("confined to %s by Landlock", a->pol.root);
        a->spol.restricted = 1;
    }
    if ((r = agent_read_frames(STDIN_FILENO, &first, 2, &nframes)) != 0) {
        log_debug("first frames: %s", ferry_strerror(r));
        goto out;
    }
    if (nframes == 2 && agent_try_join(a, &first, &status))
        goto out;
    /* A confined agent could not write outside its root anyway. */
    if (!a->spol.restricted)
        a->spol.kept = keptsig_store_default();
    a->loop = uv_default_loop();
    a->x.ev.problem = agent_problem;
    a->pol.home = getenv("HOME");
    a->spol.resolve = agent_policy_resolve;
    a->spol.opened = agent_opened;
    a->spol.ctx = a;
    uv_async_init(a->loop, &a->listen_async, agent_listen_now);
    a->listen_async.data = a;
    /* The threads behind the roles (a pull's scan, volume commits) wake
     * the streams. */
    if ((r = conn_group_wake_start(&a->group, a->loop, &a->x.wake)) != 0) {
        log_error("loop: %s", uv_strerror(r));
        goto out;
    }
    s0 = &a->streams[0];
    s0->used = 1;
    s0->a = a;
    s0->token = -1;
    if ((s0->s = session_agent_new(&a->x, &a->spol)) == NULL)
        goto out;
    s0->c.data = s0;
    s0->c.group = &a->group;
    s0->c.preload = buf_ptr(&first);
    s0->c.preload_len = buf_used(&first);
    if ((r = conn_start_fds(&s0->c, a->loop, STDIN_FILENO, STDOUT_FILENO,
        session_step, s0->s, agent_closed)) != 0) {
        log_error_r(r, "cannot use stdin/stdout");
        goto out;
    }
    uv_signal_init(a->loop, &a->sigterm);
    uv_signal_init(a->loop, &a->sighup);
    a->sigterm.data = a->sighup.data = a;
    uv_signal_start(&a->sigterm, agent_signal, SIGTERM);
    uv_signal_start(&a->sighup, agent_signal, SIGHUP);
    uv_unref((uv_handle_t *)&a->sigterm);
    uv_unref((uv_handle_t *)&a->sighup);
    uv_run(a->loop, UV_RUN_DEFAULT);
    agent_stop_listening(a);
    conn_group_wake_stop(&a->group);
    uv_close((uv_handle_t *)&a->sigterm, NULL);
    uv_close((uv_handle_t *)&a->sighup, NULL);
    uv_run(a->loop, UV_RUN_DEFAULT);
    for (i = 1; i < (int)PROTO_MAX_STREAMS; i++)
        session_free(a->streams[i].s);
    session_free(s0->s);
    (void)uv_loop_close(a->loop);
    if (a->result != 0 && a->result != FERRY_ERR_PEER)
        log_debug("%s", a->x.local_error[0] ? a->x.local_error :
            ferry_strerror(a->result));
    status = a->result == 0 ? AGENT_EXIT_OK : AGENT_EXIT_FAIL;
out:
    buf_cleanup(&first);
    keptsig_store_close(a->spol.kept);
    policy_cleanup(&a->pol);
    xfree(a);
    return status;
}

static int
agent_pollable(int fd)
{
    struct stat st;

    return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) ||
        S_ISSOCK(st.st_mode) || isatty(fd));
}

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: ferry-agent serve [-v] [--restrict ROOT [--read-only | "
        "--write-only]]\n"
        "       ferry-agent --version\n"
        "The agent is started by ferry over SSH; it speaks the ferry\n"
        "protocol on stdin/stdout and is not meant to be run by hand.\n"
        "--restrict ROOT confines a client to ROOT, for a forced command:\n"
        "  command=\"ferry-agent serve --restrict /workspace\",restrict "
        "ssh-ed25519 AAAA...\n");
}

int
main(int argc, char **argv)
{
    enum log_level level = LOG_ERROR;
    struct agent_opts o;
    int i;

    log_init("ferry-agent", level);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit must fail the write (EFBIG), not kill us. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("ferry-agent %s protocol %d-%d\n", FERRY_VERSION,
            PROTO_VERSION_MIN, PROTO_VERSION_MAX);
        return AGENT_EXIT_OK;
    }
    if (argc < 2 || strcmp(argv[1], "serve") != 0) {
        usage(stderr);
        return AGENT_EXIT_USAGE;
    }
    memset(&o, 0, sizeof(o));
    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            level = LOG_DEBUG;
        else if (strcmp(argv[i], "-q") == 0)
            level = LOG_QUIET;
        else if (strcmp(argv[i], "--restrict") == 0 && i + 1 < argc)
            o.restrict_root = argv[++i];
        else if (strcmp(argv[i], "--read-only") == 0)
            o.read_only = 1;
        else if (strcmp(argv[i], "--write-only") == 0)
            o.write_only = 1;
        else {
            usage(stderr);
            return AGENT_EXIT_USAGE;
        }
    }
    if ((o.read_only || o.write_only) && o.restrict_root == NULL) {
        fprintf(stderr, "ferry-agent: --read-only and --write-only go "
            "with --restrict ROOT\n");
        return AGENT_EXIT_USAGE;
    }
    if (o.read_only && o.write_only) {
        usage(stderr);
        return AGENT_EXIT_USAGE;
    }
    log_set_level(level);
    /* The loop polls both ends: a regular file or /dev/null cannot be
     * polled, and libuv would abort on it. */
    if (!agent_pollable(STDIN_FILENO) || !agent_pollable(STDOUT_FILENO)) {
        fprintf(stderr, "ferry-agent: stdin and stdout must be pipes, "
            "sockets or a terminal (ferry starts the agent over SSH)\n");
        return AGENT_EXIT_USAGE;
    }
    fsx_pipe_widen(STDIN_FILENO);
    fsx_pipe_widen(STDOUT_FILENO);
    return agent_serve(&o);
}
