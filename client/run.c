/*
 * run.c: one run of a command against the remote side (run.h): scans
 * local sources for a push, starts the transport, runs the session with
 * the sender (push) or receiver (pull) role on a libuv loop over its
 * attempts, and turns the outcome into output and an exit status (see
 * README.md, "Exit status"). main() is in main.c.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
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
#include "../engine/delta/keptsig.h"
#include "../engine/manifest.h"
#include "../engine/plan.h"
#include "../engine/receiver.h"
#include "../engine/sender.h"
#include "../engine/session.h"
#include "../engine/volume/volrecv.h"
#include "../engine/volume/volsend.h"
#include "../engine/xfer.h"
#include "../proto/limits.h"
#include "../proto/msg.h"
#include "attempt.h"
#include "cli.h"
#include "exitcode.h"
#include "help.h"
#include "output.h"
#include "pack.h"
#include "remote.h"
#include "mirror.h"
#include "retry.h"
#include "run.h"
#include "space.h"
#include "ssh.h"
#include "sshcfg.h"
#include "transport.h"
#include "unpack.h"
#include "run_int.h"



static void
run_signal(uv_signal_t *s, int signum)
{
    struct run *rn = s->data;

    (void)signum;
    if (rn->interrupted++ > 0)
        _exit(EXIT_INTERRUPTED);  /* second Ctrl-C: no more waiting */
    if (rn->scanning)
        atomic_store(&rn->scan_stop, 1);
    if (rn->waiting)
        retry_wait_stop(&rn->rw);
    else if (rn->in_attempt)
        attempt_abort(&rn->at, FERRY_ERR_INTERRUPTED);
}


static int
run_result(struct run *rn, char *msg, size_t msglen)
{
    struct xfer_stats *st = &rn->x.st;
    enum xfer_side remote_side = rn->cli->cmd == CMD_PULL ? SIDE_SOURCE :
        SIDE_DEST;
    enum xfer_side local_side = rn->cli->cmd == CMD_PULL ? SIDE_DEST :
        SIDE_SOURCE;
    const struct session *s0 = attempt_session(&rn->at);
    int err = rn->at.err, code;

    msg[0] = '\0';
    if (rn->interrupted) {
        snprintf(msg, msglen, "interrupted");
        return EXIT_INTERRUPTED;
    }
    if (err == FERRY_ERR_PEER) {
        snprintf(msg, msglen, "%s: %s", run_host(rn), rn->x.peer_error);
        return exitcode_for(rn->x.peer_error_code, remote_side);
    }
    if (err == FERRY_ERR_CLOSED && rn->at.tp_code != 0) {
        snprintf(msg, msglen, "%s", rn->at.tp_err);
        return exitcode_for(rn->at.tp_code, local_side);
    }
    if (err == FERRY_ERR_CLOSED) {
        /* ssh says 255 for its own failures. Before any HELLO, right
         * after libssh2's own login in this attempt (a short link) or its
         * refusal of the keys left (the RSA fallback), that is ssh's
         * login refused. */
        if (rn->at.exit_status == 255 && rn->ssh_login_next &&
            (s0 == NULL ||
            session_peer_software(s0)[0] == '\0')) {
            snprintf(msg, msglen, "%s: authentication failed through ssh%s "
                "(ssh's message is above)", run_host(rn),
                rn->rsa_fallback ? " as well" : "");
            return EXIT_AUTH;
        }
        if (rn->at.exit_status == 255) {
            snprintf(msg, msglen, "%s: connection lost, or the agent "
                "killed (ssh ended with status 255)", run_host(rn));
            return EXIT_CONNECT;
        }
        if (rn->at.exit_status == 127 || rn->at.exit_status == 126) {
            remote_agent_missing(&rn->agent, run_host(rn),
                rn->at.exit_status, msg, msglen);
            return EXIT_AGENT;
        }
        snprintf(msg, msglen, "%s: connection closed by the agent%s",
            run_host(rn), rn->at.exit_status > 0 ? " (it failed)" : "");
        return EXIT_CONNECT;
    }
    if (err == FERRY_ERR_TIMEOUT && rn->x.local_error[0] == '\0') {
        snprintf(msg, msglen, "%s: no data moved for %u s (stalled)",
            run_host(rn), 2 * rn->cli->stall_timeout);
        return EXIT_CONNECT;
    }
    code = exitcode_for(err, local_side);
    if (code == EXIT_PROTOCOL) {
        /* The agent's frames made no sense: name it, and the likely
         * reason when it is the very first thing it said. */
        snprintf(msg, msglen, "%s: protocol error from the agent (%s)%s",
            run_host(rn), rn->x.local_error[0] ? rn->x.local_error :
            ferry_strerror(err), s0 != NULL &&
            session_peer_software(s0)[0] ? "" :
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

/* What every attempt borrows from the run. */
static void
run_env(struct run *rn, uv_loop_t *loop)
{
    struct attempt_env *e = &rn->env;
    /* A push's first login, if done. */
    uint64_t connect_ms = e->connect_ms, auth_ms = e->auth_ms;
    struct width_link link = e->link;

    memset(e, 0, sizeof(*e));
    e->connect_ms = connect_ms;
    e->auth_ms = auth_ms;
    e->link = link;
    e->early = rn->early;
    e->cli = rn->cli;
    e->hold = rn->space != NULL ? &rn->space->comparing : NULL;
    e->loop = loop;
    e->x = &rn->x;
    e->out = &rn->out;
    e->so = rn->so;
    e->side = rn->side;
    e->role_step = rn->role_step;
    e->role = rn->role;
    e->agent = &rn->agent;
    e->cfg = rn->have_cfg ? &rn->cfg : NULL;
    e->use_cmd = rn->use_cmd;
    e->streams = (unsigned)rn->cli->streams;
    e->stall_s = rn->cli->stall_timeout;
    if (rn->cli->bwlimit > 0) {
        ratelimit_init(&rn->limit, rn->cli->bwlimit, uv_hrtime());
        e->limit = &rn->limit;
    }
}

/* OPEN flags for this attempt on, on both sides (a push's plan reads
 * its own). */
static void
run_add_flags(struct run *rn, uint32_t flags)
{
    rn->so.flags |= flags;
    rn->env.so.flags |= flags;
    if (rn->side != NULL)
        side_add_flags(rn->side, flags);
}

/* What the link chose (run_ssh_handshake), once stream 0's session is
 * open: blocks compressed on a long link (cli_compress_blocks: the first
 * login says so, the same before either direction's OPEN); the further
 * streams over the ssh program beside a libssh2 stream 0, which then
 * carries slower than they do (16-byte AES-CTR calls in one pump
 * thread), so the sender leaves it the runs once one of them is up. */
static void
run_env_link(struct run *rn)
{
    if (rn->side != NULL && cli_compress_blocks(rn->cli,
        !rn->cli->remote.local && attempt_env_link(&rn->env) == 1))
        run_add_flags(rn, OPEN_F_COMPRESS);
    rn->env.more_by_cmd = rn->more_by_cmd && !rn->use_cmd;
    rn->env.same_host = ssh_conn_same_host(rn->ssh);
    if (rn->env.more_by_cmd)
        run_add_flags(rn, OPEN_F_SPARE_STREAM0);
}

/* One attempt: stream 0 and the streams that join it, start to close. */
static int
run_attempt(struct run *rn, char *msg, size_t msglen)
{
    int r;

    run_env_link(rn);
    if (rn->attempted)
        attempt_cleanup(&rn->at);
    rn->attempted = 1;
    rn->in_attempt = 1;
    r = attempt_run(&rn->at, &rn->env, rn->ssh, msg, msglen);
    rn->in_attempt = 0;
    if (rn->op == NULL && rn->side != NULL &&
        attempt_session(&rn->at) != NULL &&
        session_running(attempt_session(&rn->at)))
        rn->began = 1;
    /* Those left were for the first attempt only. */
    ssh_early_free(rn->early);
    rn->early = rn->env.early = NULL;
    rn->wire_out += rn->at.wire_out;
    rn->wire_in += rn->at.wire_in;
    rn->moving_s += rn->at.moving_s;
    if (rn->at.max_active > rn->max_streams)
        rn->max_streams = rn->at.max_active;
    return r;
}

/* The agent is missing, or speaks another protocol version: worth an
 * upload (once). */
static int
run_wants_bootstrap(const struct run *rn)
{
    if (!rn->attempted || rn->cli->remote.local || rn->cli->no_bootstrap ||
        rn->agent.uploaded != NULL || rn->interrupted ||
        !remote_agent_can_upload(&rn->agent))
        return 0;
    const struct session *s0 = attempt_session(&rn->at);

    if (s0 == NULL)
        return 0;
    /* A forced command runs whatever we ask: never upload to it. */
    if (session_peer_caps(s0) & PROTO_CAP_RESTRICTED)
        return 0;
    if (rn->at.err == FERRY_ERR_VERSION)
        return 1;
    return rn->at.err == FERRY_ERR_CLOSED &&
        session_peer_software(s0)[0] == '\0' &&
        (rn->at.exit_status == 127 || rn->at.exit_status == 126);
}

/* Failures of the link, not of either side's data: worth a new
 * connection. */
static int
run_retryable(int err)
{
    return err == FERRY_ERR_CLOSED || err == FERRY_ERR_TIMEOUT ||
        err == FERRY_ERR_CONNECT || err == FERRY_ERR_SSH;
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
 * missing, nor by Ctrl-C), waits as the retry policy says (retry.h:
 * backoff, --retry-for and --retries counted from the last progress, an
 * early end on wake or when the server answers again) and prepares the
 * roles and the connection for another attempt. Returns 1 to try again.
 */
static int
run_should_retry(struct run *rn, int start_err, char *msg, size_t msglen)
{
    const struct session *s0 = rn->attempted ? attempt_session(&rn->at) :
        NULL;
    int err = start_err != 0 ? start_err : rn->at.err;
    struct retry_policy pol;
    struct retry_decision d;
    char why[1200];

    /* Only a link that worked and then failed is retried: a host that
     * cannot be reached at all is reported at once, as ssh does. */
    if (s0 != NULL && session_peer_software(s0)[0] != '\0')
        rn->connected_once = 1;
    /* An operation's role may keep what it collected: not retried; nor
     * a run the space check ended. */
    if ((rn->op != NULL && rn->op->restart == NULL) || rn->interrupted ||
        (rn->space != NULL && rn->space->stop) || !run_retryable(err) ||
        !rn->connected_once ||
        (start_err == 0 && rn->at.err == FERRY_ERR_CLOSED && s0 != NULL &&
        session_peer_software(s0)[0] == '\0' &&
        (rn->at.exit_status == 127 || rn->at.exit_status == 126)))
        return 0;
    pol = (struct retry_policy){ rn->cli->retries, rn->cli->retry_for,
        rn->cli->retry_wait };
    if (!retry_next(&pol, &rn->rs, run_progress(rn), retry_now(), &d)) {
        rn->gave_up = rn->reconnects > 0;
        return 0;
    }
    if (start_err != 0)
        snprintf(why, sizeof(why), "%s", msg[0] ? msg : ferry_strerror(err));
    else
        (void)run_result(rn, why, sizeof(why));
    output_retry(&rn->out, &(struct output_retry){ .attempt =
        rn->rs.failures, .max = rn->cli->retries, .delay_s = d.delay_s,
        .give_up_s = d.give_up_s, .why = why });
    msg[0] = '\0';
    (void)msglen;
    rn->waiting = 1;
    /* Probes go to the SSH server itself; through a ProxyJump or
     * --ssh-cmd only a wake from sleep ends a wait early. */
    rn->ssh_login_next = 0;
    (void)retry_wait_run(&rn->rw, d.delay_s, rn->have_cfg &&
        rn->cfg.proxy == NULL ? rn->cfg.hostname : NULL,
        rn->have_cfg ? rn->cfg.port : 22);
    rn->waiting = 0;
    if (rn->interrupted)
        return 0;
    /* The old session is dead; a new one is made by the next attempt. */
    run_ssh_close(rn);
    rn->ssh = NULL;
    rn->reconnects++;
    memset(&rn->x.local_error, 0, sizeof(rn->x.local_error));
    memset(&rn->x.peer_error, 0, sizeof(rn->x.peer_error));
    if (rn->side != NULL)
        side_restart(rn->side);
    else if (rn->op != NULL && rn->op->restart(rn->op->role) != 0)
        return 0;
    return 1;
}

/* The code an error event carries for the error that ends the run. */
static int
run_fatal_code(const struct run *rn, int exit_code, int err)
{
    if (err == FERRY_ERR_PEER && rn->x.peer_error_code != 0)
        return rn->x.peer_error_code;
    if (exit_code == EXIT_AGENT && err != FERRY_ERR_VERSION)
        return FERRY_ERR_AGENT;
    return err != 0 ? err : FERRY_ERR_CLOSED;
}

/*
 * The end of a transfer that stopped: the file a push's receiver stopped
 * on counts as failed, and a pull counts what its state directory keeps
 * (a push's receiver said it in STOP, if it could). The destination's
 * directory, as the user names it, goes into where.
 */
static void
run_settle(struct run *rn, int code, char *where, size_t wlen)
{
    const char *dest = rn->cli->cmd == CMD_PUSH ? rn->cli->remote.path :
        rn->opts.dest;
    struct plan *plan = rn->side != NULL ? side_plan(rn->side) : NULL;
    struct dest *d = rn->side != NULL ? side_dest(rn->side) : NULL;
    char *dir = NULL, *base = NULL;

    if (plan != NULL)
        plan_end(plan);
    if (d != NULL && code != EXIT_OK) {
        incoming_sync_partials(side_incoming(rn->side));
        dest_kept(d, &rn->x.kept_files, &rn->x.kept_bytes);
        rn->x.kept_known = 1;
        if (dest_root(d) != NULL)
            dest = dest_root(d);
    }
    /* A push's one file renamed: its state is in the directory above. */
    if (plan != NULL && rn->x.dest_renamed &&
        fsx_split(dest, &dir, &base) == 0)
        dest = dir;
    if (rn->cli->cmd == CMD_PUSH)
        snprintf(where, wlen, "%s:%s", run_host(rn), dest);
    else
        snprintf(where, wlen, "%s", dest);
    xfree(dir);
    xfree(base);
}

/* The summary line or event; msg: the fatal error, "" if none. Then, for
 * a transfer that stopped, what it keeps and how to go on. */
static void
run_summary(struct run *rn, int code, const char *msg)
{
    struct output_summary sum;
    char where[PROTO_MAX_PATH + 300];

    if (rn->began)
        run_settle(rn, code, where, sizeof(where));
    memset(&sum, 0, sizeof(sum));
    sum.ok = code == EXIT_OK;
    sum.exit_code = code;
    sum.began = rn->began;
    sum.bytes_wire_out = rn->wire_out;
    sum.bytes_wire_in = rn->wire_in;
    sum.streams = rn->max_streams;
    sum.retries = rn->reconnects;
    sum.moving_s = rn->moving_s;
    sum.error = msg[0] ? msg : NULL;
    output_summary(&rn->out, &sum);
    /* A lost link is what running again is for; an interrupt's line
     * says so already. */
    if (rn->began && code != EXIT_OK)
        output_resume(&rn->out, where, code == EXIT_CONNECT);
}

static int
run_main(const struct cli *cli, const struct run_op *op,
    const struct run_opts *o, struct space_check *sc)
{
    /* A loop of its own: the space check runs the comparison's runs
     * while this one's session waits for it (space.h). */
    uv_loop_t *loop = xmalloc(sizeof(*loop));
    struct manifest mf;
    struct run rn;
    char msg[1200], *dest_prefix = NULL, *source_prefix = NULL;
    int r, code, early;

    if (loop == NULL || uv_loop_init(loop) != 0) {
        xfree(loop);
        return output_fatal_early(cli->json, cli->quiet, NULL,
            FERRY_ERR_NOMEM, ferry_strerror(FERRY_ERR_NOMEM), EXIT_SOURCE);
    }
    memset(&rn, 0, sizeof(rn));
    rn.cli = cli;
    rn.op = op;
    if (o != NULL)
        rn.opts = *o;
    else
        run_opts_of(cli, &rn.opts);
    rn.space = sc;
    rn.out.json = cli->json;
    rn.out.quiet = cli->quiet;
    rn.out.verbose = cli->verbose;
    rn.out.progress = op != NULL && !op->command ? 0 : cli->progress == -1 ?
        isatty(STDERR_FILENO) && !cli->json : cli->progress;
    output_init(&rn.out, &rn.x);
    manifest_init(&mf);
    rn.so.flags = (cli->checksum ? OPEN_F_CHECKSUM : 0) | cli->delta_flags;
    rn.so.block_size = cli->block_size;
    msg[0] = '\0';
    /* The key is the transfer's only secret (server/rendezvous.h): a
     * run that cannot draw it does not start. */
    if ((r = uv_random(NULL, NULL, rn.so.transfer_id,
        sizeof(rn.so.transfer_id), 0, NULL)) == 0)
        r = uv_random(NULL, NULL, rn.so.transfer_key,
            sizeof(rn.so.transfer_key), 0, NULL);
    if (r != 0)
        snprintf(msg, sizeof(msg), "cannot draw the transfer's key: %s",
            ferry_strerror(r));
    retry_wait_init(&rn.rw, loop);
    uv_signal_init(loop, &rn.sigint);
    uv_signal_init(loop, &rn.sigterm);
    rn.sigint.data = rn.sigterm.data = &rn;
    uv_signal_start(&rn.sigint, run_signal, SIGINT);
    uv_signal_start(&rn.sigterm, run_signal, SIGTERM);
    uv_unref((uv_handle_t *)&rn.sigint);
    uv_unref((uv_handle_t *)&rn.sigterm);

    if (op == NULL && cli->cmd == CMD_PUSH)
        run_scan_start(&rn, loop, &mf);
    if (r != 0 || (r = run_setup(&rn, msg, sizeof(msg))) != 0) {
        run_scan_wait(&rn, loop);
        code = exitcode_for(r, SIDE_DEST);
        goto out_fatal;
    }
    /* Stream 0's SSH session opens while the scan runs; what it met (in
     * msg) is said after the scan's own errors. */
    early = rn.scanning ? run_ssh_open(&rn, msg, sizeof(msg)) : INT_MIN;
    if (early == 0 && run_scan_live(&rn)) {
        rn.live_scan = 1;
        log_debug("scan: sending as it goes on");
    } else {
        run_scan_wait(&rn, loop);
    }
    if ((code = run_prepare(&rn, &mf, &dest_prefix, &source_prefix, msg,
        sizeof(msg))) >= 0)
        goto out_summary;
    /* The progress line, from here: the loop ran for the scan, but there
     * was nothing to show yet. */
    output_start(&rn.out, loop);
    run_env(&rn, loop);
    for (;;) {
        if (early != INT_MIN)
            r = early, early = INT_MIN;
        else
            r = run_ssh_open(&rn, msg, sizeof(msg));
        if (r == 0)
            r = run_attempt(&rn, msg, sizeof(msg));
        if (r != 0 && !run_retryable(r)) {
            code = r == FERRY_ERR_AGENT ? EXIT_AGENT :
                exitcode_for(r, SIDE_DEST);
            if (msg[0] == '\0')
                snprintf(msg, sizeof(msg), "%s: %s", run_host(&rn),
                    ferry_strerror(r));
            goto out_fatal;
        }
        if (r == 0 && run_wants_bootstrap(&rn)) {
            output_note(&rn.out, "%s: no compatible ferry-agent there; "
                "uploading this one to ~/.cache/ferry", run_host(&rn));
            if ((r = remote_agent_upload(&rn.agent, rn.use_cmd ? NULL :
                rn.ssh, run_host(&rn), msg, sizeof(msg))) != 0) {
                code = exitcode_for(r, SIDE_DEST);
                goto out_fatal;
            }
            continue;
        }
        if (!run_should_retry(&rn, r, msg, sizeof(msg))) {
            if (r != 0 && !rn.interrupted) {
                /* The last try could not even connect. */
                code = exitcode_for(r, SIDE_DEST);
                if (msg[0] == '\0')
                    snprintf(msg, sizeof(msg), "%s: %s", run_host(&rn),
                        ferry_strerror(r));
                goto out_fatal;
            }
            break;
        }
    }
    code = run_result(&rn, msg, sizeof(msg));
    if (code == EXIT_OK && op != NULL && op->done != NULL)
        op->done(op->role, &rn.out, attempt_session(&rn.at) != NULL ?
            session_peer_software(attempt_session(&rn.at)) : "");
    r = rn.at.err;
    if (sc != NULL && sc->stop)
        goto out_summary;   /* the caller says why (space.h) */
    if (rn.interrupted) {
        output_fatal(&rn.out, NULL, FERRY_ERR_INTERRUPTED, "interrupted: "
            "what arrived is kept; run the same command again to resume "
            "(nothing partial is under a final name)");
        snprintf(msg, sizeof(msg), "interrupted");
        goto out_summary;
    }
    if (msg[0] == '\0')
        goto out_summary;
out_fatal:
    if (rn.gave_up) {
        size_t ml = strlen(msg);

        snprintf(msg + ml, sizeof(msg) - ml, " (gave up after %d tries "
            "without progress)", rn.rs.failures);
    }
    output_fatal(&rn.out, NULL, run_fatal_code(&rn, code, r), msg);
out_summary:
    if (rn.scanning) {
        /* A live scan outlasts a transfer that failed. */
        atomic_store(&rn.scan_stop, 1);
        run_scan_wait(&rn, loop);
    }
    output_stop(&rn.out);
    run_ssh_close(&rn);
    /* status and clean end with a summary under --json only: their own
     * lines say what they found. */
    if ((op == NULL || (op->command && cli->json) || code != EXIT_OK) &&
        (sc == NULL || !sc->stop))
        run_summary(&rn, code, msg);
    uv_close((uv_handle_t *)&rn.sigint, NULL);
    uv_close((uv_handle_t *)&rn.sigterm, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    /* A handle left open keeps the loop (a leak, not a dangling loop). */
    if (uv_loop_close(loop) == 0)
        xfree(loop);
    ssh_conn_close(rn.ssh);
    if (rn.have_cfg)
        sshcfg_cleanup(&rn.cfg);
    if (rn.attempted)
        attempt_cleanup(&rn.at);
    for (size_t i = 0; rn.tops != NULL && rn.tops[i] != NULL; i++)
        xfree(rn.tops[i]);
    xfree(rn.tops);
    /* What is complete is committed before the signatures' store goes. */
    side_free(rn.side);
    keptsig_store_close(rn.kept);
    manifest_cleanup(&mf);
    filter_cleanup(&rn.scan_filter);
    xfree(dest_prefix);
    xfree(source_prefix);
    return code;
}

void
run_opts_of(const struct cli *cli, struct run_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->sources = cli->remote_paths;
    o->nsources = cli->nremote;
    o->dest = cli->nlocal > 0 ? cli->local_paths[0] : NULL;
    o->basis = cli->basis;
    o->basis_dir = cli->basis_dir;
    o->pack_threshold = cli->pack_threshold;
    o->whole_formats = cli->whole_formats;
}

int
run_command(const struct cli *cli, const struct run_op *op)
{
    return run_main(cli, op, NULL, NULL);
}

int
run_transfer(const struct cli *cli, const struct run_opts *o,
    struct space_check *sc)
{
    return run_main(cli, NULL, o, sc);
}
