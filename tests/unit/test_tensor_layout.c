/*
 * engine/tensor/tensor_layout.c: the tensors of safetensors, torch.save and
 * .npy files built byte by byte (ckpt_files.c), the spans that cut a file into
 * tensors and gaps, the pairing of two versions by name and length, and files
 * that only look like one of these (no tensors).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../engine/tensor/tensor_layout.h"
#include "check.h"
#include "ckpt_files.h"

static const char st_hdr[] = "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"w\":{\"dtype\":\"BF16\",\"shape\":[64,32],\"data_offsets\":[0,4096]},"
    "\"b\":{\"dtype\":\"F32\",\"shape\":[32],\"data_offsets\":[4096,4224]},"
    "\"steps\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[4224,4232]},"
    "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[8],\"data_offsets\":[4232,4240]},"
    "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[8],\"data_offsets\":[4240,4248]},"
    "\"none\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4248,4248]}}";

static void
layout_of(const uint8_t *p, size_t n, struct tensor_layout *l)
{
    CHECK_OK(tensor_layout_mem(p, n, l));
}

static void
check_range(const struct tensor_layout *l, size_t i, const char *name,
    uint64_t off, uint64_t len, unsigned width)
{
    check_note("tensor %zu", i);
    CHECK(i < l->n);
    CHECK_EQ_STR(l->v[i].name, name);
    CHECK_EQ_U64(l->v[i].name_len, strlen(name));
    CHECK_EQ_U64(l->v[i].off, off);
    CHECK_EQ_U64(l->v[i].len, len);
    CHECK_EQ_INT(l->v[i].width, width);
    check_note_clear();
}

TEST(tensor_layout_safetensors)
{
    struct tensor_layout l;
    uint64_t data = 8 + sizeof(st_hdr) - 1 + 3, end;
    size_t n, idx;
    uint8_t *p = ckpt_safetensors(st_hdr, 3, NULL, 4248, &n);

    layout_of(p, n, &l);
    CHECK_EQ_INT(l.form, TENSOR_FORM_SAFETENSORS);
    CHECK_EQ_U64(l.size, n);
    /* By offset; the empty one left out. */
    CHECK_EQ_U64(l.n, 5);
    check_range(&l, 0, "w", data, 4096, 2);
    check_range(&l, 1, "b", data + 4096, 128, 4);
    check_range(&l, 2, "steps", data + 4224, 8, 8);
    check_range(&l, 3, "mask", data + 4232, 8, 1);
    check_range(&l, 4, "f8", data + 4240, 8, 1);
    /* The header is a gap up to the first tensor; inside a tensor the
     * span runs to its end. */
    tensor_layout_span(&l, 0, &idx, &end);
    CHECK_EQ_U64(idx, SIZE_MAX);
    CHECK_EQ_U64(end, data);
    tensor_layout_span(&l, data + 100, &idx, &end);
    CHECK_EQ_U64(idx, 0);
    CHECK_EQ_U64(end, data + 4096);
    tensor_layout_span(&l, data + 4096, &idx, &end);
    CHECK_EQ_U64(idx, 1);
    tensor_layout_span(&l, n - 1, &idx, &end);
    CHECK_EQ_U64(idx, 4);
    CHECK_EQ_U64(end, n);
    tensor_layout_cleanup(&l);
    free(p);
}

TEST(tensor_layout_torch)
{
    static const struct ckpt_member m[] = {
        { "archive/data.pkl", NULL, 300, 0 },
        { "archive/data/0", NULL, 70000, 0 },
        { "archive/data/1", NULL, 4096, 0 },
        { "archive/data/2", NULL, 100, 8 },   /* deflated: not a storage */
        { "archive/data/x", NULL, 100, 0 },   /* not a storage's name */
        { "archive/data/", NULL, 100, 0 },
        { "archive/version", NULL, 2, 0 },
    };
    struct tensor_layout l;
    uint64_t at, end;
    size_t n, idx, spans = 0;
    uint8_t *p;
    int zip64;

    for (zip64 = 0; zip64 <= 1; zip64++) {
        p = ckpt_zip(m, sizeof(m) / sizeof(m[0]), zip64, &n);
        layout_of(p, n, &l);
        CHECK_EQ_INT(l.form, TENSOR_FORM_TORCH);
        CHECK_EQ_U64(l.n, 2);
        /* Each member's data follows its 30-byte local header and name. */
        check_range(&l, 0, "archive/data/0", 30 + 16 + 300 + 30 + 14,
            70000, TENSOR_WIDTH_UNKNOWN);
        check_range(&l, 1, "archive/data/1", l.v[0].off + 70000 + 30 + 14,
            4096, TENSOR_WIDTH_UNKNOWN);
        /* Every byte in one span: gap, tensor, gap, tensor, gap. */
        for (at = 0; at < n; at = end, spans++)
            tensor_layout_span(&l, at, &idx, &end);
        CHECK_EQ_U64(spans, 5);
        spans = 0;
        tensor_layout_cleanup(&l);
        free(p);
    }
}

TEST(tensor_layout_npy)
{
    struct tensor_layout l;
    size_t n;
    uint8_t *p;

    p = ckpt_npy("<f4", "(30, 20)", NULL, 2400, &n);
    layout_of(p, n, &l);
    CHECK_EQ_INT(l.form, TENSOR_FORM_NPY);
    check_range(&l, 0, "npy", 128, 2400, 4);
    tensor_layout_cleanup(&l);
    free(p);
    /* Complex numbers: planes of their parts. */
    p = ckpt_npy("<c16", "(10,)", NULL, 160, &n);
    layout_of(p, n, &l);
    check_range(&l, 0, "npy", 128, 160, 8);
    tensor_layout_cleanup(&l);
    free(p);
    p = ckpt_npy("|u1", "(7, 3)", NULL, 21, &n);
    layout_of(p, n, &l);
    check_range(&l, 0, "npy", 128, 21, 1);
    tensor_layout_cleanup(&l);
    free(p);
}

/* Files that only look like one of these have no tensors. */
TEST(tensor_layout_lookalikes)
{
    static const char *bad[] = {
        /* Not JSON. */
        "{\"w\":{\"dtype\":\"BF16\",\"data_offsets\":[0,64]}",
        /* Overlapping tensors. */
        "{\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[0,64]},"
        "\"b\":{\"dtype\":\"BF16\",\"data_offsets\":[32,64]}}",
        /* Two tensors of one name. */
        "{\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[0,32]},"
        "\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[32,64]}}",
        /* Offsets backwards. */
        "{\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[64,0]}}",
        /* Data past the file's end (the file has 64 bytes of data). */
        "{\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[0,65]}}",
        /* Shorter than the file: bytes no tensor accounts for. */
        "{\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[0,32]}}",
        /* No tensor at all. */
        "{\"__metadata__\":{\"format\":\"pt\"}}",
        /* A tensor's offsets given twice. */
        "{\"a\":{\"data_offsets\":[0,64],\"data_offsets\":[0,64]}}",
    };
    struct tensor_layout l;
    size_t i, n;
    uint8_t *p, *q;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("header %zu", i);
        p = ckpt_safetensors(bad[i], 0, NULL, 64, &n);
        layout_of(p, n, &l);
        CHECK_EQ_INT(l.form, TENSOR_FORM_NONE);
        CHECK_EQ_U64(l.n, 0);
        tensor_layout_cleanup(&l);
        free(p);
    }
    check_note_clear();
    /* A good header, cut short. */
    p = ckpt_safetensors(st_hdr, 0, NULL, 4248, &n);
    layout_of(p, n - 1, &l);
    CHECK_EQ_U64(l.n, 0);
    tensor_layout_cleanup(&l);
    /* A header length past the file, and random bytes after "{". */
    q = check_dup(p, n);
    q[5] = 0x10;
    layout_of(q, n, &l);
    CHECK_EQ_U64(l.n, 0);
    tensor_layout_cleanup(&l);
    memcpy(q, p, n);
    for (i = 9; i < n; i++)
        q[i] = (uint8_t)(i * 2654435761u >> 13);
    layout_of(q, n, &l);
    CHECK_EQ_U64(l.n, 0);
    tensor_layout_cleanup(&l);
    free(q);
    free(p);
    /* A zip cut short; an npy of objects. */
    p = ckpt_torch(0, &n);
    layout_of(p, n - 10, &l);
    CHECK_EQ_U64(l.n, 0);
    tensor_layout_cleanup(&l);
    free(p);
    p = ckpt_npy("|O", "(3,)", NULL, 24, &n);
    layout_of(p, n, &l);
    CHECK_EQ_U64(l.n, 0);
    tensor_layout_cleanup(&l);
    free(p);
    /* Too short to be anything. */
    layout_of((const uint8_t *)"{}", 2, &l);
    CHECK_EQ_U64(l.n, 0);
    tensor_layout_cleanup(&l);
}

/* A name over TENSOR_NAME_MAX: the file has no tensors. */
TEST(tensor_layout_long_name)
{
    char *hdr = check_alloc(TENSOR_NAME_MAX + 200);
    struct tensor_layout l;
    size_t n, k;
    uint8_t *p;

    for (k = TENSOR_NAME_MAX; k <= TENSOR_NAME_MAX + 1; k++) {
        hdr[0] = '{';
        hdr[1] = '"';
        memset(hdr + 2, 'n', k);
        snprintf(hdr + 2 + k, 100, "\":{\"dtype\":\"U8\",\"data_offsets\""
            ":[0,8]}}");
        p = ckpt_safetensors(hdr, 0, NULL, 8, &n);
        layout_of(p, n, &l);
        CHECK_EQ_U64(l.n, k == TENSOR_NAME_MAX);
        tensor_layout_cleanup(&l);
        free(p);
    }
    free(hdr);
}

/* Two versions: the same name and length pair up; added, renamed and
 * reshaped (another length) tensors have none; a dtype changed at the
 * same length still pairs, and the header grown moves every offset. */
TEST(tensor_layout_pair)
{
    static const char old_hdr[] = "{"
        "\"keep\":{\"dtype\":\"BF16\",\"data_offsets\":[0,64]},"
        "\"gone\":{\"dtype\":\"BF16\",\"data_offsets\":[64,128]},"
        "\"old_name\":{\"dtype\":\"BF16\",\"data_offsets\":[128,192]},"
        "\"reshaped\":{\"dtype\":\"BF16\",\"data_offsets\":[192,256]},"
        "\"retyped\":{\"dtype\":\"F32\",\"data_offsets\":[256,320]}}";
    static const char new_hdr[] = "{\"__metadata__\":{\"step\":\"2000\"},"
        "\"added\":{\"dtype\":\"BF16\",\"data_offsets\":[0,64]},"
        "\"new_name\":{\"dtype\":\"BF16\",\"data_offsets\":[64,128]},"
        "\"reshaped\":{\"dtype\":\"BF16\",\"data_offsets\":[128,256]},"
        "\"retyped\":{\"dtype\":\"BF16\",\"data_offsets\":[256,320]},"
        "\"keep\":{\"dtype\":\"BF16\",\"data_offsets\":[320,384]}}";
    struct tensor_layout lo, ln;
    size_t no, nn, *match, i;
    uint8_t *po, *pn;

    po = ckpt_safetensors(old_hdr, 0, NULL, 320, &no);
    pn = ckpt_safetensors(new_hdr, 0, NULL, 384, &nn);
    layout_of(po, no, &lo);
    layout_of(pn, nn, &ln);
    CHECK_EQ_U64(lo.n, 5);
    CHECK_EQ_U64(ln.n, 5);
    CHECK_OK(tensor_layout_pair(&ln, &lo, &match));
    for (i = 0; i < ln.n; i++) {
        check_note("%s", ln.v[i].name);
        if (strcmp(ln.v[i].name, "keep") == 0) {
            CHECK(match[i] != SIZE_MAX);
            CHECK_EQ_STR(lo.v[match[i]].name, "keep");
            CHECK(lo.v[match[i]].off != ln.v[i].off);
        } else if (strcmp(ln.v[i].name, "retyped") == 0) {
            CHECK(match[i] != SIZE_MAX);
            CHECK_EQ_INT(ln.v[i].width, 2);
            CHECK_EQ_INT(lo.v[match[i]].width, 4);
        } else {
            CHECK_EQ_U64(match[i], SIZE_MAX);
        }
    }
    check_note_clear();
    xfree(match);
    /* Against a file with no tensors: nothing pairs. */
    tensor_layout_cleanup(&lo);
    layout_of((const uint8_t *)"not a checkpoint", 16, &lo);
    CHECK_OK(tensor_layout_pair(&ln, &lo, &match));
    for (i = 0; i < ln.n; i++)
        CHECK_EQ_U64(match[i], SIZE_MAX);
    xfree(match);
    tensor_layout_cleanup(&lo);
    tensor_layout_cleanup(&ln);
    free(po);
    free(pn);
}
