/*
 * boxes.c: many boxes, one transfer each (boxes.h). The parent forks a
 * child per box, at most --boxes-at-once at a time; each child's stdout
 * and stderr come back through pipes, so that every line can be put out
 * whole and named by its box, and its summary's counts through memory
 * the two share. boxes_report.c prints the end.
 */
#include "boxes.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/text.h"
#include "boxes_int.h"
#include "exitcode.h"
#include "swarm.h"

/* The signal that stops the boxes (0: none yet); written by the handler
 * only. */
static volatile sig_atomic_t boxes_stop_sig;
/* It came from kill(2), not from the terminal: the children did not get
 * it too. */
static volatile sig_atomic_t boxes_stop_sent;

static void
boxes_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    boxes_stop_sig = sig;
    if (si != NULL && si->si_code <= 0)
        boxes_stop_sent = 1;
}

int
boxes_status(const int *codes, int n, int interrupted)
{
    int i;

    if (interrupted)
        return EXIT_INTERRUPTED;
    for (i = 0; i < n; i++)
        if (codes[i] != EXIT_OK)
            return EXIT_BOXES;
    return EXIT_OK;
}

/* The child's line on stderr, named by its box: "ferry: box1: ...". A
 * line that names the box already (its fatal error, "box1:/ws: ...")
 * stays as it is. */
static void
boxes_err_line(void *ctx, const char *line)
{
    struct boxes_slot *s = ctx;
    const char *label = s->label, *rest = line;
    size_t ll = strlen(label);

    boxes_progress_clear(s->br);
    if (strncmp(line, "ferry: ", 7) == 0)
        rest = line + 7;
    if (strncmp(rest, label, ll) == 0 && (rest[ll] == ':' ||
        rest[ll] == ' ' || rest[ll] == '\0'))
        fprintf(stderr, "ferry: %s\n", rest);
    else
        fprintf(stderr, "ferry: %s: %s\n", label, rest);
}

/* A whole line of the child's stdout, in one or two pieces: a JSON event
 * names its box itself (output_box) and goes on as it is; other lines
 * (a dry run's) are named here. */
static void
boxes_out_line(struct boxes_slot *s, const char *a, size_t alen,
    const char *b, size_t blen)
{
    boxes_progress_clear(s->br);
    if (!s->json)
        fprintf(stdout, "%s: ", s->label);
    fwrite(a, 1, alen, stdout);
    fwrite(b, 1, blen, stdout);
    fputc('\n', stdout);
}

/* Feeds n bytes of the child's stdout: out in whole lines. A line is
 * kept until its end up to BOXES_LINE_MAX (a JSON event holds a few
 * paths at most); past that it goes out in pieces. */
static void
boxes_out_feed(struct boxes_slot *s, const char *p, size_t n)
{
    const char *nl;
    size_t k, want;
    char *grown;

    while (n > 0) {
        nl = memchr(p, '\n', n);
        k = nl != NULL ? (size_t)(nl - p) : n;
        /* Doubled only when it must grow: a line split across reads,
         * as most are, must not double it again each time. */
        want = s->len + k;
        if (want > s->cap && want < 2 * s->cap)
            want = 2 * s->cap;
        if (s->len == 0 && nl != NULL) {
            boxes_out_line(s, p, k, "", 0);
        } else if (s->len + k <= BOXES_LINE_MAX && (grown = xroom(s->line,
            &s->cap, want)) != NULL) {
            s->line = grown;
            memcpy(s->line + s->len, p, k);
            s->len += k;
            if (nl != NULL) {
                boxes_out_line(s, s->line, s->len, "", 0);
                s->len = 0;
            }
        } else {
            boxes_out_line(s, s->line, s->len, p, k);
            s->len = 0;
        }
        n -= k + (nl != NULL);
        p += k + (nl != NULL);
    }
    fflush(stdout);
}

/* In the child: cli becomes its box's own command line, and the output
 * names the box. */
static void
boxes_child(struct cli *cli, struct boxes_run *br, int box, int out, int err)
{
    struct cli_box *b = &cli->boxes[box];
    int i, code;

    for (i = 0; i < br->nslots; i++) {
        if (br->slots[i].out >= 0)
            close(br->slots[i].out);
        if (br->slots[i].err >= 0)
            close(br->slots[i].err);
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
        _exit(EXIT_USAGE);
    close(out);
    close(err);
    output_box(b->label, &br->tally[box]);
    cli->remote = b->remote;
    swarm_forget(br->swarm);
    if (cli->adopt == NULL && swarm_adopt_dir(br->swarm, box) != NULL) {
        if ((cli->adopt = xstrdup(swarm_adopt_dir(br->swarm, box))) == NULL)
            _exit(EXIT_USAGE);
        /* Its helper may seed on from the staged names. */
        cli->adopt_keep = 1;
        cli->hash_hint = swarm_hash_hint;
        cli->hash_hint_ctx = br->swarm;
    }
    if (cli->cmd == CMD_PULL) {
        cli->remote_paths = b->paths;
        cli->nremote = b->npaths;
        cli->local_paths[0] = br->dests[box];
    }
    /* Lines of many boxes' progress would interleave: each box keeps
     * its figures in the tally (output_box) and the parent draws one
     * line for all. */
    cli->progress = br->progress;
    cli->boxes = NULL;
    cli->nboxes = 0;
    /* exit, as main's return would: stdio flushed, atexit run (the
     * wipe of a typed passphrase). */
    code = br->one(cli);
    exit(code);
}

/* Starts box's child in a free slot. Returns 0, or -errno when it could
 * not (the box is then reported as failed). */
static int
boxes_start(struct cli *cli, struct boxes_run *br, int box)
{
    struct boxes_slot *s = NULL;
    int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, i, r;
    pid_t pid;

    for (i = 0; i < br->nslots; i++)
        if (br->slots[i].pid == 0 && br->slots[i].out < 0 &&
            br->slots[i].err < 0)
            s = &br->slots[i];
    if (s == NULL)
        return -EAGAIN;
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
        r = -errno;
        goto fail;
    }
    fflush(NULL);
    if ((pid = fork()) < 0) {
        r = -errno;
        goto fail;
    }
    if (pid == 0) {
        close(po[0]);
        close(pe[0]);
        boxes_child(cli, br, box, po[1], pe[1]);
    }
    close(po[1]);
    close(pe[1]);
    s->pid = pid;
    s->box = box;
    s->out = po[0];
    s->err = pe[0];
    s->label = cli->boxes[box].label;
    s->json = cli->json;
    s->br = br;
    s->len = 0;
    memset(&s->errl, 0, sizeof(s->errl));
    s->errl.emit = boxes_err_line;
    s->errl.ctx = s;
    br->running++;
    return 0;
fail:
    for (i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    return r;
}

/* Reads what is there from fd (one of s's); closes it at its end. */
static void
boxes_read(struct boxes_slot *s, int *fd)
{
    char buf[16384];
    ssize_t n;

    n = read(*fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        if (fd == &s->err)
            text_lines_flush(&s->errl);
        else if (s->len > 0) {
            boxes_out_line(s, s->line, s->len, "", 0);
            s->len = 0;
        }
        close(*fd);
        *fd = -1;
        fflush(stdout);
        return;
    }
    if (fd == &s->err)
        text_lines_feed(&s->errl, buf, (size_t)n);
    else
        boxes_out_feed(s, buf, (size_t)n);
}

/* The child of s ended with status st: its box's exit status. */
static void
boxes_reaped(struct boxes_run *br, struct boxes_slot *s, int st)
{
    int code;

    if (WIFEXITED(st))
        code = WEXITSTATUS(st);
    else if (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM)
        code = EXIT_INTERRUPTED;
    else {
        code = EXIT_CONNECT;
        snprintf(br->tally[s->box].error, sizeof(br->tally[s->box].error),
            "its transfer ended by signal %d", WTERMSIG(st));
    }
    br->codes[s->box] = code;
    br->running--;
    s->pid = 0;
    /* A grandchild (the ssh program) may hold the pipes open a while:
     * what is left is read now, and the rest is not waited for. */
    while (s->out >= 0 || s->err >= 0) {
        struct pollfd p[2];
        int k = 0;

        if (s->out >= 0)
            p[k++] = (struct pollfd){ .fd = s->out, .events = POLLIN };
        if (s->err >= 0)
            p[k++] = (struct pollfd){ .fd = s->err, .events = POLLIN };
        if (poll(p, (nfds_t)k, 200) <= 0)
            break;
        if (s->out >= 0 && p[0].revents != 0)
            boxes_read(s, &s->out);
        else if (s->err >= 0)
            boxes_read(s, &s->err);
    }
    if (s->out >= 0) {
        if (s->len > 0)
            boxes_out_line(s, s->line, s->len, "", 0);
        s->len = 0;
        close(s->out);
        s->out = -1;
        fflush(stdout);
    }
    if (s->err >= 0) {
        text_lines_flush(&s->errl);
        close(s->err);
        s->err = -1;
    }
    boxes_report_box(br, s->box);
}

/* Waits for output, an ended child or the swarm's links, for at most
 * 200 ms; then the swarm takes its round. */
static void
boxes_wait(struct boxes_run *br)
{
    struct pollfd p[2 * BOXES_SLOTS_MAX + CLI_MAX_BOXES];
    struct boxes_slot *who[2 * BOXES_SLOTS_MAX];
    int *fds[2 * BOXES_SLOTS_MAX];
    int i, n = 0, ns, st;
    pid_t pid;

    for (i = 0; i < br->nslots; i++) {
        struct boxes_slot *s = &br->slots[i];

        if (s->out >= 0) {
            p[n] = (struct pollfd){ .fd = s->out, .events = POLLIN };
            who[n] = s;
            fds[n++] = &s->out;
        }
        if (s->err >= 0) {
            p[n] = (struct pollfd){ .fd = s->err, .events = POLLIN };
            who[n] = s;
            fds[n++] = &s->err;
        }
    }
    ns = swarm_pollfds(br->swarm, p + n);
    if (poll(p, (nfds_t)(n + ns), 200) > 0)
        for (i = 0; i < n; i++)
            if (p[i].revents != 0)
                boxes_read(who[i], fds[i]);
    swarm_tick(br->swarm, p + n, ns);
    /* Each slot's child by its pid: the swarm's links are children too,
     * and are its to reap. */
    for (i = 0; i < br->nslots; i++)
        if (br->slots[i].pid > 0 &&
            (pid = waitpid(br->slots[i].pid, &st, WNOHANG)) > 0)
            boxes_reaped(br, &br->slots[i], st);
}

/* A pull's DEST is made here, by the rule of one box's (its last
 * component, its parents with --mkpath: each box makes DEST/HOST), and
 * each box's destination is DEST/HOST. Returns 0 or an exit status. */
static int
boxes_pull_dests(struct cli *cli, struct boxes_run *br)
{
    const char *dest = cli->local_paths[0];
    size_t len = strlen(dest);
    int i, trail = len > 0 && dest[len - 1] == '/';
    char msg[600];

    if (!cli->dry_run && !cli->mkpath && mkdir(dest, 0777) != 0 &&
        errno != EEXIST) {
        int e = errno;

        snprintf(msg, sizeof(msg), "%s: %s%s", dest, strerror(e),
            e == ENOENT ? " (its parent is missing; --mkpath makes it)" :
            "");
        return output_fatal_early(cli->json, cli->quiet, NULL, -e, msg,
            EXIT_DEST);
    }
    for (i = 0; i < cli->nboxes; i++) {
        size_t n = len + strlen(cli->boxes[i].label) + 2;

        if ((br->dests[i] = xmalloc(n)) == NULL)
            return EXIT_USAGE;
        snprintf(br->dests[i], n, "%s%s%s", dest, trail ? "" : "/",
            cli->boxes[i].label);
    }
    return 0;
}

/* Sends sig to every child still running. */
static void
boxes_kill(struct boxes_run *br, int sig)
{
    int i;

    for (i = 0; i < br->nslots; i++)
        if (br->slots[i].pid > 0)
            kill(br->slots[i].pid, sig);
}

/* The swarm is about to say a line: the progress line goes first. */
static void
boxes_clear_line(void *ctx)
{
    boxes_progress_clear(ctx);
}

/* The next box whose transfer may start (in order, as the swarm lets
 * them), or -1. */
static int
boxes_next(const struct boxes_run *br)
{
    for (int i = 0; i < br->nboxes; i++)
        if (!br->begun[i] && swarm_ready(br->swarm, i))
            return i;
    return -1;
}

int
boxes_main(struct cli *cli, boxes_one_fn *one)
{
    struct boxes_run br;
    struct sigaction sa, old_int, old_term;
    size_t shared;
    int i, r, next, code = EXIT_USAGE, forwarded = 0;

    memset(&br, 0, sizeof(br));
    br.cli = cli;
    br.one = one;
    br.nboxes = cli->nboxes;
    br.nslots = cli->boxes_at_once > 0 ? cli->boxes_at_once :
        CLI_BOXES_AT_ONCE;
    if (br.nslots > cli->nboxes)
        br.nslots = cli->nboxes;
    if (br.nslots > BOXES_SLOTS_MAX)
        br.nslots = BOXES_SLOTS_MAX;
    br.t0 = br.drawn_at = boxes_now();
    br.progress = !cli->quiet && !cli->json && (cli->progress == 1 ||
        (cli->progress == -1 && isatty(STDERR_FILENO)));
    shared = (size_t)cli->nboxes * sizeof(*br.tally);
    br.tally = mmap(NULL, shared, PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (br.tally == MAP_FAILED ||
        (br.codes = xcalloc((size_t)cli->nboxes, sizeof(int))) == NULL ||
        (br.dests = xcalloc((size_t)cli->nboxes, sizeof(char *))) == NULL ||
        (br.begun = xcalloc((size_t)cli->nboxes, 1)) == NULL ||
        (br.slots = xcalloc((size_t)br.nslots, sizeof(*br.slots))) == NULL) {
        if (br.tally == MAP_FAILED)
            br.tally = NULL;
        code = output_fatal_early(cli->json, cli->quiet, NULL,
            FERRY_ERR_NOMEM, "out of memory", EXIT_USAGE);
        goto out;
    }
    for (i = 0; i < br.nslots; i++)
        br.slots[i].out = br.slots[i].err = -1;
    for (i = 0; i < cli->nboxes; i++)
        br.codes[i] = -1;
    if (cli->cmd == CMD_PULL && (code = boxes_pull_dests(cli, &br)) != 0)
        goto out;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = boxes_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    /* A push spreads its bytes among the boxes first, in this loop: a
     * box's transfer starts once its helper holds what it lacked (its
     * staged files, swarm.h), while the swarm goes on for the others. */
    br.swarm = swarm_begin(cli, &boxes_stop_sig);
    swarm_before_note(br.swarm, boxes_clear_line, &br);
    while (br.nbegun < cli->nboxes || br.running > 0 ||
        swarm_running(br.swarm)) {
        if (boxes_stop_sig != 0 && !forwarded) {
            /* A Ctrl-C reached the children from the terminal; a signal
             * sent to this process alone is passed on, once (a second
             * one ends a child at once). */
            if (boxes_stop_sig == SIGTERM || boxes_stop_sent)
                boxes_kill(&br, boxes_stop_sig);
            forwarded = 1;
        }
        while (boxes_stop_sig == 0 && br.running < br.nslots &&
            (next = boxes_next(&br)) >= 0) {
            br.begun[next] = 1;
            br.nbegun++;
            if ((r = boxes_start(cli, &br, next)) != 0) {
                br.codes[next] = EXIT_USAGE;
                snprintf(br.tally[next].error, sizeof(br.tally[next].error),
                    "could not start its transfer: %s", strerror(-r));
                boxes_report_box(&br, next);
            }
        }
        if (boxes_stop_sig != 0 && br.nbegun < cli->nboxes) {
            /* Boxes not begun are not begun. */
            for (i = 0; i < cli->nboxes; i++) {
                if (br.begun[i])
                    continue;
                br.begun[i] = 1;
                br.nbegun++;
                br.codes[i] = EXIT_INTERRUPTED;
                snprintf(br.tally[i].error, sizeof(br.tally[i].error),
                    "interrupted before it began");
                boxes_report_box(&br, i);
            }
        }
        if (br.running > 0 || swarm_running(br.swarm))
            boxes_wait(&br);
        if (br.progress)
            boxes_progress(&br);
    }
    boxes_progress_clear(&br);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    swarm_end(br.swarm, br.codes);
    code = boxes_status(br.codes, cli->nboxes, boxes_stop_sig != 0);
    boxes_report_end(&br, code);
out:
    for (i = 0; br.slots != NULL && i < br.nslots; i++)
        xfree(br.slots[i].line);
    for (i = 0; br.dests != NULL && i < cli->nboxes; i++)
        xfree(br.dests[i]);
    xfree(br.slots);
    xfree(br.begun);
    xfree(br.dests);
    xfree(br.codes);
    if (br.tally != NULL)
        munmap(br.tally, shared);
    return code;
}

double
boxes_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
