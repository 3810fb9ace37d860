/*
 * ferry: the client. Parses the command line, scans local sources for a
 * push, starts the transport, runs the session with the sender (push) or
 * receiver (pull) role on a libuv loop, and turns the outcome into output
 * and an exit status (see README.md, "Exit status").
 */
#include <errno.h>
#include <limits.h>
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
#include "../engine/dest.h"
#include "../engine/incoming.h"
#include "../engine/manifest.h"
#include "../engine/plan.h"
#include "../engine/receiver.h"
#include "../engine/sender.h"
#include "../engine/session.h"
#include "../engine/xfer.h"
#include "../proto/limits.h"
#include "../proto/msg.h"
#include "cli.h"
#include "exitcode.h"
#include "output.h"
#include "pack.h"
#include "remote.h"
#include "ssh.h"
#include "sshcfg.h"
#include "status.h"
#include "transport.h"
#include "unpack.h"


struct run {
    struct cli *cli;
    struct xfer x;
    struct output out;
    struct session_open so;
    /* What the attempts share: a push's plan, a pull's destination. */
    struct plan *plan;
    struct dest *dest;
    struct incoming *in;
    /* This attempt's role. */
    struct sender *snd;
    struct receiver *rcv;
    struct status status;
    conn_step_fn *role_step;
    void *role;
    /* The remote side, kept across attempts. */
    struct sshcfg cfg;
    int have_cfg;
    struct ssh_conn *ssh;
    int use_cmd;             /* the ssh program is the transport */
    struct remote_agent agent;
    /* One attempt. */
    struct transport tp;
    struct conn conn;
    struct session *sess;
    uv_signal_t sigint, sigterm;
    uv_timer_t kill_timer;
    int conn_done, conn_err, interrupted;
    int exit_status;         /* of the remote command, -1 if unknown */
    int tp_code;
    char tp_err[256];
    uint64_t wire_out, wire_in;      /* over pipes (local:, --ssh-cmd) */
    uint64_t ssh_out, ssh_in;        /* over closed SSH sessions */
    int used_ssh;
    /* Retries. */
    uv_timer_t retry_timer;
    int failures, waiting, connected_once;
    uint64_t progress_mark;
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
    case FERRY_ERR_USAGE:
        return EXIT_USAGE;
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
    rn->wire_out += c->bytes_out;
    rn->wire_in += c->bytes_in;
    /* The agent exits on EOF; one that does not is stopped. */
    uv_timer_start(&rn->kill_timer, run_kill_child, 3000, 0);
}

static void
run_signal(uv_signal_t *s, int signum)
{
    struct run *rn = s->data;

    (void)signum;
    if (rn->interrupted++ > 0)
        _exit(EXIT_INTERRUPTED);  /* second Ctrl-C: no more waiting */
    if (rn->waiting)
        uv_timer_stop(&rn->retry_timer);
    else if (!rn->conn_done)
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
    enum xfer_side remote_side = rn->cli->cmd == CMD_PULL ? SIDE_SOURCE :
        SIDE_DEST;
    enum xfer_side local_side = rn->cli->cmd == CMD_PULL ? SIDE_DEST :
        SIDE_SOURCE;
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
    if (err == FERRY_ERR_CLOSED && rn->tp_code != 0) {
        snprintf(msg, msglen, "%s", rn->tp_err);
        return exit_for_code(rn->tp_code, local_side);
    }
    if (err == FERRY_ERR_CLOSED) {
        if (rn->exit_status == 127 || rn->exit_status == 126) {
            snprintf(msg, msglen, "%s: ferry-agent not found%s",
                run_host(rn), rn->cli->remote.local ? "" : " on the remote "
                "side (install it there, give --agent PATH, or let ferry "
                "upload it: leave out --no-bootstrap)");
            return EXIT_AGENT;
        }
        snprintf(msg, msglen, "%s: connection closed by the agent%s",
            run_host(rn), rn->exit_status > 0 ? " (it failed)" : "");
        return EXIT_CONNECT;
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
        snprintf(msg, msglen, "%s%s%s", err == FERRY_ERR_VERSION ?
            run_host(rn) : "", err == FERRY_ERR_VERSION ? ": " : "",
            rn->x.local_error[0] ? rn->x.local_error : ferry_strerror(err));
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

/* Finds the agent to upload and resolves the SSH settings. */
static int
run_setup(struct run *rn, char *msg, size_t msglen)
{
    struct cli *cli = rn->cli;
    struct sshcfg_overrides ov;
    int r;

    remote_agent_init(&rn->agent, cli);
    if (cli->remote.local)
        return 0;
    if (cli->ssh_cmd != NULL) {
        rn->use_cmd = 1;
        return 0;
    }
    memset(&ov, 0, sizeof(ov));
    ov.config_file = cli->ssh_config;
    ov.port = cli->port;
    ov.user = cli->login ? cli->login : cli->remote.user;
    ov.identities = cli->identities;
    ov.nidentities = cli->nidentities;
    ov.options = cli->ssh_opts;
    ov.noptions = cli->nssh_opts;
    if ((r = sshcfg_resolve(cli->remote.host, &ov, &rn->cfg, msg,
        msglen)) != 0) {
        if (r == FERRY_ERR_USAGE && msg[0] != '\0') {
            char tmp[600];

            snprintf(tmp, sizeof(tmp), "%.200s: ssh config: %.300s",
                cli->remote.host, msg);
            snprintf(msg, msglen, "%s", tmp);
        } else {
            snprintf(msg, msglen, "%s: cannot resolve the ssh config: %s",
                cli->remote.host, ferry_strerror(r));
        }
        return r;
    }
    rn->have_cfg = 1;
    if (rn->cfg.proxy != NULL) {
        /* libssh2 cannot hop; OpenSSH can. */
        log_info("%s: uses ProxyJump/ProxyCommand: running it through ssh",
            cli->remote.host);
        rn->use_cmd = 1;
        return 0;
    }
    if ((r = ssh_global_init()) != 0) {
        snprintf(msg, msglen, "cannot initialise libssh2");
        return r;
    }
    return 0;
}

/* Opens the libssh2 session, if that is the transport and none is open. */
static int
run_ssh_open(struct run *rn, char *msg, size_t msglen)
{
    struct ssh_conn_opts so;

    if (rn->cli->remote.local || rn->use_cmd || rn->ssh != NULL)
        return 0;
    memset(&so, 0, sizeof(so));
    so.cfg = &rn->cfg;
    so.display = rn->cli->remote.host;
    so.interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
    return ssh_conn_open(&so, &rn->ssh, msg, msglen);
}

/* This attempt's sender (push) or receiver (pull) over what the attempts
 * share. */
static int
run_make_role(struct run *rn)
{
    if (rn->plan != NULL) {
        if (rn->snd == NULL &&
            (rn->snd = sender_new(rn->plan, 0, &rn->x)) == NULL)
            return FERRY_ERR_NOMEM;
        rn->role = rn->snd;
    } else if (rn->dest != NULL) {
        if (rn->rcv == NULL) {
            if ((rn->rcv = receiver_new(rn->dest, rn->in, 0, rn->so.flags,
                rn->so.block_size, &rn->x)) == NULL ||
                run_expect_tops(rn) != 0)
                return FERRY_ERR_NOMEM;
        }
        rn->role = rn->rcv;
    }
    return 0;
}

/* One connection to an agent, from start to close. */
static int
run_attempt(struct run *rn, uv_loop_t *loop, char *msg, size_t msglen)
{
    struct remote_argv *argv;
    char command[16384];
    int r;

    rn->conn_done = 0;
    rn->conn_err = 0;
    rn->exit_status = -1;
    rn->tp_code = 0;
    rn->tp_err[0] = '\0';
    memset(&rn->tp, 0, sizeof(rn->tp));
    rn->tp.fd = -1;
    if ((r = run_make_role(rn)) != 0)
        return r;
    if ((rn->sess = session_client_new(&rn->so, rn->role_step, rn->role,
        &rn->x)) == NULL)
        return FERRY_ERR_NOMEM;
    if (rn->cli->remote.local) {
        r = transport_start_local(&rn->tp, loop, rn->cli->agent_path,
            rn->cli->verbose);
    } else if ((r = remote_agent_command(&rn->agent, command,
        sizeof(command))) != 0) {
        snprintf(msg, msglen, "%s: agent command too long", run_host(rn));
    } else if (rn->use_cmd) {
        if ((argv = xmalloc(sizeof(*argv))) == NULL)
            return FERRY_ERR_NOMEM;
        if ((r = remote_ssh_argv(rn->cli, command, argv)) == 0)
            r = transport_start_cmd(&rn->tp, loop, argv->argv);
        xfree(argv);
    } else {
        r = transport_start_ssh(&rn->tp, rn->ssh, command, msg, msglen);
    }
    if (r != 0)
        return r;
    rn->conn.data = rn;
    if ((r = conn_start_fds(&rn->conn, loop, rn->tp.fd, rn->tp.fd,
        session_step, rn->sess, run_conn_closed)) != 0)
        return r;
    uv_run(loop, UV_RUN_DEFAULT);
    if (!rn->conn_done) {
        /* The loop ran dry with the connection open: never a success. */
        conn_abort(&rn->conn, FERRY_ERR_CLOSED);
        uv_run(loop, UV_RUN_DEFAULT);
    }
    rn->tp_code = transport_finish(&rn->tp, &rn->exit_status, rn->tp_err,
        sizeof(rn->tp_err));
    uv_timer_stop(&rn->kill_timer);
    transport_close(&rn->tp);
    uv_run(loop, UV_RUN_NOWAIT);
    return 0;
}

/* The agent is missing, or speaks another protocol version: worth an
 * upload (once). */
static int
run_wants_bootstrap(const struct run *rn)
{
    if (rn->cli->remote.local || rn->cli->no_bootstrap ||
        rn->agent.use_cached || rn->interrupted || rn->agent.hash[0] == '\0')
        return 0;
    /* A forced command runs whatever we ask: never upload to it. */
    if (rn->sess != NULL &&
        (session_peer_caps(rn->sess) & PROTO_CAP_RESTRICTED))
        return 0;
    if (rn->conn_err == FERRY_ERR_VERSION)
        return 1;
    return rn->conn_err == FERRY_ERR_CLOSED &&
        session_peer_software(rn->sess)[0] == '\0' &&
        (rn->exit_status == 127 || rn->exit_status == 126);
}

static void
run_ssh_close(struct run *rn)
{
    if (rn->ssh == NULL)
        return;
    rn->ssh_out += ssh_conn_wire_out(rn->ssh);
    rn->ssh_in += ssh_conn_wire_in(rn->ssh);
    rn->used_ssh = 1;
    ssh_conn_close(rn->ssh);
    rn->ssh = NULL;
}

/* Failures of the link, not of either side's data: worth a new
 * connection. */
static int
run_retryable(int err)
{
    return err == FERRY_ERR_CLOSED || err == FERRY_ERR_TIMEOUT ||
        err == FERRY_ERR_CONNECT || err == FERRY_ERR_SSH;
}

static void
run_retry_fired(uv_timer_t *t)
{
    (void)t;
}

/* Progress so far: what a retry must beat to reset the count. */
static uint64_t
run_progress(struct run *rn)
{
    return xfer_get(&rn->x.st.bytes_done) + xfer_get(&rn->x.st.files_sent) +
        xfer_get(&rn->x.st.files_skipped);
}

/*
 * After an attempt: if the link failed (and not because the agent is
 * missing, nor by Ctrl-C), waits with exponential backoff and prepares
 * the roles and the connection for another attempt. Counts only attempts
 * in a row that made no progress, so a long transfer over a flaky link
 * keeps going. Returns 1 to try again.
 */
static int
run_should_retry(struct run *rn, int start_err, char *msg, size_t msglen,
    uv_loop_t *loop)
{
    int err = start_err != 0 ? start_err : rn->conn_err;
    unsigned delay;
    uint64_t now = run_progress(rn);
    char why[1200];

    /* Only a link that worked and then failed is retried: a host that
     * cannot be reached at all is reported at once, as ssh does. */
    if (rn->sess != NULL && session_peer_software(rn->sess)[0] != '\0')
        rn->connected_once = 1;
    if (rn->interrupted || !run_retryable(err) || !rn->connected_once ||
        (rn->conn_err == FERRY_ERR_CLOSED && rn->sess != NULL &&
        session_peer_software(rn->sess)[0] == '\0' &&
        (rn->exit_status == 127 || rn->exit_status == 126)))
        return 0;
    if (now > rn->progress_mark)
        rn->failures = 0;
    rn->progress_mark = now;
    if (rn->failures >= rn->cli->retries)
        return 0;
    rn->failures++;
    delay = rn->failures >= 6 ? (unsigned)rn->cli->retry_wait :
        1u << (rn->failures - 1);
    if (delay > (unsigned)rn->cli->retry_wait)
        delay = (unsigned)rn->cli->retry_wait;
    if (start_err != 0)
        snprintf(why, sizeof(why), "%s", msg[0] ? msg : ferry_strerror(err));
    else
        (void)run_result(rn, why, sizeof(why));
    output_retry(&rn->out, rn->failures, rn->cli->retries, delay, why);
    msg[0] = '\0';
    (void)msglen;
    rn->waiting = 1;
    uv_timer_start(&rn->retry_timer, run_retry_fired, delay * 1000ull, 0);
    uv_run(loop, UV_RUN_DEFAULT);
    rn->waiting = 0;
    if (rn->interrupted)
        return 0;
    /* The old session is dead; a new one is made by the next attempt. */
    run_ssh_close(rn);
    rn->ssh = NULL;
    session_free(rn->sess);
    rn->sess = NULL;
    memset(&rn->x.local_error, 0, sizeof(rn->x.local_error));
    memset(&rn->x.peer_error, 0, sizeof(rn->x.peer_error));
    sender_free(rn->snd);
    rn->snd = NULL;
    receiver_free(rn->rcv);
    rn->rcv = NULL;
    if (rn->plan != NULL) {
        plan_restart(rn->plan);
    } else if (rn->dest != NULL) {
        incoming_restart(rn->in);
        dest_restart(rn->dest);
    } else {
        status_cleanup(&rn->status);
        status_init(&rn->status, &rn->x);
    }
    return 1;
}

/* Scans the sources of a push or prepares the receiver of a pull. Returns
 * an exit status, or -1 to go on. */
static int
run_prepare(struct run *rn, struct manifest *mf, char **dest_prefix,
    char **source_prefix)
{
    struct cli *cli = rn->cli;
    struct output_summary sum;
    size_t i;
    int r;

    if (cli->cmd == CMD_STATUS || cli->cmd == CMD_CLEAN) {
        rn->so.op = cli->cmd == CMD_STATUS ? OPEN_STATUS : OPEN_CLEAN;
        rn->so.paths = (const char *const *)&cli->remote.path;
        rn->so.npaths = 1;
        status_init(&rn->status, &rn->x);
        rn->role_step = status_step;
        rn->role = &rn->status;
        return -1;
    }
    if (cli->cmd == CMD_PUSH) {
        const char *dest = cli->remote.path;
        size_t dl = strlen(dest);

        for (i = 0; i < (size_t)cli->nlocal; i++)
            if ((r = manifest_scan(mf, cli->local_paths[i])) != 0) {
                output_fatal(&rn->out, cli->local_paths[i], r,
                    ferry_strerror(r));
                return EXIT_SOURCE;
            }
        if (mf->n == 0 && mf->nnotices > 0) {
            /* Nothing can be sent: say why without connecting. */
            for (i = 0; i < mf->nnotices; i++)
                xfer_problem(&rn->x, SIDE_SOURCE, mf->notices[i].path,
                    mf->notices[i].code, mf->notices[i].text);
            memset(&sum, 0, sizeof(sum));
            sum.exit_code = EXIT_SOURCE;
            sum.error = "no source could be read";
            output_summary(&rn->out, &sum);
            return EXIT_SOURCE;
        }
        if (dl > 0 && dest[dl - 1] == '/')
            rn->so.flags |= OPEN_F_DEST_DIR;
        rn->so.op = OPEN_PUSH;
        rn->so.paths = (const char *const *)&cli->remote.path;
        rn->so.npaths = 1;
        *dest_prefix = join_prefix(run_host(rn), ":", dest);
        if ((rn->plan = plan_new(mf, cli->block_size, rn->so.flags,
            &rn->x)) == NULL)
            return EXIT_SOURCE;
        rn->role_step = sender_step;
    } else {
        const char *dest = cli->local_paths[0];
        size_t dl = strlen(dest);

        if (dl > 0 && dest[dl - 1] == '/')
            rn->so.flags |= OPEN_F_DEST_DIR;
        rn->so.op = OPEN_PULL;
        rn->so.paths = (const char *const *)cli->remote_paths;
        rn->so.npaths = (uint16_t)cli->nremote;
        *source_prefix = join_prefix(run_host(rn), ":", "");
        *dest_prefix = join_prefix(dest, "", "");
        if ((rn->dest = dest_new(dest, rn->so.flags, rn->so.transfer_id,
            &rn->x)) == NULL || (rn->in = incoming_new(rn->dest,
            cli->block_size, &rn->x)) == NULL)
            return EXIT_DEST;
        rn->role_step = receiver_step;
    }
    /* Prefixes end with the separator the path needs. */
    if (*dest_prefix != NULL) {
        size_t n = strlen(*dest_prefix);

        if (n > 0 && (*dest_prefix)[n - 1] != '/' &&
            (*dest_prefix)[n - 1] != ':') {
            char *p = join_prefix(*dest_prefix, "/", "");

            xfree(*dest_prefix);
            *dest_prefix = p;
        }
    }
    rn->out.dest_prefix = *dest_prefix;
    rn->out.source_prefix = *source_prefix;
    return -1;
}

static int
run(struct cli *cli)
{
    uv_loop_t *loop = uv_default_loop();
    struct manifest mf;
    struct run rn;
    struct output_summary sum;
    char msg[1200], *dest_prefix = NULL, *source_prefix = NULL;
    int r, code;

    memset(&rn, 0, sizeof(rn));
    rn.cli = cli;
    rn.exit_status = -1;
    rn.out.json = cli->json;
    rn.out.quiet = cli->quiet;
    rn.out.verbose = cli->verbose;
    rn.out.progress = cli->progress == -1 ? isatty(STDERR_FILENO) &&
        !cli->json : cli->progress;
    output_init(&rn.out, &rn.x);
    manifest_init(&mf);
    rn.so.flags = (cli->checksum ? OPEN_F_CHECKSUM : 0) |
        (cli->compress ? OPEN_F_COMPRESS : 0);
    rn.so.block_size = cli->block_size;
    uv_random(NULL, NULL, rn.so.transfer_id, sizeof(rn.so.transfer_id), 0,
        NULL);
    msg[0] = '\0';
    if ((code = run_prepare(&rn, &mf, &dest_prefix, &source_prefix)) >= 0)
        goto out_early;

    uv_timer_init(loop, &rn.kill_timer);
    rn.kill_timer.data = &rn;
    uv_unref((uv_handle_t *)&rn.kill_timer);
    uv_timer_init(loop, &rn.retry_timer);
    rn.retry_timer.data = &rn;
    uv_signal_init(loop, &rn.sigint);
    uv_signal_init(loop, &rn.sigterm);
    rn.sigint.data = rn.sigterm.data = &rn;
    uv_signal_start(&rn.sigint, run_signal, SIGINT);
    uv_signal_start(&rn.sigterm, run_signal, SIGTERM);
    uv_unref((uv_handle_t *)&rn.sigint);
    uv_unref((uv_handle_t *)&rn.sigterm);
    output_start(&rn.out, loop);

    if ((r = run_setup(&rn, msg, sizeof(msg))) != 0) {
        code = exit_for_code(r, SIDE_DEST);
        goto out_fatal;
    }
    for (;;) {
        if ((r = run_ssh_open(&rn, msg, sizeof(msg))) == 0)
            r = run_attempt(&rn, loop, msg, sizeof(msg));
        if (r != 0 && !run_retryable(r)) {
            code = r == FERRY_ERR_AGENT ? EXIT_AGENT :
                exit_for_code(r, SIDE_DEST);
            if (msg[0] == '\0')
                snprintf(msg, sizeof(msg), "%s: %s", run_host(&rn),
                    ferry_strerror(r));
            goto out_fatal;
        }
        if (r == 0 && run_wants_bootstrap(&rn)) {
            session_free(rn.sess);
            rn.sess = NULL;
            output_note(&rn.out, "%s: no compatible ferry-agent there; "
                "uploading this one to ~/.cache/ferry", run_host(&rn));
            if ((r = remote_agent_upload(&rn.agent, rn.use_cmd ? NULL :
                rn.ssh, run_host(&rn), msg, sizeof(msg))) != 0) {
                code = exit_for_code(r, SIDE_DEST);
                goto out_fatal;
            }
            continue;
        }
        if (!run_should_retry(&rn, r, msg, sizeof(msg), loop)) {
            if (r != 0) {
                /* The last try could not even connect. */
                code = exit_for_code(r, SIDE_DEST);
                if (msg[0] == '\0')
                    snprintf(msg, sizeof(msg), "%s: %s", run_host(&rn),
                        ferry_strerror(r));
                goto out_fatal;
            }
            break;
        }
    }
    code = run_result(&rn, msg, sizeof(msg));
    if (code == EXIT_OK && rn.role == &rn.status) {
        char where[1200];

        snprintf(where, sizeof(where), "%s:%s", run_host(&rn),
            cli->remote.path);
        status_print(&rn.status, &rn.out, where, cli->cmd == CMD_CLEAN);
    }
    if (msg[0] != '\0' && !rn.interrupted)
        output_fatal(&rn.out, NULL, rn.conn_err, msg);
    if (rn.interrupted)
        output_note(&rn.out, "interrupted: what arrived is kept; run the "
            "same command again to resume (nothing partial is under a "
            "final name)");
    goto out_summary;
out_fatal:
    output_fatal(&rn.out, NULL, r, msg);
out_summary:
    output_stop(&rn.out);
    memset(&sum, 0, sizeof(sum));
    sum.ok = code == EXIT_OK;
    sum.exit_code = code;
    run_ssh_close(&rn);
    sum.bytes_wire_out = rn.used_ssh ? rn.ssh_out : rn.wire_out;
    sum.bytes_wire_in = rn.used_ssh ? rn.ssh_in : rn.wire_in;
    sum.streams = 1;
    sum.error = msg[0] ? msg : NULL;
    if (rn.role != &rn.status || code != EXIT_OK)
        output_summary(&rn.out, &sum);
    uv_close((uv_handle_t *)&rn.kill_timer, NULL);
    uv_close((uv_handle_t *)&rn.retry_timer, NULL);
    uv_close((uv_handle_t *)&rn.sigint, NULL);
    uv_close((uv_handle_t *)&rn.sigterm, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    (void)uv_loop_close(loop);
out_early:
    ssh_conn_close(rn.ssh);
    if (rn.have_cfg)
        sshcfg_cleanup(&rn.cfg);
    session_free(rn.sess);
    sender_free(rn.snd);
    receiver_free(rn.rcv);
    plan_free(rn.plan);
    incoming_free(rn.in);
    dest_free(rn.dest);
    status_cleanup(&rn.status);
    manifest_cleanup(&mf);
    xfree(dest_prefix);
    xfree(source_prefix);
    return code;
}

/* status/clean of a local destination: no agent needed. */
static int
run_local_status(struct cli *cli)
{
    const char *dest = cli->local_paths[0];
    struct output out;
    struct status st;
    struct xfer x;
    int r;

    memset(&x, 0, sizeof(x));
    memset(&out, 0, sizeof(out));
    out.json = cli->json;
    out.quiet = cli->quiet;
    output_init(&out, &x);
    status_init(&st, &x);
    if ((r = dest_state_list(dest, cli->cmd == CMD_CLEAN, &st.v,
        &st.n)) != 0) {
        output_fatal(&out, dest, r, dest_state_strerror(r));
        return r == -ENOENT || r == -ENOTDIR ? EXIT_USAGE : EXIT_DEST;
    }
    status_print(&st, &out, dest, cli->cmd == CMD_CLEAN);
    status_cleanup(&st);
    return EXIT_OK;
}

int
main(int argc, char **argv)
{
    struct cli cli;
    int r, code;

    log_init("ferry", LOG_WARN);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit must fail the write (EFBIG), not kill us. */
    signal(SIGXFSZ, SIG_IGN);
    /* Local commands with options of their own (pack.h, unpack.h). */
    if (argc >= 2 && strcmp(argv[1], "pack") == 0)
        return pack_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "unpack") == 0)
        return unpack_main(argc, argv);
    if ((r = cli_parse(&cli, argc, argv)) != 0) {
        if (r == FERRY_ERR_NOMEM)
            fprintf(stderr, "ferry: out of memory\n");
        return EXIT_USAGE;
    }
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
    if ((cli.cmd == CMD_STATUS || cli.cmd == CMD_CLEAN) && !cli.has_remote)
        code = run_local_status(&cli);
    else
        code = run(&cli);
    cli_cleanup(&cli);
    return code;
}
