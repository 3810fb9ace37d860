#include "rendezvous.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"

#define RV_JOIN 'J'
#define RV_STOP 'T'
/* A connected peer says what it wants at once. */
#define RV_RECV_TIMEOUT_MS 2000

/* "\0ferry-<uid>-<transfer id in hex>": the abstract namespace needs no
 * directory and leaves nothing behind. */
static socklen_t
rv_addr(const uint8_t id[16], struct sockaddr_un *sa)
{
    int n, i;

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "ferry-%lu-",
        (unsigned long)geteuid());
    for (i = 0; i < 16; i++)
        n += snprintf(sa->sun_path + 1 + n, sizeof(sa->sun_path) - 1 -
            (size_t)n, "%02x", id[i]);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* 1 if the process at the other end of fd is this user. */
static int
rv_same_user(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);

    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
        cr.uid == geteuid();
}

static int
rv_wait(int fd, short events, int ms)
{
    struct pollfd p = { fd, events, 0 };
    int r;

    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

static void
rv_accept(uv_poll_t *h, int status, int events)
{
    struct rendezvous *rv = h->data;
    uint8_t buf[1 + RENDEZVOUS_MAX_BYTES];
    char ctl[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = { buf, sizeof(buf) };
    struct msghdr mh;
    struct cmsghdr *cm;
    int fd, fds[2] = { -1, -1 }, nfds = 0;
    ssize_t n;

    (void)events;
    if (status < 0)
        return;
    if ((fd = accept4(rv->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
        return;
    if (!rv_same_user(fd) || rv_wait(fd, POLLIN, RV_RECV_TIMEOUT_MS) != 0)
        goto drop;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof(ctl);
    if ((n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC)) < 1)
        goto drop;
    for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int), i;

            for (i = 0; i < k; i++) {
                int got;

                memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                if (nfds < 2)
                    fds[nfds++] = got;
                else
                    close(got);
            }
        }
    }
    if (buf[0] == RV_STOP && nfds == 0) {
        /* The socket stays open until this process is gone: the asker
         * waits for that. */
        log_debug("another attempt of this transfer takes over");
        rv->stop(rv->ctx);
        return;
    }
    if (buf[0] != RV_JOIN || nfds != 2 || (mh.msg_flags & MSG_TRUNC))
        goto drop;
    rv->adopt(rv->ctx, fds[0], fds[1], buf + 1, (size_t)n - 1, fd);
    return;
drop:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    close(fd);
}

/* Connects to the agent of transfer id; checks it is this user. */
static int
rv_connect(const uint8_t id[16], int *out)
{
    struct sockaddr_un sa;
    socklen_t len = rv_addr(id, &sa);
    int fd, r;

    *out = -1;
    if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, len) != 0) {
        r = -errno;
        close(fd);
        return r;
    }
    if (!rv_same_user(fd)) {
        close(fd);
        return -EPERM;
    }
    *out = fd;
    return 0;
}

static int
rv_send(int fd, char kind, const int *fds, int nfds, const void *bytes,
    size_t n)
{
    uint8_t buf[1 + RENDEZVOUS_MAX_BYTES];
    char ctl[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = { buf, 1 + n };
    struct msghdr mh;
    struct cmsghdr *cm;

    if (n > RENDEZVOUS_MAX_BYTES)
        return FERRY_ERR_TOO_LARGE;
    buf[0] = (uint8_t)kind;
    if (n > 0)
        memcpy(buf + 1, bytes, n);
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        memset(ctl, 0, sizeof(ctl));
        mh.msg_control = ctl;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
    }
    while (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/* Waits until the other end closes (the adopting agent let go, or the
 * agent asked to stop is gone). */
static void
rv_wait_closed(int fd, int ms)
{
    uint8_t b;

    for (;;) {
        if (ms >= 0 && rv_wait(fd, POLLIN, ms) != 0)
            return;
        if (recv(fd, &b, 1, 0) <= 0 && errno != EINTR)
            return;
    }
}

int
rendezvous_bind(struct rendezvous *rv, const uint8_t id[16])
{
    struct sockaddr_un sa;
    socklen_t len = rv_addr(id, &sa);
    uint64_t until = clock_ms() + RENDEZVOUS_TAKEOVER_MS;
    int fd, old, asked = 0, r;

    memset(rv, 0, sizeof(*rv));
    rv->fd = -1;
    if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
        SOCK_NONBLOCK, 0)) < 0)
        return -errno;
    while (bind(fd, (struct sockaddr *)&sa, len) != 0) {
        if (errno != EADDRINUSE || clock_ms() >= until) {
            r = errno == EADDRINUSE ? -EBUSY : -errno;
            close(fd);
            return r;
        }
        /* An agent of an earlier attempt of this very transfer. */
        if (!asked && rv_connect(id, &old) == 0) {
            asked = 1;
            if (rv_send(old, RV_STOP, NULL, 0, NULL, 0) == 0)
                rv_wait_closed(old, (int)(until - clock_ms()));
            close(old);
            continue;
        }
        usleep(50 * 1000);
    }
    if (listen(fd, 16) != 0) {
        r = -errno;
        close(fd);
        return r;
    }
    rv->fd = fd;
    return 0;
}

int
rendezvous_start(struct rendezvous *rv, uv_loop_t *loop,
    rendezvous_adopt_fn *adopt, rendezvous_stop_fn *stop, void *ctx)
{
    rv->adopt = adopt;
    rv->stop = stop;
    rv->ctx = ctx;
    if (uv_poll_init(loop, &rv->poll, rv->fd) != 0)
        return FERRY_ERR_NOMEM;
    rv->poll.data = rv;
    rv->polling = 1;
    uv_poll_start(&rv->poll, UV_READABLE, rv_accept);
    /* Listening alone does not keep the agent alive. */
    uv_unref((uv_handle_t *)&rv->poll);
    return 0;
}

static void
rv_closed(uv_handle_t *h)
{
    struct rendezvous *rv = h->data;

    if (rv->fd >= 0)
        close(rv->fd);
    rv->fd = -1;
}

void
rendezvous_close(struct rendezvous *rv)
{
    if (rv->polling) {
        rv->polling = 0;
        uv_poll_stop(&rv->poll);
        uv_close((uv_handle_t *)&rv->poll, rv_closed);
    } else if (rv->fd >= 0) {
        close(rv->fd);
        rv->fd = -1;
    }
}

void
rendezvous_release(int token)
{
    if (token >= 0)
        close(token);
}

int
rendezvous_handover(const uint8_t id[16], int rfd, int wfd,
    const void *bytes, size_t n)
{
    int fd, fds[2] = { rfd, wfd }, r;

    if ((r = rv_connect(id, &fd)) != 0)
        return r;
    if ((r = rv_send(fd, RV_JOIN, fds, 2, bytes, n)) != 0) {
        close(fd);
        return r;
    }
    rv_wait_closed(fd, -1);
    close(fd);
    return 0;
}
