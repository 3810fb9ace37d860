/*
 * sender.h: one connection's sending protocol, shared by ferry (push)
 * and ferry-agent (pull).
 *
 * Stream 0 carries the conversation: PLAN, then (after READY) the
 * entries of the plan, NOTICEs, and END once every entry has finished;
 * it takes REPLY, SIGS and SUMMARY. Every stream, stream 0 included,
 * takes runs of blocks from the plan and sends them (BLOCK), compares
 * held blocks (MATCH, or BLOCK where they differ), sends FILE_END for
 * files that are ready, and takes FILE_DONE. What the streams share is
 * the plan (plan.h).
 *
 * Rules enforced on the receiver (each a protocol error): READY, REPLY,
 * SIGS and SUMMARY only on stream 0 and only in their state; a rename
 * only for a single file; and the plan's rules on what each answer may
 * refer to.
 */
#ifndef FERRY_ENGINE_SENDER_H
#define FERRY_ENGINE_SENDER_H

#include <stdint.h>

#include "conn.h"
#include "plan.h"
#include "xfer.h"

struct sender;

/* stream: 0 for the connection that opened the transfer; p is borrowed
 * and shared by every stream's sender. */
struct sender *sender_new(struct plan *p, unsigned stream, struct xfer *x);
void sender_free(struct sender *s);

/* conn_step_fn for the sender. The first call on stream 0 sends PLAN. */
int sender_step(void *role, struct conn_step *st) FERRY_WUR;

#endif
