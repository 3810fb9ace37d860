/*
 * msg_int.h: helpers shared by the message codecs (msg.c, msg_file.c,
 * ...). Not for use outside proto/.
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
 * Field codecs: a message whose payload is fixed fields and str16s is a
 * list of fields, encoded and decoded in order by msg_codec_*.
 */
enum msg_fkind {
    MSG_F_U8 = 1,
    MSG_F_U16,
    MSG_F_U32,    /* and i32 */
    MSG_F_U64,    /* and i64 */
    MSG_F_BYTES,  /* arg bytes as they are */
    MSG_F_STR,    /* str16 of at most arg bytes (more: USAGE) */
    MSG_F_TEXT,   /* ... that the encoder cuts at arg bytes */
};

struct msg_field {
    uint8_t kind;
    uint16_t off;  /* of the member */
    uint16_t arg;
};

/* A field of struct msg_<name>; a member whose size is not the field's
 * does not compile. */
#define MSG_FIELD(name, kind, m, size, arg)                                  \
    { kind, offsetof(struct msg_##name, m) + 0 * sizeof(char[               \
        sizeof(((struct msg_##name *)0)->m) == (size) ? 1 : -1]), arg }
#define MSG_U8(name, m) MSG_FIELD(name, MSG_F_U8, m, 1, 0)
#define MSG_U16(name, m) MSG_FIELD(name, MSG_F_U16, m, 2, 0)
#define MSG_U32(name, m) MSG_FIELD(name, MSG_F_U32, m, 4, 0)
#define MSG_U64(name, m) MSG_FIELD(name, MSG_F_U64, m, 8, 0)
#define MSG_BYTES(name, m, n) MSG_FIELD(name, MSG_F_BYTES, m, n, n)
#define MSG_STR(name, m, max)                                                \
    MSG_FIELD(name, MSG_F_STR, m, sizeof(struct msg_str), max)
#define MSG_TEXT(name, m, max)                                               \
    MSG_FIELD(name, MSG_F_TEXT, m, sizeof(struct msg_str), max)

struct msg_codec {
    uint8_t type;
    uint8_t strict;  /* the encoder refuses (USAGE) what check refuses */
    size_t size;     /* of the struct */
    const struct msg_field *fields;
    size_t nfields;
    int (*check)(const void *m);  /* 0, or why the fields mean nothing */
};

/* Appends m as one frame. */
int msg_codec_encode(struct buf *b, const struct msg_codec *c, const void *m)
    FERRY_WUR;
/* Reads every field, then the end, then check; on failure m is zeroed. */
int msg_codec_decode(const struct msg_codec *c, const uint8_t *p, size_t n,
    void *m) FERRY_WUR;

/* Defines msg_<name>_encode and msg_<name>_decode for a frame of type
 * made of the fields that follow. */
#define MSG_CODEC(name, type, check, strict, ...)                            \
    static const struct msg_field name##_fields[] = { __VA_ARGS__ };         \
    static const struct msg_codec name##_codec = { type, strict,             \
        sizeof(struct msg_##name), name##_fields,                            \
        sizeof(name##_fields) / sizeof(name##_fields[0]), check };           \
    int                                                                      \
    msg_##name##_encode(struct buf *b, const struct msg_##name *m)           \
    {                                                                        \
        return msg_codec_encode(b, &name##_codec, m);                        \
    }                                                                        \
    int                                                                      \
    msg_##name##_decode(const uint8_t *p, size_t n, struct msg_##name *m)    \
    {                                                                        \
        return msg_codec_decode(&name##_codec, p, n, m);                     \
    }

#endif
