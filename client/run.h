/*
 * run.h: one conversation with the remote side, from connecting (with
 * retries and the agent's upload) to the summary: a push or pull, or an
 * operation: one a command needs (a listing for --dry-run, deletions for
 * --delete; see mirror.h) or the command itself (status, clean: status.h).
 * The command line is only read; what one run moves is its run_opts.
 */
#ifndef FERRY_CLIENT_RUN_H
#define FERRY_CLIENT_RUN_H

#include <stdint.h>

#include "../engine/conn.h"
#include "../engine/filter.h"
#include "cli.h"
#include "output.h"

/* An operation other than a transfer: one a command needs (a listing,
 * deletions), or the command itself (status, clean). */
struct run_op {
    uint8_t op;                  /* OPEN_LIST, OPEN_DELETE, OPEN_STATUS,
                                  * OPEN_CLEAN */
    uint32_t flags;              /* OPEN_F_* */
    const char *const *paths;    /* borrowed */
    uint16_t npaths;
    const struct filter *filter; /* sent in FILTERS (NULL: none) */
    conn_step_fn *role_step;     /* the client's role */
    void *role;
    /* If set, *run_x is pointed at the run's xfer before the role runs,
     * so that the role's errors and problems are the run's. */
    struct xfer **run_x;
    /* The command's own: the progress line as a transfer's, and a
     * summary under --json even when it succeeded. */
    int command;
    /* If set, a link that fails is tried again, as a transfer's is,
     * after this drops what the role collected (nonzero: it could not,
     * no retry). NULL: the role keeps what it collected, no retry. */
    int (*restart)(void *role);
    /* If set, called when the run succeeded, with the agent's software
     * ("" if unknown): the role says what it found. */
    void (*done)(void *role, struct output *out, const char *agent);
};

/*
 * Runs op against cli's remote side. Problems are reported as the
 * command's are (one line, or JSON events); an op prints no summary
 * unless it failed (or it is the command's, under --json). Returns an
 * exit status.
 */
int run_command(const struct cli *cli, const struct run_op *op);

/* What one push or pull moves, and the choices the command line
 * leaves to each run: the command line's (run_opts_of), or a watch's
 * unit, a pull of its own (watch.h). Borrowed from the command line or
 * the caller. */
struct run_opts {
    char *const *sources;  /* a pull's (remote) sources */
    int nsources;
    const char *dest;      /* a pull's destination here */
    const char *basis;     /* --basis FILE, or NULL */
    const char *basis_dir; /* a directory of older versions, or NULL */
    uint64_t pack_threshold;  /* 0: no volumes */
    int whole_formats;     /* --whole-formats */
};

/* The command line's choices. */
void run_opts_of(const struct cli *cli, struct run_opts *o);

struct space_check;

/* The command's push or pull of o, with the space check sc (space.h;
 * NULL: none). When sc->stop comes back set, the check ended the run before
 * any data moved, nothing was printed, and the returned status means
 * nothing: sc->code is the run's. */
int run_transfer(const struct cli *cli, const struct run_opts *o,
    struct space_check *sc);

#endif
