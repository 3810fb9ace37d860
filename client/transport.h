/*
 * transport.h: how the client reaches an agent. Every transport ends as
 * file descriptors carrying the protocol (one to read, one to write; the
 * same one for a pump), so the engine never knows which one it has:
 *
 *   local:PATH    a ferry-agent child on this machine over two pipes
 *   --ssh-cmd     an OpenSSH client child running the agent remotely
 *   host:PATH     a libssh2 session pumped by a thread (see ssh.h)
 */
#ifndef FERRY_CLIENT_TRANSPORT_H
#define FERRY_CLIENT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../common/err.h"
#include "../common/text.h"

struct ssh_conn;

/* How long a child that was sent SIGTERM gets before SIGKILL. */
#define TRANSPORT_KILL_GRACE_MS 2000

struct transport {
    /* read-only: our ends, handed to the conn (one socket for an SSH
     * pump; two pipes for a child) */
    int rfd, wfd;
    /* public: called on the loop when a child process has exited */
    void (*on_exit)(void *ctx);
    void *exit_ctx;
    /* private */
    uv_process_t proc;
    int has_proc, proc_exited;
    int64_t exit_status;
    int term_signal;
    uv_timer_t kill_timer;   /* SIGTERM, then SIGKILL */
    int has_kill_timer, kill_armed;
    uv_pipe_t err;           /* the child's stderr */
    int has_err;
    struct text_lines err_lines;
    struct ssh_conn *ssh;  /* borrowed: the session a pump runs on */
};

/*
 * Starts `agent serve` as a child with its stdin and stdout on two pipes
 * of FSX_PIPE_BYTES (an ssh child copies less per byte when it can hand
 * over more at a time: docs/DESIGN.md, "The agent's pipes"). Its stderr comes to ours line by line through text_lines,
 * escaped: an ssh child passes on what the remote shell says, which is
 * not ours to print raw. agent NULL picks, in order,
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

/* Runs command over an open SSH session (see ssh.h); t->rfd = t->wfd is
 * the engine's end of the pump's socket. */
int transport_start_ssh(struct transport *t, struct ssh_conn *ssh,
    const char *command, char *err, size_t errlen) FERRY_WUR;

/*
 * After the conn has closed: waits for the remote command (SSH pump) and
 * reports its exit status (-1 if unknown) and any transport error (with a
 * message in err). For child processes the status comes from the loop.
 */
int transport_finish(struct transport *t, int *exit_status, char *err,
    size_t errlen);

/*
 * Runs argv to completion with stdin read from the file in_path (or
 * /dev/null when NULL); stdout is discarded, stderr comes to ours escaped
 * (as above). Returns 0 and its exit status, or -errno if it could not be
 * started.
 */
int transport_run_sync(char *const *argv, const char *in_path,
    int *exit_status) FERRY_WUR;

/* Where ferry-agent is on this machine ($FERRY_AGENT, next to this
 * executable, or NULL). */
const char *transport_local_agent(char *buf, size_t n);

/* The engine ended cleanly and needs nothing more from the agent: a
 * pump sends its last bytes and EOF and ends without waiting for the
 * agent's exit (ssh_conn_pump_leave). A child is left to end. */
void transport_leave(struct transport *t);

/* Gives up on the transport now (a stream retired because it stalled):
 * an SSH pump stops without waiting for the remote command, so that
 * transport_finish returns at once; a child is stopped as below. */
void transport_stop(struct transport *t);

/* Stops the child if it is still running (after the conn has closed and a
 * grace period passed): SIGTERM, and SIGKILL TRANSPORT_KILL_GRACE_MS
 * later if it is still there (it may ignore SIGTERM). */
void transport_kill(struct transport *t);

/* Closes the handles, after printing what is left of the child's stderr;
 * call once the loop no longer needs them, then run the loop once. */
void transport_close(struct transport *t);

#endif
