/*
 * engine/formcheck.c: files of the formats checkpoints come in, whole and
 * cut at every length, and the busy check against a writer of our own.
 * The files are built here byte by byte (the layout torch.save, the
 * safetensors library, NumPy and tar write), so the tests need none of
 * those programs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../engine/formcheck.h"
#include "check.h"

static void
put16(struct buf *b, uint16_t v)
{
    uint8_t p[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

    CHECK_OK(buf_put(b, p, 2));
}

static void
put32(struct buf *b, uint32_t v)
{
    put16(b, (uint16_t)v);
    put16(b, (uint16_t)(v >> 16));
}

static void
put64(struct buf *b, uint64_t v)
{
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}

struct zmember {
    const char *name;
    size_t len;
    uint32_t offset;
};

/*
 * A zip of stored members as torch.save writes it (archive/data.pkl,
 * archive/data/N storages, archive/version), its central directory and
 * end record; zip64 puts the directory's offset in a zip64 end record,
 * as writers do past 4 GiB.
 */
static uint8_t *
make_zip(int zip64, size_t *n)
{
    struct zmember m[] = {
        { "archive/data.pkl", 300, 0 },
        { "archive/data/0", 6000, 0 },
        { "archive/data/1", 4096, 0 },
        { "archive/version", 2, 0 },
    };
    size_t i, k, cd, cdlen, z64;
    struct buf b;
    uint8_t *out;

    buf_init(&b, 1u << 20);
    for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        m[i].offset = (uint32_t)buf_used(&b);
        put32(&b, 0x04034b50u);
        put16(&b, 20);
        put16(&b, 0);
        put16(&b, 0);       /* stored */
        put32(&b, 0);
        put32(&b, 0x12345678u);
        put32(&b, (uint32_t)m[i].len);
        put32(&b, (uint32_t)m[i].len);
        put16(&b, (uint16_t)strlen(m[i].name));
        put16(&b, 0);
        CHECK_OK(buf_put(&b, m[i].name, strlen(m[i].name)));
        for (k = 0; k < m[i].len; k++)
            CHECK_OK(buf_put_u8(&b, (uint8_t)(k * 7 + i)));
    }
    cd = buf_used(&b);
    for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        put32(&b, 0x02014b50u);
        put16(&b, 20);
        put16(&b, 20);
        put16(&b, 0);
        put16(&b, 0);
        put32(&b, 0);
        put32(&b, 0x12345678u);
        put32(&b, (uint32_t)m[i].len);
        put32(&b, (uint32_t)m[i].len);
        put16(&b, (uint16_t)strlen(m[i].name));
        put16(&b, 0);
        put16(&b, 0);
        put16(&b, 0);
        put16(&b, 0);
        put32(&b, 0);
        put32(&b, m[i].offset);
        CHECK_OK(buf_put(&b, m[i].name, strlen(m[i].name)));
    }
    cdlen = buf_used(&b) - cd;
    if (zip64) {
        z64 = buf_used(&b);
        put32(&b, 0x06064b50u);
        put64(&b, 44);
        put16(&b, 45);
        put16(&b, 45);
        put32(&b, 0);
        put32(&b, 0);
        put64(&b, 4);
        put64(&b, 4);
        put64(&b, cdlen);
        put64(&b, cd);
        put32(&b, 0x07064b50u);
        put32(&b, 0);
        put64(&b, z64);
        put32(&b, 1);
    }
    put32(&b, 0x06054b50u);
    put16(&b, 0);
    put16(&b, 0);
    put16(&b, 4);
    put16(&b, zip64 ? 0xffff : 4);
    put32(&b, (uint32_t)cdlen);
    put32(&b, zip64 ? 0xffffffffu : (uint32_t)cd);
    put16(&b, 0);
    *n = buf_used(&b);
    out = check_dup(buf_ptr(&b), *n);
    buf_cleanup(&b);
    return out;
}

static uint8_t *
make_safetensors(size_t *n)
{
    static const char hdr[] = "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"w\":{\"dtype\":\"BF16\",\"shape\":[64,32],"
        "\"data_offsets\":[0,4096]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[32],"
        "\"data_offsets\":[4096,4224]}}  ";
    struct buf b;
    uint8_t *out;
    size_t i;

    buf_init(&b, 1u << 20);
    put64(&b, sizeof(hdr) - 1);
    CHECK_OK(buf_put(&b, hdr, sizeof(hdr) - 1));
    for (i = 0; i < 4224; i++)
        CHECK_OK(buf_put_u8(&b, (uint8_t)(i * 13)));
    *n = buf_used(&b);
    out = check_dup(buf_ptr(&b), *n);
    buf_cleanup(&b);
    return out;
}

static uint8_t *
make_npy(size_t *n)
{
    static const char hdr[] = "{'descr': '<f4', 'fortran_order': False, "
        "'shape': (30, 20), }";
    struct buf b;
    uint8_t *out;
    size_t i, hl = 128 - 10;

    buf_init(&b, 1u << 20);
    CHECK_OK(buf_put(&b, "\x93NUMPY\x01\x00", 8));
    put16(&b, (uint16_t)hl);
    CHECK_OK(buf_put(&b, hdr, sizeof(hdr) - 1));
    for (i = sizeof(hdr) - 1; i < hl - 1; i++)
        CHECK_OK(buf_put_u8(&b, ' '));
    CHECK_OK(buf_put_u8(&b, '\n'));
    for (i = 0; i < 30 * 20 * 4; i++)
        CHECK_OK(buf_put_u8(&b, (uint8_t)i));
    *n = buf_used(&b);
    out = check_dup(buf_ptr(&b), *n);
    buf_cleanup(&b);
    return out;
}

/* A ustar header with a valid checksum. */
static void
tar_header(struct buf *b, const char *name, char type, size_t size)
{
    uint8_t h[512];
    unsigned sum = 0;
    size_t i;

    memset(h, 0, sizeof(h));
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 124, 12, "%011zo", size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = (uint8_t)type;
    memcpy(h + 257, "ustar\0" "00", 8);
    memset(h + 148, ' ', 8);
    for (i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    CHECK_OK(buf_put(b, h, 512));
}

static uint8_t *
make_tar(size_t *n)
{
    static const uint8_t zeros[1024];
    struct buf b;
    uint8_t *out;
    size_t i;

    buf_init(&b, 1u << 20);
    tar_header(&b, "ckpt/", '5', 0);
    tar_header(&b, "ckpt/a.bin", '0', 1000);
    for (i = 0; i < 1024; i++)
        CHECK_OK(buf_put_u8(&b, i < 1000 ? (uint8_t)(i | 1) : 0));
    tar_header(&b, "ckpt/b.bin", '0', 512);
    for (i = 0; i < 512; i++)
        CHECK_OK(buf_put_u8(&b, 0xaa));
    CHECK_OK(buf_put(&b, zeros, sizeof(zeros)));
    *n = buf_used(&b);
    out = check_dup(buf_ptr(&b), *n);
    buf_cleanup(&b);
    return out;
}

/* Whole as made; cut at any length it is never whole, and (once past
 * its first bytes) known as its format and cut short. */
static void
check_cuts(const uint8_t *p, size_t n, enum form f)
{
    struct formcheck fc;
    size_t len;

    CHECK_OK(formcheck_mem(p, n, &fc));
    CHECK_EQ_INT(fc.form, f);
    CHECK_EQ_INT(fc.whole, 1);
    for (len = 0; len < n; len++) {
        check_note("%s cut to %zu of %zu", formcheck_name(f), len, n);
        CHECK_OK(formcheck_mem(p, len, &fc));
        CHECK_EQ_INT(fc.whole, 0);
        if (len >= 600)
            CHECK_EQ_INT(fc.form, f);
    }
    check_note_clear();
}

TEST(formcheck_zip)
{
    uint8_t *p, *q;
    size_t n, cd;
    struct formcheck fc;

    p = make_zip(0, &n);
    check_cuts(p, n, FORM_ZIP);
    /* The directory says a member's data runs into the directory. */
    q = check_dup(p, n);
    cd = (size_t)q[n - 6] | (size_t)q[n - 5] << 8 | (size_t)q[n - 4] << 16;
    q[cd + 20 + 2] = 0x7f;
    CHECK_OK(formcheck_mem(q, n, &fc));
    CHECK_EQ_INT(fc.form, FORM_ZIP);
    CHECK_EQ_INT(fc.whole, 0);
    free(q);
    free(p);
    p = make_zip(1, &n);
    check_cuts(p, n, FORM_ZIP);
    free(p);
}

TEST(formcheck_safetensors)
{
    struct formcheck fc;
    uint8_t *p, *q;
    size_t n;

    p = make_safetensors(&n);
    check_cuts(p, n, FORM_SAFETENSORS);
    /* Longer than its header says: not judged whole. */
    q = check_alloc(n + 1);
    memcpy(q, p, n);
    q[n] = 0;
    CHECK_OK(formcheck_mem(q, n + 1, &fc));
    CHECK_EQ_INT(fc.whole, 0);
    free(q);
    /* A header that does not parse: not taken for safetensors. */
    q = check_dup(p, n);
    q[9] = '[';
    CHECK_OK(formcheck_mem(q, n, &fc));
    CHECK_EQ_INT(fc.form, FORM_UNKNOWN);
    free(q);
    free(p);
}

TEST(formcheck_npy)
{
    uint8_t *p;
    size_t n;

    p = make_npy(&n);
    check_cuts(p, n, FORM_NPY);
    free(p);
}

TEST(formcheck_tar)
{
    uint8_t *p;
    size_t n;

    p = make_tar(&n);
    check_cuts(p, n, FORM_TAR);
    free(p);
}

/* Files of no known format are not judged; nor are random bytes that
 * start like one (a zip signature and noise is "cut short", never
 * whole). */
TEST(formcheck_unknown)
{
    struct formcheck fc;
    uint8_t buf[4096];
    size_t i;

    memset(buf, 'x', sizeof(buf));
    CHECK_OK(formcheck_mem(buf, sizeof(buf), &fc));
    CHECK_EQ_INT(fc.form, FORM_UNKNOWN);
    CHECK_EQ_INT(fc.whole, 0);
    for (i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    memcpy(buf, "PK\x03\x04", 4);
    CHECK_OK(formcheck_mem(buf, sizeof(buf), &fc));
    CHECK_EQ_INT(fc.form, FORM_ZIP);
    CHECK_EQ_INT(fc.whole, 0);
}

/* The same answers from a file, and the kernel's word on a writer: our
 * own descriptor open for writing makes the file busy until it closes. */
TEST(formcheck_file_busy)
{
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16];
    struct formcheck_busy set;
    struct formcheck fc;
    struct stat st;
    uint8_t *p;
    size_t n;
    int wfd, rfd, lease;

    check_tmpdir(dir);
    snprintf(path, sizeof(path), "%s/ckpt.pth", dir);
    p = make_zip(0, &n);
    CHECK((wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0);
    CHECK_EQ_INT(write(wfd, p, n / 2), (ssize_t)(n / 2));
    CHECK((rfd = open(path, O_RDONLY)) >= 0);
    CHECK_EQ_INT(fstat(rfd, &st), 0);
    CHECK_OK(formcheck_fd(rfd, (uint64_t)st.st_size, &fc));
    CHECK_EQ_INT(fc.form, FORM_ZIP);
    CHECK_EQ_INT(fc.whole, 0);
    lease = formcheck_busy_lease(rfd);
    CHECK(lease == 1 || lease < 0);
    CHECK_OK(formcheck_busy_scan(&set));
    CHECK(formcheck_busy_in(&set, st.st_dev, st.st_ino));
    formcheck_busy_free(&set);
    CHECK_EQ_INT(write(wfd, p + n / 2, n - n / 2), (ssize_t)(n - n / 2));
    CHECK_EQ_INT(close(wfd), 0);
    CHECK_EQ_INT(fstat(rfd, &st), 0);
    CHECK_OK(formcheck_fd(rfd, (uint64_t)st.st_size, &fc));
    CHECK_EQ_INT(fc.whole, 1);
    if (lease == 1)
        CHECK_EQ_INT(formcheck_busy_lease(rfd), 0);
    CHECK_OK(formcheck_busy_scan(&set));
    CHECK(!formcheck_busy_in(&set, st.st_dev, st.st_ino));
    formcheck_busy_free(&set);
    close(rfd);
    free(p);
}
