/*
 * ferry: the client. Parses the command line, scans local sources for a
 * push, starts the transport, runs the session with the sender (push) or
 * receiver (pull) role on a libuv loop, and turns the outcome into output
 * and an exit status (see README.md, "Exit status").
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/version.h"
#include "../engine/conn.h"
#include "../engine/manifest.h"
#include "../engine/receiver.h"
#include "../engine/sender.h"
#include "../engine/session.h"
#include "../engine/xfer.h"
#include "../proto/limits.h"
#include "../proto/msg.h"
#include "cli.h"
#include "output.h"
#include "transport.h"

/* Exit statuses: keep in step with README.md. */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,
    EXIT_SOURCE = 2,
    EXIT_DEST = 3,
    EXIT_PROTOCOL = 4,
    EXIT_CONNECT = 5,
    EXIT_AUTH = 6,
    EXIT_HOSTKEY = 7,
    EXIT_AGENT = 8,
    EXIT_INTEGRITY = 9,
    EXIT_INTERRUPTED = 130
};

struct run {
    struct cli *cli;
    struct xfer x;
    struct output out;
    struct transport tp;
    struct conn conn;
    struct session *sess;
    struct sender *snd;
    struct receiver *rcv;
    uv_signal_t sigint, sigterm;
    uv_timer_t kill_timer;
    int conn_done, conn_err, interrupted;
};

static int
exit_for_code(int code, enum xfer_side side)
{
    switch (code) {
    case FERRY_ERR_VERSION:
    case FERRY_ERR_AGENT:
        return EXIT_AGENT;
    case FERRY_ERR_HOSTKEY:
        return EXIT_HOSTKEY;
    case FERRY_ERR_AUTH:
        return EXIT_AUTH;
    case FERRY_ERR_CONNECT:
    case FERRY_ERR_CLOSED:
    case FERRY_ERR_TIMEOUT:
    case FERRY_ERR_SSH:
        return EXIT_CONNECT;
    case FERRY_ERR_HASH_MISMATCH:
        return EXIT_INTEGRITY;
    case FERRY_ERR_INTERRUPTED:
        return EXIT_INTERRUPTED;
    case FERRY_ERR_SHORT:
    case FERRY_ERR_TOO_LARGE:
    case FERRY_ERR_FORMAT:
    case FERRY_ERR_TRAILING:
    case FERRY_ERR_PROTOCOL:
    case FERRY_ERR_PEER:
    case FERRY_ERR_BAD_PATH:
        return EXIT_PROTOCOL;
    default:
        return side == SIDE_SOURCE ? EXIT_SOURCE : EXIT_DEST;
    }
}

static void
run_maybe_stop(struct run *rn)
{
    if (!rn->conn_done)
        return;
    uv_signal_stop(&rn->sigint);
    uv_signal_stop(&rn->sigterm);
    output_stop(&rn->out);
}

static void
run_kill_child(uv_timer_t *t)
{
    struct run *rn = t->data;

    transport_kill(&rn->tp);
}

static void
run_conn_closed(struct conn *c, int err)
{
    struct run *rn = c->data;

    rn->conn_done = 1;
    rn->conn_err = err;
    /* The agent exits on EOF; one that does not is stopped. */
    uv_timer_start(&rn->kill_timer, run_kill_child, 3000, 0);
    uv_unref((uv_handle_t *)&rn->kill_timer);
    run_maybe_stop(rn);
}

static void
run_signal(uv_signal_t *s, int signum)
{
    struct run *rn = s->data;

    (void)signum;
    if (rn->interrupted++ > 0)
        _exit(EXIT_INTERRUPTED);  /* second Ctrl-C: no more waiting */
    conn_abort(&rn->conn, FERRY_ERR_INTERRUPTED);
}

/* The name to print for the remote host. */
static const char *
run_host(const struct run *rn)
{
    return rn->cli->remote.local ? "local" : rn->cli->remote.host;
}

static int
run_result(struct run *rn, char *msg, size_t msglen)
{
    struct xfer_stats *st = &rn->x.st;
    enum xfer_side remote_side = rn->cli->cmd == CMD_PUSH ? SIDE_DEST :
        SIDE_SOURCE;
    enum xfer_side local_side = rn->cli->cmd == CMD_PUSH ? SIDE_SOURCE :
        SIDE_DEST;
    int err = rn->conn_err, code;

    msg[0] = '\0';
    if (rn->interrupted) {
        snprintf(msg, msglen, "interrupted");
        return EXIT_INTERRUPTED;
    }
    if (err == FERRY_ERR_PEER) {
        snprintf(msg, msglen, "%s: %s", run_host(rn), rn->x.peer_error);
        return exit_for_code(rn->x.peer_error_code, remote_side);
    }
    if (err == FERRY_ERR_CLOSED) {
        if (rn->tp.proc_exited && rn->tp.exit_status == 127)
            snprintf(msg, msglen, "%s: ferry-agent not found", run_host(rn));
        else
            snprintf(msg, msglen, "%s: connection closed by the agent",
                run_host(rn));
        return rn->tp.exit_status == 127 ? EXIT_AGENT : EXIT_CONNECT;
    }
    code = exit_for_code(err, local_side);
    if (code == EXIT_PROTOCOL) {
        /* The agent's frames made no sense: name it, and the likely
         * reason when it is the very first thing it said. */
        snprintf(msg, msglen, "%s: protocol error from the agent (%s)%s",
            run_host(rn), rn->x.local_error[0] ? rn->x.local_error :
            ferry_strerror(err), session_peer_software(rn->sess)[0] ? "" :
            "; is something printing to stdout in the remote shell's "
            "startup files?");
        return code;
    }
    if (err != 0) {
        snprintf(msg, msglen, "%s", rn->x.local_error[0] ?
            rn->x.local_error : ferry_strerror(err));
        return code;
    }
    if (atomic_load(&st->worst_error) == FERRY_ERR_HASH_MISMATCH)
        return EXIT_INTEGRITY;
    if (xfer_get(&st->failed_dest) > 0)
        return EXIT_DEST;
    if (xfer_get(&st->failed_source) > 0)
        return EXIT_SOURCE;
    return EXIT_OK;
}

static int
run_start_transport(struct run *rn, uv_loop_t *loop)
{
    int r;

    if (rn->cli->remote.local)
        return transport_start_local(&rn->tp, loop, rn->cli->agent_path,
            rn->cli->verbose);
    (void)r;
    log_error("%s: SSH transport not built yet; use local:PATH",
        rn->cli->remote.host);
    return FERRY_ERR_UNSUPPORTED;
}

/* A pull accepts only what its sources name (see receiver_expect_tops). */
static int
run_expect_tops(struct run *rn)
{
    struct cli *cli = rn->cli;
    char **names, *local, *dir, *base;
    int i, contents, r = 0, n = 0;

    if ((names = xcalloc((size_t)cli->nremote, sizeof(*names))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < cli->nremote && r == 0; i++) {
        if ((r = manifest_source(cli->remote_paths[i], &local,
            &contents)) != 0)
            break;
        if (contents) {
            /* A "dir/" source may hold any name: no restriction. */
            xfree(local);
            n = -1;
            break;
        }
        if ((r = fsx_split(local, &dir, &base)) == 0) {
            names[n++] = base;
            xfree(dir);
        }
        xfree(local);
    }
    if (r == 0 && n > 0)
        r = receiver_expect_tops(rn->rcv, (const char *const *)names,
            (size_t)n);
    for (i = 0; i < cli->nremote; i++)
        xfree(names[i]);
    xfree(names);
    return r;
}

static char *
join_prefix(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *p = xmalloc(n);

    if (p != NULL)
        snprintf(p, n, "%s%s%s", a, b, c);
    return p;
}

static int
run(struct cli *cli)
{
    uv_loop_t *loop = uv_default_loop();
    struct session_open so;
    struct manifest mf;
    struct run rn;
    struct output_summary sum;
    char msg[1200], *dest_prefix = NULL, *source_prefix = NULL;
    const char *const *paths;
    int r, code, fd;
    size_t i;

    memset(&rn, 0, sizeof(rn));
    rn.cli = cli;
    rn.out.json = cli->json;
    rn.out.quiet = cli->quiet;
    rn.out.verbose = cli->verbose;
    rn.out.progress = cli->progress == -1 ? isatty(STDERR_FILENO) &&
        !cli->json : cli->progress;
    output_init(&rn.out, &rn.x);
    manifest_init(&mf);
    memset(&so, 0, sizeof(so));
    so.flags = cli->checksum ? OPEN_F_CHECKSUM : 0;
    so.block_size = cli->block_size;
    uv_random(NULL, NULL, so.transfer_id, sizeof(so.transfer_id), 0, NULL);

    if (cli->cmd == CMD_PUSH) {
        const char *dest = cli->remote.path;
        size_t dl = strlen(dest);

        for (i = 0; i < (size_t)cli->nlocal; i++)
            if ((r = manifest_scan(&mf, cli->local_paths[i])) != 0) {
                output_fatal(&rn.out, cli->local_paths[i], r,
                    ferry_strerror(r));
                manifest_cleanup(&mf);
                return EXIT_SOURCE;
            }
        if (mf.n == 0 && mf.nnotices > 0) {
            /* Nothing can be sent: say why without connecting. */
            for (i = 0; i < mf.nnotices; i++)
                xfer_problem(&rn.x, SIDE_SOURCE, mf.notices[i].path,
                    mf.notices[i].code, mf.notices[i].text);
            manifest_cleanup(&mf);
            memset(&sum, 0, sizeof(sum));
            sum.exit_code = EXIT_SOURCE;
            sum.error = "no source could be read";
            output_summary(&rn.out, &sum);
            return EXIT_SOURCE;
        }
        if (dl > 0 && dest[dl - 1] == '/')
            so.flags |= OPEN_F_DEST_DIR;
        so.op = OPEN_PUSH;
        so.paths = (const char *const *)&cli->remote.path;
        so.npaths = 1;
        dest_prefix = join_prefix(run_host(&rn), ":", dest);
        rn.out.dest_prefix = dest_prefix;
        if ((rn.snd = sender_new(&mf, cli->block_size, so.flags,
            &rn.x)) == NULL) {
            manifest_cleanup(&mf);
            return EXIT_SOURCE;
        }
    } else {
        const char *dest = cli->local_paths[0];
        size_t dl = strlen(dest);

        if (dl > 0 && dest[dl - 1] == '/')
            so.flags |= OPEN_F_DEST_DIR;
        so.op = OPEN_PULL;
        paths = (const char *const *)cli->remote_paths;
        so.paths = paths;
        so.npaths = (uint16_t)cli->nremote;
        source_prefix = join_prefix(run_host(&rn), ":", "");
        rn.out.source_prefix = source_prefix;
        dest_prefix = join_prefix(dest, "", "");
        rn.out.dest_prefix = dest_prefix;
        if ((rn.rcv = receiver_new(dest, so.flags, cli->block_size,
            &rn.x)) == NULL || (r = run_expect_tops(&rn)) != 0) {
            receiver_free(rn.rcv);
            xfree(source_prefix);
            xfree(dest_prefix);
            return EXIT_DEST;
        }
    }
    /* Prefixes end with the separator the path needs. */
    if (dest_prefix != NULL && dest_prefix[strlen(dest_prefix) - 1] != '/' &&
        dest_prefix[strlen(dest_prefix) - 1] != ':') {
        char *p = join_prefix(dest_prefix, "/", "");

        xfree(dest_prefix);
        dest_prefix = p;
        rn.out.dest_prefix = p;
    }

    rn.sess = session_client_new(&so, rn.snd != NULL ? sender_step :
        receiver_step, rn.snd != NULL ? (void *)rn.snd : (void *)rn.rcv,
        &rn.x);
    uv_timer_init(loop, &rn.kill_timer);
    rn.kill_timer.data = &rn;
    if (rn.sess == NULL) {
        r = FERRY_ERR_NOMEM;
        goto fail;
    }
    if ((r = run_start_transport(&rn, loop)) != 0)
        goto fail;
    fd = rn.tp.fd;
    rn.conn.data = &rn;
    if ((r = conn_start_fds(&rn.conn, loop, fd, fd, session_step, rn.sess,
        run_conn_closed)) != 0)
        goto fail;
    uv_signal_init(loop, &rn.sigint);
    uv_signal_init(loop, &rn.sigterm);
    rn.sigint.data = rn.sigterm.data = &rn;
    uv_signal_start(&rn.sigint, run_signal, SIGINT);
    uv_signal_start(&rn.sigterm, run_signal, SIGTERM);
    output_start(&rn.out, loop);
    uv_run(loop, UV_RUN_DEFAULT);

    code = run_result(&rn, msg, sizeof(msg));
    if (msg[0] != '\0' && !rn.interrupted)
        output_fatal(&rn.out, NULL, rn.conn_err, msg);
    if (rn.interrupted)
        output_note(&rn.out, "interrupted; nothing partial was left under "
            "a final name");
    memset(&sum, 0, sizeof(sum));
    sum.ok = code == EXIT_OK;
    sum.exit_code = code;
    sum.bytes_wire_out = rn.conn.bytes_out;
    sum.bytes_wire_in = rn.conn.bytes_in;
    sum.streams = 1;
    sum.error = msg[0] ? msg : NULL;
    output_summary(&rn.out, &sum);
    goto out;
fail:
    code = r == FERRY_ERR_AGENT ? EXIT_AGENT : exit_for_code(r, SIDE_DEST);
    if (r == FERRY_ERR_UNSUPPORTED)
        code = EXIT_USAGE;
out:
    uv_close((uv_handle_t *)&rn.kill_timer, NULL);
    if (rn.sigint.data != NULL) {
        uv_close((uv_handle_t *)&rn.sigint, NULL);
        uv_close((uv_handle_t *)&rn.sigterm, NULL);
    }
    transport_close(&rn.tp);
    uv_run(loop, UV_RUN_DEFAULT);
    (void)uv_loop_close(loop);
    session_free(rn.sess);
    sender_free(rn.snd);
    receiver_free(rn.rcv);
    manifest_cleanup(&mf);
    xfree(dest_prefix);
    xfree(source_prefix);
    return code;
}

int
main(int argc, char **argv)
{
    struct cli cli;
    int r, code;

    log_init("ferry", LOG_WARN);
    signal(SIGPIPE, SIG_IGN);
    if ((r = cli_parse(&cli, argc, argv)) != 0)
        return EXIT_USAGE;
    switch (cli.cmd) {
    case CMD_VERSION:
        printf("ferry %s (protocol %d-%d)\n", FERRY_VERSION,
            PROTO_VERSION_MIN, PROTO_VERSION_MAX);
        return EXIT_OK;
    case CMD_HELP:
        cli_usage(stdout);
        return EXIT_OK;
    default:
        break;
    }
    if (cli.quiet)
        log_set_level(LOG_ERROR);
    if (cli.verbose >= 1)
        log_set_level(cli.verbose >= 2 ? LOG_DEBUG : LOG_INFO);
    code = run(&cli);
    cli_cleanup(&cli);
    return code;
}
