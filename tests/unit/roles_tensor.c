/*
 * roles_tensor.c: the roles harness's BASIS and TENSOR frames, and the
 * checkpoints their rows stand on (roles.h).
 */
#include "roles.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/zst.h"
#include "../../proto/tensor_piece.h"

void
rt_write_safetensors(struct rt *rt, const char *rel, size_t n,
    unsigned seed, int bump)
{
    char p[CHECK_PATH_MAX], hdr[256];
    uint32_t x = seed * 2654435761u + 1;
    size_t h, i, pad;
    uint8_t *buf;

    n &= ~(size_t)1;
    h = (size_t)snprintf(hdr, sizeof(hdr), "{\"w\":{\"dtype\":\"BF16\","
        "\"shape\":[%zu],\"data_offsets\":[0,%zu]}}", n / 2, n);
    pad = (8 - h % 8) % 8;
    memset(hdr + h, ' ', pad);
    h += pad;
    buf = check_alloc(8 + h + n);
    for (i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, hdr, h);
    /* Weights as training leaves them: the high byte of each bf16 in a
     * narrow band, the low one anything. */
    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[8 + h + i] = (uint8_t)(i % 2 ? 0x3c + (x & 3) : x);
        if (bump && i % 97 == 0)
            buf[8 + h + i]++;
    }
    rt_path(rt, rel, p);
    check_write_file(p, buf, 8 + h + n, 0);
    free(buf);
}

/* BASIS: the hash is of rt->root/fr->t, as the receiver would make it. */
static void
rt_encode_basis(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    char p[CHECK_PATH_MAX];
    struct msg_basis m;
    int fd;

    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    m.basis_size = fr->a;
    m.path.p = fr->s;
    m.path.len = strlen(fr->s);
    if (fr->t != NULL) {
        rt_path(rt, fr->t, p);
        CHECK((fd = open(p, O_RDONLY)) >= 0);
        CHECK_OK(hash_fd(fd, fr->a, RT_BS, &m.hash));
        close(fd);
    }
    if (fr->v == RV_BADHASH)
        m.hash.b[0] ^= 1;
    CHECK_OK(msg_basis_encode(b, &m));
}

void
rt_encode_tensor(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    struct tensor_piece_info info;
    struct rt_file *f;
    struct tensor_piece *tp;
    struct msg_tensor m;
    struct buf body;
    uint8_t *raw;
    size_t n;

    if (fr->type == MSG_BASIS) {
        rt_encode_basis(rt, fr, b);
        return;
    }
    CHECK((f = rt_file(rt, fr->id)) != NULL);
    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    if (fr->v == RV_RAW) {
        m.offset = fr->a;
        n = (size_t)fr->b;
    } else {
        m.offset = fr->a * RT_BS;
        n = f->size - m.offset < RT_BS ? (size_t)(f->size - m.offset) :
            RT_BS;
    }
    raw = check_alloc(n);
    rt_content(f->path, m.offset, raw, n);
    m.raw_len = (uint32_t)n;
    hash_block(raw, n, &m.hash);
    if (fr->v == RV_BADHASH)
        m.hash.b[0] ^= 1;
    buf_init(&body, TENSOR_PIECE_BOUND(n) + 4);
    memset(&info, 0, sizeof(info));
    info.width = 1;
    if (fr->v == RV_PAST) {
        info.mode = TENSOR_XOR;
        info.ref_off = (uint64_t)1 << 40;
    }
    CHECK((tp = tensor_piece_new()) != NULL);
    if (fr->v == RV_JUNK)
        CHECK_OK(buf_put(&body, "junk!", 5));
    else
        CHECK_OK(tensor_piece_put(tp, &info, ZST_LEVEL, raw, n, raw,
            &body));
    if (fr->v == RV_CUT)
        buf_unreserve(&body, 1);
    tensor_piece_free(tp);
    m.body = buf_ptr(&body);
    m.body_len = buf_used(&body);
    CHECK_OK(msg_tensor_encode(b, &m));
    buf_cleanup(&body);
    free(raw);
}
