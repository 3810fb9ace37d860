/*
 * msg_filter.h: FILTERS, the rules that leave entries out of a pull
 * (--exclude, --include, --exclude-from on the client), sent before OPEN.
 *
 *     u16 nrules (0..PROTO_MAX_FILTERS)
 *     nrules x { u8 action (1 exclude, 2 include), str16 pattern
 *                (1..PROTO_MAX_FILTER_PATTERN bytes, no NUL) }
 *
 * at most PROTO_MAX_FILTER_BYTES of rules in all. Only an agent that sets
 * PROTO_CAP_FILTERS in HELLO takes it.
 */
#ifndef FERRY_PROTO_MSG_FILTER_H
#define FERRY_PROTO_MSG_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "msg.h"

#define PROTO_MAX_FILTERS 4096u
#define PROTO_MAX_FILTER_PATTERN 1024u
#define PROTO_MAX_FILTER_BYTES (256u << 10)

struct msg_filters {
    uint16_t nrules;
    /* The rules as they came (borrowed from the frame); iterate with
     * msg_filters_rule. */
    const uint8_t *raw;
    size_t len;
};

/* Encodes n rules: actions[i] (1 exclude, 2 include) and patterns[i]
 * (NUL-terminated). FERRY_ERR_TOO_LARGE over the limits. */
int msg_filters_encode(struct buf *b, const uint8_t *actions,
    const char *const *patterns, size_t n) FERRY_WUR;

/* Checks every rule against the limits: FERRY_ERR_TOO_LARGE past a
 * limit, FERRY_ERR_FORMAT for a bad action, an empty pattern or a NUL. */
int msg_filters_decode(const uint8_t *p, size_t n, struct msg_filters *m)
    FERRY_WUR;

/* The rule at *pos (start with 0), then *pos moves on; FERRY_ERR_SHORT
 * after the last. */
int msg_filters_rule(const struct msg_filters *m, size_t *pos,
    uint8_t *action, struct msg_str *pattern) FERRY_WUR;

#endif
