/*
 * swarm.c: the conductor of a push spread among many boxes (swarm.h):
 * its conversation with every box's helper, over that box's link
 * (swarm_link.c; docs/SWARM.md, the line protocol). It streams each
 * piece to one box: the next piece goes to the first box with room for
 * it, so a slow or lost box takes less and the others more. What the
 * swarm starts from is swarm_make.c's; its course beside the boxes'
 * transfers, swarm_run.c's.
 */
#include "swarm_cond.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/buf.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "output.h"

const char *const swarm_file_names[SWARM_FILES] = {
    "t.torrent", "box.crt", "box.key",
};

double
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

void FERRY_PRINTF(2, 3)
swarm_note(const struct swarm *s, const char *fmt, ...)
{
    va_list ap;

    if (swarm_quiet(s))
        return;
    if (s->before_note != NULL)
        s->before_note(s->note_ctx);
    fputs("ferry: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void
swarm_problem(const struct cli *cli, int box, const char *msg)
{
    struct buf b;
    int r;

    if (cli->json) {
        buf_init(&b, 1024);
        r = output_json_begin(&b, "warning");
        if (r == 0 && box >= 0)
            r = output_json_str(&b, "host", cli->boxes[box].label);
        if (r == 0)
            r = output_json_str(&b, "side", "dest");
        if (r == 0)
            r = output_json_str(&b, "code", "WARNING");
        if (r == 0)
            r = output_json_str(&b, "message", msg);
        output_json_line(&b, r);
    } else if (!cli->quiet) {
        fprintf(stderr, "ferry: %s%s%s\n", box >= 0 ?
            cli->boxes[box].label : "", box >= 0 ? ": " : "", msg);
    }
}

void FERRY_PRINTF(3, 4)
swarm_warn(const struct swarm *s, int box, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!swarm_quiet(s) && s->before_note != NULL)
        s->before_note(s->note_ctx);
    swarm_problem(s->cli, box, msg);
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
void
swarm_lose(struct swarm *s, int i, const char *why)
{
    struct sbox *b = &s->b[i];
    uint32_t p;

    if (b->st == SB_FAILED)
        return;
    if (b->st < SB_ENDED)
        swarm_warn(s, i, "swarm: %s; its data goes to it directly", why);
    b->st = SB_FAILED;
    b->since = swarm_now();
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

int FERRY_PRINTF(2, 3)
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

/* len bytes of source file k from off into dst; how many it had (a file
 * that shrank since the torrent has fewer). */
static size_t
swarm_read(struct swarm *s, size_t k, uint64_t off, uint8_t *dst, size_t len)
{
    size_t got = 0;
    int fd;

    if ((fd = manifest_open(&s->mf, s->files[k].id, FSX_O_READ)) < 0)
        return 0;
    if (fsx_pread_full(fd, dst, len, off, &got) != 0)
        got = 0;
    close(fd);
    return got;
}

/* A bundle's bytes from off: from each of its parts in turn. */
static void
swarm_read_bundle(struct swarm *s, const struct sfile *f, uint64_t off,
    uint8_t *dst, size_t len)
{
    size_t lo = f->part0, hi = f->part0 + f->nparts;

    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;

        if (s->parts[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    while (len > 0 && lo < f->part0 + f->nparts) {
        const struct spart *pt = &s->parts[lo++];
        uint64_t size = manifest_entry(&s->mf, s->files[pt->k].id)->size;
        size_t n = (size_t)(pt->off + size - off < len ?
            pt->off + size - off : len);
        size_t got = swarm_read(s, pt->k, off - pt->off, dst, n);

        memset(dst + got, 0, n - got);
        dst += n;
        off += n;
        len -= n;
    }
}

/* Queues `put P LEN` and the piece's bytes for b. */
static int
swarm_put(struct swarm *s, struct sbox *b, uint32_t p)
{
    const struct sfile *f = swarm_piece_file(s, p);
    uint64_t off = (uint64_t)(p - f->first) * s->piece_len;
    size_t len = (size_t)(f->len - off < s->piece_len ? f->len - off :
        s->piece_len), got;
    uint8_t *g;
    int r;

    if ((r = swarm_send(b, "put %" PRIu32 " %zu", p, len)) != 0)
        return r;
    if ((g = xroom(b->out, &b->outcap, b->outlen + len)) == NULL)
        return FERRY_ERR_NOMEM;
    b->out = g;
    g = b->out + b->outlen;
    /* A file that shrank since the torrent: zeros, which the helper's
     * hash refuses (`bad`); its transfer sends it as it is now. */
    if (f->k == SIZE_MAX) {
        swarm_read_bundle(s, f, off, g, len);
    } else {
        got = swarm_read(s, f->k, off, g, len);
        memset(g + got, 0, len - got);
    }
    b->outlen += len;
    b->inflight[b->ninflight++] = p;
    s->put_bytes += len;
    return 0;
}

/* Box b hashed `hashed` more pieces by now: its window, SWARM_WINDOW_MIN
 * more than it hashed in the last one to two SWARM_RATE_S, at most cap.
 * From the start it grows by one a piece hashed (doubling each round
 * trip); a box slow to receive keeps a small one, so the pieces only it
 * was put, which the others then fetch at its rate, are few. */
int
swarm_window(struct sbox *b, int cap, double now, uint32_t hashed)
{
    uint32_t w;

    if (now - b->rate_at >= 2 * SWARM_RATE_S) {
        b->hashed_prev = b->hashed_now = 0;
        b->rate_at = now;
    } else if (now - b->rate_at >= SWARM_RATE_S) {
        b->hashed_prev = b->hashed_now;
        b->hashed_now = 0;
        b->rate_at += SWARM_RATE_S;
    }
    b->hashed_now += hashed;
    w = SWARM_WINDOW_MIN + b->hashed_prev + b->hashed_now;
    return w > (uint32_t)cap ? cap : (int)w;
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
void
swarm_feed(struct swarm *s)
{
    uint32_t p;
    double now;
    int i, window;

    for (i = 0; i < s->n; i++)
        if (s->b[i].st < SB_STARTED)
            return;
    if (!s->probed)
        (void)swarm_probe(s);
    now = swarm_now();
    for (i = 0; i < s->n; i++) {
        struct sbox *b = &s->b[i];

        window = swarm_window(b, s->window, now, 0);
        /* While the probe runs, only a box that reached another takes
         * pieces: one that cannot pass them on would hold them alone. */
        while (b->st == SB_STARTED && b->ninflight < window &&
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
int
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
void
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
            s->moved_at = s->started_at = b->rate_at = swarm_now();
        }
    }
}

int
swarm_rel_cmp(const void *a, const void *b)
{
    return strcmp(((const struct swarm_rel *)a)->rel,
        ((const struct swarm_rel *)b)->rel);
}

/* The index in s->files of the file at rel, or -1. */
ssize_t
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

/* What box b holds of torrent file f: a source file held is linked
 * (`link`, served from where it is); a bundle whose every part is held
 * is made from them (`from`); of a bundle it lacks, which parts it is to
 * make once whole (`part`), those it holds being current already. */
static int
swarm_tell_held(struct swarm *s, struct sbox *b, const struct sfile *f)
{
    size_t j, end = f->part0 + f->nparts;
    int all = 1, r = 0;

    if (f->k != SIZE_MAX)
        return b->cur[f->k] && b->dest[0] == '/' ? swarm_send(b, "link %"
            PRIu32 " %s/%s", f->first, b->dest, s->files[f->k].rel) : 0;
    for (j = f->part0; j < end; j++)
        all &= b->cur[s->parts[j].k];
    all &= b->dest[0] == '/';
    for (j = f->part0; j < end && r == 0; j++) {
        const struct spart *pt = &s->parts[j];
        uint64_t size = manifest_entry(&s->mf, s->files[pt->k].id)->size;

        if (all)
            r = swarm_send(b, "from %" PRIu32 " %" PRIu64 " %" PRIu64
                " %s/%s", f->first, pt->off, size, b->dest,
                s->files[pt->k].rel);
        else if (!b->cur[pt->k])
            r = swarm_send(b, "part %" PRIu32 " %" PRIu64 " %" PRIu64
                " %s/%s", f->first, pt->off, size, SWARM_FILES_DIR,
                s->files[pt->k].rel);
    }
    return r;
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
            r = swarm_tell_held(s, b, &s->sf[k]);
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
        (void)swarm_window(b, s->window, swarm_now(), 1);
        if (line[0] == 'b') {
            if (!s->bad[p]) {
                s->bad[p] = 1;
                s->nbad++;
                swarm_warn(s, i, "swarm: piece %" PRIu32 " did not match "
                    "(a source changed?): its file goes directly", p);
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
        swarm_warn(s, i, "swarm: %s sent data that does not match the "
            "torrent: banned", w);
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

/* 1 while a box still in gathers. */
int
swarm_busy(const struct swarm *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->b[i].st < SB_DONE)
            return 1;
    return 0;
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
