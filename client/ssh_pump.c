/*
 * ssh_pump.c: exec channels, and the pump thread that moves one channel's
 * bytes to and from the engine's socketpair.
 *
 * The pump honours libssh2 1.10's rule that a call which returned EAGAIN
 * while sending must be repeated, unchanged, before any other call that
 * sends (`pending`). It ends when both directions have passed their EOF
 * on; when the remote side ends first (the agent exited or was killed),
 * what is still queued for it is dropped, since nothing will read it.
 * Every wait is a poll() on the socket, the engine's socket and the
 * interrupt pipe, bounded by the keepalive deadline, and nothing is polled
 * that the next round will not consume, so the thread never spins.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/text.h"
#include "../common/log.h"
#include "ssh_int.h"

/* Our receive window per channel: the bandwidth-delay product of
 * SSH_WINDOW_RATE, between SSH_WINDOW_SHORT and SSH_WINDOW_MAX. So a
 * pull is not capped at one window per round trip the way sshd caps
 * uploads at 2 MiB: one stream's window carries more than its cipher
 * does. What the window lets in waits in libssh2's memory until the
 * pump reads it, so it is bounded: on a short link (a handshake under
 * SSH_LONG_HANDSHAKE_MS) 2 MiB fill in well under a millisecond, and 16
 * MiB there cost a loopback pull of 512 MiB 28 MiB of client memory for
 * no speed (docs/BENCHMARKS.md, "Streams"). */
#define SSH_WINDOW_RATE (160u << 20)
#define SSH_WINDOW_SHORT (2u << 20)
#define SSH_WINDOW_MAX (32u << 20)
#define SSH_PACKET 32768u
#define SSH_PUMP_BUF (256u << 10)
#define SSH_SOCKBUF (4 << 20)
/* Once the engine is done, the agent has this long to finish. */
#define SSH_PUMP_GRACE_MS 10000
/* Closing the channel (and learning the exit status) at the end. */
#define SSH_CLOSE_MS 3000
/* A bootstrap upload or its answer may stall this long. */
#define SSH_RUN_STALL_MS 120000

enum pump_op { OP_NONE, OP_WRITE, OP_READ, OP_EOF, OP_STDERR, OP_ALIVE };

struct pump {
    struct ssh_conn *c;
    uint8_t *up, *down;
    size_t up_len, up_off, down_len, down_off;
    int sp_eof;            /* the engine sends nothing more */
    int sp_hup;            /* the engine closed its end */
    int eof_sent;          /* our EOF went out (or cannot matter) */
    int ch_eof;            /* the remote sent EOF; all its data was read */
    int down_shut;         /* the engine has been told so */
    enum pump_op pending;
    int alive_next;        /* seconds to the next keepalive */
    struct text_lines err_lines;  /* the remote stderr, escaped */
};

/* A line of the remote stderr (the agent's diagnostics, or whatever the
 * remote shell says), escaped by text_lines before it is shown. */
static void
pump_err_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static void FERRY_PRINTF(3, 4)
pump_fail(struct ssh_conn *c, int err, const char *fmt, ...)
{
    va_list ap;

    if (c->pump_err == 0) {
        c->pump_err = err;
        va_start(ap, fmt);
        vsnprintf(c->pump_msg, sizeof(c->pump_msg), fmt, ap);
        va_end(ap);
    }
}

static int
pump_lost(struct pump *p)
{
    pump_fail(p->c, FERRY_ERR_CLOSED, "%s: connection lost (%s)",
        p->c->display, ssh_last_error(p->c));
    p->c->dirty = 1;
    return -1;
}

/* After EAGAIN: a blocked send must be retried first; a blocked receive
 * only means "nothing yet". */
static void
pump_eagain(struct pump *p, enum pump_op op)
{
    if (libssh2_session_block_directions(p->c->s) &
        LIBSSH2_SESSION_BLOCK_OUTBOUND)
        p->pending = op;
    else
        p->pending = OP_NONE;
}

static int
pump_may(const struct pump *p, enum pump_op op)
{
    return p->pending == OP_NONE || p->pending == op;
}

/* Our side of the channel: upload and EOF. Returns 1 if anything moved,
 * 0 if not, -1 on a fatal error. */
static int
pump_ssh_out(struct pump *p)
{
    struct ssh_conn *c = p->c;
    ssize_t n;
    int rc, moved = 0;

    /* After the remote EOF only a half-sent packet is finished. */
    if (p->up_off < p->up_len && pump_may(p, OP_WRITE) &&
        (!p->ch_eof || p->pending == OP_WRITE)) {
        n = libssh2_channel_write(c->ch, (const char *)p->up + p->up_off,
            p->up_len - p->up_off);
        if (n > 0) {
            p->pending = OP_NONE;
            p->up_off += (size_t)n;
            if (p->up_off == p->up_len)
                p->up_off = p->up_len = 0;
            moved = 1;
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_WRITE);
        } else if (n < 0) {
            return pump_lost(p);
        }
        /* 0: the window is shut; a window adjust will come in. */
    }
    if (p->ch_eof && p->pending != OP_WRITE)
        p->up_off = p->up_len = 0;
    if (p->sp_eof && p->up_len == 0 && !p->eof_sent && pump_may(p, OP_EOF)) {
        rc = libssh2_channel_send_eof(c->ch);
        if (rc == 0) {
            p->pending = OP_NONE;
            p->eof_sent = 1;
            moved = 1;
        } else if (rc == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_EOF);
        } else {
            p->eof_sent = 1;  /* the channel is gone anyway */
        }
    }
    return moved;
}

/* The remote side: output, diagnostics, keepalives. */
static int
pump_ssh_in(struct pump *p)
{
    struct ssh_conn *c = p->c;
    ssize_t n;
    int rc, moved = 0;
    char errbuf[4096];

    if (p->down_len == 0 && !p->ch_eof && pump_may(p, OP_READ)) {
        n = libssh2_channel_read(c->ch, (char *)p->down, SSH_PUMP_BUF);
        if (n > 0) {
            p->pending = OP_NONE;
            p->down_len = (size_t)n;
            p->down_off = 0;
            moved = 1;
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_READ);
        } else if (n < 0) {
            return pump_lost(p);
        }
    }
    if (pump_may(p, OP_ALIVE)) {
        rc = libssh2_keepalive_send(c->s, &p->alive_next);
        if (rc == LIBSSH2_ERROR_EAGAIN)
            pump_eagain(p, OP_ALIVE);
        else if (rc < 0)
            return pump_lost(p);
        else if (p->pending == OP_ALIVE)
            p->pending = OP_NONE;
    }
    /* The remote stderr: the agent's diagnostics, shown as they come. */
    if (pump_may(p, OP_STDERR)) {
        n = libssh2_channel_read_stderr(c->ch, errbuf, sizeof(errbuf));
        if (n > 0) {
            p->pending = OP_NONE;
            text_lines_feed(&p->err_lines, errbuf, (size_t)n);
            moved = 1;
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_STDERR);
        } else if (n < 0) {
            return pump_lost(p);
        }
    }
    /* EOF counts once every byte before it was read (libssh2 hides it
     * while data is queued). */
    if (!p->ch_eof && p->down_len == 0 && libssh2_channel_eof(c->ch) == 1) {
        p->ch_eof = 1;
        moved = 1;
    }
    return moved;
}

/* Moves bytes between the buffers and the engine's socket. */
static int
pump_local(struct pump *p)
{
    struct ssh_conn *c = p->c;
    ssize_t n;
    int moved = 0;

    /* After the remote EOF, reads go on only to see the engine's EOF. */
    if (!p->sp_eof && p->up_len == 0) {
        n = read(c->sp, p->up, SSH_PUMP_BUF);
        if (n > 0) {
            if (!p->ch_eof) {
                p->up_len = (size_t)n;
                p->up_off = 0;
            }
            moved = 1;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            p->sp_eof = 1;
            moved = 1;
        }
    }
    if (p->down_len > 0) {
        n = send(c->sp, p->down + p->down_off, p->down_len - p->down_off,
            MSG_NOSIGNAL);
        if (n > 0) {
            p->down_off += (size_t)n;
            if (p->down_off == p->down_len)
                p->down_len = p->down_off = 0;
            moved = 1;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            /* The engine is gone: drop what the agent still says. */
            p->down_len = p->down_off = 0;
            p->sp_eof = p->sp_hup = 1;
            moved = 1;
        }
    }
    if (p->ch_eof && p->down_len == 0 && !p->down_shut) {
        (void)shutdown(c->sp, SHUT_WR);
        p->down_shut = 1;
        moved = 1;
    }
    return moved;
}

/*
 * Sleeps until something the next round can use: the socket in the
 * direction the session waits for, the engine's socket when there is
 * room or data, the interrupt pipe, or the next deadline (wait_ms).
 */
static void
pump_poll(struct pump *p, int wait_ms)
{
    struct ssh_conn *c = p->c;
    struct pollfd fds[4];

    fds[0].fd = c->sock;
    fds[0].events = p->pending != OP_NONE &&
        (libssh2_session_block_directions(c->s) &
        LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : POLLIN;
    fds[1].fd = c->sp;
    fds[1].events = 0;
    if (!p->sp_eof && p->up_len == 0)
        fds[1].events |= POLLIN;
    if (p->down_len > 0)
        fds[1].events |= POLLOUT;
    /* With no events the socket still reports a hang-up, once: after
     * that it would wake every poll for nothing. */
    if (fds[1].events == 0 && p->sp_hup)
        fds[1].fd = -1;
    fds[2].fd = ssh_intr_fd();
    fds[2].events = POLLIN;
    fds[3].fd = c->wake_fd;
    fds[3].events = POLLIN;
    if (poll(fds, 4, wait_ms) > 0) {
        uint64_t n;

        if (fds[1].revents & (POLLHUP | POLLERR))
            p->sp_hup = 1;
        if (fds[3].revents & POLLIN)
            (void)!read(c->wake_fd, &n, sizeof(n));
    }
}

/* The end: the channel closed within SSH_CLOSE_MS when the session is
 * healthy (that brings the exit status), else dropped with the socket. */
static void
pump_finish(struct pump *p)
{
    struct ssh_conn *c = p->c;
    char *sig = NULL;
    size_t siglen = 0;
    int rc = -1;

    if (p->pending != OP_NONE || atomic_load(&c->leave))
        c->dirty = 1;
    if (c->pump_err == 0 && !c->dirty) {
        c->deadline = ssh_now_ms() + SSH_CLOSE_MS;
        do
            rc = libssh2_channel_close(c->ch);
        while (ssh_again(c, rc));
        if (rc == LIBSSH2_ERROR_EAGAIN)
            c->dirty = 1;
    }
    c->exit_status = libssh2_channel_get_exit_status(c->ch);
    if (!p->ch_eof)
        c->exit_status = -1;
    if (libssh2_channel_get_exit_signal(c->ch, &sig, &siglen, NULL, NULL,
        NULL, NULL) == 0 && sig != NULL) {
        pump_fail(c, FERRY_ERR_CLOSED, "%s: the agent was killed "
            "(signal %.*s)", c->display, (int)siglen, sig);
        c->exit_status = -1;
        libssh2_free(c->s, sig);
    }
    if (rc != 0) {
        /* libssh2 would wait for the peer's close while freeing. */
        c->dirty = 1;
        (void)shutdown(c->sock, SHUT_RDWR);
    }
    (void)libssh2_channel_free(c->ch);
    c->ch = NULL;
}

static void *
pump_main(void *arg)
{
    struct ssh_conn *c = arg;
    struct pump p;
    int64_t dead_ms = (int64_t)c->alive_interval * c->alive_count * 1000;
    int64_t done_at = 0, now;

    memset(&p, 0, sizeof(p));
    p.c = c;
    p.err_lines.emit = pump_err_line;
    p.up = xmalloc(SSH_PUMP_BUF);
    p.down = xmalloc(SSH_PUMP_BUF);
    if (p.up == NULL || p.down == NULL) {
        pump_fail(c, FERRY_ERR_NOMEM, "%s: out of memory", c->display);
        goto out;
    }
    for (;;) {
        int wait_ms = 1000, moved, r;

        moved = pump_local(&p);
        if ((r = pump_ssh_out(&p)) < 0)
            break;
        moved |= r;
        if ((r = pump_ssh_in(&p)) < 0)
            break;
        moved |= r;
        if (ssh_interrupted() || atomic_load(&c->stop)) {
            pump_fail(c, FERRY_ERR_INTERRUPTED, "interrupted");
            break;
        }
        /* Done when both sides have said EOF and it was passed on, or,
         * once the engine has ended cleanly and wants nothing more,
         * when ours was (ssh_conn_pump_leave). */
        if (p.sp_eof && p.eof_sent && (p.down_shut ||
            atomic_load(&c->leave)))
            break;
        now = ssh_now_ms();
        if (p.sp_eof || p.sp_hup) {
            /* The engine is done; an agent that does not finish within
             * a grace period is not waited for. */
            if (done_at == 0)
                done_at = now;
            else if (now - done_at > SSH_PUMP_GRACE_MS)
                break;
            if (done_at + SSH_PUMP_GRACE_MS - now < wait_ms)
                wait_ms = (int)(done_at + SSH_PUMP_GRACE_MS - now) + 1;
        }
        if (moved)
            continue;
        if (now - atomic_load(&c->last_rx_ms) > dead_ms) {
            pump_fail(c, FERRY_ERR_TIMEOUT, "%s: connection lost (no "
                "response for %lld s)", c->display,
                (long long)(dead_ms / 1000));
            c->dirty = 1;
            break;
        }
        if (p.alive_next > 0 && p.alive_next * 1000 < wait_ms)
            wait_ms = p.alive_next * 1000;
        pump_poll(&p, wait_ms);
    }
out:
    if (c->ch != NULL)
        pump_finish(&p);
    /* The engine sees EOF; the fd is closed by whoever joins us. */
    (void)shutdown(c->sp, SHUT_RDWR);
    text_lines_flush(&p.err_lines);
    xfree(p.up);
    xfree(p.down);
    return NULL;
}

/* Frees a channel; one not closed cleanly takes the socket with it, so
 * that libssh2 does not wait for the peer's close. */
static void
ssh_channel_drop(struct ssh_conn *c, LIBSSH2_CHANNEL *ch, int closed)
{
    if (!closed) {
        c->dirty = 1;
        (void)shutdown(c->sock, SHUT_RDWR);
    }
    (void)libssh2_channel_free(ch);
}

/* Says why a channel step failed, in err. */
static int
ssh_channel_error(struct ssh_conn *c, int rc, const char *what, char *err,
    size_t errlen)
{
    int r = ssh_failed(c, rc, FERRY_ERR_SSH);

    if (r == FERRY_ERR_INTERRUPTED)
        snprintf(err, errlen, "interrupted");
    else if (r == FERRY_ERR_TIMEOUT)
        snprintf(err, errlen, "%s: %s: no answer from the server",
            c->display, what);
    else
        snprintf(err, errlen, "%s: %s: %s", c->display, what,
            ssh_last_error(c));
    return r;
}

unsigned
ssh_recv_window(uint64_t handshake_ms, uint64_t rtt_ms)
{
    uint64_t w = rtt_ms * (SSH_WINDOW_RATE / 1000);

    if (handshake_ms < SSH_LONG_HANDSHAKE_MS || w < SSH_WINDOW_SHORT)
        return SSH_WINDOW_SHORT;
    return w > SSH_WINDOW_MAX ? SSH_WINDOW_MAX : (unsigned)w;
}

static LIBSSH2_CHANNEL *
ssh_open_exec(struct ssh_conn *c, const char *command, int *r, char *err,
    size_t errlen)
{
    LIBSSH2_CHANNEL *ch;
    unsigned long granted = 0;
    unsigned window = ssh_recv_window(c->handshake_ms, c->rtt_ms);
    int64_t t0;
    int rc;

    ssh_deadline_reset(c);
    t0 = ssh_now_ms();
    do
        ch = libssh2_channel_open_ex(c->s, "session", 7, window, SSH_PACKET,
            NULL, 0);
    while (ch == NULL && ssh_again(c, libssh2_session_last_errno(c->s)));
    if (ch == NULL) {
        *r = ssh_channel_error(c, libssh2_session_last_errno(c->s),
            "cannot open a channel", err, errlen);
        return NULL;
    }
    /* A channel open is one round trip, without the key exchange's
     * crypto: the better measure. */
    c->rtt_ms = (uint64_t)(ssh_now_ms() - t0);
    if (c->rtt_ms == 0)
        c->rtt_ms = 1;
    (void)libssh2_channel_window_write_ex(ch, &granted);
    c->send_window = granted;
    c->recv_window = window;
    do
        rc = libssh2_channel_exec(ch, command);
    while (ssh_again(c, rc));
    if (rc != 0) {
        *r = ssh_channel_error(c, rc, "cannot run the agent", err, errlen);
        ssh_channel_drop(c, ch, 0);
        return NULL;
    }
    return ch;
}

int
ssh_conn_exec_pump(struct ssh_conn *c, const char *command, int *fd,
    char *err, size_t errlen)
{
    int sv[2], r = 0;

    *fd = -1;
    if (c->thr_running)
        return FERRY_ERR_USAGE;
    if ((c->ch = ssh_open_exec(c, command, &r, err, errlen)) == NULL)
        return r;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        r = -errno;
        ssh_channel_drop(c, c->ch, 0);
        c->ch = NULL;
        return r;
    }
    (void)fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    /* Room for a few steps' output on the way to the pump: fewer
     * wake-ups of both threads per MiB. */
    for (int i = 0; i < 2; i++) {
        int sz = SSH_SOCKBUF;

        (void)setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        (void)setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    c->sp = sv[1];
    c->pump_err = 0;
    c->pump_msg[0] = '\0';
    c->exit_status = -1;
    atomic_store(&c->stop, 0);
    atomic_store(&c->leave, 0);
    if ((c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
        pthread_create(&c->thr, NULL, pump_main, c) != 0) {
        r = c->wake_fd < 0 ? -errno : FERRY_ERR_NOMEM;
        if (c->wake_fd >= 0)
            close(c->wake_fd);
        c->wake_fd = -1;
        close(sv[0]);
        close(sv[1]);
        c->sp = -1;
        ssh_channel_drop(c, c->ch, 0);
        c->ch = NULL;
        return r;
    }
    c->thr_running = 1;
    *fd = sv[0];
    return 0;
}

/* Ends the pump thread's poll at once. */
static void
ssh_pump_wake(struct ssh_conn *c)
{
    uint64_t one = 1;

    (void)!write(c->wake_fd, &one, sizeof(one));
}

void
ssh_pump_join(struct ssh_conn *c, int stop)
{
    if (!c->thr_running)
        return;
    if (stop) {
        atomic_store(&c->stop, 1);
        (void)shutdown(c->sp, SHUT_RDWR);
        ssh_pump_wake(c);
    }
    pthread_join(c->thr, NULL);
    c->thr_running = 0;
    close(c->sp);
    c->sp = -1;
    close(c->wake_fd);
    c->wake_fd = -1;
}

void
ssh_conn_pump_leave(struct ssh_conn *c)
{
    if (!c->thr_running)
        return;
    atomic_store(&c->leave, 1);
    ssh_pump_wake(c);
}

void
ssh_conn_pump_stop(struct ssh_conn *c)
{
    ssh_pump_join(c, 1);
    c->dirty = 1;
}

int
ssh_conn_pump_wait(struct ssh_conn *c, int *exit_status, char *err,
    size_t errlen)
{
    *exit_status = -1;
    if (!c->thr_running)
        return 0;
    ssh_pump_join(c, 0);
    *exit_status = c->exit_status;
    if (c->pump_err != 0)
        snprintf(err, errlen, "%s", c->pump_msg);
    return c->pump_err;
}

/* Reads the command's output to its end: stdout dropped, stderr copied to
 * ours. Returns 0 or a libssh2 error. */
static int
ssh_run_drain(struct ssh_conn *c, LIBSSH2_CHANNEL *ch)
{
    struct text_lines lines = { .emit = pump_err_line };
    char buf[4096];
    ssize_t n, e;
    int r;

    for (;;) {
        n = libssh2_channel_read(ch, buf, sizeof(buf));
        e = libssh2_channel_read_stderr(ch, buf, sizeof(buf));
        if (e > 0)
            text_lines_feed(&lines, buf, (size_t)e);
        if (n > 0 || e > 0) {
            c->deadline = ssh_now_ms() + SSH_RUN_STALL_MS;
            continue;
        }
        if (n < 0 && n != LIBSSH2_ERROR_EAGAIN)
            r = (int)n;
        else if (e < 0 && e != LIBSSH2_ERROR_EAGAIN)
            r = (int)e;
        else if (libssh2_channel_eof(ch) == 1)
            r = 0;
        else if (!ssh_again(c, LIBSSH2_ERROR_EAGAIN))
            r = LIBSSH2_ERROR_EAGAIN;
        else
            continue;
        text_lines_flush(&lines);
        return r;
    }
}

int
ssh_conn_run(struct ssh_conn *c, const char *command, const void *in,
    size_t inlen, int *exit_status, char *err, size_t errlen)
{
    LIBSSH2_CHANNEL *ch;
    const char *p = in;
    ssize_t n;
    int rc, r = 0;

    *exit_status = -1;
    if (c->thr_running)
        return FERRY_ERR_USAGE;
    if ((ch = ssh_open_exec(c, command, &r, err, errlen)) == NULL)
        return r;
    while (inlen > 0) {
        c->deadline = ssh_now_ms() + SSH_RUN_STALL_MS;
        do
            n = libssh2_channel_write(ch, p, inlen);
        while ((n == 0 || n == LIBSSH2_ERROR_EAGAIN) &&
            ssh_again(c, LIBSSH2_ERROR_EAGAIN));
        if (n <= 0) {
            r = ssh_channel_error(c, n == 0 ? LIBSSH2_ERROR_EAGAIN : (int)n,
                "upload failed", err, errlen);
            ssh_channel_drop(c, ch, 0);
            return r == FERRY_ERR_SSH ? FERRY_ERR_CLOSED : r;
        }
        p += n;
        inlen -= (size_t)n;
    }
    c->deadline = ssh_now_ms() + SSH_RUN_STALL_MS;
    do
        rc = libssh2_channel_send_eof(ch);
    while (ssh_again(c, rc));
    if (rc == 0)
        rc = ssh_run_drain(c, ch);
    if (rc == 0) {
        c->deadline = ssh_now_ms() + SSH_RUN_STALL_MS;
        do
            rc = libssh2_channel_close(ch);
        while (ssh_again(c, rc));
    }
    if (rc != 0) {
        r = ssh_channel_error(c, rc, "upload failed", err, errlen);
        ssh_channel_drop(c, ch, 0);
        return r == FERRY_ERR_SSH ? FERRY_ERR_CLOSED : r;
    }
    *exit_status = libssh2_channel_get_exit_status(ch);
    ssh_channel_drop(c, ch, 1);
    return 0;
}
