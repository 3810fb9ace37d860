/*
 * transport.h: how the client reaches an agent. Every transport ends as
 * one file descriptor carrying the protocol both ways, so the engine never
 * knows which one it has:
 *
 *   local:PATH    a ferry-agent child on this machine over a socketpair
 *   --ssh-cmd     an OpenSSH client child running the agent remotely
 *   host:PATH     a libssh2 session pumped by a thread (see ssh.h)
 */
#ifndef FERRY_CLIENT_TRANSPORT_H
#define FERRY_CLIENT_TRANSPORT_H

#include <stdint.h>

#include <uv.h>

#include "../common/err.h"

struct transport {
    int fd;              /* read-only: our end, handed to the conn */
    char where[256];     /* read-only: "local" or the host, for messages */
    /* private */
    uv_process_t proc;
    int has_proc, proc_exited;
    int64_t exit_status;
    int term_signal;
};

/*
 * Starts `agent serve` as a child with its stdin and stdout on a
 * socketpair; stderr is shared with ours. agent NULL picks, in order,
 * $FERRY_AGENT, ferry-agent next to this executable, then ferry-agent on
 * PATH. Fails with FERRY_ERR_AGENT when it cannot be started.
 */
int transport_start_local(struct transport *t, uv_loop_t *loop,
    const char *agent, int verbose) FERRY_WUR;

/*
 * Starts argv (a command such as ssh ... host ferry-agent serve) the same
 * way. Used by --ssh-cmd.
 */
int transport_start_cmd(struct transport *t, uv_loop_t *loop,
    char *const *argv) FERRY_WUR;

/* Kills the child if it is still running (after the conn has closed and a
 * grace period passed). */
void transport_kill(struct transport *t);

/* Closes the process handle; call once the loop no longer needs it. */
void transport_close(struct transport *t);

#endif
