/*
 * space.h: the space check before a transfer: the files it will write
 * must leave --margin percent (20 by default) of the destination's file
 * system free, or the transfer is refused before any data moves, with
 * what it needs, what is free and the margin; --force goes on anyway.
 *
 * The agent says how much is free at a push's destination (SPACE, after
 * OPEN_OK), and what a pull offers; a pull's free space is measured here.
 * The first check counts every file offered. Only when that does not fit
 * are the trees compared (as --dry-run does, mirror.h): the files already
 * up to date are left out of what is needed, and of each file to send,
 * what an earlier run kept of it in the destination's state directory
 * (a resume writes only the rest).
 *
 * A run is checked once, at its first attempt: what it writes after that
 * is part of what the check counted, so a reconnect finds less free space
 * by as much and is not checked again.
 */
#ifndef FERRY_CLIENT_SPACE_H
#define FERRY_CLIENT_SPACE_H

#include <stdint.h>

#include "cli.h"

#define SPACE_DEFAULT_MARGIN 20

struct space_check {
    const struct cli *cli;
    uint64_t need;      /* push: bytes offered (set before the run) */
    /* read-only after the run */
    int short_;         /* the offered bytes did not fit: check again */
    int passed;         /* an attempt of this run was checked already */
    uint64_t avail, size;
};

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
 * Returns 0 if the offered bytes fit, else -ENOSPC with short_ set. */
int space_on_report(void *ctx, uint64_t avail, uint64_t size,
    uint64_t offered);

/* Runs the command's push or pull with the check (unless --force).
 * Returns an exit status. */
int space_transfer(struct cli *cli);

#endif
