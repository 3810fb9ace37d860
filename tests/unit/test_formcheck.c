/*
 * engine/formcheck.c: files of the formats checkpoints come in, whole and
 * cut at every length, and the busy check against a writer of our own.
 * The files are built byte by byte (ckpt_files.c, and tar here), so the
 * tests need none of the programs that write them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../engine/formcheck.h"
#include "../../engine/tensor/ckptfmt.h"
#include "../../engine/volume/volwrite.h"
#include "check.h"
#include "ckpt_files.h"

#include <zstd.h>

static uint8_t *
make_safetensors(size_t *n)
{
    static const char hdr[] = "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"w\":{\"dtype\":\"BF16\",\"shape\":[64,32],"
        "\"data_offsets\":[0,4096]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[32],"
        "\"data_offsets\":[4096,4224]}}";

    return ckpt_safetensors(hdr, 2, NULL, 4224, n);
}

static uint8_t *
make_npy(size_t *n)
{
    return ckpt_npy("<f4", "(30, 20)", NULL, 30 * 20 * 4, n);
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

    p = ckpt_torch(0, &n);
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
    p = ckpt_torch(1, &n);
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

/* A volume set made by the volume writer, its volume and its manifest
 * in memory. */
struct vol_mem {
    struct buf vol, man;
    uint32_t nvol;
};

static int
vm_open(void *ctx, uint32_t index)
{
    struct vol_mem *m = ctx;

    m->nvol = index;
    return 0;
}

static int
vm_write(void *ctx, const void *p, size_t n)
{
    return buf_put(&((struct vol_mem *)ctx)->vol, p, n);
}

static int
vm_close(void *ctx, const struct volw_volume *v)
{
    (void)ctx;
    (void)v;
    return 0;
}

static int
vm_record(void *ctx, const struct vman_rec *r)
{
    return vman_encode(&((struct vol_mem *)ctx)->man, r);
}

/* One volume of a directory and files that zstd stores in blocks of
 * each kind: raw (noise), compressed (a pattern) and RLE (zeros). */
static void
make_volume(struct vol_mem *m)
{
    struct volw_sink sk = { vm_open, vm_write, vm_close, vm_record, m };
    struct volw_opts o = { .name = "ckpt", .volume_size = 64u << 20 };
    struct volw_entry e;
    struct volw *w;
    uint8_t *data;
    size_t i, n = 600000;

    memset(m, 0, sizeof(*m));
    buf_init(&m->vol, 1u << 24);
    buf_init(&m->man, 1u << 20);
    data = check_alloc(n);
    for (i = 0; i < n; i++)
        data[i] = i < 300000 ? (uint8_t)(i * 2654435761u >> 13) :
            (uint8_t)(i % 251);
    CHECK_OK(volw_new(&o, &sk, &w));
    memset(&e, 0, sizeof(e));
    e.type = TAR_DIR;
    e.path = "ckpt";
    e.mode = 0755;
    CHECK_OK(volw_add(w, &e, -1));
    e.type = TAR_FILE;
    e.path = "ckpt/a.bin";
    e.mode = 0644;
    e.size = n;
    CHECK_OK(volw_add_mem(w, &e, data));
    e.path = "ckpt/b.bin";
    e.size = 1000;
    CHECK_OK(volw_add_mem(w, &e, data + 5000));
    memset(data, 0, n);
    e.path = "ckpt/zeros.bin";
    e.size = n;
    CHECK_OK(volw_add_mem(w, &e, data));
    CHECK_OK(volw_finish(w));
    volw_free(w);
    CHECK_EQ_INT(m->nvol, 1);
    free(data);
}

/* A volume as the writer makes it, and its manifest: whole, and cut at
 * every length never. A frame not as ours (no checksum), another frame
 * after it, and a manifest without its end line, are not whole. */
TEST(formcheck_volume)
{
    struct formcheck fc;
    struct vol_mem m;
    const uint8_t *p;
    uint8_t *q;
    size_t n, k, hl, i;
    const char *man, *last;

    make_volume(&m);
    p = buf_ptr(&m.vol);
    n = buf_used(&m.vol);
    check_cuts(p, n, FORM_VOLUME);
    /* Two frames: zstd's, not one volume. */
    q = check_alloc(2 * n);
    memcpy(q, p, n);
    memcpy(q + n, p, n);
    CHECK_OK(formcheck_mem(q, 2 * n, &fc));
    CHECK_EQ_INT(fc.form, FORM_UNKNOWN);
    /* No content checksum: not written by ferry. */
    k = ZSTD_compress(q, 2 * n, p, n, 1);
    CHECK(!ZSTD_isError(k));
    CHECK_OK(formcheck_mem(q, k, &fc));
    CHECK_EQ_INT(fc.form, FORM_UNKNOWN);
    /* A dictionary, the reserved bit; the first block of the reserved
     * type, or longer than a block may be. */
    for (i = 0; i < 4; i++) {
        check_note("mutation %zu", i);
        memcpy(q, p, n);
        /* The first block header, after the frame header (ferry's have
         * a window descriptor and no content size). */
        CHECK_EQ_INT(p[4] & 0xe0, 0);
        if (i == 0)
            q[4] |= 0x01;
        else if (i == 1)
            q[4] |= 0x08;
        else if (i == 2)
            q[6] |= 0x06;
        else
            q[8] = 0xff;
        CHECK_OK(formcheck_mem(q, n, &fc));
        CHECK_EQ_INT(fc.form, FORM_UNKNOWN);
    }
    check_note_clear();
    free(q);

    man = (const char *)buf_ptr(&m.man);
    n = buf_used(&m.man);
    check_cuts((const uint8_t *)man, n, FORM_VMANIFEST);
    /* Its end line replaced by another line that decodes: no end. */
    last = man + n - 1;
    while (last > man && last[-1] != '\n')
        last--;
    hl = (size_t)((const char *)memchr(man, '\n', n) - man) + 1;
    k = (size_t)(last - man);
    q = check_alloc(k + hl);
    memcpy(q, man, k);
    memcpy(q + k, man, hl);
    k += hl;
    CHECK_OK(formcheck_mem(q, k, &fc));
    CHECK_EQ_INT(fc.form, FORM_VMANIFEST);
    CHECK_EQ_INT(fc.whole, 0);
    free(q);
    buf_cleanup(&m.vol);
    buf_cleanup(&m.man);
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
    p = ckpt_torch(0, &n);
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

/* A read that fails (not one past the end) is an error, not a file of
 * no known format: a folder's descriptor reads EISDIR. */
TEST(formcheck_read_error)
{
    struct formcheck fc;
    int fd;

    CHECK((fd = open(".", O_RDONLY | O_DIRECTORY)) >= 0);
    CHECK_EQ_INT(formcheck_fd(fd, 4096, &fc), -EISDIR);
    close(fd);
}

/* ckptfmt_read never reads past the source's size: from memory it would
 * read beyond the buffer, so a read past the end is SHORT, not bytes. */
TEST(ckptfmt_read_bounds)
{
    uint8_t mem[64], out[16];
    struct ckptfmt_src s = { -1, mem, 8 };

    memset(mem, 7, sizeof(mem));
    CHECK_EQ_INT(ckptfmt_read(&s, 0, out, 16), FERRY_ERR_SHORT);
    CHECK_EQ_INT(ckptfmt_read(&s, 4, out, 5), FERRY_ERR_SHORT);
    CHECK_EQ_INT(ckptfmt_read(&s, 9, out, 0), FERRY_ERR_SHORT);
    CHECK_OK(ckptfmt_read(&s, 4, out, 4));
    CHECK_OK(ckptfmt_read(&s, 8, out, 0));
}

/* A file shorter than the size it was given (it shrank): a read past
 * its end is SHORT, not the bytes there are; formcheck_fd then says
 * unknown (it is being rewritten). */
TEST(ckptfmt_read_shrunk)
{
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16];
    uint8_t buf[100], out[16];
    struct formcheck fc;
    struct ckptfmt_src s;
    int fd;

    check_tmpdir(dir);
    snprintf(path, sizeof(path), "%s/z", dir);
    memset(buf, 1, sizeof(buf));
    memcpy(buf, "PK\3\4", 4);
    check_write_file(path, buf, sizeof(buf), 0);
    CHECK((fd = open(path, O_RDONLY)) >= 0);
    s = (struct ckptfmt_src){ fd, NULL, 200 };
    CHECK_EQ_INT(ckptfmt_read(&s, 90, out, 16), FERRY_ERR_SHORT);
    CHECK_OK(ckptfmt_read(&s, 0, out, 16));
    CHECK_OK(formcheck_fd(fd, 200, &fc));
    CHECK_EQ_INT(fc.form, FORM_UNKNOWN);
    close(fd);
    check_rmtree(dir);
}
