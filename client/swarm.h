/*
 * swarm.h: a push to many boxes, spread among them (docs/SWARM.md).
 *
 * Before the boxes' own transfers (boxes.h) the client makes a private
 * torrent of the sources, logs in to every box, starts the swarm helper
 * there, and streams each piece over the uplink once, to whichever box
 * takes it first; the boxes copy the rest among themselves into a
 * staging folder beside each destination. Each box's transfer then runs
 * as ever, with --adopt naming that folder: a staged file whose content
 * hash matches the manifest is moved into place, and anything the swarm
 * did not deliver is sent directly. So the swarm can only save bytes:
 * every failure of it ends in the one-box transfer.
 */
#ifndef FERRY_CLIENT_SWARM_H
#define FERRY_CLIENT_SWARM_H

#include <signal.h>

#include "../common/hash.h"
#include "cli.h"

struct swarm;

/*
 * Spreads cli's sources among its boxes, as said above. Returns NULL when
 * no swarm ran (not a push to several boxes over SSH, --no-swarm, too
 * little data, no helper in this build, every box unreachable): the
 * boxes' transfers then send everything. Returns early, with what is
 * staged so far, once *stop is set (a signal).
 */
struct swarm *swarm_spread(struct cli *cli, volatile sig_atomic_t *stop);

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
