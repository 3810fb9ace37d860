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
#include "../common/buf.h"
#include "../common/hash.h"
#include "../common/log.h"
#include "../common/sha256.h"

/* A connected peer says what it wants at once. */
#define RV_RECV_TIMEOUT_MS 2000
/* The listener's answer to a datagram it does not admit. */
#define RV_REFUSED 'R'

void
rendezvous_name(const struct rendezvous_ticket *t,
    char out[RENDEZVOUS_NAME_LEN + 1])
{
    static const char tag[] = "ferry rendezvous 3";
    uint8_t d[SHA256_LEN], uid[4];
    struct sha256 h;
    uint32_t u = (uint32_t)geteuid();
    size_t slen = strlen(t->scope);
    int i;

    uid[0] = (uint8_t)(u >> 24);
    uid[1] = (uint8_t)(u >> 16);
    uid[2] = (uint8_t)(u >> 8);
    uid[3] = (uint8_t)u;
    sha256_init(&h);
    sha256_update(&h, tag, sizeof(tag));
    sha256_update(&h, uid, sizeof(uid));
    sha256_update(&h, t->id, sizeof(t->id));
    sha256_update(&h, t->key, sizeof(t->key));
    sha256_update(&h, t->scope, slen + 1);
    sha256_final(&h, d);
    memcpy(out, "ferry-", 6);
    for (i = 0; i < 20; i++)
        snprintf(out + 6 + 2 * i, 3, "%02x", d[i]);
    explicit_bzero(&h, sizeof(h));
}

/* The abstract namespace needs no directory and leaves nothing behind;
 * the name is a hash of the ticket, so listing it reveals nothing. */
static socklen_t
rendezvous_addr(const struct rendezvous_ticket *t, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    rendezvous_name(t, sa->sun_path + 1);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
        RENDEZVOUS_NAME_LEN);
}

int
rendezvous_admit(const struct rendezvous_ticket *t, const struct rvmsg *m)
{
    size_t slen = strlen(t->scope);

    if (!hash_ct_equal(m->transfer_id, t->id, sizeof(t->id)) ||
        !hash_ct_equal(m->transfer_key, t->key, sizeof(t->key)) ||
        m->scope_len != slen || memcmp(m->scope, t->scope, slen) != 0)
        return FERRY_ERR_PROTOCOL;
    return 0;
}

/* 1 if the process at the other end of fd is this user. */
static int
rendezvous_same_user(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);

    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
        cr.uid == geteuid();
}

static int
rendezvous_wait(int fd, short events, int ms)
{
    struct pollfd p = { fd, events, 0 };
    int r;

    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

static void
rendezvous_refuse(int fd)
{
    uint8_t no = RV_REFUSED;

    (void)send(fd, &no, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void
rendezvous_accept(uv_poll_t *h, int status, int events)
{
    struct rendezvous *rv = h->data;
    uint8_t buf[RVMSG_MAX + 1];
    char ctl[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = { buf, sizeof(buf) };
    struct msghdr mh;
    struct cmsghdr *cm;
    struct rvmsg m;
    int fd, fds[2] = { -1, -1 }, nfds = 0;
    ssize_t n;

    (void)events;
    if (status < 0)
        return;
    if ((fd = accept4(rv->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
        return;
    if (!rendezvous_same_user(fd) || rendezvous_wait(fd, POLLIN,
        RV_RECV_TIMEOUT_MS) != 0)
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
    if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        rvmsg_decode(buf, (size_t)n, &m) != 0 ||
        rendezvous_admit(&rv->ticket, &m) != 0) {
        log_debug("rendezvous: a datagram not of this transfer refused");
        rendezvous_refuse(fd);
        goto drop;
    }
    if (m.kind == RVMSG_STOP && nfds == 0) {
        log_debug("another attempt of this transfer takes over");
        rv->stop(rv->ctx, fd);
        return;
    }
    if (m.kind != RVMSG_JOIN || nfds != 2)
        goto drop;
    /* The bytes go to the adopter; the rest of buf is not kept. */
    rv->adopt(rv->ctx, fds[0], fds[1], m.bytes, m.nbytes, fd);
    explicit_bzero(buf, sizeof(buf));
    return;
drop:
    explicit_bzero(buf, sizeof(buf));
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    close(fd);
}

/* Connects to the agent of ticket t; checks it is this user. */
static int
rendezvous_connect(const struct rendezvous_ticket *t, int *out)
{
    struct sockaddr_un sa;
    socklen_t len = rendezvous_addr(t, &sa);
    int fd, r;

    *out = -1;
    if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, len) != 0) {
        r = -errno;
        close(fd);
        return r;
    }
    if (!rendezvous_same_user(fd)) {
        close(fd);
        return -EPERM;
    }
    *out = fd;
    return 0;
}

static int
rendezvous_send(int fd, const struct rendezvous_ticket *t, uint8_t kind,
    const int *fds, int nfds, const void *bytes, size_t n)
{
    char ctl[CMSG_SPACE(2 * sizeof(int))];
    struct rvmsg m;
    struct iovec iov;
    struct msghdr mh;
    struct cmsghdr *cm;
    struct buf b;
    int r;

    memset(&m, 0, sizeof(m));
    m.kind = kind;
    memcpy(m.transfer_id, t->id, sizeof(t->id));
    memcpy(m.transfer_key, t->key, sizeof(t->key));
    m.scope = t->scope;
    m.scope_len = strlen(t->scope);
    m.bytes = bytes;
    m.nbytes = n;
    buf_init(&b, RVMSG_MAX);
    if ((r = rvmsg_encode(&b, &m)) != 0)
        goto out;
    iov.iov_base = (void *)buf_ptr(&b);
    iov.iov_len = buf_used(&b);
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
    while ((r = (int)sendmsg(fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    r = r < 0 ? -errno : 0;
out:
    explicit_bzero(&m, sizeof(m));
    if (buf_used(&b) > 0)
        explicit_bzero((void *)buf_ptr(&b), buf_used(&b));
    buf_cleanup(&b);
    return r;
}

/* Waits until the other end closes (the adopting agent let go, or the
 * agent asked to stop is gone). -EPERM if it refused what was sent. */
static int
rendezvous_wait_closed(int fd, int ms)
{
    uint8_t b;
    ssize_t n;

    for (;;) {
        if (ms >= 0 && rendezvous_wait(fd, POLLIN, ms) != 0)
            return 0;
        if ((n = recv(fd, &b, 1, 0)) == 1 && b == RV_REFUSED)
            return -EPERM;
        if (n <= 0 && errno != EINTR)
            return 0;
    }
}

int
rendezvous_bind(struct rendezvous *rv, const struct rendezvous_ticket *t)
{
    struct sockaddr_un sa;
    socklen_t len;
    uint64_t until = clock_ms() + RENDEZVOUS_TAKEOVER_MS;
    int fd, old, asked = 0, r;

    memset(rv, 0, sizeof(*rv));
    rv->fd = -1;
    rv->ticket = *t;
    len = rendezvous_addr(t, &sa);
    if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
        SOCK_NONBLOCK, 0)) < 0)
        return -errno;
    while (bind(fd, (struct sockaddr *)&sa, len) != 0) {
        if (errno != EADDRINUSE || clock_ms() >= until) {
            r = errno == EADDRINUSE ? -EBUSY : -errno;
            close(fd);
            return r;
        }
        /* An agent of an earlier attempt of this very transfer: the
         * name is the ticket's, key included. */
        if (!asked && rendezvous_connect(t, &old) == 0) {
            asked = 1;
            if (rendezvous_send(old, t, RVMSG_STOP, NULL, 0, NULL, 0) == 0 &&
                rendezvous_wait_closed(old, (int)(until - clock_ms())) != 0)
                log_debug("the agent holding this transfer refused to "
                    "stop");
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
    uv_poll_start(&rv->poll, UV_READABLE, rendezvous_accept);
    /* Listening alone does not keep the agent alive. */
    uv_unref((uv_handle_t *)&rv->poll);
    return 0;
}

static void
rendezvous_closed(uv_handle_t *h)
{
    struct rendezvous *rv = h->data;

    if (rv->fd >= 0)
        close(rv->fd);
    rv->fd = -1;
}

void
rendezvous_close(struct rendezvous *rv)
{
    explicit_bzero(rv->ticket.key, sizeof(rv->ticket.key));
    if (rv->polling) {
        rv->polling = 0;
        uv_poll_stop(&rv->poll);
        uv_close((uv_handle_t *)&rv->poll, rendezvous_closed);
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
rendezvous_handover(const struct rendezvous_ticket *t, int rfd, int wfd,
    const void *bytes, size_t n)
{
    int fd, fds[2] = { rfd, wfd }, r;

    if (n == 0)
        return FERRY_ERR_USAGE;
    if (n > RVMSG_MAX_BYTES)
        return FERRY_ERR_TOO_LARGE;
    if ((r = rendezvous_connect(t, &fd)) != 0)
        return r;
    if ((r = rendezvous_send(fd, t, RVMSG_JOIN, fds, 2, bytes, n)) == 0)
        r = rendezvous_wait_closed(fd, -1);
    close(fd);
    return r;
}
