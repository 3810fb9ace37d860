/*
 * receiver.h: the receiving role, shared by ferry-agent (push) and ferry
 * (pull).
 *
 * The receiver resolves the destination when the sender's PLAN arrives,
 * answers every ENTRY with a REPLY, writes wanted files into a staging
 * directory (DEST/.ferry/part/), checks each block hash and the file hash,
 * and commits files in batches: sync the data, rename every file into
 * place, sync again, then report FILE_DONE. Nothing partial ever appears
 * under a final name, and nothing is written outside DEST: every path is
 * opened beneath the root fd without following symlinks.
 */
#ifndef FERRY_ENGINE_RECEIVER_H
#define FERRY_ENGINE_RECEIVER_H

#include <stdint.h>

#include "conn.h"
#include "partial.h"
#include "xfer.h"

/* Name of the state directory at the top of a destination. */
#define RECEIVER_STATE_DIR PARTIAL_STATE_DIR

/* Files wanted and not yet ended; a sender past this is broken. */
#define RECEIVER_MAX_PENDING (1u << 16)

/* Commit a batch once this many files or bytes wait. */
#define RECEIVER_BATCH_FILES 512u
#define RECEIVER_BATCH_BYTES (256u << 20)

struct receiver;

/*
 * dest: the destination path as the user wrote it (borrowed until free).
 * flags: OPEN flags. Nothing is touched on disk until PLAN arrives.
 */
struct receiver *receiver_new(const char *dest, uint32_t flags,
    uint32_t block_size, struct xfer *x);
void receiver_free(struct receiver *rc);

/*
 * Accept only entries under these top-level names (scp's lesson: a
 * server must not send what was not asked for). n = 0 accepts any name,
 * as a "dir/" source does. A single file renamed by the destination is
 * accepted under its new name. Copies the names.
 */
int receiver_expect_tops(struct receiver *rc, const char *const *names,
    size_t n) FERRY_WUR;

/*
 * Prepares for a new connection of the same run after the last one
 * failed: partial files are kept (their journals synced) for the new
 * sender to resume, and files finished so far are not counted again.
 */
void receiver_restart(struct receiver *rc);

/* conn_step_fn for the receiver. */
int receiver_step(void *role, struct conn_step *st) FERRY_WUR;

/* Where the files go (valid after PLAN), for messages. */
const char *receiver_root(const struct receiver *rc);

#endif
