/*
 * space.h: the space check before a transfer: the files it will write
 * must leave --margin percent (20 by default) of the destination's file
 * system free, or the transfer is refused before any data moves, with
 * what it needs, what is free and the margin; --force goes on anyway.
 *
 * The agent says how much is free at a push's destination (SPACE, after
 * OPEN_OK), and what a pull offers; a pull's free space is measured here.
 * The first check counts every file offered. Only when that does not fit
 * are the trees compared (as --dry-run does, mirror.h), while the run's
 * session waits at SPACE: the files already up to date are left out of
 * what is needed, and of each file to send, what an earlier run kept of
 * it in the destination's state directory (a resume writes only the
 * rest). The same run then goes on or stops: a push is scanned and logs
 * in once, whatever the comparison finds.
 *
 * A run is checked once, at its first attempt: what it writes after that
 * is part of what the check counted, so a reconnect finds less free space
 * by as much and is not checked again.
 */
#ifndef FERRY_CLIENT_SPACE_H
#define FERRY_CLIENT_SPACE_H

#include <stdatomic.h>
#include <stdint.h>

#include "cli.h"
#include "run.h"

#define SPACE_DEFAULT_MARGIN 20

struct manifest;
struct space_check;

/* The comparison of the trees: the bytes the transfer would really
 * write into *need. Returns an exit status (it reported why). */
typedef int space_compare_fn(const struct space_check *sc, uint64_t *need);

/* One run's check: made by space_check_init, read by space_on_report
 * in the run's session, read by the caller after the run. */
struct space_check {
    const struct cli *cli;
    struct run_opts opts;       /* what the run moves */
    space_compare_fn *compare;
    /* A push: its scan, for the comparison (set before the session). */
    const struct manifest *src;
    uint64_t need;      /* push: bytes offered; then, if the trees were
                         * compared, what they need */
    /* read-only after the run */
    int checked;        /* an attempt of this run was checked already */
    int compared;       /* the trees were compared */
    atomic_int comparing;  /* ... now: the run's stall watch waits */
    int stop;           /* the check ended the run: code says how */
    int code;           /* EXIT_DEST (no room) or the comparison's status */
    uint64_t avail, size;
};

/* A check of cli's transfer of o (NULL: the command line's) that
 * compares the trees with compare (NULL: space_compare_trees). */
void space_check_init(struct space_check *sc, const struct cli *cli,
    const struct run_opts *o, space_compare_fn *compare);

/* The comparison as a dry run makes it (mirror_space_need). */
int space_compare_trees(const struct space_check *sc, uint64_t *need);

/* 1 if writing need bytes onto a file system of size bytes with avail
 * free leaves at least margin percent of it free. (Inline: the unit
 * tests take it without the rest of the client.) */
static inline int
space_fits(uint64_t need, uint64_t avail, uint64_t size, unsigned margin)
{
    if (need > avail)
        return 0;
    return (unsigned __int128)(avail - need) * 100 >=
        (unsigned __int128)size * margin;
}

/* The free and total bytes of the file system of path, or of its
 * nearest existing parent. */
int space_local(const char *path, uint64_t *avail, uint64_t *size)
    FERRY_WUR;

/* The session's SPACE callback (engine/session.h); ctx: a space_check.
 * Returns 0 to go on (it fits, or --force, or a later attempt), else an
 * error with stop and code set: the run ends before any data moved,
 * saying nothing, and the caller says why. */
int space_on_report(void *ctx, uint64_t avail, uint64_t size,
    uint64_t offered);

/* Runs the command's push or pull of o (NULL: the command line's) with
 * the check (unless --force). Returns an exit status. */
int space_transfer(const struct cli *cli, const struct run_opts *o);

#endif
