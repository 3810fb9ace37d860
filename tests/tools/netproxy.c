/*
 * netproxy.c: a userspace TCP proxy that emulates a WAN link and injects
 * faults, for tests and benchmarks on machines without netem.
 *
 * It listens on 127.0.0.1 and, for each accepted connection, connects to a
 * target and relays both directions. See tests/tools/README.md for usage.
 *
 * Design. One thread runs an edge-triggered epoll loop. Events only record
 * readiness in flags (struct side); all work happens in one "pump" pass over
 * every connection per loop turn, which also computes the next deadline
 * (a delayed segment due, tokens refilled, a cut to finish). With at most a
 * few dozen connections a full pass is cheap, and keeping every state change
 * in one place means nothing is freed while events still point at it.
 *
 * Each direction of a connection owns a queue: a chain of 64 KiB blocks
 * filled contiguously, plus a ring of marks (stream offset, release time).
 * Bytes read at time t get release time ceil_ms(t) + delay; reads in the same
 * millisecond share one mark, so the delay is exact to within 1 ms and the
 * bookkeeping is one mark per millisecond at most. A writer may send up to
 * the last released mark, then token buckets (global per direction, and per
 * connection) and the cut threshold trim that. When a queue holds
 * --max-inflight bytes we simply stop reading that socket: its kernel buffer
 * fills and TCP flow control pushes back on the sender.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/err.h"

#define NETPROXY_BLOCK (64u * 1024)
/* Blocks kept for reuse instead of freed: 4 MiB. */
#define NETPROXY_FREE_BLOCKS 64
#define NETPROXY_IOV 64
/* Per writev; bigger gains nothing on loopback and hurts fairness. */
#define NETPROXY_WRITE_MAX (2u * 1024 * 1024)
/* Bytes read per direction per pass before giving other sockets a turn. */
#define NETPROXY_READ_BUDGET (1024u * 1024)
#define NETPROXY_MIN_INFLIGHT (4u * 1024 * 1024)
#define NETPROXY_MAX_INFLIGHT (1024ull * 1024 * 1024)
#define NETPROXY_MAX_DELAY_MS 60000u
/* How long a cut waits for already written bytes to be acknowledged. */
#define NETPROXY_CUT_DRAIN_NS (500 * NS_PER_MS)
#define NETPROXY_ACCEPT_RETRY_NS (100 * NS_PER_MS)
#define NETPROXY_TRACE_MS 50

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define NO_DEADLINE UINT64_MAX

/* Exit statuses. */
#define NETPROXY_EXIT_OK 0
#define NETPROXY_EXIT_ERROR 1
#define NETPROXY_EXIT_USAGE 2
#define NETPROXY_EXIT_LIFETIME 3

/*
 * Sides and directions are numbered so that direction d reads from side d
 * and writes to side 1 - d.
 */
enum { SIDE_CLIENT = 0, SIDE_SERVER = 1 };
enum { DIR_UP = 0, DIR_DOWN = 1 };     /* client to server, and back */

#define CUT_UP 1
#define CUT_DOWN 2

struct opts {
    unsigned port;
    const char *target;
    unsigned delay_ms;
    unsigned start_delay_ms;    /* the server's first bytes held longer */
    double rate;                /* bytes/s per direction, shared; 0: none */
    double conn_rate;           /* bytes/s per direction per conn; 0: none */
    uint64_t max_inflight;      /* 0: derive from rate and delay */
    int cut;                    /* --cut-after or --cut-random given */
    uint64_t cut_min;
    uint64_t cut_max;
    int cut_dir;                /* CUT_UP | CUT_DOWN */
    uint64_t cut_rounds;        /* 0: every connection */
    uint64_t fault_conn;        /* 0: any connection; else only this one */
    int stall;                  /* freeze at K instead of resetting */
    int seed_set;
    uint64_t seed;
    const char *port_file;
    const char *pid_file;
    unsigned max_conns;
    unsigned idle_exit_s;
    unsigned lifetime_s;
    int verbosity;              /* 0 errors, 1 also cuts, 2 per connection */
    const char *trace;          /* bytes relayed so far, every tick */
};

struct block {
    struct block *next;
    size_t head;                /* first byte not yet written */
    size_t tail;                /* end of the bytes read so far */
    unsigned char data[NETPROXY_BLOCK];
};

/* The bytes before stream offset end may leave at release_ms. */
struct mark {
    uint64_t end;
    uint64_t release_ms;
};

struct queue {
    struct block *first;
    struct block *last;
    uint64_t sent;              /* stream offset of the first queued byte */
    uint64_t read;              /* stream offset past the last queued byte */
    struct mark *marks;         /* ring of mcap entries */
    size_t mhead;
    size_t mcount;
    size_t mcap;
};

struct bucket {
    double rate;                /* bytes per second; 0 means unlimited */
    double burst;
    double quantum;
    double tokens;
    uint64_t last_ns;
};

struct conn;

/*
 * One socket. The flags are edge-triggered readiness not yet used up: set
 * by an event, cleared when a call returns EAGAIN.
 */
struct side {
    int fd;
    int readable;
    int writable;
    struct conn *conn;          /* NULL for the listener and signalfd */
};

struct dir {
    struct queue q;
    struct bucket limit;        /* --conn-rate */
    int eof;                    /* the source sent FIN */
    uint64_t eof_release_ms;    /* the FIN is delayed like data */
    int shut;                   /* FIN passed on: direction finished */
    int started;                /* something was read */
    uint64_t relayed;
};

struct conn {
    uint64_t id;
    size_t slot;
    int connecting;
    struct side side[2];
    struct dir dir[2];
    int cut_armed;
    uint64_t cut_at;
    uint64_t cut_count;
    int cutting;
    int stalled;                /* relays nothing more, closes nothing */
    uint64_t cut_deadline_ns;
};

struct proxy {
    struct opts o;
    int ep;
    struct side listen;
    struct side sig;
    uint64_t accept_retry_ns;
    struct sockaddr_storage taddr;
    socklen_t taddr_len;
    struct conn **conns;        /* max_conns slots */
    unsigned nconns;
    size_t rr;                  /* slot the next pass starts at */
    uint64_t next_id;
    struct bucket rate[2];
    size_t max_inflight;
    size_t max_marks;
    struct block *free_blocks;
    unsigned nfree;
    uint64_t rng;
    uint64_t start_ns;
    uint64_t idle_since_ns;
    uint64_t cuts;
    uint64_t bytes[2];
    FILE *trace;
    uint64_t trace_next_ns;
    int wrote_port_file;
    int wrote_pid_file;
};

static int netproxy_verbosity = 1;

static void say(int level, const char *fmt, ...) FERRY_PRINTF(2, 3);

/*
 * Writes one "netproxy: ..." line to stderr with a single write(2), so lines
 * from several processes sharing a log file never interleave.
 */
static void
say(int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int k;
    size_t n;

    if (level > netproxy_verbosity)
        return;
    k = snprintf(line, sizeof(line), "netproxy: ");
    n = k > 0 ? (size_t)k : 0;
    va_start(ap, fmt);
    k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    n += k > 0 ? (size_t)k : 0;
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
        /* Nowhere left to report it. */
    }
}

static uint64_t
clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void
deadline_min(uint64_t *deadline, uint64_t t)
{
    if (t < *deadline)
        *deadline = t;
}

static size_t
min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ------------------------------------------------------------------ */
/* Random numbers for --cut-random: splitmix64, reproducible by --seed. */

static uint64_t
rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]; rejection sampling avoids modulo bias. */
static uint64_t
rng_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo, lim, r;

    if (span == UINT64_MAX)
        return rng_next(s);
    span++;
    lim = UINT64_MAX - UINT64_MAX % span;
    do {
        r = rng_next(s);
    } while (r >= lim);
    return lo + r % span;
}

/* ------------------------------------------------------------------ */
/* Token buckets. */

static void
bucket_init(struct bucket *b, double rate, uint64_t now)
{
    memset(b, 0, sizeof(*b));
    b->rate = rate;
    if (rate <= 0)
        return;
    /*
     * 5 ms of traffic (at least 64 KiB) absorbs timer slack so a late wakeup
     * does not lose throughput, yet is far too short to skew a measurement.
     */
    b->burst = rate * 0.005;
    if (b->burst < 65536)
        b->burst = 65536;
    /*
     * Wait for 1 ms worth of tokens (at least one segment) before writing,
     * rather than trickling out a few bytes on every wakeup.
     */
    b->quantum = rate * 0.001;
    if (b->quantum < 1448)
        b->quantum = 1448;
    if (b->quantum > b->burst)
        b->quantum = b->burst;
    b->tokens = b->burst;
    b->last_ns = now;
}

/*
 * Trims *allow to the tokens available for a write of ready bytes. When the
 * bucket is too low, sets *allow to 0 and raises *wake to when it will have
 * enough.
 */
static void
bucket_limit(struct bucket *b, uint64_t now, size_t ready, size_t *allow,
    uint64_t *wake)
{
    double need, t;

    if (b->rate <= 0)
        return;
    if (now > b->last_ns) {
        b->tokens += (double)(now - b->last_ns) * b->rate / 1e9;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last_ns = now;
    }
    need = (double)ready < b->quantum ? (double)ready : b->quantum;
    if (b->tokens < need) {
        *allow = 0;
        t = (double)now + (need - b->tokens) / b->rate * 1e9 + 1;
        if ((uint64_t)t > *wake)
            *wake = (uint64_t)t;
        return;
    }
    if ((double)*allow > b->tokens)
        *allow = (size_t)b->tokens;
}

static void
bucket_take(struct bucket *b, size_t n)
{
    if (b->rate > 0)
        b->tokens -= (double)n;
}

/* ------------------------------------------------------------------ */
/* Queues: data blocks plus release marks. */

static struct block *
block_get(struct proxy *px)
{
    struct block *b = px->free_blocks;

    if (b != NULL) {
        px->free_blocks = b->next;
        px->nfree--;
    } else if ((b = xmalloc(sizeof(*b))) == NULL) {
        return NULL;
    }
    b->next = NULL;
    b->head = 0;
    b->tail = 0;
    return b;
}

static void
block_put(struct proxy *px, struct block *b)
{
    if (px->nfree >= NETPROXY_FREE_BLOCKS) {
        xfree(b);
        return;
    }
    b->next = px->free_blocks;
    px->free_blocks = b;
    px->nfree++;
}

static size_t
queue_bytes(const struct queue *q)
{
    return (size_t)(q->read - q->sent);
}

static void
queue_cleanup(struct proxy *px, struct queue *q)
{
    struct block *b, *next;

    for (b = q->first; b != NULL; b = next) {
        next = b->next;
        block_put(px, b);
    }
    xfree(q->marks);
    memset(q, 0, sizeof(*q));
}

static struct mark *
queue_mark(const struct queue *q, size_t i)
{
    return &q->marks[(q->mhead + i) % q->mcap];
}

/*
 * Makes sure bytes released at rel can be recorded: either the newest mark
 * has the same release time, or there is a free slot (the ring grows up to
 * max_marks). Returns 0, FERRY_ERR_TOO_LARGE when the ring is full (the
 * caller stops reading), or FERRY_ERR_NOMEM.
 */
static int
queue_reserve_mark(struct queue *q, uint64_t rel, size_t max_marks)
{
    struct mark *m;
    size_t cap, i;

    if (q->mcount > 0 && queue_mark(q, q->mcount - 1)->release_ms == rel)
        return 0;
    if (q->mcount < q->mcap)
        return 0;
    if (q->mcap >= max_marks)
        return FERRY_ERR_TOO_LARGE;
    cap = q->mcap == 0 ? 16 : q->mcap * 2;
    if (cap > max_marks)
        cap = max_marks;
    if ((m = xmalloc(cap * sizeof(*m))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < q->mcount; i++)
        m[i] = *queue_mark(q, i);
    xfree(q->marks);
    q->marks = m;
    q->mcap = cap;
    q->mhead = 0;
    return 0;
}

/*
 * Returns where the next read may store bytes: the free end of the last
 * block, or a fresh block. An empty fresh block may stay linked if the read
 * finds nothing; the next read uses it.
 */
static int
queue_tail(struct proxy *px, struct queue *q, unsigned char **p, size_t *len)
{
    struct block *b = q->last;

    if (b == NULL || b->tail == NETPROXY_BLOCK) {
        if ((b = block_get(px)) == NULL)
            return FERRY_ERR_NOMEM;
        if (q->last != NULL)
            q->last->next = b;
        else
            q->first = b;
        q->last = b;
    }
    *p = b->data + b->tail;
    *len = NETPROXY_BLOCK - b->tail;
    return 0;
}

/* Records n bytes just read into queue_tail's space, due at rel. */
static void
queue_commit(struct queue *q, size_t n, uint64_t rel)
{
    struct mark *m;

    q->last->tail += n;
    q->read += n;
    if (q->mcount > 0) {
        m = queue_mark(q, q->mcount - 1);
        if (m->release_ms == rel) {
            m->end = q->read;
            return;
        }
    }
    /* queue_reserve_mark made room. */
    m = &q->marks[(q->mhead + q->mcount) % q->mcap];
    m->end = q->read;
    m->release_ms = rel;
    q->mcount++;
}

/*
 * Returns how many bytes may leave at now_ms (at most max). When none may,
 * sets *next_ms to when the oldest queued bytes are due (0 if none queued).
 */
static size_t
queue_released(struct queue *q, uint64_t now_ms, size_t max,
    uint64_t *next_ms)
{
    struct mark *m;
    uint64_t end = q->sent;
    size_t i;

    *next_ms = 0;
    while (q->mcount > 0 && q->marks[q->mhead].end <= q->sent) {
        q->mhead = (q->mhead + 1) % q->mcap;
        q->mcount--;
    }
    for (i = 0; i < q->mcount && end - q->sent < max; i++) {
        m = queue_mark(q, i);
        if (m->release_ms > now_ms) {
            if (i == 0)
                *next_ms = m->release_ms;
            break;
        }
        end = m->end;
    }
    return min_size((size_t)(end - q->sent), max);
}

/* Fills iov with the first n queued bytes; returns the entry count. */
static int
queue_iov(const struct queue *q, size_t n, struct iovec *iov, int max)
{
    const struct block *b;
    size_t take;
    int cnt = 0;

    for (b = q->first; b != NULL && n > 0 && cnt < max; b = b->next) {
        take = min_size(b->tail - b->head, n);
        if (take == 0)
            continue;
        iov[cnt].iov_base = (void *)(b->data + b->head);
        iov[cnt].iov_len = take;
        cnt++;
        n -= take;
    }
    return cnt;
}

static void
queue_consume(struct proxy *px, struct queue *q, size_t n)
{
    struct block *b;
    size_t take;

    q->sent += n;
    while (n > 0 && (b = q->first) != NULL) {
        take = min_size(b->tail - b->head, n);
        b->head += take;
        n -= take;
        if (b->head < b->tail)
            break;
        if (b == q->last && b->tail < NETPROXY_BLOCK) {
            /* Empty but still being filled: rewind it for reuse. */
            b->head = 0;
            b->tail = 0;
            break;
        }
        q->first = b->next;
        if (q->first == NULL)
            q->last = NULL;
        block_put(px, b);
    }
}

/* ------------------------------------------------------------------ */
/* Sockets. */

/* Closes fd so that the peer gets a RST, not a FIN. */
static void
fd_abort(int fd)
{
    struct linger lg = { .l_onoff = 1, .l_linger = 0 };

    if (fd < 0)
        return;
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/*
 * Small writes must not wait for Nagle: a delayed request/response would
 * otherwise pick up an extra stall on top of the emulated delay.
 */
static void
fd_nodelay(int fd)
{
    int one = 1;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int
ep_add(struct proxy *px, struct side *s, uint32_t events)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.ptr = s;
    if (epoll_ctl(px->ep, EPOLL_CTL_ADD, s->fd, &ev) != 0)
        return -errno;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Connections. */

static int
cut_counts(const struct proxy *px, int d)
{
    return (px->o.cut_dir & (d == DIR_UP ? CUT_UP : CUT_DOWN)) != 0;
}

/*
 * Closes both sockets, with a RST when abort is set (a cut, an error, or
 * exit with data still queued), and frees the connection.
 */
static void
conn_close(struct proxy *px, struct conn *c, int abort, uint64_t now)
{
    int i;

    say(2, "conn %llu closed%s: %llu bytes up, %llu down",
        (unsigned long long)c->id, abort ? " (reset)" : "",
        (unsigned long long)c->dir[DIR_UP].relayed,
        (unsigned long long)c->dir[DIR_DOWN].relayed);
    for (i = 0; i < 2; i++) {
        if (abort)
            fd_abort(c->side[i].fd);
        else if (c->side[i].fd >= 0)
            close(c->side[i].fd);
        queue_cleanup(px, &c->dir[i].q);
    }
    px->conns[c->slot] = NULL;
    if (--px->nconns == 0)
        px->idle_since_ns = now;
    xfree(c);
}

/* Takes ownership of the accepted socket cfd. */
static int
conn_new(struct proxy *px, int cfd, uint64_t now)
{
    struct conn *c;
    size_t slot;
    int sfd, r, d;
    const uint32_t evs = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;

    for (slot = 0; px->conns[slot] != NULL; slot++)
        ;
    if ((c = xcalloc(1, sizeof(*c))) == NULL) {
        fd_abort(cfd);
        return FERRY_ERR_NOMEM;
    }
    c->id = ++px->next_id;
    c->slot = slot;
    c->side[SIDE_CLIENT].fd = cfd;
    c->side[SIDE_SERVER].fd = -1;
    for (d = 0; d < 2; d++) {
        c->side[d].conn = c;
        bucket_init(&c->dir[d].limit, px->o.conn_rate, now);
    }
    /* Optimistic: a spurious attempt only costs one EAGAIN. */
    c->side[SIDE_CLIENT].readable = 1;
    c->side[SIDE_CLIENT].writable = 1;
    px->conns[slot] = c;
    px->nconns++;
    fd_nodelay(cfd);

    if (px->o.cut && (px->o.cut_rounds == 0 || c->id <= px->o.cut_rounds) &&
        (px->o.fault_conn == 0 || c->id == px->o.fault_conn)) {
        c->cut_armed = 1;
        c->cut_at = rng_range(&px->rng, px->o.cut_min, px->o.cut_max);
    }
    sfd = socket(px->taddr.ss_family,
        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sfd < 0) {
        r = -errno;
        goto fail;
    }
    c->side[SIDE_SERVER].fd = sfd;
    fd_nodelay(sfd);
    if (connect(sfd, (struct sockaddr *)&px->taddr, px->taddr_len) == 0) {
        c->side[SIDE_SERVER].readable = 1;
        c->side[SIDE_SERVER].writable = 1;
    } else if (errno == EINPROGRESS) {
        c->connecting = 1;
    } else {
        r = -errno;
        goto fail;
    }
    if ((r = ep_add(px, &c->side[SIDE_CLIENT], evs)) != 0 ||
        (r = ep_add(px, &c->side[SIDE_SERVER], evs)) != 0)
        goto fail;
    if (c->cut_armed)
        say(2, "conn %llu open, cut after %llu bytes",
            (unsigned long long)c->id, (unsigned long long)c->cut_at);
    else
        say(2, "conn %llu open", (unsigned long long)c->id);
    return 0;

fail:
    say(1, "conn %llu: connect to %s: %s", (unsigned long long)c->id,
        px->o.target, ferry_strerror(r));
    conn_close(px, c, 1, now);
    return r;
}

/* Finishes a nonblocking connect once the socket reports writable. */
static int
conn_check_connect(struct conn *c)
{
    struct side *s = &c->side[SIDE_SERVER];
    socklen_t len = sizeof(int);
    int err = 0;

    if (!s->writable)
        return 0;
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return -errno;
    if (err == EINPROGRESS || err == EALREADY) {
        s->writable = 0;
        return 0;
    }
    if (err != 0)
        return -err;
    c->connecting = 0;
    s->readable = 1;
    return 0;
}

/* When bytes read at t may leave: the delay, and extra_ms more (0: at
 * once). */
static uint64_t
release_ms(const struct proxy *px, uint64_t t, unsigned extra_ms)
{
    if (px->o.delay_ms == 0 && extra_ms == 0)
        return 0;
    return (t + NS_PER_MS - 1) / NS_PER_MS + px->o.delay_ms + extra_ms;
}

/*
 * Sends what the delay, the rate limits and the cut threshold allow for
 * direction d, until the socket is full. Returns 0 or -errno.
 */
static int
dir_write(struct proxy *px, struct conn *c, int d, uint64_t now,
    uint64_t *deadline)
{
    struct dir *dr = &c->dir[d];
    struct side *dst = &c->side[1 - d];
    struct iovec iov[NETPROXY_IOV];
    struct msghdr mh;
    uint64_t next_ms, wake;
    size_t ready, allow, n;
    ssize_t w;

    if (dr->shut || (d == DIR_UP && c->connecting))
        return 0;
    for (;;) {
        ready = queue_released(&dr->q, now / NS_PER_MS, NETPROXY_WRITE_MAX,
            &next_ms);
        if (ready == 0) {
            if (next_ms != 0)
                deadline_min(deadline, next_ms * NS_PER_MS);
            return 0;
        }
        if (!dst->writable)
            return 0;
        allow = ready;
        wake = 0;
        bucket_limit(&px->rate[d], now, ready, &allow, &wake);
        bucket_limit(&dr->limit, now, ready, &allow, &wake);
        if (c->cut_armed && cut_counts(px, d) &&
            (uint64_t)allow > c->cut_at - c->cut_count)
            allow = (size_t)(c->cut_at - c->cut_count);
        if (allow == 0) {
            if (wake != 0)
                deadline_min(deadline, wake);
            return 0;
        }
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)queue_iov(&dr->q, allow, iov, NETPROXY_IOV);
        w = sendmsg(dst->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                dst->writable = 0;
                return 0;
            }
            return -errno;
        }
        if (w == 0) {
            dst->writable = 0;
            return 0;
        }
        n = (size_t)w;
        queue_consume(px, &dr->q, n);
        bucket_take(&px->rate[d], n);
        bucket_take(&dr->limit, n);
        dr->relayed += n;
        px->bytes[d] += n;
        if (c->cut_armed && cut_counts(px, d))
            c->cut_count += n;
    }
}

/*
 * Reads from the source of direction d into its queue until the socket is
 * drained, the queue is full (back-pressure), or the per-pass budget is
 * spent. Returns 0 or a negative error.
 */
static int
dir_read(struct proxy *px, struct conn *c, int d, uint64_t *deadline)
{
    struct dir *dr = &c->dir[d];
    struct side *src = &c->side[d];
    size_t budget = NETPROXY_READ_BUDGET, space, len;
    unsigned char *p;
    uint64_t rel;
    ssize_t n;
    int r;

    if (d == DIR_DOWN && c->connecting)
        return 0;
    while (src->readable && !dr->eof) {
        if (budget == 0) {
            /* More is waiting: come straight back after a full pass. */
            deadline_min(deadline, 0);
            return 0;
        }
        if (queue_bytes(&dr->q) >= px->max_inflight)
            return 0;
        space = px->max_inflight - queue_bytes(&dr->q);
        /* The clock is read per call so a slow pass never shortens delay.
         * A server slow to start (--start-delay-ms): its first bytes, and
         * so all after them, leave that much later; later reads keep the
         * plain delay, so the round trips after the start are as short as
         * the link. */
        rel = release_ms(px, clock_ns(), d == DIR_DOWN && !dr->started ?
            px->o.start_delay_ms : 0);
        r = queue_reserve_mark(&dr->q, rel, px->max_marks);
        if (r == FERRY_ERR_TOO_LARGE)
            return 0;
        if (r != 0 || (r = queue_tail(px, &dr->q, &p, &len)) != 0)
            return r;
        len = min_size(min_size(len, space), budget);
        n = read(src->fd, p, len);
        if (n > 0) {
            dr->started = 1;
            queue_commit(&dr->q, (size_t)n, rel);
            budget -= (size_t)n;
            continue;
        }
        if (n == 0) {
            dr->eof = 1;
            dr->eof_release_ms = rel;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            src->readable = 0;
            break;
        }
        return -errno;
    }
    return 0;
}

/* Passes the FIN on once everything before it has been delivered. */
static void
dir_finish(struct conn *c, int d, uint64_t now, uint64_t *deadline)
{
    struct dir *dr = &c->dir[d];

    if (!dr->eof || dr->shut || queue_bytes(&dr->q) > 0 ||
        (d == DIR_UP && c->connecting))
        return;
    if (now < dr->eof_release_ms * NS_PER_MS) {
        deadline_min(deadline, dr->eof_release_ms * NS_PER_MS);
        return;
    }
    /* ENOTCONN after a peer reset is harmless: the next read reports it. */
    (void)shutdown(c->side[1 - d].fd, SHUT_WR);
    dr->shut = 1;
}

/*
 * A cut waits (briefly) until the bytes already written have been
 * acknowledged, so the receiver really gets the first K bytes before the
 * RST, whose arrival would otherwise let its kernel discard them.
 */
static int
conn_pump_cut(struct proxy *px, struct conn *c, uint64_t now,
    uint64_t *deadline)
{
    int i, v, pending = 0;

    for (i = 0; i < 2; i++) {
        if (c->side[i].fd >= 0 &&
            ioctl(c->side[i].fd, SIOCOUTQ, &v) == 0 && v > 0)
            pending = 1;
    }
    if (pending && now < c->cut_deadline_ns) {
        deadline_min(deadline, now + NS_PER_MS);
        return 0;
    }
    say(1, "conn %llu cut after %llu bytes", (unsigned long long)c->id,
        (unsigned long long)c->cut_count);
    px->cuts++;
    conn_close(px, c, 1, now);
    return 1;
}

static const char *const side_name[2] = { "client", "server" };

/*
 * Moves whatever can move on one connection and lowers *deadline to when
 * it next needs attention. Returns 1 if the connection was closed.
 */
static int
conn_pump(struct proxy *px, struct conn *c, uint64_t now, uint64_t *deadline)
{
    int d, r;

    if (c->connecting && (r = conn_check_connect(c)) != 0) {
        say(1, "conn %llu: connect to %s: %s", (unsigned long long)c->id,
            px->o.target, ferry_strerror(r));
        conn_close(px, c, 1, now);
        return 1;
    }
    if (c->cutting)
        return conn_pump_cut(px, c, now, deadline);
    /* A link that hangs without closing: both sockets stay open, and
     * nothing is read or written again (the proxy's exit resets them). */
    if (c->stalled)
        return 0;
    for (d = 0; d < 2; d++) {
        if ((r = dir_write(px, c, d, now, deadline)) != 0) {
            say(2, "conn %llu: write to %s: %s", (unsigned long long)c->id,
                side_name[1 - d], ferry_strerror(r));
            conn_close(px, c, 1, now);
            return 1;
        }
        if ((r = dir_read(px, c, d, deadline)) != 0) {
            say(2, "conn %llu: read from %s: %s", (unsigned long long)c->id,
                side_name[d], ferry_strerror(r));
            conn_close(px, c, 1, now);
            return 1;
        }
        /* With no delay, what was just read can leave at once. */
        if ((r = dir_write(px, c, d, now, deadline)) != 0) {
            say(2, "conn %llu: write to %s: %s", (unsigned long long)c->id,
                side_name[1 - d], ferry_strerror(r));
            conn_close(px, c, 1, now);
            return 1;
        }
        dir_finish(c, d, now, deadline);
    }
    if (c->cut_armed && c->cut_count >= c->cut_at && px->o.stall) {
        say(1, "conn %llu stalled after %llu bytes",
            (unsigned long long)c->id, (unsigned long long)c->cut_count);
        c->stalled = 1;
        return 0;
    }
    if (c->cut_armed && c->cut_count >= c->cut_at) {
        c->cutting = 1;
        c->cut_deadline_ns = now + NETPROXY_CUT_DRAIN_NS;
        return conn_pump_cut(px, c, now, deadline);
    }
    if (c->dir[DIR_UP].shut && c->dir[DIR_DOWN].shut) {
        conn_close(px, c, 0, now);
        return 1;
    }
    return 0;
}

static void
accept_pending(struct proxy *px, uint64_t now, uint64_t *deadline)
{
    int fd;

    if (!px->listen.readable)
        return;
    if (now < px->accept_retry_ns) {
        deadline_min(deadline, px->accept_retry_ns);
        return;
    }
    for (;;) {
        fd = accept4(px->listen.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                px->listen.readable = 0;
                return;
            }
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            /*
             * EMFILE and friends leave the connection in the backlog:
             * retry later instead of spinning on it.
             */
            say(0, "accept: %s", strerror(errno));
            px->accept_retry_ns = now + NETPROXY_ACCEPT_RETRY_NS;
            deadline_min(deadline, px->accept_retry_ns);
            return;
        }
        if (px->nconns >= px->o.max_conns) {
            /* A reset says "too many" at once; a backlog would hang. */
            say(1, "refused a connection: %u already open (--max-conns)",
                px->nconns);
            fd_abort(fd);
            continue;
        }
        (void)conn_new(px, fd, now);
    }
}

/* ------------------------------------------------------------------ */
/* Setup and main loop. */

/* Writes text to path through a temp file, so readers never see half. */
static int
write_file_atomic(const char *path, const char *text)
{
    char tmp[PATH_MAX];
    size_t len = strlen(text);
    int fd, k, r = 0;

    k = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (k < 0 || (size_t)k >= sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (write(fd, text, len) != (ssize_t)len)
        r = errno != 0 ? -errno : -EIO;
    if (close(fd) != 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) != 0)
        r = -errno;
    if (r != 0)
        unlink(tmp);
    return r;
}

static int
resolve_target(struct proxy *px)
{
    char host[256];
    const char *colon = strrchr(px->o.target, ':');
    const char *h = px->o.target;
    size_t hlen;
    struct addrinfo hints, *res = NULL;
    int g;

    if (colon == NULL || colon[1] == '\0' || colon == h) {
        say(0, "target must be HOST:PORT, not '%s'", px->o.target);
        return FERRY_ERR_USAGE;
    }
    hlen = (size_t)(colon - h);
    if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= sizeof(host)) {
        say(0, "target host too long");
        return FERRY_ERR_USAGE;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    g = getaddrinfo(host, colon + 1, &hints, &res);
    if (g != 0) {
        say(0, "cannot resolve %s: %s", px->o.target, gai_strerror(g));
        return FERRY_ERR_CONNECT;
    }
    memcpy(&px->taddr, res->ai_addr, res->ai_addrlen);
    px->taddr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int
setup(struct proxy *px)
{
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    sigset_t mask;
    char text[32];
    int one = 1, r, fd;

    if ((px->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        goto fail_errno;
    /* Signals arrive as readable data, so they are never lost mid-pass. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
        goto fail_errno;
    signal(SIGPIPE, SIG_IGN);
    if ((px->sig.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
        goto fail_errno;
    if ((r = ep_add(px, &px->sig, EPOLLIN)) != 0)
        goto fail;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if ((px->listen.fd = fd) < 0)
        goto fail_errno;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)px->o.port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &slen) != 0) {
        r = -errno;
        say(0, "listen on 127.0.0.1:%u: %s", px->o.port, strerror(-r));
        return r;
    }
    px->listen.readable = 1;
    if ((r = ep_add(px, &px->listen, EPOLLIN | EPOLLET)) != 0)
        goto fail;

    if (px->o.pid_file != NULL) {
        snprintf(text, sizeof(text), "%ld\n", (long)getpid());
        if ((r = write_file_atomic(px->o.pid_file, text)) != 0) {
            say(0, "%s: %s", px->o.pid_file, ferry_strerror(r));
            return r;
        }
        px->wrote_pid_file = 1;
    }
    if (px->o.trace != NULL && (px->trace = fopen(px->o.trace, "w")) ==
        NULL) {
        r = -errno;
        say(0, "%s: %s", px->o.trace, ferry_strerror(r));
        return r;
    }
    /* The port is announced last: once it is visible, we are serving. */
    snprintf(text, sizeof(text), "%u\n", (unsigned)ntohs(sin.sin_port));
    if (px->o.port_file != NULL) {
        if ((r = write_file_atomic(px->o.port_file, text)) != 0) {
            say(0, "%s: %s", px->o.port_file, ferry_strerror(r));
            return r;
        }
        px->wrote_port_file = 1;
    } else if (px->o.port == 0) {
        fputs(text, stdout);
        fflush(stdout);
    }
    say(2, "listening on 127.0.0.1:%u, relaying to %s",
        (unsigned)ntohs(sin.sin_port), px->o.target);
    return 0;

fail_errno:
    r = -errno;
fail:
    say(0, "setup: %s", ferry_strerror(r));
    return r;
}

static void
teardown(struct proxy *px, uint64_t now)
{
    struct block *b;
    size_t i;

    /* Queued data is lost: a RST says so, where a FIN would hide it. */
    for (i = 0; i < px->o.max_conns; i++) {
        if (px->conns[i] != NULL)
            conn_close(px, px->conns[i], 1, now);
    }
    xfree(px->conns);
    px->conns = NULL;
    while ((b = px->free_blocks) != NULL) {
        px->free_blocks = b->next;
        xfree(b);
    }
    if (px->listen.fd >= 0)
        close(px->listen.fd);
    if (px->sig.fd >= 0)
        close(px->sig.fd);
    if (px->ep >= 0)
        close(px->ep);
    if (px->wrote_port_file)
        unlink(px->o.port_file);
    if (px->wrote_pid_file)
        unlink(px->o.pid_file);
    if (px->trace != NULL)
        (void)fclose(px->trace);
    say(2, "exiting: %llu connections, %llu cut, %llu bytes up, %llu down",
        (unsigned long long)px->next_id, (unsigned long long)px->cuts,
        (unsigned long long)px->bytes[DIR_UP],
        (unsigned long long)px->bytes[DIR_DOWN]);
}

/* Waits for events until deadline (absolute, ns); handles signals. */
static int
wait_events(struct proxy *px, uint64_t now, uint64_t deadline, int *stop)
{
    struct epoll_event evs[64];
    struct signalfd_siginfo si;
    struct timespec ts, *tsp = NULL;
    struct side *s;
    uint64_t wait = 0;
    uint32_t e;
    int n, i;

    if (deadline != NO_DEADLINE) {
        wait = deadline > now ? deadline - now : 0;
        ts.tv_sec = (time_t)(wait / NS_PER_S);
        ts.tv_nsec = (long)(wait % NS_PER_S);
        tsp = &ts;
    }
    /* epoll_pwait2 takes nanoseconds: delays stay within 1 ms. */
    n = epoll_pwait2(px->ep, evs, 64, tsp, NULL);
    if (n < 0 && errno == ENOSYS) {
        n = epoll_wait(px->ep, evs, 64, tsp == NULL ? -1 :
            (int)((wait + NS_PER_MS - 1) / NS_PER_MS));
    }
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    for (i = 0; i < n; i++) {
        s = evs[i].data.ptr;
        e = evs[i].events;
        if (s == &px->sig) {
            while (read(px->sig.fd, &si, sizeof(si)) == sizeof(si)) {
                say(2, "signal %u, exiting", (unsigned)si.ssi_signo);
                *stop = 1;
            }
            continue;
        }
        if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            s->readable = 1;
        if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            s->writable = 1;
    }
    return 0;
}

static unsigned long long
wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000 +
        (unsigned long long)ts.tv_nsec / 1000000;
}

/*
 * --trace: one line per NETPROXY_TRACE_MS while connections are open,
 * "wall-clock ms, bytes relayed up, down, connections", so a bench can
 * tell when the first byte crossed and when the link filled.
 */
static void
trace_tick(struct proxy *px, uint64_t now, uint64_t *deadline)
{
    if (px->trace == NULL)
        return;
    if (now >= px->trace_next_ns) {
        if (px->nconns > 0 || px->bytes[0] + px->bytes[1] > 0)
            fprintf(px->trace, "%llu %llu %llu %u\n", wall_ms(),
                (unsigned long long)px->bytes[DIR_UP],
                (unsigned long long)px->bytes[DIR_DOWN], px->nconns);
        (void)fflush(px->trace);
        px->trace_next_ns = now + NETPROXY_TRACE_MS * NS_PER_MS;
    }
    deadline_min(deadline, px->trace_next_ns);
}

static int
run(struct proxy *px)
{
    const size_t NO_SLOT = SIZE_MAX;
    uint64_t now, deadline, end;
    size_t i, slot, first;
    int stop = 0, r;

    for (;;) {
        now = clock_ns();
        deadline = NO_DEADLINE;
        if (px->o.lifetime_s != 0) {
            end = px->start_ns + (uint64_t)px->o.lifetime_s * NS_PER_S;
            if (now >= end) {
                say(1, "lifetime of %u s is over, exiting",
                    px->o.lifetime_s);
                teardown(px, now);
                return NETPROXY_EXIT_LIFETIME;
            }
            deadline_min(&deadline, end);
        }
        if (px->o.idle_exit_s != 0 && px->nconns == 0) {
            end = px->idle_since_ns + (uint64_t)px->o.idle_exit_s * NS_PER_S;
            if (now >= end) {
                say(2, "idle for %u s, exiting", px->o.idle_exit_s);
                teardown(px, now);
                return NETPROXY_EXIT_OK;
            }
            deadline_min(&deadline, end);
        }
        accept_pending(px, now, &deadline);
        trace_tick(px, now, &deadline);
        /*
         * The first connection of a pass gets first go at the shared
         * tokens, so the next pass starts just after it: round robin.
         */
        first = NO_SLOT;
        for (i = 0; i < px->o.max_conns; i++) {
            slot = (px->rr + i) % px->o.max_conns;
            if (px->conns[slot] == NULL)
                continue;
            if (first == NO_SLOT)
                first = slot;
            (void)conn_pump(px, px->conns[slot], now, &deadline);
        }
        if (first != NO_SLOT)
            px->rr = (first + 1) % px->o.max_conns;
        if ((r = wait_events(px, now, deadline, &stop)) != 0) {
            say(0, "epoll: %s", ferry_strerror(r));
            teardown(px, clock_ns());
            return NETPROXY_EXIT_ERROR;
        }
        if (stop) {
            teardown(px, clock_ns());
            return NETPROXY_EXIT_OK;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Command line. */

static void
usage(FILE *f)
{
    fputs(
"usage: netproxy [options] HOST:PORT\n"
"\n"
"Listens on 127.0.0.1 and relays each connection to HOST:PORT, with an\n"
"emulated WAN link and injected faults. Sizes take a k, m or g suffix\n"
"(KiB, MiB, GiB); rates are in Mbit/s (10^6 bits) and may be fractional.\n"
"\n"
"  -p, --port PORT         listen port (default 0: the kernel picks one,\n"
"                          printed on stdout unless --port-file is given)\n"
"      --port-file PATH    write the port to PATH when ready (atomically)\n"
"      --pid-file PATH     write our pid to PATH\n"
"\n"
"WAN emulation:\n"
"      --delay-ms N        one-way delay added in each direction\n"
"                          (RTT grows by 2N; max 60000)\n"
"      --start-delay-ms N  the server's first bytes on each connection are\n"
"                          held N ms more (a server slow to start); the\n"
"                          round trips after them are not (max 60000)\n"
"      --rate MBIT         cap per direction, shared by all connections\n"
"      --conn-rate MBIT    cap per direction for each connection\n"
"      --max-inflight SIZE bytes held per direction per connection before\n"
"                          reading stops (default 2 x rate x delay, at\n"
"                          least 4 MiB; rate taken as 1000 if unset)\n"
"\n"
"Fault injection:\n"
"      --cut-after K       reset both sides once K bytes were delivered\n"
"      --cut-random MIN:MAX  K drawn uniformly per connection\n"
"      --cut-dir up|down|both  bytes that count: client to server, server\n"
"                          to client, or both (default both)\n"
"      --cut-rounds N      cut only the first N connections (default all)\n"
"      --stall-after K     once K bytes were delivered, relay nothing more\n"
"                          and close nothing (a link that hangs)\n"
"      --fault-conn N      the cut or stall applies to connection N only\n"
"                          (numbered from 1 in accept order)\n"
"      --seed S            seed for --cut-random (default: from the clock,\n"
"                          logged so a run can be repeated)\n"
"\n"
"Limits:\n"
"      --max-conns N       open connections (default 64); more are reset\n"
"      --idle-exit SEC     exit after SEC with no connection (default 0:\n"
"                          never)\n"
"      --lifetime SEC      exit after SEC whatever happens (default 3600,\n"
"                          0: never)\n"
"\n"
"  -v, --verbose           log each connection\n"
"  -q, --quiet             log errors only (not cuts)\n"
"  -h, --help              show this help\n"
"\n"
"Exit status: 0 on SIGTERM/SIGINT or --idle-exit, 1 on error, 2 on bad\n"
"usage, 3 when --lifetime ran out.\n", f);
}

/* Parses a decimal number with an optional k/m/g (binary) suffix. */
static int
parse_size(const char *s, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    uint64_t mul = 1;
    char *end;

    if (*s < '0' || *s > '9')
        return FERRY_ERR_USAGE;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return FERRY_ERR_USAGE;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (*end != '\0' || v > max / mul)
        return FERRY_ERR_USAGE;
    *out = v * mul;
    return 0;
}

static int
parse_uint(const char *s, uint64_t max, unsigned *out)
{
    uint64_t v;

    if (strpbrk(s, "kKmMgG") != NULL || parse_size(s, max, &v) != 0)
        return FERRY_ERR_USAGE;
    *out = (unsigned)v;
    return 0;
}

/* Mbit/s to bytes/s. */
static int
parse_mbit(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > 1e6)
        return FERRY_ERR_USAGE;
    *out = v * 1e6 / 8;
    return 0;
}

static int
parse_range(const char *s, uint64_t *lo, uint64_t *hi)
{
    char buf[64];
    char *colon;

    if (strlen(s) >= sizeof(buf))
        return FERRY_ERR_USAGE;
    strcpy(buf, s);
    if ((colon = strchr(buf, ':')) == NULL)
        return FERRY_ERR_USAGE;
    *colon = '\0';
    if (parse_size(buf, UINT64_MAX, lo) != 0 ||
        parse_size(colon + 1, UINT64_MAX, hi) != 0 || *lo > *hi)
        return FERRY_ERR_USAGE;
    return 0;
}

enum {
    OPT_PORT_FILE = 256, OPT_PID_FILE, OPT_DELAY, OPT_RATE, OPT_CONN_RATE,
    OPT_INFLIGHT, OPT_CUT_AFTER, OPT_CUT_RANDOM, OPT_CUT_DIR, OPT_CUT_ROUNDS,
    OPT_SEED, OPT_MAX_CONNS, OPT_IDLE_EXIT, OPT_LIFETIME, OPT_STALL_AFTER,
    OPT_FAULT_CONN, OPT_START_DELAY, OPT_TRACE
};

static const struct option long_opts[] = {
    { "port", required_argument, NULL, 'p' },
    { "port-file", required_argument, NULL, OPT_PORT_FILE },
    { "pid-file", required_argument, NULL, OPT_PID_FILE },
    { "delay-ms", required_argument, NULL, OPT_DELAY },
    { "start-delay-ms", required_argument, NULL, OPT_START_DELAY },
    { "rate", required_argument, NULL, OPT_RATE },
    { "conn-rate", required_argument, NULL, OPT_CONN_RATE },
    { "max-inflight", required_argument, NULL, OPT_INFLIGHT },
    { "cut-after", required_argument, NULL, OPT_CUT_AFTER },
    { "cut-random", required_argument, NULL, OPT_CUT_RANDOM },
    { "cut-dir", required_argument, NULL, OPT_CUT_DIR },
    { "cut-rounds", required_argument, NULL, OPT_CUT_ROUNDS },
    { "stall-after", required_argument, NULL, OPT_STALL_AFTER },
    { "fault-conn", required_argument, NULL, OPT_FAULT_CONN },
    { "seed", required_argument, NULL, OPT_SEED },
    { "max-conns", required_argument, NULL, OPT_MAX_CONNS },
    { "idle-exit", required_argument, NULL, OPT_IDLE_EXIT },
    { "lifetime", required_argument, NULL, OPT_LIFETIME },
    { "trace", required_argument, NULL, OPT_TRACE },
    { "verbose", no_argument, NULL, 'v' },
    { "quiet", no_argument, NULL, 'q' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
};

/*
 * Returns 0 to go on, -1 after -h, or an exit status after printing why.
 */
static int
parse_args(int argc, char **argv, struct opts *o)
{
    int ch, cut_dir_set = 0, cut_rounds_set = 0, bad = 0;
    const char *what = NULL;

    memset(o, 0, sizeof(*o));
    o->cut_dir = CUT_UP | CUT_DOWN;
    o->max_conns = 64;
    o->lifetime_s = 3600;
    o->verbosity = 1;
    while ((ch = getopt_long(argc, argv, "p:vqh", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
            bad = parse_uint(optarg, 65535, &o->port);
            what = "--port";
            break;
        case OPT_PORT_FILE:
            o->port_file = optarg;
            break;
        case OPT_PID_FILE:
            o->pid_file = optarg;
            break;
        case OPT_DELAY:
            bad = parse_uint(optarg, NETPROXY_MAX_DELAY_MS, &o->delay_ms);
            what = "--delay-ms";
            break;
        case OPT_TRACE:
            o->trace = optarg;
            break;
        case OPT_START_DELAY:
            bad = parse_uint(optarg, NETPROXY_MAX_DELAY_MS,
                &o->start_delay_ms);
            what = "--start-delay-ms";
            break;
        case OPT_RATE:
            bad = parse_mbit(optarg, &o->rate);
            what = "--rate";
            break;
        case OPT_CONN_RATE:
            bad = parse_mbit(optarg, &o->conn_rate);
            what = "--conn-rate";
            break;
        case OPT_INFLIGHT:
            bad = parse_size(optarg, NETPROXY_MAX_INFLIGHT, &o->max_inflight);
            bad = bad != 0 || o->max_inflight == 0;
            what = "--max-inflight";
            break;
        case OPT_CUT_AFTER:
            bad = o->cut || parse_size(optarg, UINT64_MAX, &o->cut_min) != 0;
            o->cut_max = o->cut_min;
            o->cut = 1;
            what = "--cut-after (or given twice, or with another fault)";
            break;
        case OPT_CUT_RANDOM:
            bad = o->cut || parse_range(optarg, &o->cut_min, &o->cut_max);
            o->cut = 1;
            what = "--cut-random (or given with another fault)";
            break;
        case OPT_CUT_DIR:
            cut_dir_set = 1;
            if (strcmp(optarg, "up") == 0)
                o->cut_dir = CUT_UP;
            else if (strcmp(optarg, "down") == 0)
                o->cut_dir = CUT_DOWN;
            else if (strcmp(optarg, "both") == 0)
                o->cut_dir = CUT_UP | CUT_DOWN;
            else
                bad = 1;
            what = "--cut-dir";
            break;
        case OPT_CUT_ROUNDS:
            bad = parse_size(optarg, UINT64_MAX, &o->cut_rounds) != 0 ||
                o->cut_rounds == 0;
            cut_rounds_set = 1;
            what = "--cut-rounds";
            break;
        case OPT_STALL_AFTER:
            bad = o->cut || parse_size(optarg, UINT64_MAX, &o->cut_min) != 0;
            o->cut_max = o->cut_min;
            o->cut = o->stall = 1;
            what = "--stall-after (or given with a cut)";
            break;
        case OPT_FAULT_CONN:
            bad = parse_size(optarg, UINT64_MAX, &o->fault_conn) != 0 ||
                o->fault_conn == 0;
            cut_rounds_set = 1;
            what = "--fault-conn";
            break;
        case OPT_SEED:
            bad = parse_size(optarg, UINT64_MAX, &o->seed) != 0;
            o->seed_set = 1;
            what = "--seed";
            break;
        case OPT_MAX_CONNS:
            bad = parse_uint(optarg, 100000, &o->max_conns) != 0 ||
                o->max_conns == 0;
            what = "--max-conns";
            break;
        case OPT_IDLE_EXIT:
            bad = parse_uint(optarg, UINT_MAX, &o->idle_exit_s);
            what = "--idle-exit";
            break;
        case OPT_LIFETIME:
            bad = parse_uint(optarg, UINT_MAX, &o->lifetime_s);
            what = "--lifetime";
            break;
        case 'v':
            o->verbosity = 2;
            break;
        case 'q':
            o->verbosity = 0;
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            usage(stderr);
            return NETPROXY_EXIT_USAGE;
        }
        if (bad) {
            fprintf(stderr, "netproxy: invalid %s: '%s'\n", what, optarg);
            return NETPROXY_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fputs("netproxy: expected one HOST:PORT argument\n", stderr);
        usage(stderr);
        return NETPROXY_EXIT_USAGE;
    }
    if (!o->cut && (cut_dir_set || cut_rounds_set || o->seed_set)) {
        fputs("netproxy: --cut-dir, --cut-rounds, --fault-conn and --seed "
            "need --cut-after, --cut-random or --stall-after\n", stderr);
        return NETPROXY_EXIT_USAGE;
    }
    o->target = argv[optind];
    return 0;
}

/* See --max-inflight in usage(). */
static size_t
default_inflight(const struct opts *o)
{
    double rate = 1000 * 1e6 / 8, v;

    if (o->rate > 0)
        rate = o->rate;
    if (o->conn_rate > 0 && o->conn_rate < rate)
        rate = o->conn_rate;
    v = 2 * rate * o->delay_ms / 1000;
    if (v < NETPROXY_MIN_INFLIGHT)
        v = NETPROXY_MIN_INFLIGHT;
    if (v > (double)NETPROXY_MAX_INFLIGHT)
        v = (double)NETPROXY_MAX_INFLIGHT;
    return (size_t)v;
}

int
main(int argc, char **argv)
{
    struct proxy px;
    uint64_t now;
    int r, d;

    memset(&px, 0, sizeof(px));
    px.ep = -1;
    px.listen.fd = -1;
    px.sig.fd = -1;
    if ((r = parse_args(argc, argv, &px.o)) != 0)
        return r < 0 ? NETPROXY_EXIT_OK : r;
    netproxy_verbosity = px.o.verbosity;
    now = clock_ns();
    px.start_ns = now;
    px.idle_since_ns = now;
    px.max_inflight = px.o.max_inflight != 0 ? (size_t)px.o.max_inflight :
        default_inflight(&px.o);
    /*
     * At most one mark per millisecond is live while data waits out the
     * delay; the extra room covers time spent waiting for tokens.
     */
    px.max_marks = 2 * (size_t)px.o.delay_ms + 4096;
    for (d = 0; d < 2; d++)
        bucket_init(&px.rate[d], px.o.rate, now);
    if (px.o.cut && px.o.cut_min != px.o.cut_max) {
        if (!px.o.seed_set)
            px.o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        say(1, "--cut-random seed %llu", (unsigned long long)px.o.seed);
    }
    px.rng = px.o.seed;
    if ((px.conns = xcalloc(px.o.max_conns, sizeof(*px.conns))) == NULL) {
        say(0, "out of memory");
        return NETPROXY_EXIT_ERROR;
    }
    if ((r = resolve_target(&px)) != 0 || (r = setup(&px)) != 0) {
        teardown(&px, now);
        return r == FERRY_ERR_USAGE ? NETPROXY_EXIT_USAGE :
            NETPROXY_EXIT_ERROR;
    }
    return run(&px);
}
