/*
 * receiver.h: one connection's receiving protocol, shared by ferry-agent
 * (push) and ferry (pull).
 *
 * Stream 0 carries the conversation: PLAN (the destination is resolved,
 * READY answers), one REPLY per ENTRY (SKIP, WANT, FAIL; directories and
 * symlinks are made at once), NOTICE, END (SUMMARY answers). Every stream,
 * stream 0 included, carries file data: BLOCK, MATCH and FILE_END, for
 * any wanted file, in any order; FILE_DONE goes back on stream 0 (a
 * further stream may be lost with what it carries). What the streams
 * share lives in dest (the tree) and incoming (the wanted files).
 *
 * Rules enforced (each a protocol error that ends the connection): frames
 * of the conversation only on stream 0 and only in their state; ENTRY ids
 * strictly increasing and no more entries than PLAN announced; entries
 * only under the top-level names a pull asked for; data only for wanted
 * files, block-aligned, of the right length; END only when every wanted
 * file has ended; nothing after END.
 */
#ifndef FERRY_ENGINE_RECEIVER_H
#define FERRY_ENGINE_RECEIVER_H

#include <stdint.h>

#include "conn.h"
#include "dest.h"
#include "incoming.h"
#include "xfer.h"

struct receiver;

/* stream: 0 for the connection that opened the transfer. d and in are
 * borrowed and shared by every stream's receiver. flags: OPEN flags. */
struct receiver *receiver_new(struct dest *d, struct incoming *in,
    unsigned stream, uint32_t flags, uint32_t block_size, struct xfer *x);
void receiver_free(struct receiver *rc);

/*
 * Stream 0's receiver tells the sender, at its next step, that a further
 * stream was given up (RETIRE, when the peer has PROTO_CAP_RETIRE): on a
 * pull the sender is far away and may not see that stream die. Only sets
 * a flag: any thread; poke the group so that the step comes.
 */
void receiver_retire_stream(struct receiver *rc0, unsigned stream);

/*
 * Accept only entries under these top-level names (scp's lesson: a
 * server must not send what was not asked for). n = 0 accepts any name,
 * as a "dir/" source does. A single file renamed by the destination is
 * accepted under its new name. Copies the names.
 */
int receiver_expect_tops(struct receiver *rc, const char *const *names,
    size_t n) FERRY_WUR;

/* conn_step_fn for the receiver. */
int receiver_step(void *role, struct conn_step *st) FERRY_WUR;

#endif
