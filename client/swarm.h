/*
 * swarm.h: a push to many boxes, spread among them (docs/SWARM.md).
 *
 * Before each box's own transfer (boxes.h) the client makes a private
 * torrent of the sources, logs in to every box, starts the swarm helper
 * there, and streams each piece over the uplink once, to whichever box
 * takes it first; the boxes copy the rest among themselves into a
 * staging folder beside each destination. A box's transfer starts once
 * its helper holds what the box lacked (or the swarm is over), and runs
 * as ever, with --adopt naming that folder: a staged file whose content
 * hash matches the manifest is linked into place, and anything the swarm
 * did not deliver is sent directly. So the swarm can only save bytes:
 * every failure of it ends in the one-box transfer.
 */
#ifndef FERRY_CLIENT_SWARM_H
#define FERRY_CLIENT_SWARM_H

#include <poll.h>
#include <signal.h>

#include "../common/hash.h"
#include "cli.h"

struct swarm;

/*
 * Starts spreading cli's sources among its boxes, as said above: logs in
 * to every box, has each list its destination, and makes the torrent.
 * Returns NULL when no swarm runs (not a push to several boxes over SSH,
 * --no-swarm, too little data, no helper in this build, every box
 * unreachable, a signal: *stop set): the boxes' transfers then send
 * everything. Otherwise the spread goes on in the caller's loop: it
 * polls swarm_pollfds' descriptors (beside its own) and calls swarm_tick
 * after each poll, until swarm_running says it is over (bounded: every
 * helper stops once every box is done, nothing moved for a while, or
 * *stop is set).
 */
struct swarm *swarm_begin(struct cli *cli, volatile sig_atomic_t *stop);

/* The links' descriptors to poll, into p (room for CLI_MAX_BOXES): how
 * many; 0 once the swarm is over (and for NULL). */
int swarm_pollfds(const struct swarm *s, struct pollfd *p);

/* After a poll of the n descriptors swarm_pollfds gave (with their
 * revents): reads and writes, puts pieces, ends the swarm when it is
 * time. NULL is a no-op. */
void swarm_tick(struct swarm *s, const struct pollfd *p, int n);

/* fn(ctx) is called before each line the swarm says on stderr while it
 * runs (the boxes' progress line is cleared first). NULL s: a no-op. */
void swarm_before_note(struct swarm *s, void (*fn)(void *), void *ctx);

/* 1 while the swarm runs (its helpers not all stopped or left). */
int swarm_running(const struct swarm *s);

/* 1 when box's transfer may start: its helper holds all it was to fetch
 * (it seeds on for the others), the box left the swarm, or the swarm is
 * over (or none runs). */
int swarm_ready(const struct swarm *s, int box);

/* The folder box's transfer adopts from (--adopt), or NULL. */
const char *swarm_adopt_dir(const struct swarm *s, int box);

/* What the swarm's pass hashed, for a box's transfer
 * (manifest_hash_hint_fn; ctx the swarm). */
int swarm_hash_hint(void *ctx, const char *rel, uint64_t size,
    int64_t mtime_sec, uint32_t mtime_nsec, struct hash128 *out);

/* In a box's child: the links' sockets are the parent's. */
void swarm_forget(struct swarm *s);

/* After the boxes' transfers, whose exit statuses are codes: removes the
 * staging folders of the boxes that succeeded (the others keep theirs,
 * for the next run), ends the links and frees s. NULL is a no-op. */
void swarm_end(struct swarm *s, const int *codes);

#endif
