/*
 * swarm.c: the conductor of a push spread among many boxes (swarm.h). In
 * the client's parent process, before the boxes' transfers: it makes the
 * torrent and the per-transfer CA, forks a link per box (swarm_link.c),
 * drives every box's helper over its link (docs/SWARM.md, the line
 * protocol), and streams each piece to one box: the next piece goes to
 * the first box with room for it, so a slow or lost box takes less and
 * the others more. It ends when every box holds every piece, or when
 * nothing moved for SWARM_STALL_S; what a box lacks then is sent to it
 * directly by its own transfer.
 */
#include "swarm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/hash.h"
#include "../common/log.h"
#include "../engine/manifest.h"
#include "../proto/msg.h"
#include "digest.h"
#include "swarm_ca.h"
#include "torrent.h"
#include "transport.h"

const char *const swarm_file_names[SWARM_FILES] = {
    "t.torrent", "box.crt", "box.key",
};

/* Pieces put to a box and not yet hashed there: the helper holds up to
 * 32 and 64 MiB (docs/SWARM.md). Enough that a file a piece (small
 * files) does not wait a round trip each, and at most SWARM_WINDOW_BYTES
 * of big ones. */
#define SWARM_WINDOW 24
#define SWARM_WINDOW_BYTES (32u << 20)
/* Seconds for a box to log in, take the helper and listen. */
#define SWARM_LINK_S 60
/* Seconds for every box to reach another once told its peers: one that
 * has none by then cannot (a firewall, another network) and is left to
 * its own transfer. */
#define SWARM_PROBE_S 10
/* Seconds without a piece moving anywhere before the rest is left to the
 * boxes' own transfers. */
#define SWARM_STALL_S 30
/* Seconds for the helpers to stop, and a link to clean up. */
#define SWARM_STOP_S 15
/* Below this much data the swarm's start costs more than it saves. */
#define SWARM_MIN_BYTES (1u << 20)
/* The largest helper file read (a bound, not a size it has). */
#define SWARM_HELPER_MAX (256u << 20)
/* Pieces per torrent the piece length aims at. */
#define SWARM_PIECES_AIM 8192u
#define SWARM_MIN_PIECE (256u * 1024)
/* The content's folder under the staging folder (the torrent's name). */
#define SWARM_CONTENT "files"
/* The CA's life: longer than any push. */
#define SWARM_CA_HOURS 48

enum sbox_state {
    SB_LINKING,     /* logging in, putting the helper there */
    SB_LISTING,     /* saying what its destination holds */
    SB_LISTED,      /* waits for the others' lists */
    SB_HELLO,       /* its helper runs: told the torrent and to start */
    SB_LISTENING,   /* listens and said what it holds: waits for the
                       others */
    SB_STARTED,     /* told its peers: takes pieces */
    SB_DONE,        /* holds every piece */
    SB_STOPPING,    /* told to stop */
    SB_ENDED,       /* its helper ended; the link waits for clean */
    SB_FAILED,
};

struct sbox {
    pid_t pid;
    int sock;
    enum sbox_state st;
    int staged;             /* its helper started on the staging folder */
    int whole;              /* it said done: it holds what it lacked */
    int made;               /* its staging folder may exist */
    char addr[80];
    unsigned port;
    char at[1024];          /* the staging folder, as the box names it */
    char in[8192];          /* a line on its way */
    size_t inlen;
    uint8_t *out;           /* lines and a piece on their way */
    size_t outcap, outlen, outoff;
    uint32_t inflight[SWARM_WINDOW];
    int ninflight;
    uint64_t have, down;
    unsigned peers;         /* connected, as it last said */
    double since;           /* when the state began */
    char dest[1024];        /* the destination as the box names it */
    uint8_t *cur;           /* per s->files: current there already */
};

struct sfile {
    size_t k;               /* in s->files */
    uint64_t len;
    uint32_t first, count;  /* its pieces */
};

/* A file of the sources worth sharing (regular, not empty), by path. */
struct swarm_rel {
    char *rel;
    size_t id;              /* in the manifest */
    int hashed;             /* hash is the file's (the torrent's pass) */
    struct hash128 hash;
};

struct swarm {
    struct cli *cli;
    int n;
    struct sbox *b;
    struct swarm_job job;
    struct swarm_rel *files;   /* sorted by path */
    size_t nfiles;
    char **certs, **keys;
    size_t *cert_len, *key_len;
    struct manifest mf;
    int have_mf;
    struct torrent *t;
    struct buf tbytes;
    uint8_t *helper_mem[2 * SWARM_NARCH];  /* the builds' bytes */
    uint32_t pieces, piece_len;
    int window;             /* pieces in flight to one box */
    int all_put;
    struct sfile *sf;
    size_t nsf;
    uint32_t next;          /* the next piece never put */
    uint32_t *again;        /* pieces to put again (a box was lost) */
    size_t nagain, again_cap;
    int16_t *fed_to;        /* the box that holds a piece first, or -1 */
    uint8_t *bad;
    uint32_t nfed, nbad;
    uint64_t bytes, put_bytes;
    double t0, moved_at, started_at;
    int probed;             /* every box reached another, or was left */
    double probe_s;         /* SWARM_PROBE_S */
    char adopt[256];
    int single;             /* the torrent's single-file form */
    volatile sig_atomic_t *stop;
};

static double
swarm_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
swarm_quiet(const struct swarm *s)
{
    return s->cli->quiet || s->cli->json;
}

static void FERRY_PRINTF(2, 3)
swarm_note(const struct swarm *s, const char *fmt, ...)
{
    va_list ap;

    if (swarm_quiet(s))
        return;
    fputs("ferry: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Piece p is to be put again; past the room for it, its file goes by
 * the box's own transfer. */
static void
swarm_again(struct swarm *s, uint32_t p)
{
    if (s->nagain < s->again_cap)
        s->again[s->nagain++] = p;
}

/* Box i leaves the swarm: said once, its pieces in flight go to others,
 * and so do those only it was given, which the others may lack. */
static void
swarm_lose(struct swarm *s, int i, const char *why)
{
    struct sbox *b = &s->b[i];
    uint32_t p;

    if (b->st == SB_FAILED)
        return;
    if (b->st < SB_ENDED)
        swarm_note(s, "%s: swarm: %s; its data goes to it directly",
            s->cli->boxes[i].label, why);
    b->st = SB_FAILED;
    for (int k = 0; k < b->ninflight; k++)
        swarm_again(s, b->inflight[k]);
    b->ninflight = 0;
    for (p = 0; p < s->pieces; p++)
        if (s->fed_to[p] == i) {
            s->fed_to[p] = -1;
            s->nfed--;
            swarm_again(s, p);
        }
    if (b->sock >= 0)
        close(b->sock);
    b->sock = -1;
    if (b->pid > 0)
        kill(b->pid, SIGTERM);
    b->outlen = b->outoff = 0;
}

static int FERRY_PRINTF(2, 3)
swarm_send(struct sbox *b, const char *fmt, ...)
{
    char line[4200];
    va_list ap;
    int n;
    uint8_t *g;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line) - 1)
        return FERRY_ERR_TOO_LARGE;
    line[n++] = '\n';
    if (b->outoff == b->outlen)
        b->outlen = b->outoff = 0;
    if ((g = xroom(b->out, &b->outcap, b->outlen + (size_t)n)) == NULL)
        return FERRY_ERR_NOMEM;
    b->out = g;
    memcpy(b->out + b->outlen, line, (size_t)n);
    b->outlen += (size_t)n;
    return 0;
}

/* The file that holds piece p (files start on pieces, in order). */
/* The file that holds piece p (files start on pieces, in order). */
static const struct sfile *
swarm_piece_file(const struct swarm *s, uint32_t p)
{
    size_t lo = 0, hi = s->nsf;

    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;

        if (s->sf[mid].first <= p)
            lo = mid;
        else
            hi = mid;
    }
    return &s->sf[lo];
}

/* Queues `put P LEN` and the piece's bytes for b. */
static int
swarm_put(struct swarm *s, struct sbox *b, uint32_t p)
{
    const struct sfile *f = swarm_piece_file(s, p);
    uint64_t off = (uint64_t)(p - f->first) * s->piece_len;
    size_t len = (size_t)(f->len - off < s->piece_len ? f->len - off :
        s->piece_len);
    uint8_t *g;
    ssize_t got;
    size_t done = 0;
    int fd, r;

    if ((r = swarm_send(b, "put %" PRIu32 " %zu", p, len)) != 0)
        return r;
    if ((g = xroom(b->out, &b->outcap, b->outlen + len)) == NULL)
        return FERRY_ERR_NOMEM;
    b->out = g;
    if ((fd = manifest_open(&s->mf, s->files[f->k].id, FSX_O_READ)) < 0)
        return fd;
    while (done < len) {
        got = pread(fd, b->out + b->outlen + done, len - done,
            (off_t)(off + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (size_t)got;
    }
    close(fd);
    /* A file that shrank since the torrent: zeros, which the helper's
     * hash refuses (`bad`); its transfer sends it as it is now. */
    memset(b->out + b->outlen + done, 0, len - done);
    b->outlen += len;
    b->inflight[b->ninflight++] = p;
    s->put_bytes += len;
    return 0;
}

/* The next piece to put: one a lost box had, else one no box holds. */
static int
swarm_next_piece(struct swarm *s, uint32_t *p)
{
    if (s->next == s->pieces && s->nagain == 0 && !s->all_put) {
        s->all_put = 1;
        log_debug("swarm: every piece put, %.2f s after the start",
            swarm_now() - s->started_at);
    }
    while (s->nagain > 0) {
        *p = s->again[--s->nagain];
        if (s->fed_to[*p] < 0 && !s->bad[*p])
            return 1;
    }
    while (s->next < s->pieces) {
        *p = s->next++;
        if (s->fed_to[*p] < 0)
            return 1;
    }
    return 0;
}

/* The probe: every box must reach another; one with no peer by
 * SWARM_PROBE_S is left out (and what only it was given goes to others).
 * 0 once it is over, 1 while it waits. */
static int
swarm_probe(struct swarm *s)
{
    int i, live = 0, lonely = 0;

    for (i = 0; i < s->n; i++)
        if (s->b[i].st == SB_STARTED || s->b[i].st == SB_DONE) {
            live++;
            lonely += s->b[i].peers == 0;
        }
    if (lonely > 0 && swarm_now() - s->started_at < s->probe_s)
        return 1;
    for (i = 0; i < s->n; i++)
        if ((s->b[i].st == SB_STARTED || s->b[i].st == SB_DONE) &&
            (s->b[i].peers == 0 || live - lonely < 2))
            swarm_lose(s, i, lonely == live ? "the boxes cannot reach each "
                "other" : "it cannot reach the other boxes, nor they it");
    s->probed = 1;
    s->moved_at = swarm_now();
    log_debug("swarm: probe over after %.2f s", swarm_now() - s->started_at);
    return 0;
}

/* --bwlimit caps the uplink's rate, which the swarm's pieces take: 1
 * while what was put runs ahead of it (a piece of burst). */
static int
swarm_over_limit(const struct swarm *s)
{
    double allowed;

    if (s->cli->bwlimit == 0)
        return 0;
    allowed = (swarm_now() - s->started_at) * (double)s->cli->bwlimit +
        (double)s->piece_len;
    return (double)s->put_bytes >= allowed;
}

/* Fills each started box's window, once every box has said what it
 * holds (what one holds, none is sent). */
static void
swarm_feed(struct swarm *s)
{
    uint32_t p;
    int i;

    for (i = 0; i < s->n; i++)
        if (s->b[i].st < SB_STARTED)
            return;
    if (!s->probed)
        (void)swarm_probe(s);
    for (i = 0; i < s->n; i++) {
        struct sbox *b = &s->b[i];

        /* While the probe runs, only a box that reached another takes
         * pieces: one that cannot pass them on would hold them alone. */
        while (b->st == SB_STARTED && b->ninflight < s->window &&
            (s->probed || b->peers > 0) &&
            !swarm_over_limit(s) &&
            b->outlen - b->outoff < (size_t)s->piece_len &&
            swarm_next_piece(s, &p)) {
            int r = swarm_put(s, b, p);

            if (r != 0) {
                char why[200];

                snprintf(why, sizeof(why), "reading piece %" PRIu32 ": %s",
                    p, ferry_strerror(r));
                swarm_again(s, p);
                swarm_lose(s, i, why);
            }
        }
    }
}

/* Every box still in has reached state st (or left): 1, and how many
 * are at it. */
static int
swarm_all_at(const struct swarm *s, enum sbox_state st, int *n)
{
    *n = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->b[i].st < st)
            return 0;
        *n += s->b[i].st == st;
    }
    return 1;
}

/* Every box still in listens: each is told the others. */
static void
swarm_start_all(struct swarm *s)
{
    uint8_t ready[CLI_MAX_BOXES];
    int i, j, n;

    if (!swarm_all_at(s, SB_LISTENING, &n) || n == 0)
        return;
    for (i = 0; i < s->n; i++)
        ready[i] = s->b[i].st == SB_LISTENING;
    for (i = 0; i < s->n; i++) {
        struct sbox *b = &s->b[i];
        int r = 0;

        if (!ready[i])
            continue;
        for (j = 0; j < s->n && r == 0; j++)
            if (j != i && ready[j])
                r = swarm_send(b, "peer %s:%u", s->b[j].addr,
                    s->b[j].port);
        if (r != 0) {
            swarm_lose(s, i, ferry_strerror(r));
        } else {
            b->st = SB_STARTED;
            s->moved_at = s->started_at = swarm_now();
        }
    }
}

static int
swarm_rel_cmp(const void *a, const void *b)
{
    return strcmp(((const struct swarm_rel *)a)->rel,
        ((const struct swarm_rel *)b)->rel);
}

/* The index in s->files of the file at rel, or -1. */
static ssize_t
swarm_file_of(const struct swarm *s, const char *rel)
{
    struct swarm_rel key, *hit;

    memset(&key, 0, sizeof(key));
    key.rel = (char *)rel;
    hit = bsearch(&key, s->files, s->nfiles, sizeof(*s->files),
        swarm_rel_cmp);
    return hit != NULL ? hit - s->files : -1;
}

/* `cur SIZE SEC NSEC REL` from box b's listing: the file is current
 * there by the transfer's own rule (size and mtime) and need not come. */
static void
swarm_cur(struct swarm *s, struct sbox *b, const char *line)
{
    unsigned long long size, sec, nsec;
    const struct mentry *e;
    ssize_t k;
    int n = 0;

    if (sscanf(line, "cur %llu %llu %llu %n", &size, &sec, &nsec, &n) < 3 ||
        n == 0 || (k = swarm_file_of(s, line + n)) < 0)
        return;
    e = manifest_entry(&s->mf, s->files[k].id);
    if (!s->cli->checksum && e->size == size && e->mtime_sec >= 0 &&
        (unsigned long long)e->mtime_sec == sec && e->mtime_nsec == nsec)
        b->cur[k] = 1;
}

/* One line from box i's link. */
void
swarm_line(struct swarm *s, int i, char *line)
{
    struct sbox *b = &s->b[i];
    char w[64], path[1024];
    unsigned long long a, c, d, e, f;
    uint32_t p;
    int r = 0;

    if (strncmp(line, "cur ", 4) != 0 && strncmp(line, "fed ", 4) != 0 &&
        strncmp(line, "progress ", 9) != 0)
        log_debug("swarm %s: %s", s->cli->boxes[i].label, line);
    if (strncmp(line, "link-fail ", 10) == 0) {
        const char *why = line + 10, *label = s->cli->boxes[i].label;
        size_t n = strlen(label);

        /* The link's messages name the box, as the line does. */
        if (strncmp(why, label, n) == 0 && strncmp(why + n, ": ", 2) == 0)
            why += n + 2;
        swarm_lose(s, i, why);
    } else if (strncmp(line, "say ", 4) == 0) {
        swarm_note(s, "%s: %s", s->cli->boxes[i].label, line + 4);
    } else if (b->st == SB_LINKING &&
        sscanf(line, "link %79s", b->addr) == 1) {
        b->st = SB_LISTING;
    } else if (b->st == SB_LISTING && strncmp(line, "cur ", 4) == 0) {
        swarm_cur(s, b, line);
    } else if (b->st == SB_LISTING && strncmp(line, "dest ", 5) == 0) {
        snprintf(b->dest, sizeof(b->dest), "%s", line + 5);
    } else if (b->st == SB_LISTING && strcmp(line, "listed") == 0) {
        b->st = SB_LISTED;
    } else if (b->st == SB_HELLO && b->at[0] == '\0' &&
        sscanf(line, "at %1023[^\n]", path) == 1) {
        memcpy(b->at, path, sizeof(b->at));
    } else if (b->st == SB_HELLO && strcmp(line, "hello 2") == 0 &&
        b->at[0] != '\0') {
        if ((r = swarm_send(b, "torrent %s/%s", b->at,
            swarm_file_names[SWARM_F_TORRENT])) == 0 &&
            (r = swarm_send(b, "cert %s/%s", b->at,
            swarm_file_names[SWARM_F_CERT])) == 0 &&
            (r = swarm_send(b, "key %s/%s", b->at,
            swarm_file_names[SWARM_F_KEY])) == 0)
            r = swarm_send(b, "save %s", b->at);
        /* What it holds already it serves from where it is. */
        for (size_t k = 0; k < s->nsf && r == 0; k++)
            if (b->cur[s->sf[k].k] && b->dest[0] == '/')
                r = swarm_send(b, "link %" PRIu32 " %s/%s", s->sf[k].first,
                    b->dest, s->files[s->sf[k].k].rel);
        if (r == 0 && (r = swarm_send(b, "listen %s:0", b->addr)) == 0)
            r = swarm_send(b, "start");
        if (r != 0)
            swarm_lose(s, i, ferry_strerror(r));
    } else if (sscanf(line, "torrent %63s %llu %llu", w, &a, &c) == 3) {
        if (a != s->pieces || c != s->piece_len)
            swarm_lose(s, i, "its helper read another torrent");
    } else if (b->st == SB_HELLO && sscanf(line, "listening %63s %llu", w,
        &a) == 2 && a > 0 && a < 65536) {
        b->port = (unsigned)a;
        if (b->staged)
            b->st = SB_LISTENING;
    } else if (b->st == SB_HELLO && !b->staged &&
        sscanf(line, "holds %llu %llu", &a, &c) == 2) {
        for (p = (uint32_t)a; c > 0 && p < s->pieces; p++, c--)
            if (s->fed_to[p] < 0) {
                s->fed_to[p] = (int16_t)i;
                s->nfed++;
            }
    } else if (b->st == SB_HELLO && !b->staged &&
        strcmp(line, "holds-end") == 0) {
        b->staged = 1;
        if (b->port > 0)
            b->st = SB_LISTENING;
    } else if (sscanf(line, "fed %" SCNu32, &p) == 1 ||
        sscanf(line, "bad %" SCNu32, &p) == 1) {
        int k, found = -1;

        for (k = 0; k < b->ninflight; k++)
            if (b->inflight[k] == p)
                found = k;
        if (found < 0) {
            swarm_lose(s, i, "its helper answered a piece it was not given");
            return;
        }
        b->inflight[found] = b->inflight[--b->ninflight];
        if (line[0] == 'b') {
            if (!s->bad[p]) {
                s->bad[p] = 1;
                s->nbad++;
                swarm_note(s, "%s: swarm: piece %" PRIu32 " did not match "
                    "(a source changed?): its file goes directly",
                    s->cli->boxes[i].label, p);
            }
        } else if (s->fed_to[p] < 0) {
            s->fed_to[p] = (int16_t)i;
            s->nfed++;
        }
        s->moved_at = swarm_now();
    } else if (sscanf(line, "progress %llu %llu %llu %llu %llu", &a, &c, &d,
        &e, &f) == 5) {
        if (a != b->have)
            s->moved_at = swarm_now();
        b->have = a;
        b->down = f;
        b->peers = (unsigned)d;
    } else if (strcmp(line, "done") == 0) {
        b->whole = 1;
        if (b->st == SB_STARTED)
            b->st = SB_DONE;
    } else if (sscanf(line, "banned %63[0-9a-fA-F.:]", w) == 1) {
        /* libtorrent dropped the bytes; the box that sent them may be
         * damaged, or lying. */
        swarm_note(s, "%s: swarm: %s sent data that does not match the "
            "torrent: banned", s->cli->boxes[i].label, w);
    } else if (strncmp(line, "fatal ", 6) == 0) {
        swarm_lose(s, i, line + 6);
    } else if (strncmp(line, "link-end ", 9) == 0) {
        if (b->st != SB_STOPPING)
            swarm_lose(s, i, "its helper ended");
        else
            b->st = SB_ENDED;
    }
    /* started, checked, stopped, peer-error, error: the log has them. */
}

/* Reads what box i's link said. */
static void
swarm_read(struct swarm *s, int i)
{
    struct sbox *b = &s->b[i];
    ssize_t n;
    char *nl;

    if (b->inlen == sizeof(b->in) - 1) {
        swarm_lose(s, i, "its link said a line too long");
        return;
    }
    n = read(b->sock, b->in + b->inlen, sizeof(b->in) - 1 - b->inlen);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        swarm_lose(s, i, n == 0 ? "its link closed" : strerror(errno));
        return;
    }
    b->inlen += (size_t)n;
    b->in[b->inlen] = '\0';
    while (b->sock >= 0 && (nl = memchr(b->in, '\n', b->inlen)) != NULL) {
        size_t k = (size_t)(nl - b->in);

        *nl = '\0';
        swarm_line(s, i, b->in);
        if (b->sock < 0)
            return;
        memmove(b->in, nl + 1, b->inlen - k - 1);
        b->inlen -= k + 1;
        b->in[b->inlen] = '\0';
    }
}

/* One round: what can be read and written, at most wait_ms. */
static void
swarm_poll(struct swarm *s, int wait_ms)
{
    struct pollfd p[CLI_MAX_BOXES];
    int i;

    for (i = 0; i < s->n; i++) {
        struct sbox *b = &s->b[i];

        p[i].fd = b->sock;
        p[i].events = b->sock >= 0 ? POLLIN : 0;
        if (b->sock >= 0 && b->outlen > b->outoff)
            p[i].events |= POLLOUT;
        p[i].revents = 0;
    }
    if (poll(p, (nfds_t)s->n, wait_ms) <= 0)
        return;
    for (i = 0; i < s->n; i++) {
        struct sbox *b = &s->b[i];

        if (b->sock >= 0 && (p[i].revents & POLLOUT)) {
            ssize_t n = write(b->sock, b->out + b->outoff,
                b->outlen - b->outoff);

            if (n > 0)
                b->outoff += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                swarm_lose(s, i, strerror(errno));
        }
        if (b->sock >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
            swarm_read(s, i);
    }
}

/* 1 while a box still in gathers. */
static int
swarm_busy(const struct swarm *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->b[i].st < SB_DONE)
            return 1;
    return 0;
}

/* The sources' files into s->mf and s->files, and the staging folder's
 * name from what they are (path, size, mtime): the same sources find
 * the same folder in the next run, with what it holds. */
static int
swarm_scan(struct swarm *s)
{
    struct cli *cli = s->cli;
    struct digest_sha256 *d;
    char rel[MANIFEST_REL_MAX], hex[65];
    size_t id, n, k;
    int r = 0;

    manifest_init(&s->mf);
    s->have_mf = 1;
    manifest_set_filter(&s->mf, &cli->filter, 1);
    for (int i = 0; i < cli->nlocal && r == 0; i++)
        r = manifest_scan(&s->mf, cli->local_paths[i]);
    if (r != 0)
        return r;
    n = manifest_avail(&s->mf);
    if ((s->files = xcalloc(n + 1, sizeof(*s->files))) == NULL)
        return FERRY_ERR_NOMEM;
    for (id = 0; id < n; id++) {
        const struct mentry *e = manifest_entry(&s->mf, id);

        if (e->kind != ENTRY_FILE || e->size == 0)
            continue;
        if ((s->files[s->nfiles].rel = xstrdup(manifest_rel(&s->mf, id,
            rel))) == NULL)
            return FERRY_ERR_NOMEM;
        s->files[s->nfiles++].id = id;
        s->bytes += e->size;
    }
    qsort(s->files, s->nfiles, sizeof(*s->files), swarm_rel_cmp);
    if ((d = digest_sha256_new()) == NULL)
        return FERRY_ERR_NOMEM;
    for (k = 0; k < s->nfiles && r == 0; k++) {
        const struct mentry *e = manifest_entry(&s->mf, s->files[k].id);
        char meta[64];

        snprintf(meta, sizeof(meta), "%" PRIu64 " %" PRId64 ".%" PRIu32,
            (uint64_t)e->size, (int64_t)e->mtime_sec, e->mtime_nsec);
        if ((r = digest_sha256_update(d, s->files[k].rel,
            strlen(s->files[k].rel) + 1)) == 0)
            r = digest_sha256_update(d, meta, strlen(meta) + 1);
    }
    if (r == 0)
        r = digest_sha256_final(d, hex);
    else
        digest_sha256_free(d);
    if (r == 0)
        memcpy(s->job.id, hex, 16);
    return r;
}

/* A file every box still in holds already need not be shared. */
static int
swarm_wanted(const struct swarm *s, size_t k)
{
    for (int i = 0; i < s->n; i++)
        if (s->b[i].st == SB_LISTED && !s->b[i].cur[k])
            return 1;
    return 0;
}

/* The torrent of the files some box lacks, with the CA's certificate.
 * 0 with no torrent when every box holds everything. */
static int
swarm_torrent(struct swarm *s, const char *ca_pem, size_t ca_len)
{
    uint32_t bs = s->cli->block_size;
    uint8_t ih[32], *buf;
    size_t k, i;
    uint64_t len, wanted = 0;
    const char *path;
    uint32_t first, count;
    int r = 0, fd;

    for (k = 0; k < s->nfiles; k++)
        if (swarm_wanted(s, k))
            wanted += manifest_entry(&s->mf, s->files[k].id)->size;
    if (wanted < SWARM_MIN_BYTES)
        return 0;
    s->piece_len = SWARM_MIN_PIECE;
    while (s->piece_len < TORRENT_MAX_PIECE &&
        wanted / s->piece_len > SWARM_PIECES_AIM)
        s->piece_len *= 2;
    if ((r = torrent_new(&s->t, SWARM_CONTENT, s->piece_len)) != 0)
        return r;
    if ((buf = xmalloc(bs)) == NULL)
        return FERRY_ERR_NOMEM;
    for (k = 0; k < s->nfiles && r == 0; k++) {
        struct swarm_rel *f = &s->files[k];
        uint64_t left = manifest_entry(&s->mf, f->id)->size;
        struct hash_file *hf;

        if (!swarm_wanted(s, k))
            continue;
        if ((fd = manifest_open(&s->mf, f->id, FSX_O_READ)) < 0) {
            r = fd;
            break;
        }
        /* One read for both: the torrent's SHA-256 tree, and the
         * transfer's own hash of the file (its blocks' XXH3), which each
         * box's transfer then sends without reading the file again. */
        if ((hf = hash_file_new(left, bs)) == NULL)
            r = FERRY_ERR_NOMEM;
        if (r == 0)
            r = torrent_file_begin(s->t, f->rel);
        while (r == 0 && left > 0) {
            size_t want = left < bs ? (size_t)left : bs, got = 0;
            struct hash128 bh;

            while (got < want) {
                ssize_t n = read(fd, buf + got, want - got);

                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0) {
                    r = n < 0 ? -errno : FERRY_ERR_CHANGED;
                    break;
                }
                got += (size_t)n;
            }
            if (r != 0)
                break;
            hash_block(buf, got, &bh);
            hash_file_add(hf, &bh);
            r = torrent_file_update(s->t, buf, got);
            left -= got;
        }
        close(fd);
        if (r == 0 && (r = torrent_file_end(s->t)) == 0) {
            hash_file_final(hf, &f->hash);
            f->hashed = 1;
        }
        hash_file_free(hf);
    }
    xfree(buf);
    if (r != 0)
        return r;
    buf_init(&s->tbytes, TORRENT_MAX_BYTES);
    if ((r = torrent_set_cert(s->t, ca_pem, ca_len)) == 0)
        r = torrent_finish(s->t, &s->tbytes, ih);
    if (r != 0)
        return r;
    s->bytes = wanted;
    s->pieces = torrent_pieces(s->t);
    s->nsf = torrent_files(s->t);
    if ((s->sf = xcalloc(s->nsf, sizeof(*s->sf))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < s->nsf; i++) {
        ssize_t at;

        torrent_file_at(s->t, i, &path, &len, &first, &count);
        if ((at = swarm_file_of(s, path)) < 0)
            return FERRY_ERR_STATE;
        s->sf[i] = (struct sfile){ (size_t)at, len, first, count };
    }
    /* One file at the top is a single-file torrent, saved under its
     * own name, not under SWARM_CONTENT. */
    s->single = strcmp(torrent_name(s->t), SWARM_CONTENT) != 0;
    return 0;
}

/* path's bytes into *out (at most max), or an error. */
static int
swarm_slurp(const char *path, size_t max, uint8_t **out, size_t *len)
{
    struct stat st;
    size_t got = 0;
    int fd;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return FERRY_ERR_AGENT;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > max ||
        (*out = xmalloc((size_t)st.st_size + 1)) == NULL) {
        close(fd);
        return FERRY_ERR_AGENT;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, *out + got, (size_t)st.st_size - got);

        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *len = got;
    return got == (size_t)st.st_size ? 0 : FERRY_ERR_AGENT;
}

/* One build of the helper: NAME beside this build's agent, or the file
 * env names, and its gzip copy (PATH.gz, made with it), which crosses to
 * a box with gzip in less than half the bytes. */
static int
swarm_build_load(struct swarm *s, enum swarm_arch arch, const char *name,
    const char *env)
{
    struct swarm_build *b = &s->job.helper[arch];
    uint8_t **bin = &s->helper_mem[2 * arch], **gz = bin + 1;
    char agent[4096], path[4200], gzpath[4300];
    const char *e = getenv(env), *a;
    char *slash;
    size_t len;

    if (e != NULL && e[0] != '\0') {
        snprintf(path, sizeof(path), "%s", e);
    } else {
        if ((a = transport_local_agent(agent, sizeof(agent))) == NULL)
            return FERRY_ERR_AGENT;
        snprintf(path, sizeof(path), "%s", a);
        if ((slash = strrchr(path, '/')) == NULL)
            return FERRY_ERR_AGENT;
        snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path),
            "%s", name);
    }
    if (swarm_slurp(path, SWARM_HELPER_MAX, bin, &len) != 0 ||
        digest_sha256_file(path, b->hash) != 0)
        return FERRY_ERR_AGENT;
    b->bin = *bin;
    b->len = len;
    snprintf(gzpath, sizeof(gzpath), "%s.gz", path);
    if (swarm_slurp(gzpath, SWARM_HELPER_MAX, gz, &len) == 0) {
        b->gz = *gz;
        b->gz_len = len;
    }
    return 0;
}

/* This build's helpers: x86_64's is needed, aarch64's is taken when
 * built (FERRY_SWARM and FERRY_SWARM_AARCH64 name others). */
static int
swarm_helper(struct swarm *s)
{
    (void)swarm_build_load(s, SWARM_AARCH64, "ferry-swarm-aarch64",
        "FERRY_SWARM_AARCH64");
    return swarm_build_load(s, SWARM_X86_64, "ferry-swarm", "FERRY_SWARM");
}

/* Why cli's push does not swarm: NULL when it may, "" when it is not a
 * push to boxes over SSH at all, else a reason to say. */
static const char *
swarm_unfit(const struct cli *cli)
{
    if (cli->cmd != CMD_PUSH || cli->nboxes < 2 || cli->no_swarm ||
        cli->dry_run || cli->keep_volumes || cli->adopt != NULL)
        return "";
    for (int i = 0; i < cli->nboxes; i++)
        if (cli->boxes[i].remote.local)
            return "";
    if (cli->ssh_cmd != NULL)
        return "--ssh-cmd runs each box's transfer through that program";
    return NULL;
}

void
swarm_free(struct swarm *s)
{
    size_t k;
    int i;

    if (s == NULL)
        return;
    for (i = 0; i < s->n; i++) {
        if (s->b[i].sock >= 0)
            close(s->b[i].sock);
        xfree(s->b[i].out);
        xfree(s->b[i].cur);
        if (s->keys != NULL)
            swarm_ca_free_key(s->keys[i], s->key_len[i]);
        if (s->certs != NULL)
            xfree(s->certs[i]);
    }
    for (k = 0; s->files != NULL && k < s->nfiles; k++)
        xfree(s->files[k].rel);
    xfree(s->files);
    xfree(s->b);
    xfree(s->certs);
    xfree(s->keys);
    xfree(s->cert_len);
    xfree(s->key_len);
    if (s->have_mf)
        manifest_cleanup(&s->mf);
    torrent_free(s->t);
    buf_cleanup(&s->tbytes);
    for (i = 0; i < 2 * SWARM_NARCH; i++)
        xfree(s->helper_mem[i]);
    xfree(s->sf);
    xfree(s->again);
    xfree(s->fed_to);
    xfree(s->bad);
    xfree(s);
}

/* Forks box i's link. */
static int
swarm_fork_link(struct swarm *s, int i, int clean_only)
{
    int sv[2];
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    fflush(NULL);
    if ((pid = fork()) < 0) {
        close(sv[0]);
        close(sv[1]);
        return -errno;
    }
    if (pid == 0) {
        close(sv[0]);
        for (int k = 0; k < i; k++)
            if (s->b[k].sock >= 0)
                close(s->b[k].sock);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        swarm_link_main(s->cli, &s->job, i, sv[1], clean_only);
    }
    close(sv[1]);
    (void)fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    s->b[i].sock = sv[0];
    s->b[i].pid = pid;
    s->b[i].since = swarm_now();
    return 0;
}

/* Queues `go` and the blob for box i: the torrent, its certificate and
 * its key. */
static int
swarm_go(struct swarm *s, int i)
{
    struct sbox *b = &s->b[i];
    const struct swarm_blob f[SWARM_FILES] = {
        { buf_ptr(&s->tbytes), buf_used(&s->tbytes) },
        { s->certs[i], s->cert_len[i] },
        { s->keys[i], s->key_len[i] },
    };
    int r;

    if ((r = swarm_send(b, "go %zu %zu %zu", f[0].len, f[1].len,
        f[2].len)) != 0)
        return r;
    for (int k = 0; k < SWARM_FILES; k++) {
        uint8_t *g = xroom(b->out, &b->outcap, b->outlen + f[k].len);

        if (g == NULL)
            return FERRY_ERR_NOMEM;
        b->out = g;
        memcpy(b->out + b->outlen, f[k].p, f[k].len);
        b->outlen += f[k].len;
    }
    b->st = SB_HELLO;
    b->since = swarm_now();
    b->made = 1;
    return 0;
}

/* Every box has listed its destination: the torrent of what some box
 * lacks, the CA, each box's credentials, and `go` to each. 0 with no
 * torrent when there is nothing to share. */
int
swarm_prepare(struct swarm *s)
{
    struct swarm_ca *ca = NULL;
    const char *pem;
    size_t pem_len;
    int r, i;

    if ((r = swarm_ca_new(SWARM_CA_HOURS, &ca)) != 0)
        return r;
    pem = swarm_ca_cert_pem(ca, &pem_len);
    if ((r = swarm_torrent(s, pem, pem_len)) != 0 || s->t == NULL)
        goto out;
    s->window = SWARM_WINDOW_BYTES / s->piece_len;
    if (s->window > SWARM_WINDOW)
        s->window = SWARM_WINDOW;
    if (s->window < 2)
        s->window = 2;
    s->again_cap = (size_t)s->pieces + (size_t)s->n * SWARM_WINDOW;
    if ((s->again = xcalloc(s->again_cap, sizeof(uint32_t))) == NULL ||
        (s->fed_to = xmalloc((size_t)s->pieces * sizeof(int16_t))) == NULL ||
        (s->bad = xcalloc(s->pieces, 1)) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    for (uint32_t p = 0; p < s->pieces; p++)
        s->fed_to[p] = -1;
    snprintf(s->adopt, sizeof(s->adopt), "%s/%s%s%s", SWARM_STAGE_DIR,
        s->job.id, s->single ? "" : "/", s->single ? "" : SWARM_CONTENT);
    for (i = 0; i < s->n && r == 0; i++) {
        if (s->b[i].st != SB_LISTED)
            continue;
        r = swarm_ca_issue(ca, "*", &s->certs[i], &s->cert_len[i],
            &s->keys[i], &s->key_len[i]);
        if (r == 0)
            r = swarm_go(s, i);
    }
out:
    swarm_ca_free(ca);
    return r;
}

void
swarm_step(struct swarm *s)
{
    swarm_start_all(s);
    swarm_feed(s);
}

void
swarm_test_probe(struct swarm *s, double probe_s)
{
    s->probe_s = probe_s;
}

const uint8_t *
swarm_test_out(struct swarm *s, int box, size_t *len)
{
    struct sbox *b = &s->b[box];
    const uint8_t *p = b->out + b->outoff;

    *len = b->outlen - b->outoff;
    b->outoff = b->outlen;
    return p;
}

int
swarm_test_failed(const struct swarm *s, int box)
{
    return s->b[box].st == SB_FAILED;
}

uint32_t
swarm_test_pieces(const struct swarm *s)
{
    return s->pieces;
}

/* Runs the rounds until test(s) no longer holds, a box times out of a
 * phase, the swarm stalls or a signal comes. */
static void
swarm_rounds(struct swarm *s, int (*test)(const struct swarm *))
{
    while (*s->stop == 0 && test(s)) {
        double t = swarm_now();
        int n;

        for (int i = 0; i < s->n; i++)
            if (s->b[i].st < SB_STARTED && t - s->b[i].since > SWARM_LINK_S)
                swarm_lose(s, i, "its helper did not start in time");
        if (s->t != NULL) {
            swarm_start_all(s);
            swarm_feed(s);
            if (swarm_all_at(s, SB_STARTED, &n) &&
                t - s->moved_at > SWARM_STALL_S) {
                swarm_note(s, "swarm: nothing moved for %d s: what the "
                    "boxes lack goes to them directly", SWARM_STALL_S);
                return;
            }
        }
        swarm_poll(s, 200);
    }
}

static int
swarm_listing(const struct swarm *s)
{
    int n;

    return !swarm_all_at(s, SB_LISTED, &n);
}

/* Tells every box still in to stop, and waits (bounded). */
static void
swarm_stop_all(struct swarm *s)
{
    int i, stopping;

    for (i = 0; i < s->n; i++)
        if (s->b[i].st < SB_STOPPING && s->b[i].sock >= 0) {
            if (s->b[i].st < SB_STARTED) {
                swarm_lose(s, i, *s->stop ? "interrupted" :
                    "its helper did not start");
            } else if (swarm_send(&s->b[i], "stop") == 0) {
                s->b[i].st = SB_STOPPING;
                s->b[i].since = swarm_now();
            }
        }
    do {
        double t = swarm_now();

        stopping = 0;
        for (i = 0; i < s->n; i++)
            if (s->b[i].st == SB_STOPPING) {
                if (t - s->b[i].since > SWARM_STOP_S)
                    swarm_lose(s, i, "its helper did not stop");
                else
                    stopping = 1;
            }
        if (stopping)
            swarm_poll(s, 200);
    } while (stopping);
}

struct swarm *
swarm_new(struct cli *cli, volatile sig_atomic_t *stop)
{
    struct swarm *s;
    int i, n = cli->nboxes;

    if ((s = xcalloc(1, sizeof(*s))) == NULL)
        return NULL;
    s->cli = cli;
    s->n = n;
    s->stop = stop;
    s->t0 = swarm_now();
    s->probe_s = SWARM_PROBE_S;
    if ((s->b = xcalloc((size_t)n, sizeof(*s->b))) == NULL ||
        (s->certs = xcalloc((size_t)n, sizeof(char *))) == NULL ||
        (s->keys = xcalloc((size_t)n, sizeof(char *))) == NULL ||
        (s->cert_len = xcalloc((size_t)n, sizeof(size_t))) == NULL ||
        (s->key_len = xcalloc((size_t)n, sizeof(size_t))) == NULL)
        goto none;
    for (i = 0; i < n; i++)
        s->b[i].sock = -1;
    if (swarm_helper(s) != 0) {
        swarm_note(s, "the boxes do not share: this ferry has no swarm "
            "helper (bin/ferry-swarm)");
        goto none;
    }
    if (swarm_scan(s) != 0 || s->bytes < SWARM_MIN_BYTES)
        goto none;          /* each box's transfer reports a scan error */
    for (i = 0; i < n; i++)
        if ((s->b[i].cur = xcalloc(s->nfiles + 1, 1)) == NULL)
            goto none;
    return s;
none:
    swarm_free(s);
    return NULL;
}

struct swarm *
swarm_spread(struct cli *cli, volatile sig_atomic_t *stop)
{
    struct swarm *s;
    const char *why = swarm_unfit(cli);
    uint64_t down = 0;
    int i, r = 0, n = cli->nboxes, held = 0, live = 0;

    if (why != NULL) {
        if (why[0] != '\0' && !cli->quiet && !cli->json)
            fprintf(stderr, "ferry: the boxes do not share: %s\n", why);
        return NULL;
    }
    if ((s = swarm_new(cli, stop)) == NULL)
        return NULL;
    for (i = 0; i < n; i++)
        if ((r = swarm_fork_link(s, i, 0)) != 0)
            swarm_lose(s, i, ferry_strerror(r));
    swarm_rounds(s, swarm_listing);
    if (*stop != 0 || (r = swarm_prepare(s)) != 0 || s->t == NULL) {
        if (r != 0)
            swarm_note(s, "the boxes do not share: making the torrent: %s",
                ferry_strerror(r));
        goto none;
    }
    swarm_note(s, "spreading %.1f MiB among %d boxes: each piece crosses "
        "the uplink once", (double)s->bytes / 1048576.0, n);
    s->moved_at = swarm_now();
    swarm_rounds(s, swarm_busy);
    swarm_stop_all(s);
    for (i = 0; i < n; i++) {
        held += s->b[i].whole;
        live += s->b[i].made;
        down += s->b[i].down;
    }
    swarm_note(s, "swarm: %d of %d boxes hold what they lacked (%.1f MiB "
        "over the uplink, %.1f MiB between the boxes) in %.1f s", held, n,
        (double)s->put_bytes / 1048576.0, (double)down / 1048576.0,
        swarm_now() - s->t0);
    /* Kept while some box may hold a staging folder: swarm_end removes
     * it once that box's transfer succeeds. */
    if (live == 0)
        goto none;
    return s;
none:
    swarm_end(s, NULL);
    return NULL;
}

int
swarm_hash_hint(void *ctx, const char *rel, uint64_t size,
    int64_t mtime_sec, uint32_t mtime_nsec, struct hash128 *out)
{
    const struct swarm *s = ctx;
    const struct mentry *e;
    ssize_t k = swarm_file_of(s, rel);

    if (k >= 0 && s->files[k].hashed) {
        e = manifest_entry(&s->mf, s->files[k].id);
        if (e->size == size && e->mtime_sec == mtime_sec &&
            e->mtime_nsec == mtime_nsec) {
            *out = s->files[k].hash;
            return 0;
        }
        /* Changed since: its staged copy is not it. */
        return FERRY_ERR_CHANGED;
    }
    /* Not in the torrent: no box holds a staged copy of it (--checksum
     * still compares every file by content). */
    return s->cli->checksum ? FERRY_ERR_STATE : 1;
}

const char *
swarm_adopt_dir(const struct swarm *s, int box)
{
    /* A box that gathered nothing has nothing to adopt. */
    if (s == NULL || box < 0 || box >= s->n || !s->b[box].staged ||
        (!s->b[box].whole && s->b[box].have == 0))
        return NULL;
    return s->adopt;
}

void
swarm_forget(struct swarm *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->n; i++)
        if (s->b[i].sock >= 0) {
            close(s->b[i].sock);
            s->b[i].sock = -1;
        }
}

void
swarm_end(struct swarm *s, const int *codes)
{
    double t0 = swarm_now();
    int i, waiting;

    if (s == NULL)
        return;
    for (i = 0; i < s->n; i++) {
        struct sbox *b = &s->b[i];
        int clean = codes != NULL && codes[i] == 0 && b->made;

        if (b->sock >= 0 && clean && b->st == SB_ENDED) {
            b->outlen = b->outoff = 0;
            (void)fcntl(b->sock, F_SETFL, fcntl(b->sock, F_GETFL) &
                ~O_NONBLOCK);
            (void)!write(b->sock, "clean\n", 6);
            continue;
        }
        if (b->sock >= 0) {
            close(b->sock);
            b->sock = -1;
        }
        if (b->pid > 0) {
            kill(b->pid, SIGTERM);
            (void)waitpid(b->pid, NULL, 0);
            b->pid = 0;
        }
        /* A box left out of the swarm after its folder was made: a
         * login of its own removes it. */
        if (clean && swarm_fork_link(s, i, 1) != 0)
            b->sock = -1;
    }
    /* Each link says `cleaned` and ends; bounded. */
    do {
        waiting = 0;
        for (i = 0; i < s->n; i++) {
            struct sbox *b = &s->b[i];
            struct pollfd p = { .fd = b->sock, .events = POLLIN };
            char buf[256];

            if (b->sock < 0)
                continue;
            waiting = 1;
            if (poll(&p, 1, 50) > 0 && read(b->sock, buf, sizeof(buf)) > 0)
                continue;
            if (p.revents != 0) {
                close(b->sock);
                b->sock = -1;
            }
        }
    } while (waiting && swarm_now() - t0 < SWARM_STOP_S);
    for (i = 0; i < s->n; i++)
        if (s->b[i].pid > 0) {
            kill(s->b[i].pid, SIGTERM);
            (void)waitpid(s->b[i].pid, NULL, 0);
        }
    swarm_free(s);
}
