/*
 * ssh.h: the libssh2 transport (the only user of libssh2).
 *
 * One ssh_conn is one TCP connection and one SSH session: connect (bounded
 * by ConnectTimeout), host key check against known_hosts, authentication
 * (ssh-agent, then identity files), then one exec channel at a time.
 *
 * A running channel is moved by a pump thread between the channel and one
 * end of a socketpair; the engine gets the other end, like any other
 * transport. The pump is the only thread that touches the session while it
 * runs (libssh2 sessions are single-threaded), so encryption for each
 * stream runs on its own core. It also sends keepalives and declares the
 * connection dead after ServerAliveInterval x ServerAliveCountMax seconds
 * without a byte from the server.
 *
 * Nothing here waits without a bound or deaf to Ctrl-C: connect,
 * handshake and login share ConnectTimeout (time at a prompt is the
 * user's and does not count), the pump ends when the remote side ends,
 * when the link is dead, or 10 s after the engine is done, and closing
 * takes at most 2 s (none after an interrupt). After SIGINT or SIGTERM
 * (ssh_global_init) every call in progress or to come returns
 * FERRY_ERR_INTERRUPTED quickly.
 *
 * Prompts (host key, passphrase) go to /dev/tty and only on the first
 * connection of the process; a passphrase typed there is kept in memory
 * for later logins (retries, more streams) and wiped at exit.
 */
#ifndef FERRY_CLIENT_SSH_H
#define FERRY_CLIENT_SSH_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "sshcfg.h"

struct ssh_conn;

struct ssh_conn_opts {
    const struct sshcfg *cfg;
    const char *display;   /* the host as the user wrote it */
    int interactive;       /* may prompt on /dev/tty (only the first
                            * connection of the process does) */
    int rsa_only;          /* out: login failed, and keys were skipped
                            * that ssh can use (RSA, signed here with
                            * SHA-1 only): the ssh program may do */
    uint64_t auth_ms;      /* out: the authentication took this, prompts
                            * left out: round trips to a server already
                            * running, a measure of the link that a
                            * server slow to start does not stretch */
    /* Called (same thread) once the key exchange is done, with the time
     * since the connect began and the round trip it implies
     * (ssh_rtt_of_handshake): a measure of the link, before the login.
     * Returning 1 makes ssh_conn_open check the host key and log in
     * as ever, then close and return 0 with no connection: the ssh
     * program is to carry the bytes, and whatever would refuse it is
     * said first in our words. */
    int (*on_handshake)(void *ctx, uint64_t ms, uint64_t rtt_ms);
    void *ctx;
};

/*
 * Calls libssh2_init, once, before any thread uses libssh2 (later calls do
 * nothing). It also chains onto the program's SIGINT and SIGTERM handlers
 * (an event loop's uv_signal ones, say): they still run first, then
 * ssh_interrupt(). So call it after installing them; a signal left at its
 * default or ignored is not touched.
 */
int ssh_global_init(void) FERRY_WUR;

/* 1 once SIGINT or SIGTERM interrupted this module (ssh_global_init). */
int ssh_interrupted(void);

/*
 * Connects, checks the host key and authenticates. Blocking. Returns 0, or
 * FERRY_ERR_CONNECT / TIMEOUT / HOSTKEY / AUTH / SSH with one line for the
 * user in err (host named, reason, what to do), or FERRY_ERR_INTERRUPTED
 * with "interrupted" in err. Sets o->rsa_only as it says.
 */
int ssh_conn_open(struct ssh_conn_opts *o, struct ssh_conn **out,
    char *err, size_t errlen) FERRY_WUR;

/*
 * Further connections started while the first one logs in, so that their
 * round trips overlap its own: each connects and exchanges keys at once,
 * in a thread of its own, then waits for ssh_early_gate(), which the
 * first login's end calls; only then does it check the host key and log
 * in, never prompting (the first connection asked about the host key
 * and a passphrase, if anything). ssh_early_start returns NULL when none
 * could start. ssh_early_take hands out the next one once it is logged
 * in (blocking: call it off the loop); FERRY_ERR_CLOSED when all were
 * taken, else its own error and message; any thread may take.
 * ssh_early_free, once no take runs, shuts the gate, waits for the
 * threads and closes what was not taken. Stream 0 and SSH_EARLY_MAX stay
 * under OpenSSH's default MaxStartups, 10 connections not yet logged in.
 */
#define SSH_EARLY_MAX 8
/* The channel window OpenSSH's sshd grants, until a channel says. */
#define SSH_PEER_WINDOW_GUESS (2u << 20)

/* A TCP connect and key exchange (three round trips or more) that took
 * this long means a long link: attempt.h plans streams by it, and a
 * channel's receive window is sized by it (ssh_pump.c). */
#define SSH_LONG_HANDSHAKE_MS 100
/* ... and of a login, whose authentication alone took this long too: two
 * or three round trips to a server process already running. A login of
 * SSH_LONG_HANDSHAKE_MS with an authentication under this came from a
 * server slow to start (sshd read from a cold disk, a loaded box) on a
 * short link. Measured here: loopback authenticates in 14-17 ms, the
 * bench's 50 ms link in 115-125; with sshd's start held 200 ms more, a
 * login took 260-280 ms, its authentication 20-25 ms alone and 25-43 ms
 * beside the three streams its long key exchange started (their key
 * exchanges take the same two cores). 60 ms is about 2.5 round trips of
 * 19 ms, where one stream's 2 MiB window still carries 110 MB/s. */
#define SSH_LONG_AUTH_MS 60

/*
 * What a first login's timing says of the link: ms in all (0: not timed),
 * auth_ms of it to authenticate, prompts left out of both (ssh_conn_opts,
 * ssh_tty_waited_ms). 1 long (both of the times above, and the
 * authentication no shorter than one of the round trips the rest of the
 * login implies), 0 short, -1 nothing.
 */
int ssh_login_link(uint64_t ms, uint64_t auth_ms);

/* What c knows of its link: the round trip (the handshake's estimate,
 * then a channel open's own), the window the peer grants us and the one
 * we grant it (bytes per round trip): a channel's once one is open, else
 * what one would get. */
void ssh_conn_link(const struct ssh_conn *c, uint64_t *rtt_ms,
    uint64_t *send_window, uint64_t *recv_window);

/* The receive window our channels ask for on a link whose handshake took
 * handshake_ms and whose round trip is rtt_ms (ssh_pump.c). */
unsigned ssh_recv_window(uint64_t handshake_ms, uint64_t rtt_ms);
struct ssh_early;
struct ssh_early *ssh_early_start(const struct ssh_conn_opts *o,
    unsigned n);
void ssh_early_gate(struct ssh_early *e, int open);
unsigned ssh_early_left(const struct ssh_early *e);
int ssh_early_take(struct ssh_early *e, struct ssh_conn **out, char *err,
    size_t errlen) FERRY_WUR;
void ssh_early_free(struct ssh_early *e);

/*
 * Runs command on a new channel and starts the pump; *fd is the engine's
 * end of the byte pipe (the caller owns it). One pump per conn at a time.
 */
int ssh_conn_exec_pump(struct ssh_conn *c, const char *command, int *fd,
    char *err, size_t errlen) FERRY_WUR;

/*
 * Waits for the pump to end, which it does once the engine has closed its
 * end and the remote command has finished (or 10 s after the engine, for
 * a command that does not finish). *exit_status is the command's status
 * (-1 if unknown). Returns 0, or the pump's own error with a message in
 * err: FERRY_ERR_CLOSED for a broken connection or a command killed by a
 * signal, TIMEOUT for a dead one, INTERRUPTED.
 */
int ssh_conn_pump_wait(struct ssh_conn *c, int *exit_status, char *err,
    size_t errlen);

/*
 * Stops the pump at once, without waiting for the remote command or
 * closing the channel politely: for a stream given up because its link
 * takes nothing, where a goodbye would only wait out its time limit.
 * ssh_conn_pump_wait then returns at once. The session stays for
 * ssh_conn_close, which then skips its goodbye.
 */
void ssh_conn_pump_stop(struct ssh_conn *c);

/*
 * The engine has ended cleanly and wants nothing more from the remote
 * command (a pull's receiver once it said SUMMARY): the pump sends what
 * the engine wrote and our EOF, then ends without waiting for the
 * command's end or the channel's close, a round trip sooner. The exit
 * status is then unknown (-1), and ssh_conn_close skips its goodbye.
 */
void ssh_conn_pump_leave(struct ssh_conn *c);

/*
 * Runs command with in (inlen bytes) as its stdin and waits for it to
 * finish; its stderr is copied to ours. Blocking; no pump may run.
 */
int ssh_conn_run(struct ssh_conn *c, const char *command, const void *in,
    size_t inlen, int *exit_status, char *err, size_t errlen) FERRY_WUR;

/* Bytes written to / read from the TCP connection, SSH framing included. */
uint64_t ssh_conn_wire_out(const struct ssh_conn *c);
uint64_t ssh_conn_wire_in(const struct ssh_conn *c);

/* 1 if the TCP connection's two ends have the same address: the far end
 * runs on this machine and shares its cores (loopback, or our own
 * address). NULL: 0. */
int ssh_conn_same_host(const struct ssh_conn *c);

/* The TCP socket under c (its addresses), -1 if none. */
int ssh_conn_socket(const struct ssh_conn *c);

/* Stops a running pump, disconnects (bounded time) and frees. NULL is a
 * no-op. */
void ssh_conn_close(struct ssh_conn *c);

/* 1 when a login to cfg's host would ask for a passphrase: no ssh-agent,
 * and an identity file (not RSA, which libssh2 skips) is encrypted. */
int ssh_auth_would_ask(const struct sshcfg *cfg);

/* How long the prompts of this process (a host key to accept, a
 * passphrase) have waited on the user in all, in ms: taken out of a
 * login's time where that measures the link. */
uint64_t ssh_tty_waited_ms(void);

/* Quotes s for a POSIX shell ('...' with '\'' for quotes) into out. */
int ssh_shell_quote(const char *s, char *out, size_t outlen) FERRY_WUR;

#endif
