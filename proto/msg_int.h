/*
 * msg_int.h: helpers shared by the message codecs (msg.c, msg_file.c,
 * ...). Not for use outside proto/ and its unit tests.
 */
#ifndef FERRY_PROTO_MSG_INT_H
#define FERRY_PROTO_MSG_INT_H

#include <stddef.h>

#include "../common/buf.h"
#include "../common/rd.h"
#include "msg.h"

/* Finishes the frame begun at mark when r is 0; otherwise removes the
 * partial frame and returns r. Every encoder ends with it. */
int msg_finish(struct buf *b, size_t mark, int r) FERRY_WUR;
/* A str16 of at most max bytes (FERRY_ERR_USAGE beyond: a caller's bug). */
int msg_put_str(struct buf *b, const struct msg_str *s, size_t max)
    FERRY_WUR;
int msg_put_hash(struct buf *b, const struct hash128 *h) FERRY_WUR;
int msg_get_str(struct rd *r, size_t max, struct msg_str *s) FERRY_WUR;
int msg_get_hash(struct rd *r, struct hash128 *h) FERRY_WUR;

/*
 * Field codecs: a message whose payload is a list of fields is encoded
 * and decoded in order by msg_codec_*, from its line of msg_table.h (codec
 * F) and a MSG_CODEC list in its .c. The hand-written ones (codec H) are
 * the hot data frames and the shapes a list cannot say.
 */
enum msg_fkind {
    MSG_F_U8 = 1,
    MSG_F_U16,
    MSG_F_U32,    /* and i32 */
    MSG_F_U64,    /* and i64 */
    MSG_F_BYTES,  /* arg bytes as they are */
    MSG_F_STR,    /* str16 of at most arg bytes (more: USAGE) */
    MSG_F_TEXT,   /* ... that the encoder cuts at arg bytes */
    MSG_F_MAGIC,  /* PROTO_MAGIC, in no member; another is FORMAT once
                     the rest has been read */
    MSG_F_BLOB,   /* str32 of at most arg bytes: pointer at off, size_t
                     length at off2 */
    MSG_F_ARRAY,  /* the rest: (u32 at off2) x arg bytes, pointer at off;
                     the check runs before it, since the count bounds it.
                     With a gate, only if the u8 at gate_off has one of
                     its bits (else nothing, and the pointer NULL) */
};

struct msg_field {
    uint8_t kind;
    uint8_t gate;      /* ARRAY: bits of the u8 at gate_off, or 0 */
    uint16_t off;      /* of the member */
    uint16_t off2;     /* of BLOB's length, ARRAY's count */
    uint16_t gate_off;
    uint32_t arg;
};

/* 0 if member m of struct msg_<name> is size bytes; else no compile. */
#define MSG_SIZE_IS(name, m, size)                                           \
    (0 * sizeof(char[sizeof(((struct msg_##name *)0)->m) == (size) ? 1 : -1]))
#define MSG_OFF(name, m, size)                                               \
    (offsetof(struct msg_##name, m) + MSG_SIZE_IS(name, m, size))
/* A field of struct msg_<name>. */
#define MSG_FIELD(name, kind, m, size, arg)                                  \
    { kind, 0, MSG_OFF(name, m, size), 0, 0, arg }
#define MSG_U8(name, m) MSG_FIELD(name, MSG_F_U8, m, 1, 0)
#define MSG_U16(name, m) MSG_FIELD(name, MSG_F_U16, m, 2, 0)
#define MSG_U32(name, m) MSG_FIELD(name, MSG_F_U32, m, 4, 0)
#define MSG_U64(name, m) MSG_FIELD(name, MSG_F_U64, m, 8, 0)
#define MSG_BYTES(name, m, n) MSG_FIELD(name, MSG_F_BYTES, m, n, n)
#define MSG_STR(name, m, max)                                                \
    MSG_FIELD(name, MSG_F_STR, m, sizeof(struct msg_str), max)
#define MSG_TEXT(name, m, max)                                               \
    MSG_FIELD(name, MSG_F_TEXT, m, sizeof(struct msg_str), max)
#define MSG_MAGIC() { MSG_F_MAGIC, 0, 0, 0, 0, 0 }
#define MSG_BLOB(name, m, len, max)                                          \
    { MSG_F_BLOB, 0, MSG_OFF(name, m, sizeof(void *)),                       \
        MSG_OFF(name, len, sizeof(size_t)), 0, max }
#define MSG_ARRAY(name, m, count, elem)                                      \
    { MSG_F_ARRAY, 0, MSG_OFF(name, m, sizeof(void *)),                      \
        MSG_OFF(name, count, 4), 0, elem }
/* ... present only when flags (a u8 member) has a bit of gate. */
#define MSG_ARRAY_IF(name, m, count, elem, flags, gate)                      \
    { MSG_F_ARRAY, gate, MSG_OFF(name, m, sizeof(void *)),                   \
        MSG_OFF(name, count, 4), MSG_OFF(name, flags, 1), elem }

struct msg_codec {
    uint8_t type;
    uint8_t strict;  /* the encoder refuses (USAGE) what check refuses */
    size_t size;     /* of the struct */
    const struct msg_field *fields;
    size_t nfields;
    int (*check)(const void *m);  /* 0, or why the fields mean nothing */
};

/* The codecs of the lines of msg_table.h with codec F. */
#define MSG_CODEC_EXTERN_F(name)                                             \
    extern const struct msg_codec msg_##name##_codec;
#define MSG_CODEC_EXTERN_H(name)
#define MSG_CODEC_EXTERN(num, NAME, name, dir, stream0, cap, codec)          \
    MSG_CODEC_EXTERN_##codec(name)
MSG_TABLE(MSG_CODEC_EXTERN)
#undef MSG_CODEC_EXTERN

/* The codec of type, or NULL for a hand-written one or no type at all.
 * For the tests: nothing else calls it. */
const struct msg_codec *msg_codec_of(uint8_t type);

/* Appends m as one frame. */
int msg_codec_encode(struct buf *b, const struct msg_codec *c, const void *m)
    FERRY_WUR;
/* Reads every field, then the end, then check (before an ARRAY: see
 * there); on failure m is zeroed. */
int msg_codec_decode(const struct msg_codec *c, const uint8_t *p, size_t n,
    void *m) FERRY_WUR;

/* Defines msg_<name>_encode and msg_<name>_decode for a frame of type
 * made of the fields that follow. */
#define MSG_CODEC(name, type, check, strict, ...)                            \
    static const struct msg_field name##_fields[] = { __VA_ARGS__ };         \
    const struct msg_codec msg_##name##_codec = { type, strict,              \
        sizeof(struct msg_##name), name##_fields,                            \
        sizeof(name##_fields) / sizeof(name##_fields[0]), check };           \
    int                                                                      \
    msg_##name##_encode(struct buf *b, const struct msg_##name *m)           \
    {                                                                        \
        return msg_codec_encode(b, &msg_##name##_codec, m);                  \
    }                                                                        \
    int                                                                      \
    msg_##name##_decode(const uint8_t *p, size_t n, struct msg_##name *m)    \
    {                                                                        \
        return msg_codec_decode(&msg_##name##_codec, p, n, m);               \
    }

#endif
