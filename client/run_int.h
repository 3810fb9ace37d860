/*
 * run_int.h: what the pieces of a run share (private to client/
 * run.c, client/run_ssh.c and client/run_prepare.c; the interface is
 * run.h).
 *
 *   run.c          the run: attempts and retries, the end
 *   run_ssh.c      its SSH: the config, stream 0's libssh2 session
 *   run_prepare.c  before the first attempt: a push's scan (beside
 *                  stream 0's login) and side, a pull's side
 */
#ifndef FERRY_CLIENT_RUN_INT_H
#define FERRY_CLIENT_RUN_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "../engine/manifest.h"
#include "../engine/session.h"
#include "../engine/side.h"
#include "../engine/xfer.h"
#include "attempt.h"
#include "cli.h"
#include "output.h"
#include "remote.h"
#include "retry.h"
#include "run.h"
#include "ssh.h"
#include "sshcfg.h"

struct run {
    const struct cli *cli;
    const struct run_op *op;  /* NULL: the command's own transfer */
    struct run_opts opts;     /* the transfer's */
    struct space_check *space;  /* the check before it, or NULL */
    struct xfer x;
    struct output out;
    struct session_open so;
    /* What the attempts share: a push's or a pull's end (side.h). */
    struct side *side;
    char **tops;             /* a pull: the names it asks for */
    size_t ntops;
    conn_step_fn *role_step;
    void *role;
    /* The remote side, kept across attempts. */
    struct sshcfg cfg;
    int have_cfg;
    struct ssh_conn *ssh;    /* stream 0's session (libssh2) */
    int use_cmd;             /* the ssh program is the transport */
    int rsa_fallback;        /* ... because only an RSA key would do */
    int link_choose;         /* libssh2 or ssh: its handshake decides */
    int more_by_cmd;         /* the ssh program carries a push's streams
                              * after the first */
    /* The next ssh login follows libssh2's own connection in this
     * attempt: ssh's 255 before HELLO is the login refused. */
    int ssh_login_next;
    struct remote_agent agent;
    struct attempt_env env;
    /* The attempt running or last run. */
    struct attempt at;
    int in_attempt, attempted;
    uv_signal_t sigint, sigterm;
    int interrupted;
    /* Over the attempts. */
    uint64_t wire_out, wire_in;
    const char *push_paths[3];  /* OPEN of a push: dest, then --basis
                                   FILE and --adopt DIR where given */
    double moving_s;
    unsigned max_streams;
    int reconnects;
    /* Retries. */
    struct retry_wait rw;
    struct retry_state rs;
    struct ratelimit limit;  /* --bwlimit, across the attempts */
    int waiting, connected_once;
    int busy_said;           /* the wait for another transfer was said */
    int gave_up;             /* the retries ran out: the fatal line says so */
    int began;               /* a push's or pull's roles ran (the summary
                              * line is worth it after a failure) */
    struct keptsig_store *kept;  /* a pull's receiver keeps signatures */
    /* A push's scan, in the pool while stream 0 connects. */
    uv_work_t scan_req;
    struct manifest *scan_mf;
    struct filter scan_filter;  /* the command's, and its ignore files' */
    atomic_int scan_stop, scan_finished;
    int scanning, scan_err, scan_failed;  /* failed: the path's index */
    int live_scan;   /* the plan takes entries as the scan goes on */
    uv_timer_t scan_timer;   /* the "scanning" line while waiting */
    int scan_timer_on;
    /* Further connections started during stream 0's first login. */
    struct ssh_early *early;
    struct ssh_conn_opts early_opts;
    int early_tried;
};

/* The name to print for the remote host. */
static inline const char *
run_host(const struct run *rn)
{
    return rn->cli->remote.local ? "local" : rn->cli->remote.host;
}

/* run_ssh.c */

/* Finds the agent to upload and resolves the SSH settings. */
int run_setup(struct run *rn, char *msg, size_t msglen);
/* Opens the libssh2 session, if that is the transport and none is open. */
int run_ssh_open(struct run *rn, char *msg, size_t msglen);
/* Closes it, and the streams started beside its login. */
void run_ssh_close(struct run *rn);

/* run_prepare.c */

/* Starts the scan of a push in the pool: a big tree is walked while
 * stream 0 connects and logs in (several round trips on a long link). */
void run_scan_start(struct run *rn, uv_loop_t *loop, struct manifest *mf);
/* Waits for the scan, running the loop so that Ctrl-C stops it. */
void run_scan_wait(struct run *rn, uv_loop_t *loop);
/* 1 if the push may send while its scan goes on (run_prepare.c). */
int run_scan_live(const struct run *rn);
/* Scans the sources of a push or prepares the receiver of a pull. Returns
 * an exit status, after reporting why (msg: for the summary), or -1 to go
 * on. */
int run_prepare(struct run *rn, struct manifest *mf, char **dest_prefix,
    char **source_prefix, char *msg, size_t msglen);

#endif
