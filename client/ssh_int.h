/*
 * ssh_int.h: what the ssh*.c files share; not for other modules (they use
 * ssh.h). libssh2 appears only in these files.
 *
 *   ssh.c          the session: TCP connect, handshake, login, teardown,
 *                  interrupts, and the waits every blocking step uses
 *   ssh_hostkey.c  known_hosts: check, ask, add
 *   ssh_auth.c     ssh-agent and identity files; the passphrases of a run
 *   ssh_pump.c     exec channels and the pump thread
 *   ssh_tty.c      prompts on /dev/tty
 *
 * The session is non-blocking from the start: every call that may wait
 * is repeated after ssh_wait(), which watches the socket, the deadline of
 * the step and the interrupt pipe, so nothing waits unbounded or deaf to
 * Ctrl-C. The idiom, for a call that returns an int:
 *
 *     do
 *         rc = libssh2_session_handshake(c->s, c->sock);
 *     while (ssh_again(c, rc));
 *     if (rc != 0)
 *         r = ssh_failed(c, rc, FERRY_ERR_SSH);
 */
#ifndef FERRY_CLIENT_SSH_INT_H
#define FERRY_CLIENT_SSH_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <libssh2.h>

#include "ssh.h"

/* While a pump runs, its thread alone touches the session and the
 * channel (libssh2 sessions are single-threaded). */
struct ssh_conn {
    int sock;
    LIBSSH2_SESSION *s;
    char display[256];
    char host[256];        /* what known_hosts is searched for */
    unsigned port;
    int interactive;       /* may prompt (first connection of a run) */
    int rsa_skipped;       /* login skipped RSA keys (ssh_auth_login) */
    int64_t timeout_ms;    /* ConnectTimeout */
    uint64_t handshake_ms; /* TCP connect and key exchange took this */
    uint64_t tcp_ms;       /* ... the TCP connect alone */
    uint64_t rtt_ms;       /* the round trip (ssh_conn_link) */
    uint64_t send_window;  /* what the peer's channel window lets us send
                            * per round trip; 0 before the channel */
    uint64_t recv_window;  /* ... ours, for the peer */
    int64_t deadline;      /* of the blocking step running now */
    int wait_err;          /* why the last ssh_again() gave up */
    atomic_uint_fast64_t wire_out, wire_in;
    atomic_int_fast64_t last_rx_ms;
    unsigned alive_interval, alive_count;
    /* The pump (ssh_pump.c); the main thread reads these only after the
     * join. */
    pthread_t thr;
    int thr_running;
    LIBSSH2_CHANNEL *ch;
    int sp;
    atomic_int stop;       /* set to end the pump now */
    atomic_int leave;      /* ssh_conn_pump_leave */
    int wake_fd;           /* an eventfd that ends the pump's poll */
    int exit_status;
    int pump_err;
    int dirty;             /* a send left half done, or the socket shut
                            * down: no goodbye, only freeing */
    char pump_msg[256];
};

/* ssh.c */

int64_t ssh_now_ms(void);
const char *ssh_last_error(struct ssh_conn *c);

/* ssh_conn_open in two steps, for connections started before the first
 * one logged in (ssh_early.c): TCP connect and key exchange, and the host
 * key check and login (o->rsa_only is set as ssh_conn_open says). On
 * failure the connection is gone. */
int ssh_conn_begin(const struct ssh_conn_opts *o, struct ssh_conn **out,
    char *err, size_t errlen) FERRY_WUR;
int ssh_conn_finish(struct ssh_conn_opts *o, struct ssh_conn *c, char *err,
    size_t errlen) FERRY_WUR;

/* The read end of the interrupt pipe: readable once ssh_interrupt() has
 * run, for poll() sets. */
int ssh_intr_fd(void);

/* For the loop above: 1 to repeat the call (it said EAGAIN and the socket
 * is ready), else 0, with c->wait_err set when the wait failed. */
int ssh_again(struct ssh_conn *c, int rc);

/* The error to return for a libssh2 call that ended with rc: why the wait
 * gave up, or fallback for libssh2's own errors. */
int ssh_failed(const struct ssh_conn *c, int rc, int fallback);

/* Restarts the deadline of the blocking step (after a prompt, whose time
 * is the user's). */
void ssh_deadline_reset(struct ssh_conn *c);

/* Reads the lines of a text file, skipping blank ones and comments. */
typedef int ssh_line_fn(void *ctx, const char *line, size_t len,
    unsigned lineno);
int ssh_each_line(const char *file, ssh_line_fn *fn, void *ctx);

/* ssh_pump.c */

/* Waits for the pump (if any) to end, after telling it to stop at once
 * when stop is set, and closes the pump's end of the socketpair. */
void ssh_pump_join(struct ssh_conn *c, int stop);

/* ssh_hostkey.c */

/* Checks the server's key against known_hosts (may ask, may add). Returns
 * 0, FERRY_ERR_HOSTKEY (message in err), INTERRUPTED or NOMEM. */
int ssh_hostkey_check(struct ssh_conn *c, const struct sshcfg *cfg,
    char *err, size_t errlen) FERRY_WUR;

/*
 * Looks up the key (raw, of libssh2 host key type) of host:port in the
 * known_hosts files of cfg, each line read alone (libssh2's readfile
 * stops at the first line it cannot read). s is only for libssh2's
 * knownhost API: it need not be connected. Returns a
 * LIBSSH2_KNOWNHOST_CHECK_* result or FERRY_ERR_NOMEM. *file and *lineno
 * name the line holding another key on a MISMATCH (lineno 0 otherwise);
 * *file borrows from cfg or a constant.
 * Exported for the tests; otherwise used only in its file.
 */
int ssh_known_lookup(LIBSSH2_SESSION *s, const struct sshcfg *cfg,
    const char *host, unsigned port, const char *key, size_t keylen,
    int type, const char **file, unsigned *lineno) FERRY_WUR;

/* ssh_auth.c */

/* Logs in: ssh-agent keys, then identity files. Returns 0,
 * FERRY_ERR_AUTH (message in err), INTERRUPTED or TIMEOUT. */
int ssh_auth_login(struct ssh_conn *c, const struct sshcfg *cfg,
    char *err, size_t errlen) FERRY_WUR;

/*
 * What kind of key the text of a private key file holds, without
 * decrypting it: *rsa for RSA keys, *encrypted when a passphrase is
 * needed. Reads the OpenSSH container ("openssh-key-v1") and the PEM
 * forms. Returns 0, or FERRY_ERR_FORMAT / SHORT / TOO_LARGE for an
 * OpenSSH container that is not one.
 * Exported for the tests; otherwise used only in its file.
 */
int ssh_auth_key_kind(const char *text, size_t len, int *rsa,
    int *encrypted) FERRY_WUR;

/* ssh_tty.c: prompts on the controlling terminal. Each clears the
 * progress line first, and Ctrl-C (or ssh_interrupt()) ends it with
 * FERRY_ERR_INTERRUPTED. */

/* Asks question; accepts "yes" or the fingerprint, refuses "no" or end
 * of input, and asks again for anything else, as ssh does. Returns 1, 0,
 * FERRY_ERR_INTERRUPTED or -errno (no terminal). */
int ssh_tty_confirm(const char *question,
    const char *fingerprint) FERRY_WUR;

/* Reads a line without echo into out. Returns 0, FERRY_ERR_CLOSED (end
 * of input), FERRY_ERR_TOO_LARGE, FERRY_ERR_INTERRUPTED or -errno. */
int ssh_tty_secret(const char *prompt, char *out, size_t outlen) FERRY_WUR;

#endif
