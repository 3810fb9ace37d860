#include "ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/alloc.h"
#include "../common/log.h"
#include "ssh_int.h"

#define SSH_DEFAULT_TIMEOUT 30
/* When the config gives no ServerAliveInterval, still notice a dead link
 * (a laptop that slept, a box that vanished) within a minute. */
#define SSH_DEFAULT_ALIVE 15
#define SSH_CIPHERS "aes128-ctr,aes192-ctr,aes256-ctr"
/* How long a clean goodbye may take, and after Ctrl-C none at all: the
 * link may be the reason the user gave up. */
#define SSH_BYE_MS 2000

/*
 * Interrupts. One flag and one pipe for the process: the flag is what the
 * code checks, the pipe is what its poll() calls watch, so a wait wakes
 * at once. Both are set once and stay set: after Ctrl-C every connect,
 * prompt, pump and goodbye of this module ends quickly.
 */
static atomic_int ssh_intr_flag;
static int ssh_intr_pipe[2] = { -1, -1 };
static struct sigaction ssh_prev_int, ssh_prev_term;
static pthread_once_t ssh_once = PTHREAD_ONCE_INIT;
static int ssh_once_err;
/* Set after the first login: later connections of the run (retries, more
 * streams) never prompt, so an unattended retry cannot wait on one. */
static atomic_int ssh_logged_in;

/*
 * Interrupts this module for the rest of the process: a connect, prompt,
 * pump or close in progress ends at once with FERRY_ERR_INTERRUPTED, and
 * so does every later one. Async-signal-safe; ssh_global_init() makes the
 * SIGINT and SIGTERM handlers call it.
 */
static void
ssh_interrupt(void)
{
    int saved = errno;

    if (!atomic_exchange(&ssh_intr_flag, 1) && ssh_intr_pipe[1] >= 0)
        (void)!write(ssh_intr_pipe[1], "!", 1);
    errno = saved;
}

int
ssh_interrupted(void)
{
    return atomic_load(&ssh_intr_flag);
}

int
ssh_intr_fd(void)
{
    return ssh_intr_pipe[0];
}

/* Runs the handler that was there (the program's), then ours. */
static void
ssh_on_signal(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *prev = sig == SIGINT ? &ssh_prev_int :
        &ssh_prev_term;
    int saved = errno;

    if (prev->sa_flags & SA_SIGINFO)
        prev->sa_sigaction(sig, si, uc);
    else
        prev->sa_handler(sig);
    errno = saved;
    ssh_interrupt();
}

/* Chains onto a handler the program installed; a signal left at its
 * default (or ignored) is the program's choice and stays so. */
static void
ssh_hook(int sig, struct sigaction *prev)
{
    struct sigaction sa;

    if (sigaction(sig, NULL, prev) != 0)
        return;
    if (!(prev->sa_flags & SA_SIGINFO) && (prev->sa_handler == SIG_DFL ||
        prev->sa_handler == SIG_IGN))
        return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = ssh_on_signal;
    sa.sa_mask = prev->sa_mask;
    sa.sa_flags = SA_SIGINFO | (prev->sa_flags & SA_RESTART);
    (void)sigaction(sig, &sa, NULL);
}

static void
ssh_global_once(void)
{
    if (libssh2_init(0) != 0) {
        ssh_once_err = FERRY_ERR_SSH;
        return;
    }
    if (pipe2(ssh_intr_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        ssh_once_err = -errno;
        return;
    }
    ssh_hook(SIGINT, &ssh_prev_int);
    ssh_hook(SIGTERM, &ssh_prev_term);
}

int
ssh_global_init(void)
{
    (void)pthread_once(&ssh_once, ssh_global_once);
    return ssh_once_err;
}

int64_t
ssh_now_ms(void)
{
    return (int64_t)clock_ms();
}

uint64_t
ssh_conn_wire_out(const struct ssh_conn *c)
{
    return c ? atomic_load(&c->wire_out) : 0;
}

uint64_t
ssh_conn_wire_in(const struct ssh_conn *c)
{
    return c ? atomic_load(&c->wire_in) : 0;
}

int
ssh_conn_socket(const struct ssh_conn *c)
{
    return c != NULL ? c->sock : -1;
}

int
ssh_conn_same_host(const struct ssh_conn *c)
{
    struct sockaddr_storage me, peer;
    socklen_t melen = sizeof(me), peerlen = sizeof(peer);

    if (c == NULL || c->sock < 0 ||
        getsockname(c->sock, (struct sockaddr *)&me, &melen) != 0 ||
        getpeername(c->sock, (struct sockaddr *)&peer, &peerlen) != 0 ||
        me.ss_family != peer.ss_family)
        return 0;
    if (me.ss_family == AF_INET)
        return ((struct sockaddr_in *)&me)->sin_addr.s_addr ==
            ((struct sockaddr_in *)&peer)->sin_addr.s_addr;
    if (me.ss_family == AF_INET6)
        return memcmp(&((struct sockaddr_in6 *)&me)->sin6_addr,
            &((struct sockaddr_in6 *)&peer)->sin6_addr,
            sizeof(struct in6_addr)) == 0;
    return 0;
}

/* I/O callbacks: the default ones, counting bytes and noting when the
 * server last sent anything (for the liveness check). */
static LIBSSH2_SEND_FUNC(ssh_send_cb)
{
    struct ssh_conn *c = *abstract;
    ssize_t n = send(socket, buffer, length, flags | MSG_NOSIGNAL);

    if (n < 0)
        return -errno;
    atomic_fetch_add(&c->wire_out, (uint64_t)n);
    return n;
}

static LIBSSH2_RECV_FUNC(ssh_recv_cb)
{
    struct ssh_conn *c = *abstract;
    ssize_t n = recv(socket, buffer, length, flags);

    if (n < 0)
        return errno == ENOENT ? -EAGAIN : -errno;
    if (n > 0) {
        atomic_fetch_add(&c->wire_in, (uint64_t)n);
        atomic_store(&c->last_rx_ms, ssh_now_ms());
    }
    return n;
}

const char *
ssh_last_error(struct ssh_conn *c)
{
    char *msg = NULL;

    libssh2_session_last_error(c->s, &msg, NULL, 0);
    return msg != NULL ? msg : "unknown error";
}

/*
 * Waits until the socket is ready in the directions the session is
 * blocked on. Returns 0, FERRY_ERR_INTERRUPTED, FERRY_ERR_TIMEOUT (past
 * deadline, in ssh_now_ms() time) or -errno.
 */
static int
ssh_wait(struct ssh_conn *c, int64_t deadline)
{
    struct pollfd p[2];
    int64_t left;
    int dirs, n;

    for (;;) {
        if (ssh_interrupted())
            return FERRY_ERR_INTERRUPTED;
        if ((left = deadline - ssh_now_ms()) <= 0)
            return FERRY_ERR_TIMEOUT;
        dirs = libssh2_session_block_directions(c->s);
        p[0].fd = c->sock;
        p[0].events = 0;
        if (dirs & LIBSSH2_SESSION_BLOCK_INBOUND)
            p[0].events |= POLLIN;
        if (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND)
            p[0].events |= POLLOUT;
        /* EAGAIN without a direction (ssh-agent's socket was busy): look
         * again soon rather than wait for the server. */
        if (p[0].events == 0 && left > 50)
            left = 50;
        p[1].fd = ssh_intr_fd();
        p[1].events = POLLIN;
        n = poll(p, 2, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n == 0 && p[0].events == 0)
            return 0;
        if (n > 0 && p[0].revents != 0)
            return 0;
    }
}

int
ssh_again(struct ssh_conn *c, int rc)
{
    if (rc != LIBSSH2_ERROR_EAGAIN)
        return 0;
    c->wait_err = ssh_wait(c, c->deadline);
    return c->wait_err == 0;
}

int
ssh_failed(const struct ssh_conn *c, int rc, int fallback)
{
    if (rc == LIBSSH2_ERROR_EAGAIN && c->wait_err != 0)
        return c->wait_err;
    return fallback;
}

void
ssh_deadline_reset(struct ssh_conn *c)
{
    c->deadline = ssh_now_ms() + c->timeout_ms;
}

int
ssh_each_line(const char *file, ssh_line_fn *fn, void *ctx)
{
    FILE *f = fopen(file, "re");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned no = 0;
    int r = 0;

    if (f == NULL)
        return 0;
    while (r == 0 && (n = getline(&line, &cap, f)) >= 0) {
        no++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        r = fn(ctx, line, (size_t)n, no);
    }
    free(line);
    fclose(f);
    return r;
}

int
ssh_shell_quote(const char *s, char *out, size_t outlen)
{
    size_t o = 0;

    if (outlen < 3)
        return FERRY_ERR_TOO_LARGE;
    out[o++] = '\'';
    for (; *s; s++) {
        const char *piece = *s == '\'' ? "'\\''" : NULL;
        size_t n = piece ? 4 : 1;

        if (o + n + 2 > outlen)
            return FERRY_ERR_TOO_LARGE;
        if (piece)
            memcpy(out + o, piece, 4);
        else
            out[o] = *s;
        o += n;
    }
    out[o++] = '\'';
    out[o] = '\0';
    return 0;
}

/* Waits for a non-blocking connect (or an interrupt) until the step's
 * deadline; returns 0 or the errno that ended it. */
static int
ssh_connect_wait(struct ssh_conn *c, int fd)
{
    struct pollfd p[2];
    socklen_t sl = sizeof(int);
    int64_t left;
    int n, soerr = 0;

    for (;;) {
        if (ssh_interrupted())
            return EINTR;
        if ((left = c->deadline - ssh_now_ms()) <= 0)
            return ETIMEDOUT;
        p[0].fd = fd;
        p[0].events = POLLOUT;
        p[1].fd = ssh_intr_fd();
        p[1].events = POLLIN;
        n = poll(p, 2, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno != EINTR)
            return errno;
        if (n > 0 && p[0].revents != 0)
            break;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
        return errno;
    return soerr;
}

/* TCP connect to every address in turn, all within ConnectTimeout. */
static int
ssh_tcp_connect(struct ssh_conn *c, const struct sshcfg *cfg, char *err,
    size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int fd = -1, r, last = 0, one = 1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%u", cfg->port);
    if ((r = getaddrinfo(cfg->hostname, port, &hints, &res)) != 0) {
        snprintf(err, errlen, "%s: cannot resolve %s: %s", c->display,
            cfg->hostname, gai_strerror(r));
        return FERRY_ERR_CONNECT;
    }
    for (ai = res; ai != NULL && last != EINTR; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
            SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            last = 0;
        else if (errno != EINPROGRESS)
            last = errno;
        else
            last = ssh_connect_wait(c, fd);
        if (last == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (last == EINTR)
        return FERRY_ERR_INTERRUPTED;
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot connect to %s port %u: %s",
            c->display, cfg->hostname, cfg->port, strerror(last));
        return last == ETIMEDOUT ? FERRY_ERR_TIMEOUT : FERRY_ERR_CONNECT;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->sock = fd;
    return 0;
}

/* The handshake, non-blocking, within the step's deadline. */
static int
ssh_handshake(struct ssh_conn *c, char *err, size_t errlen)
{
    int rc, r;

    if ((c->s = libssh2_session_init_ex(NULL, NULL, NULL, c)) == NULL)
        return FERRY_ERR_NOMEM;
    libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_SEND,
        (void *)ssh_send_cb);
    libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_RECV,
        (void *)ssh_recv_cb);
    libssh2_session_set_blocking(c->s, 0);
    /* Cipher cost is this transport's ceiling (libssh2 1.10 encrypts one
     * 16-byte block per OpenSSL call): prefer AES-128, which does 10
     * rounds a block where AES-256 does 14. */
    (void)libssh2_session_method_pref(c->s, LIBSSH2_METHOD_CRYPT_CS,
        SSH_CIPHERS);
    (void)libssh2_session_method_pref(c->s, LIBSSH2_METHOD_CRYPT_SC,
        SSH_CIPHERS);
    do
        rc = libssh2_session_handshake(c->s, c->sock);
    while (ssh_again(c, rc));
    if (rc == 0)
        return 0;
    r = ssh_failed(c, rc, FERRY_ERR_SSH);
    if (r == FERRY_ERR_TIMEOUT)
        snprintf(err, errlen, "%s: SSH handshake timed out after %lld s",
            c->display, (long long)(c->timeout_ms / 1000));
    else
        snprintf(err, errlen, "%s: SSH handshake failed: %s%s", c->display,
            ssh_last_error(c), rc == LIBSSH2_ERROR_KEX_FAILURE ?
            " (this SSH library needs an ed25519 or ecdsa host key)" : "");
    return r;
}

/* The failure of a connection being started: its message, and the
 * connection goes. */
static int
ssh_conn_fail(struct ssh_conn *c, int r, char *err, size_t errlen)
{
    /* After a refusal the session is sound, and sshd gets a goodbye;
     * anything else may have left a send half done. */
    if (r != FERRY_ERR_HOSTKEY && r != FERRY_ERR_AUTH)
        c->dirty = 1;
    if (r == FERRY_ERR_INTERRUPTED)
        snprintf(err, errlen, "interrupted");
    else if (r == FERRY_ERR_TIMEOUT && err[0] == '\0')
        snprintf(err, errlen, "%s: no answer from the server during login "
            "(ConnectTimeout %lld s)", c->display,
            (long long)(c->timeout_ms / 1000));
    else if (err[0] == '\0')
        snprintf(err, errlen, "%s: %s", c->display, ferry_strerror(r));
    ssh_conn_close(c);
    return r;
}

/* The round trip a TCP connect of tcp_ms and a handshake of handshake_ms
 * (the connect included) imply. */
static uint64_t ssh_rtt_of_handshake(uint64_t tcp_ms, uint64_t handshake_ms);

int
ssh_conn_begin(const struct ssh_conn_opts *o, struct ssh_conn **out,
    char *err, size_t errlen)
{
    const struct sshcfg *cfg = o->cfg;
    unsigned timeout = cfg->connect_timeout ? cfg->connect_timeout :
        SSH_DEFAULT_TIMEOUT;
    int64_t t0 = ssh_now_ms();
    struct ssh_conn *c;
    int r;

    *out = NULL;
    err[0] = '\0';
    if ((r = ssh_global_init()) != 0)
        return r;
    if ((c = xcalloc(1, sizeof(*c))) == NULL)
        return FERRY_ERR_NOMEM;
    c->sock = c->sp = c->wake_fd = -1;
    c->exit_status = -1;
    snprintf(c->display, sizeof(c->display), "%s", o->display);
    snprintf(c->host, sizeof(c->host), "%s", cfg->host_key_alias ?
        cfg->host_key_alias : cfg->hostname);
    c->port = cfg->host_key_alias ? 22 : cfg->port;
    c->interactive = o->interactive && !cfg->batch_mode &&
        !atomic_load(&ssh_logged_in);
    c->alive_interval = cfg->alive_interval ? cfg->alive_interval :
        SSH_DEFAULT_ALIVE;
    c->alive_count = cfg->alive_count ? cfg->alive_count : 3;
    c->timeout_ms = (int64_t)timeout * 1000;
    ssh_deadline_reset(c);
    if ((r = ssh_tcp_connect(c, cfg, err, errlen)) != 0)
        return ssh_conn_fail(c, r, err, errlen);
    c->tcp_ms = (uint64_t)(ssh_now_ms() - t0);
    if ((r = ssh_handshake(c, err, errlen)) != 0)
        return ssh_conn_fail(c, r, err, errlen);
    c->handshake_ms = (uint64_t)(ssh_now_ms() - t0);
    c->rtt_ms = ssh_rtt_of_handshake(c->tcp_ms, c->handshake_ms);
    *out = c;
    return 0;
}

int
ssh_conn_finish(struct ssh_conn_opts *o, struct ssh_conn *c, char *err,
    size_t errlen)
{
    int64_t t0;
    uint64_t waited;
    int r;

    err[0] = '\0';
    if ((r = ssh_hostkey_check(c, o->cfg, err, errlen)) != 0)
        return ssh_conn_fail(c, r, err, errlen);
    t0 = ssh_now_ms();
    waited = ssh_tty_waited_ms();
    r = ssh_auth_login(c, o->cfg, err, errlen);
    o->auth_ms = (uint64_t)(ssh_now_ms() - t0) -
        (ssh_tty_waited_ms() - waited);
    if (r != 0) {
        if (r == FERRY_ERR_AUTH && c->rsa_skipped)
            o->rsa_only = 1;
        return ssh_conn_fail(c, r, err, errlen);
    }
    atomic_store(&ssh_logged_in, 1);
    libssh2_keepalive_config(c->s, 1, c->alive_interval);
    atomic_store(&c->last_rx_ms, ssh_now_ms());
    return 0;
}

static uint64_t
ssh_rtt_of_handshake(uint64_t tcp_ms, uint64_t handshake_ms)
{
    uint64_t kex = handshake_ms > tcp_ms ? handshake_ms - tcp_ms : 0;

    /* The server's banner, the two KEXINITs crossing, ECDH and NEWKEYS:
     * three round trips after the connect (one itself, unless a proxy
     * on this machine answered it). */
    return tcp_ms > kex / 3 ? tcp_ms : kex / 3;
}

void
ssh_conn_link(const struct ssh_conn *c, uint64_t *rtt_ms,
    uint64_t *send_window, uint64_t *recv_window)
{
    *rtt_ms = c->rtt_ms;
    *send_window = c->send_window != 0 ? c->send_window :
        SSH_PEER_WINDOW_GUESS;
    *recv_window = c->recv_window != 0 ? c->recv_window :
        ssh_recv_window(c->handshake_ms, c->rtt_ms);
}

int
ssh_login_link(uint64_t ms, uint64_t auth_ms)
{
    uint64_t before = ms > auth_ms ? ms - auth_ms : 0;

    if (ms == 0)
        return -1;
    /* The authentication is two round trips at least, and what came
     * before it (the connect, the key exchange) four at most, unless a
     * server slow to start held it: an authentication shorter than one of
     * the round trips the rest implies was stretched by this machine's
     * load (its streams' own key exchanges beside it), not by the link. */
    return ms >= SSH_LONG_HANDSHAKE_MS && auth_ms >= SSH_LONG_AUTH_MS &&
        auth_ms >= ssh_rtt_of_handshake(0, before);
}

/* Connects, checks the host key and logs in; closes again when
 * on_handshake says the ssh program is to carry the bytes. */
int
ssh_conn_open(struct ssh_conn_opts *o, struct ssh_conn **out, char *err,
    size_t errlen)
{
    struct ssh_conn *c;
    int r, hand_over;

    if ((r = ssh_conn_begin(o, &c, err, errlen)) != 0)
        return r;
    hand_over = o->on_handshake != NULL &&
        o->on_handshake(o->ctx, c->handshake_ms, c->rtt_ms) == 1;
    if ((r = ssh_conn_finish(o, c, err, errlen)) != 0)
        return r;
    if (hand_over) {
        ssh_conn_close(c);
        c = NULL;
    }
    *out = c;
    return 0;
}

/*
 * Says goodbye within SSH_BYE_MS when the session can still send (no send
 * left half done, the link alive, no interrupt); otherwise, or when that
 * runs out, shuts the socket down so that what libssh2 does while freeing
 * fails at once instead of waiting on a dead peer (libssh2 #232).
 */
static void
ssh_goodbye(struct ssh_conn *c)
{
    int rc;

    if (!c->dirty && !ssh_interrupted()) {
        c->deadline = ssh_now_ms() + SSH_BYE_MS;
        do
            rc = libssh2_session_disconnect(c->s, "done");
        while (ssh_again(c, rc));
    }
    (void)shutdown(c->sock, SHUT_RDWR);
}

void
ssh_conn_close(struct ssh_conn *c)
{
    if (c == NULL)
        return;
    ssh_pump_join(c, 1);
    if (c->s != NULL) {
        if (c->sock >= 0)
            ssh_goodbye(c);
        libssh2_session_free(c->s);
    }
    if (c->sock >= 0)
        close(c->sock);
    xfree(c);
}
