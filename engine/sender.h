/*
 * sender.h: the sending role, shared by ferry (push) and ferry-agent
 * (pull).
 *
 * The sender offers the entries of a manifest, answers each REPLY WANT with
 * the file's blocks and a FILE_END carrying the file hash, and finishes
 * when the receiver's SUMMARY arrives. Entries run ahead of replies by at
 * most SENDER_WINDOW, which bounds what the receiver has to remember.
 */
#ifndef FERRY_ENGINE_SENDER_H
#define FERRY_ENGINE_SENDER_H

#include <stdint.h>

#include "conn.h"
#include "manifest.h"
#include "xfer.h"

/* Entries offered and not yet finished. */
#define SENDER_WINDOW 4096u

struct sender;

/* Takes ownership of mf's contents (mf is left empty). flags are the OPEN
 * flags (OPEN_F_CHECKSUM makes it hash files before offering them). */
struct sender *sender_new(struct manifest *mf, uint32_t block_size,
    uint32_t flags, struct xfer *x);
void sender_free(struct sender *s);

/*
 * Prepares for a new connection after the last one failed: entries that
 * finished are not offered again (but directories are), the rest start
 * over, their progress taken back; the new receiver's resume points
 * decide what is sent.
 */
void sender_restart(struct sender *s);

/* conn_step_fn for the sender. The first call sends PLAN. */
int sender_step(void *role, struct conn_step *st) FERRY_WUR;

#endif
