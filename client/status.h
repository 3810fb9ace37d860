/*
 * status.h: `ferry status` and `ferry clean`: the unfinished transfers
 * kept under a destination for resuming, listed or removed.
 */
#ifndef FERRY_CLIENT_STATUS_H
#define FERRY_CLIENT_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/conn.h"
#include "../engine/partial.h"
#include "../engine/xfer.h"
#include "../proto/limits.h"
#include "cli.h"
#include "output.h"

/* Unfinished files one STATUS may list: an agent that says more is
 * refused (TOO_LARGE) rather than held in memory (a path each, so at
 * most about 270 MiB). */
#define STATUS_MAX_PARTIALS 65536u

/* Collects the agent's PARTIAL messages (the client side's role). */
struct status {
    struct xfer *x;
    struct partial_info *v;  /* read-only */
    size_t n, cap;           /* read-only */
    int have_space;          /* read-only: the agent said (SPACE) */
    uint64_t avail, size;    /* read-only: free and all of its fs */
    /* `ferry status` of an agent that knows the probe: it runs after
     * the agent's END (engine/probe.h). NULL: no probe. */
    struct probe *probe;
    int listed;              /* the agent's END came */
    char agent[80];          /* the agent's software, if known */
    /* read-only: a transfer holds the destination now (BUSY), and what
     * its lock file says of it */
    int busy;
    char holder[PROTO_MAX_HOLDER + 1];
};

void status_init(struct status *s, struct xfer *x);
/* Also probes the round trip and throughput (status, not clean). */
int status_want_probe(struct status *s) FERRY_WUR;
/* For a new attempt: what the last one collected is dropped. */
int status_restart(struct status *s) FERRY_WUR;
void status_cleanup(struct status *s);
int status_step(void *role, struct conn_step *st) FERRY_WUR;

/* Prints the list for where (the destination as written): a line each on
 * stdout, or "partial" events with --json. */
void status_print(const struct status *s, struct output *o,
    const char *where, int cleaned);

/* The operation that asks the agent of cli's remote side for op
 * (OPEN_STATUS or OPEN_CLEAN) into s (status_init'ed): the role, and
 * what the run tells it (ro->command, done and restart unset). */
struct run_op;
void status_op(struct status *s, const struct cli *cli, uint8_t op,
    struct run_op *ro);

/* `ferry status|clean DEST`: of a remote destination, through its agent
 * (run.h), on a failed link tried again as a transfer is; of a local one
 * (a pull's), here. Returns an exit status. */
int status_main(const struct cli *cli);

#endif
