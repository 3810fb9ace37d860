/*
 * swarm_run.c: a swarm's course beside the boxes' transfers (swarm.h).
 * swarm_begin forks a link per box (swarm_link.c) and waits, bounded,
 * until every box has listed its destination; then it makes the torrent
 * and returns. From there the boxes' loop (boxes.c) polls the links with
 * its children's pipes and steps the swarm after each poll: pieces go
 * out, and a box whose helper is done may start its transfer while the
 * swarm goes on for the others; its helper seeds on until every box is
 * done, nothing moved for SWARM_STALL_S, or a signal came. Then every
 * helper is told to stop (bounded), the boxes still waiting start, and
 * once all transfers are over swarm_end cleans the staging folders of
 * the boxes that succeeded.
 */
#include "swarm_cond.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/log.h"

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

/* What poll found for the links, p[i] box i's: written, then read. */
static void
swarm_io(struct swarm *s, const struct pollfd *p)
{
    for (int i = 0; i < s->n; i++) {
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

int
swarm_pollfds(const struct swarm *s, struct pollfd *p)
{
    if (s == NULL || s->phase == SW_OVER)
        return 0;
    for (int i = 0; i < s->n; i++) {
        const struct sbox *b = &s->b[i];

        p[i].fd = b->sock;
        p[i].events = b->sock >= 0 ? POLLIN : 0;
        if (b->sock >= 0 && b->outlen > b->outoff)
            p[i].events |= POLLOUT;
        p[i].revents = 0;
    }
    return s->n;
}

/* The links' round alone, at most wait_ms (while they list). */
static void
swarm_poll(struct swarm *s, int wait_ms)
{
    struct pollfd p[CLI_MAX_BOXES];
    int n = swarm_pollfds(s, p);

    if (poll(p, (nfds_t)n, wait_ms) > 0)
        swarm_io(s, p);
}

/* Forks box i's link. */
int
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

/* A box that has not started its helper in time leaves. */
static void
swarm_late(struct swarm *s)
{
    double t = swarm_now();

    for (int i = 0; i < s->n; i++)
        if (s->b[i].st < SB_STARTED && t - s->b[i].since > SWARM_LINK_S)
            swarm_lose(s, i, "its helper did not start in time");
}

/* Rounds until every box still in has listed its destination (or a
 * signal). */
static void
swarm_listing(struct swarm *s)
{
    int n;

    while (*s->stop == 0 && !swarm_all_at(s, SB_LISTED, &n)) {
        swarm_late(s);
        swarm_poll(s, 200);
    }
}

/* Tells every helper still in to stop; swarm_advance waits for them
 * (bounded). */
static void
swarm_stop_all(struct swarm *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->b[i].st < SB_STOPPING) {
            if (s->b[i].st < SB_STARTED) {
                swarm_lose(s, i, *s->stop ? "interrupted" :
                    "its helper did not start");
            } else if (swarm_send(&s->b[i], "stop") == 0) {
                s->b[i].st = SB_STOPPING;
                s->b[i].since = swarm_now();
            }
        }
    s->phase = SW_STOPPING;
}

/* Every helper stopped or left: what the swarm did. */
static void
swarm_over(struct swarm *s)
{
    uint64_t down = 0;
    int i, held = 0;

    s->phase = SW_OVER;
    for (i = 0; i < s->n; i++) {
        held += s->b[i].whole;
        down += s->b[i].down;
    }
    swarm_note(s, "swarm: %d of %d boxes hold what they lacked (%.1f MiB "
        "over the uplink, %.1f MiB between the boxes) in %.1f s", held, s->n,
        (double)s->put_bytes / 1048576.0, (double)down / 1048576.0,
        swarm_now() - s->t0);
}

/* After each round: starts and feeds the boxes, and ends the swarm when
 * every box is done, nothing moved for SWARM_STALL_S or a signal came;
 * then waits for the helpers to stop, each for SWARM_STOP_S at most. */
static void
swarm_advance(struct swarm *s)
{
    double t = swarm_now();
    int i, n, stopping = 0;

    if (s->phase == SW_SPREADING) {
        swarm_late(s);
        swarm_start_all(s);
        swarm_feed(s);
        if (*s->stop != 0 || !swarm_busy(s)) {
            swarm_stop_all(s);
        } else if (swarm_all_at(s, SB_STARTED, &n) &&
            t - s->moved_at > SWARM_STALL_S) {
            swarm_warn(s, -1, "swarm: nothing moved for %d s: what the "
                "boxes lack goes to them directly", SWARM_STALL_S);
            swarm_stop_all(s);
        }
    }
    if (s->phase != SW_STOPPING)
        return;
    for (i = 0; i < s->n; i++)
        if (s->b[i].st == SB_STOPPING) {
            if (t - s->b[i].since > SWARM_STOP_S)
                swarm_lose(s, i, "its helper did not stop");
            else
                stopping = 1;
        }
    if (!stopping)
        swarm_over(s);
}

void
swarm_tick(struct swarm *s, const struct pollfd *p, int n)
{
    if (s == NULL || s->phase == SW_OVER)
        return;
    if (n == s->n)
        swarm_io(s, p);
    swarm_advance(s);
}

void
swarm_step(struct swarm *s)
{
    swarm_advance(s);
}

int
swarm_ready(const struct swarm *s, int box)
{
    const struct sbox *b;

    if (s == NULL || s->phase == SW_OVER)
        return 1;
    b = &s->b[box];
    /* Done: what it is to adopt is whole, and its helper only seeds from
     * it (the transfer keeps the staged names, OPEN_F_ADOPT_KEEP). Left
     * before that: its helper, which may still be writing, ends at the
     * end of its input, within SWARM_STOP_S; the transfer's one sync of
     * the staged data must come after its last write. */
    return s->phase != SW_LISTING && (b->whole || (b->st == SB_FAILED &&
        (!b->staged || swarm_now() - b->since > SWARM_STOP_S)));
}

void
swarm_before_note(struct swarm *s, void (*fn)(void *), void *ctx)
{
    if (s == NULL)
        return;
    s->before_note = fn;
    s->note_ctx = ctx;
}

int
swarm_running(const struct swarm *s)
{
    return s != NULL && s->phase != SW_OVER;
}

struct swarm *
swarm_begin(struct cli *cli, volatile sig_atomic_t *stop)
{
    struct swarm *s;
    const char *why = swarm_unfit(cli);
    int i, r = 0;

    if (why != NULL) {
        char msg[512];

        if (why[0] != '\0') {
            snprintf(msg, sizeof(msg), "the boxes do not share: %s", why);
            swarm_problem(cli, -1, msg);
        }
        return NULL;
    }
    if ((s = swarm_new(cli, stop)) == NULL)
        return NULL;
    for (i = 0; i < cli->nboxes; i++)
        if ((r = swarm_fork_link(s, i, 0)) != 0)
            swarm_lose(s, i, ferry_strerror(r));
    swarm_listing(s);
    if (*stop != 0 || (r = swarm_prepare(s)) != 0 || s->t == NULL) {
        if (r != 0)
            swarm_warn(s, -1, "the boxes do not share: making the "
                "torrent: %s", ferry_strerror(r));
        swarm_end(s, NULL);
        return NULL;
    }
    swarm_note(s, "spreading %.1f MiB among %d boxes: each piece crosses "
        "the uplink once", (double)s->bytes / 1048576.0, cli->nboxes);
    return s;
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
