/*
 * listing.h: the agent's side of OPEN LIST: the entries a pull of the
 * same paths would offer (filters applied), as ENTRY frames, then its
 * NOTICEs, then END. A dry run compares them with the other tree; a
 * mirror finds what to remove.
 */
#ifndef FERRY_ENGINE_LISTING_H
#define FERRY_ENGINE_LISTING_H

#include "conn.h"
#include "manifest.h"
#include "xfer.h"

struct listing;

/* Takes the scanned manifest m (its contents move; m is left empty).
 * With readiness (OPEN_F_READINESS), each file's ENTRY carries its
 * ENTRY_S_* state: a writer holds it, or a known format is cut short or
 * whole (formcheck.h), judged as the entry is sent. */
struct listing *listing_new(struct manifest *m, int readiness,
    struct xfer *x);
void listing_free(struct listing *l);

/* conn_step_fn: writes frames up to LISTING_STEP_BYTES a step, then
 * asks for another; done after END. Any frame from the peer is a
 * protocol error. */
int listing_step(void *role, struct conn_step *st) FERRY_WUR;

#define LISTING_STEP_BYTES (1u << 20)

#endif
