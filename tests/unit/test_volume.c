/*
 * Tests for the volume writer and reader (engine/volume/volwrite.c, volread.c,
 * volstage.c, volume.c) and zstd streams (common/zst.c): round trips in
 * memory, the size rule, split files, and every refusal of the reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../common/text.h"
#include "../../common/zst.h"
#include "../../engine/volume/volread.h"
#include "../../engine/volume/volstage.h"
#include "../../engine/volume/volume.h"
#include "../../engine/volume/volwrite.h"
#include "check.h"

#include <zstd.h>

/* Volumes and manifest lines kept in memory. */
#define MAXVOL 16

struct mem {
    struct buf vol[MAXVOL + 1];
    uint32_t nvol;
    struct buf man;          /* manifest lines */
    size_t man_off;          /* next line to read */
    uint64_t limit;
};

static int
mem_open(void *ctx, uint32_t index)
{
    struct mem *m = ctx;

    CHECK(index == m->nvol + 1 && index <= MAXVOL);
    m->nvol = index;
    buf_init(&m->vol[index], 1u << 26);
    return 0;
}

static int
mem_write(void *ctx, const void *p, size_t n)
{
    struct mem *m = ctx;

    return buf_put(&m->vol[m->nvol], p, n);
}

static int
mem_close(void *ctx, const struct volw_volume *v)
{
    struct mem *m = ctx;

    CHECK_EQ_U64(v->bytes, buf_used(&m->vol[v->index]));
    CHECK(v->bytes <= m->limit);
    return 0;
}

static int
mem_record(void *ctx, const struct vman_rec *r)
{
    struct mem *m = ctx;

    return vman_encode(&m->man, r);
}

static int
mem_next(void *ctx, struct vman_rec *r, char *store)
{
    struct mem *m = ctx;
    const char *p = (const char *)buf_ptr(&m->man) + m->man_off;
    const char *nl;

    if (m->man_off >= buf_used(&m->man))
        return FERRY_ERR_SHORT;
    nl = memchr(p, '\n', buf_used(&m->man) - m->man_off);
    CHECK(nl != NULL);
    m->man_off += (size_t)(nl - p) + 1;
    return vman_decode(p, (size_t)(nl - p), r, store);
}

static void
mem_init(struct mem *m, uint64_t limit)
{
    memset(m, 0, sizeof(*m));
    buf_init(&m->man, 1u << 24);
    m->limit = limit;
}

/* A writer into m. */
static struct volw *
mem_writer(struct mem *m, const struct volw_opts *o)
{
    struct volw_sink s = { mem_open, mem_write, mem_close, mem_record, m };
    struct volw *w;

    CHECK_OK(volw_new(o, &s, &w));
    return w;
}

static void
mem_cleanup(struct mem *m)
{
    uint32_t i;

    for (i = 1; i <= m->nvol; i++)
        buf_cleanup(&m->vol[i]);
    buf_cleanup(&m->man);
}

/* A file of n pattern bytes under dir, opened for reading. */
static int
vol_file(const char *dir, const char *name, size_t n, unsigned seed)
{
    char path[CHECK_PATH_MAX + 64];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    check_write_file(path, NULL, n, seed);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    return fd;
}

static void
vol_add(struct volw *w, enum tar_type type, const char *path, int fd,
    uint64_t size, const char *target)
{
    struct volw_entry e;

    memset(&e, 0, sizeof(e));
    e.type = type;
    e.path = path;
    e.size = size;
    e.target = target;
    e.mode = type == TAR_DIR ? 0750 : 0640;
    e.mtime_sec = 1700000000;
    e.mtime_nsec = 123;
    CHECK_OK(volw_add(w, &e, fd));
    if (fd >= 0)
        close(fd);
}

/* The first error mem_unpack met (0 if none). */
static int mem_err;

/* Reads every volume of m into root; returns the reader's kind, and the
 * first error in mem_err. A reader that failed refuses every later call
 * with FORMAT. */
static enum volr_kind
mem_unpack(struct mem *m, const char *root, int manifest, size_t chunk,
    const char **text)
{
    static char last[1024];
    struct volr_hooks h = { mem_next, NULL, m };
    struct volr_opts o = { manifest, 0, NULL };
    struct vman_rec head;
    char store[VMAN_MAX_PATH + 1];
    enum volr_kind k;
    struct volr *v;
    uint32_t i;
    size_t off, n;
    int fd, r = 0;

    m->man_off = 0;
    if (manifest) {
        CHECK_OK(mem_next(m, &head, store));
        CHECK_EQ_INT(head.type, VMAN_HEAD);
        o.block_size = head.block_size;
    }
    fd = open(root, O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    CHECK_OK(volr_new(fd, &o, &h, &v));
    for (i = 1; i <= m->nvol && r == 0; i++) {
        r = volr_begin(v, i);
        for (off = 0; r == 0 && off < buf_used(&m->vol[i]); off += n) {
            n = buf_used(&m->vol[i]) - off < chunk ?
                buf_used(&m->vol[i]) - off : chunk;
            r = volr_put(v, buf_ptr(&m->vol[i]) + off, n);
        }
        if (r == 0)
            r = volr_end(v);
    }
    if (r == 0)
        r = volr_finish(v);
    k = volr_error(v, text);
    CHECK(r == 0 ? k == VOLR_OK : k != VOLR_OK);
    mem_err = r;
    if (r != 0) {
        CHECK_EQ_ERR(volr_begin(v, m->nvol + 1), FERRY_ERR_FORMAT);
        CHECK_EQ_ERR(volr_put(v, "x", 1), FERRY_ERR_FORMAT);
        CHECK_EQ_ERR(volr_end(v), FERRY_ERR_FORMAT);
        CHECK_EQ_ERR(volr_finish(v), FERRY_ERR_FORMAT);
    }
    /* The reader's text goes with it: keep a copy. */
    snprintf(last, sizeof(last), "%s", *text != NULL ? *text : "");
    *text = last;
    volr_free(v);
    close(fd);
    return k;
}

static void
vol_same_file(const char *a, const char *b)
{
    char cmd[3 * CHECK_PATH_MAX];

    snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
    check_note("%s vs %s", a, b);
    CHECK(system(cmd) == 0);
    check_note_clear();
}

/* A tree of small files, a file split across three volumes, one exactly
 * the volume size, a symlink and directories; through volumes of 64 KiB
 * and back, with and without the manifest, in chunks of any size. */
TEST(volume_roundtrip)
{
    const uint64_t vs = 64u << 10;
    struct volw_opts o = { "t", vs, 64u << 10, 0, 0, NULL };
    char src[CHECK_PATH_MAX], dst[CHECK_PATH_MAX], a[CHECK_PATH_MAX + 64],
        b[CHECK_PATH_MAX + 64];
    struct volw_totals t;
    struct volw *w;
    struct mem m;
    struct stat st;
    const char *text;
    static const size_t chunks[] = { 1 << 20, 4093, 1 };
    size_t i;

    check_tmpdir(src);
    mem_init(&m, vs);
    w = mem_writer(&m, &o);
    vol_add(w, TAR_DIR, "d", -1, 0, NULL);
    vol_add(w, TAR_FILE, "d/small", vol_file(src, "small", 1000, 1), 1000,
        NULL);
    vol_add(w, TAR_FILE, "d/zero", vol_file(src, "zero", 0, 2), 0, NULL);
    vol_add(w, TAR_FILE, "d/three", vol_file(src, "three", 150000, 3),
        150000, NULL);
    vol_add(w, TAR_FILE, "d/exact", vol_file(src, "exact", vs, 4), vs,
        NULL);
    vol_add(w, TAR_SYMLINK, "d/link", -1, 0, "small");
    vol_add(w, TAR_DIR, "d/e", -1, 0, NULL);
    CHECK_OK(volw_finish(w));
    volw_totals(w, &t);
    CHECK_EQ_INT(t.volumes, m.nvol);
    CHECK(t.volumes >= 4);
    CHECK_EQ_U64(t.files, 4);
    CHECK(t.pieces >= 5);
    CHECK(strstr((const char *)buf_ptr(&m.man),
        "\"path\":\"d/three\",\"index\":3,") != NULL);
    volw_free(w);
    for (i = 0; i < 2 * sizeof(chunks) / sizeof(chunks[0]); i++) {
        check_note("chunk %zu, manifest %zu", chunks[i / 2], i % 2);
        check_tmpdir(dst);
        CHECK_EQ_INT(mem_unpack(&m, dst, (int)(i % 2), chunks[i / 2], &text),
            VOLR_OK);
        snprintf(a, sizeof(a), "%s/three", src);
        snprintf(b, sizeof(b), "%s/d/three", dst);
        vol_same_file(a, b);
        snprintf(a, sizeof(a), "%s/exact", src);
        snprintf(b, sizeof(b), "%s/d/exact", dst);
        vol_same_file(a, b);
        CHECK(lstat(b, &st) == 0);
        CHECK_EQ_INT(st.st_mode & 07777, 0640);
        CHECK_EQ_INT(st.st_mtim.tv_nsec, 123);
        snprintf(b, sizeof(b), "%s/d", dst);
        CHECK(lstat(b, &st) == 0);
        CHECK_EQ_INT(st.st_mode & 07777, 0750);
        CHECK_EQ_INT(st.st_mtim.tv_sec, 1700000000);
        snprintf(b, sizeof(b), "%s/d/link", dst);
        CHECK(lstat(b, &st) == 0 && S_ISLNK(st.st_mode));
        check_rmtree(dst);
    }
    check_note_clear();
    mem_cleanup(&m);
    check_rmtree(src);
}

/* zstd frames in one volume's bytes. */
static unsigned
vol_frames(const struct buf *b)
{
    const uint8_t *p = buf_ptr(b);
    size_t n = buf_used(b), k;
    unsigned frames = 0;

    while (n > 0) {
        k = ZSTD_findFrameCompressedSize(p, n);
        CHECK(!ZSTD_isError(k) && k > 0 && k <= n);
        p += k;
        n -= k;
        frames++;
    }
    return frames;
}

/* A volume of several zstd frames, each at its own level (how a transfer
 * adapts its level within a volume): one archive to the reader. An empty
 * frame is never made. */
TEST(volume_frames)
{
    struct volw_opts o = { "t", 8u << 20, 64u << 10, 0, 0, NULL };
    char src[CHECK_PATH_MAX], dst[CHECK_PATH_MAX], a[CHECK_PATH_MAX + 64],
        b[CHECK_PATH_MAX + 64], name[32];
    static const int levels[] = { 1, 9, -5, 3 };
    struct volw *w;
    struct mem m;
    const char *text;
    size_t i;

    check_tmpdir(src);
    mem_init(&m, o.volume_size);
    w = mem_writer(&m, &o);
    for (i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "f%zu", i);
        vol_add(w, TAR_FILE, name, vol_file(src, name, 300000,
            (unsigned)i + 1), 300000, NULL);
        CHECK_OK(volw_end_frame(w));
        CHECK_OK(volw_end_frame(w));  /* nothing since: no frame */
        volw_set_level(w, levels[i]);
    }
    CHECK_OK(volw_finish(w));
    volw_free(w);
    CHECK_EQ_INT(m.nvol, 1);
    /* four members' frames, and the last one with the archive's end */
    CHECK_EQ_INT(vol_frames(&m.vol[1]), 5);
    check_tmpdir(dst);
    CHECK_EQ_INT(mem_unpack(&m, dst, 1, 1 << 20, &text), VOLR_OK);
    for (i = 0; i < 4; i++) {
        snprintf(a, sizeof(a), "%s/f%zu", src, i);
        snprintf(b, sizeof(b), "%s/f%zu", dst, i);
        vol_same_file(a, b);
    }
    check_rmtree(dst);
    mem_cleanup(&m);
    check_rmtree(src);
}

/* Volumes made by hand from tar entries (tar_header_put), for the
 * reader's refusals. */
static void
evil_volume(struct mem *m, const struct tar_entry *e, size_t n)
{
    struct zst_enc *z = zst_enc_new();
    struct buf raw;
    uint8_t *p;
    size_t i;

    CHECK(z != NULL);
    buf_init(&raw, 1u << 20);
    for (i = 0; i < n; i++) {
        CHECK_OK(tar_header_put(&raw, &e[i]));
        if (e[i].size > 0) {
            CHECK_OK(buf_reserve(&raw, e[i].size + tar_pad(e[i].size), &p));
            memset(p, 'x', e[i].size + tar_pad(e[i].size));
        }
    }
    CHECK_OK(tar_end_put(&raw));
    CHECK_OK(mem_open(m, m->nvol + 1));
    CHECK_OK(zst_enc_put(z, buf_ptr(&raw), buf_used(&raw), &m->vol[m->nvol]));
    CHECK_OK(zst_enc_end(z, &m->vol[m->nvol]));
    zst_enc_free(z);
    buf_cleanup(&raw);
}

static struct tar_entry
ent(enum tar_type type, const char *path, const char *link, uint64_t size)
{
    struct tar_entry e;

    memset(&e, 0, sizeof(e));
    e.type = type;
    e.path = path;
    e.path_len = strlen(path);
    e.link = link;
    e.link_len = strlen(link);
    e.size = size;
    e.mode = 0644;
    return e;
}

/* Each hostile member is refused with its kind; nothing lands outside the
 * destination and nothing is left in it but what is allowed. */
TEST(volume_refused)
{
    char top[CHECK_PATH_MAX], dst[CHECK_PATH_MAX + 64],
        path[CHECK_PATH_MAX + 64];
    struct tar_entry e[3];
    struct stat st;
    struct mem m;
    const char *text;
    size_t i;
    static const struct {
        const char *name, *p1, *l1, *p2;
        int t1;
        enum volr_kind kind;
        int err;
        const char *why;    /* in the reader's text: which check it was */
    } cases[] = {
        { "dotdot", "../x", "", NULL, TAR_FILE, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "path with '..' refused" },
        { "inner dotdot", "a/../../x", "", NULL, TAR_FILE, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "path with '..' refused" },
        { "absolute", "/tmp/x", "", NULL, TAR_FILE, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "absolute path refused" },
        { "reserved", ".ferry/x", "", NULL, TAR_FILE, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "reserved name refused" },
        { "dot inside", "a/./x", "", NULL, TAR_FILE, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "a/./x: invalid path" },
        { "symlink then file", "ln", "..", "ln/x", TAR_SYMLINK,
            VOLR_INVALID, -ENOTDIR, "a symlink or a file is in its way" },
        { "symlink then dir", "ln", "..", "ln/d", TAR_SYMLINK,
            VOLR_INVALID, FERRY_ERR_NOT_DIR,
            "a symlink or a file is in its way" },
        { "empty link", "ln", "", NULL, TAR_SYMLINK, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "invalid symlink target" },
        { "hard link", "h", "/etc/passwd", NULL, TAR_HARDLINK,
            VOLR_INVALID, FERRY_ERR_UNSUPPORTED, "hard link refused" },
        { "device", "dev", "", NULL, TAR_CHAR, VOLR_INVALID,
            FERRY_ERR_UNSUPPORTED, "device file or FIFO refused" },
        { "fifo", "fifo", "", NULL, TAR_FIFO, VOLR_INVALID,
            FERRY_ERR_UNSUPPORTED, "device file or FIFO refused" },
    };

    check_tmpdir(top);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("%s", cases[i].name);
        snprintf(dst, sizeof(dst), "%s/dest", top);
        CHECK(mkdir(dst, 0755) == 0);
        mem_init(&m, UINT64_MAX);
        e[0] = ent((enum tar_type)cases[i].t1, cases[i].p1, cases[i].l1,
            cases[i].t1 == TAR_FILE ? 3 : 0);
        if (cases[i].p2 != NULL)
            e[1] = ent(strcmp(cases[i].name, "symlink then dir") == 0 ?
                TAR_DIR : TAR_FILE, cases[i].p2, "",
                strcmp(cases[i].name, "symlink then dir") == 0 ? 0 : 3);
        /* tar_header_put writes only the types we make: forge others. */
        if (e[0].type != TAR_FILE && e[0].type != TAR_SYMLINK)
            e[0].type = TAR_SYMLINK;
        evil_volume(&m, e, cases[i].p2 != NULL ? 2 : 1);
        if (cases[i].t1 == TAR_HARDLINK || cases[i].t1 == TAR_CHAR ||
            cases[i].t1 == TAR_FIFO) {
            uint8_t *h;
            struct zst_dec *zd = zst_dec_new();
            uint8_t raw[4096];
            size_t used, out;
            struct zst_enc *ze = zst_enc_new();
            unsigned sum = 0, k;

            CHECK_OK(zst_dec_put(zd, buf_ptr(&m.vol[1]),
                buf_used(&m.vol[1]), &used, raw, sizeof(raw), &out));
            h = raw;
            h[156] = cases[i].t1 == TAR_HARDLINK ? '1' :
                cases[i].t1 == TAR_CHAR ? '3' : '6';
            memset(h + 148, ' ', 8);
            for (k = 0; k < 512; k++)
                sum += h[k];
            snprintf((char *)h + 148, 8, "%06o", sum);
            buf_reset(&m.vol[1]);
            CHECK_OK(zst_enc_put(ze, raw, out, &m.vol[1]));
            CHECK_OK(zst_enc_end(ze, &m.vol[1]));
            zst_dec_free(zd);
            zst_enc_free(ze);
        }
        CHECK_EQ_INT(mem_unpack(&m, dst, 0, 1 << 20, &text), cases[i].kind);
        CHECK_EQ_ERR(mem_err, cases[i].err);
        check_note("%s: %s", cases[i].name, text);
        CHECK(strstr(text, cases[i].why) != NULL);
        check_note("%s", cases[i].name);
        snprintf(path, sizeof(path), "%s/x", top);
        CHECK(lstat(path, &st) != 0 && errno == ENOENT);
        snprintf(path, sizeof(path), "%s/d", top);
        CHECK(lstat(path, &st) != 0 && errno == ENOENT);
        snprintf(path, sizeof(path), "%s/dest/ln/x", top);
        CHECK(lstat(path, &st) != 0);
        mem_cleanup(&m);
        check_rmtree(dst);
    }
    check_note_clear();
    check_rmtree(top);
}

/* A piece as volw writes one: the index-th of the file at path (of
 * file_size bytes), len bytes from offset. */
static struct tar_entry
piece(const char *name, const char *path, uint32_t index, uint64_t offset,
    uint64_t len, uint64_t file_size)
{
    struct tar_entry e = ent(TAR_FILE, name, "", len);

    e.is_piece = 1;
    e.piece.index = index;
    e.piece.offset = offset;
    e.piece.file_size = file_size;
    e.piece.path = path;
    e.piece.path_len = strlen(path);
    return e;
}

/* Pieces of a split file that do not follow on, belong to no path, are
 * cut into by another member, or end with the set before the file does:
 * refused as invalid, nothing committed. */
#define LAST UINT32_MAX

TEST(volume_pieces_refused)
{
    char dst[CHECK_PATH_MAX];
    struct tar_entry e[2];
    struct mem m;
    const char *text;
    size_t i;
    static const struct {
        const char *name;
        uint64_t offset1;
        uint32_t index2;    /* 0: a plain member "g" second; LAST: none */
        uint64_t offset2;
        const char *path1;
        int err;
        const char *why;    /* in the reader's text: which check it was */
    } cases[] = {
        { "first not at 0", 512, 2, 1024, "f", FERRY_ERR_FORMAT,
          "piece 1 does not start the file" },
        { "index skipped", 0, 3, 512, "f", FERRY_ERR_FORMAT,
          "piece 3 out of order" },
        { "offset off", 0, 2, 1024, "f", FERRY_ERR_FORMAT,
          "piece 2 out of order" },
        { "member inside", 0, 0, 0, "f", FERRY_ERR_FORMAT,
          "split file incomplete (piece 2 missing)" },
        { "no path", 0, 2, 512, "./", FERRY_ERR_BAD_PATH, "invalid piece" },
        { "set ends first", 0, LAST, 0, "f", FERRY_ERR_SHORT,
          "split file incomplete (piece 2 missing)" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("%s", cases[i].name);
        check_tmpdir(dst);
        mem_init(&m, UINT64_MAX);
        e[0] = piece("f.ferry-piece-00001", cases[i].path1, 1,
            cases[i].offset1, 512, 2048);
        e[1] = cases[i].index2 == 0 ? ent(TAR_FILE, "g", "", 3) :
            piece("f.ferry-piece-00002", "f", cases[i].index2,
            cases[i].offset2, 512, 2048);
        evil_volume(&m, e, cases[i].index2 == LAST ? 1 : 2);
        CHECK_EQ_INT(mem_unpack(&m, dst, 0, 1 << 20, &text), VOLR_INVALID);
        CHECK_EQ_ERR(mem_err, cases[i].err);
        check_note("%s: %s", cases[i].name, text);
        CHECK(strstr(text, cases[i].why) != NULL);
        mem_cleanup(&m);
        check_rmtree(dst);
    }
    check_note_clear();
}

/* The manifest disagrees: a path, a size, a hash, a missing member, a
 * second head. */
TEST(volume_manifest_mismatch)
{
    struct volw_opts o = { "t", 1u << 20, 0, 0, 0, NULL };
    char src[CHECK_PATH_MAX], dst[CHECK_PATH_MAX];
    struct volw *w;
    struct mem m;
    const char *text;
    char *line;
    int pass;
    /* In the reader's text, pass by pass: which check it was. */
    static const char *const why[] = {
        "member does not match the manifest",
        "member does not match the manifest",
        "content does not match the manifest's XXH3",
        "the manifest lists more than the volumes hold",
        "manifest: a second head",
    };

    check_tmpdir(src);
    for (pass = 0; pass < 5; pass++) {
        check_note("pass %d", pass);
        mem_init(&m, UINT64_MAX);
        w = mem_writer(&m, &o);
        vol_add(w, TAR_FILE, "a", vol_file(src, "a", 5000, 7), 5000, NULL);
        vol_add(w, TAR_FILE, "b", vol_file(src, "b", 10, 8), 10, NULL);
        CHECK_OK(volw_finish(w));
        volw_free(w);
        CHECK_OK(buf_put_u8(&m.man, 0));
        line = (char *)buf_ptr(&m.man);
        if (pass == 0)
            memcpy(strstr(line, "\"path\":\"a\"") + 8, "z", 1);
        else if (pass == 1)
            memcpy(strstr(line, "\"size\":5000") + 7, "6", 1);
        else if (pass == 2)
            memcpy(strstr(line, "\"xxh3\":\"") + 8, "0000", 4);
        else if (pass == 3)
            memcpy(strstr(line, "\"entries\":2") + 10, "3", 1);
        buf_unreserve(&m.man, 1);
        if (pass == 4) {
            /* The head line again, where members are due. */
            size_t all = buf_used(&m.man), head;
            char *copy = check_alloc(all);

            memcpy(copy, buf_ptr(&m.man), all);
            head = (size_t)((char *)memchr(copy, '\n', all) - copy) + 1;
            buf_reset(&m.man);
            CHECK_OK(buf_put(&m.man, copy, head));
            CHECK_OK(buf_put(&m.man, copy, all));
            free(copy);
        }
        check_tmpdir(dst);
        CHECK_EQ_INT(mem_unpack(&m, dst, 1, 1 << 20, &text), VOLR_INTEGRITY);
        CHECK_EQ_ERR(mem_err, pass == 2 ? FERRY_ERR_HASH_MISMATCH :
            FERRY_ERR_FORMAT);
        check_note("pass %d: %s", pass, text);
        CHECK(strstr(text, why[pass]) != NULL);
        check_rmtree(dst);
        mem_cleanup(&m);
    }
    check_note_clear();
    check_rmtree(src);
}

/* The manifest gives a split file another count of pieces than the
 * volumes hold. */
TEST(volume_manifest_pieces)
{
    struct volw_opts o = { "t", VOLUME_MIN_SIZE, 0, 0, 0, NULL };
    char src[CHECK_PATH_MAX], dst[CHECK_PATH_MAX];
    struct volw *w;
    struct mem m;
    const char *text;
    char *at;

    check_tmpdir(src);
    mem_init(&m, UINT64_MAX);
    w = mem_writer(&m, &o);
    vol_add(w, TAR_FILE, "big", vol_file(src, "big", 200000, 11), 200000,
        NULL);
    CHECK_OK(volw_finish(w));
    volw_free(w);
    CHECK(m.nvol >= 3);
    check_tmpdir(dst);
    CHECK_EQ_INT(mem_unpack(&m, dst, 1, 1 << 20, &text), VOLR_OK);
    check_rmtree(dst);
    CHECK_OK(buf_put_u8(&m.man, 0));
    CHECK((at = strstr((char *)buf_ptr(&m.man), "\"pieces\":")) != NULL);
    at[9] = at[9] == '9' ? '8' : (char)(at[9] + 1);
    buf_unreserve(&m.man, 1);
    check_tmpdir(dst);
    CHECK_EQ_INT(mem_unpack(&m, dst, 1, 1 << 20, &text), VOLR_INTEGRITY);
    CHECK_EQ_ERR(mem_err, FERRY_ERR_FORMAT);
    check_note("%s", text);
    CHECK(strstr(text, "its pieces do not match the manifest") != NULL);
    check_note_clear();
    check_rmtree(dst);
    mem_cleanup(&m);
    check_rmtree(src);
}

/* Damaged zstd and a volume cut short. */
TEST(volume_damaged)
{
    struct volw_opts o = { "t", 1u << 20, 0, 0, 0, NULL };
    char src[CHECK_PATH_MAX], dst[CHECK_PATH_MAX];
    struct volw *w;
    struct mem m;
    const char *text;
    uint8_t *p;

    check_tmpdir(src);
    mem_init(&m, UINT64_MAX);
    w = mem_writer(&m, &o);
    vol_add(w, TAR_FILE, "a", vol_file(src, "a", 300000, 9), 300000, NULL);
    CHECK_OK(volw_finish(w));
    volw_free(w);
    p = (uint8_t *)buf_ptr(&m.vol[1]);
    p[buf_used(&m.vol[1]) / 2] ^= 0x10;
    check_tmpdir(dst);
    CHECK_EQ_INT(mem_unpack(&m, dst, 0, 1 << 20, &text), VOLR_INTEGRITY);
    p[buf_used(&m.vol[1]) / 2] ^= 0x10;
    buf_unreserve(&m.vol[1], 100);
    CHECK_EQ_INT(mem_unpack(&m, dst, 0, 1 << 20, &text), VOLR_INTEGRITY);
    CHECK(strstr(text, "truncated") != NULL);
    check_rmtree(dst);
    mem_cleanup(&m);
    check_rmtree(src);
}

/* The writer's own refusals: bad options, paths, too small a volume. */
TEST(volume_writer_limits)
{
    struct volw_opts o = { "t", VOLUME_MIN_SIZE - 1, 0, 0, 0, NULL };
    struct volw_sink s;
    struct volw_entry e;
    struct volw *w;
    struct mem m;

    mem_init(&m, UINT64_MAX);
    s = (struct volw_sink){ mem_open, mem_write, mem_close, mem_record, &m };
    CHECK_EQ_ERR(volw_new(&o, &s, &w), FERRY_ERR_USAGE);
    o.volume_size = VOLUME_MIN_SIZE;
    o.block_size = 1000;
    CHECK_EQ_ERR(volw_new(&o, &s, &w), FERRY_ERR_USAGE);
    o.block_size = 0;
    o.max_volumes = VOLUME_MAX_COUNT + 1;
    CHECK_EQ_ERR(volw_new(&o, &s, &w), FERRY_ERR_USAGE);
    o.max_volumes = 0;
    CHECK_OK(volw_new(&o, &s, &w));
    memset(&e, 0, sizeof(e));
    e.type = TAR_FILE;
    e.path = "../x";
    CHECK_EQ_ERR(volw_add(w, &e, -1), FERRY_ERR_BAD_PATH);
    e.path = "l";
    e.type = TAR_SYMLINK;
    e.target = "";
    CHECK_EQ_ERR(volw_add(w, &e, -1), FERRY_ERR_BAD_PATH);
    e.type = TAR_FIFO;
    CHECK_EQ_ERR(volw_add(w, &e, -1), FERRY_ERR_USAGE);
    /* A file that ends before its size: CHANGED. */
    e.type = TAR_FILE;
    e.size = 10;
    {
        char dir[CHECK_PATH_MAX];
        int fd;

        check_tmpdir(dir);
        fd = vol_file(dir, "short", 5, 1);
        CHECK_EQ_ERR(volw_add(w, &e, fd), FERRY_ERR_CHANGED);
        close(fd);
        check_rmtree(dir);
    }
    /* The writer refuses to go on after a half-written member. */
    e.size = 0;
    CHECK_EQ_ERR(volw_add(w, &e, -1), FERRY_ERR_USAGE);
    volw_free(w);
    mem_cleanup(&m);
}

/* A sink that checks, at each file's record, that none of that file's
 * tar member has been written yet: what the written bytes decode to ends
 * before the member's headers (at least one block before its data). */
struct mem_order {
    struct mem m;
    ZSTD_DCtx *d;
    size_t fed;              /* bytes of vol[1] decoded so far */
    uint64_t decoded;        /* their tar bytes */
    unsigned files;
};

static int
order_record(void *ctx, const struct vman_rec *r)
{
    struct mem_order *o = ctx;
    const struct buf *b = &o->m.vol[o->m.nvol];
    uint8_t out[1 << 16];

    if (r->type == VMAN_FILE && o->m.nvol > 0) {
        ZSTD_inBuffer in = { buf_ptr(b), buf_used(b), o->fed };
        size_t k;

        do {
            ZSTD_outBuffer ob = { out, sizeof(out), 0 };

            k = ZSTD_decompressStream(o->d, &ob, &in);
            CHECK(!ZSTD_isError(k));
            o->decoded += ob.pos;
            if (ob.pos < sizeof(out) && in.pos == in.size)
                break;
        } while (1);
        o->fed = in.pos;
        check_note("%s at %llu, decoded %llu", r->path,
            (unsigned long long)r->offset, (unsigned long long)o->decoded);
        CHECK(o->decoded + TAR_BLOCK <= r->offset);
        check_note_clear();
        o->files++;
    }
    return mem_record(&o->m, r);
}

/* volw_add_mem: each file's record goes to the sink before any of its
 * bytes (a transfer announces a member ahead of the data that holds it),
 * with the same hash volw_add gives (the reader checks it against the
 * data); a file too big for an empty volume is refused and the writer
 * goes on. */
TEST(volume_mem_order)
{
    const uint64_t vs = 1u << 20;
    struct volw_opts o = { "t", vs, 64u << 10, 0, 0, NULL };
    static const size_t sizes[] = { 300000, 0, 1, 70000, 200000, 5000 };
    char dst[CHECK_PATH_MAX], name[32];
    struct mem_order mo;
    struct volw_sink s;
    struct volw_entry e;
    struct volw *w;
    const char *text;
    uint8_t *data;
    size_t i, j;

    memset(&mo, 0, sizeof(mo));
    mem_init(&mo.m, vs);
    CHECK((mo.d = ZSTD_createDCtx()) != NULL);
    s = (struct volw_sink){ mem_open, mem_write, mem_close, order_record,
        &mo };
    CHECK_OK(volw_new(&o, &s, &w));
    CHECK((data = xmalloc(vs)) != NULL);
    memset(&e, 0, sizeof(e));
    e.type = TAR_FILE;
    e.mode = 0640;
    e.mtime_sec = 1700000000;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        /* Random enough that zstd emits while the file goes in. */
        for (j = 0; j < sizes[i]; j++)
            data[j] = (uint8_t)((j * 2654435761u + i) >> 13);
        snprintf(name, sizeof(name), "f%zu", i);
        e.path = name;
        e.size = sizes[i];
        CHECK_OK(volw_add_mem(w, &e, data));
    }
    e.path = "huge";
    e.size = vs;
    CHECK_EQ_ERR(volw_add_mem(w, &e, data), FERRY_ERR_USAGE);
    e.type = TAR_DIR;
    e.size = 0;
    CHECK_EQ_ERR(volw_add_mem(w, &e, data), FERRY_ERR_USAGE);
    CHECK_OK(volw_finish(w));
    CHECK_EQ_INT(mo.m.nvol, 1);
    CHECK_EQ_INT(mo.files, sizeof(sizes) / sizeof(sizes[0]));
    volw_free(w);
    check_tmpdir(dst);
    CHECK_EQ_INT(mem_unpack(&mo.m, dst, 1, 1 << 20, &text), VOLR_OK);
    check_rmtree(dst);
    xfree(data);
    ZSTD_freeDCtx(mo.d);
    mem_cleanup(&mo.m);
}

/* A borrowed encoder (volw_opts.enc) serves set after set: one left in
 * the middle of a frame (a writer freed without volw_finish) is reset by
 * the next writer, whose volumes read back whole; volw_free leaves it to
 * its owner. */
TEST(volume_enc_reused)
{
    const uint64_t vs = 1u << 20;
    struct volw_opts o = { "t", vs, 64u << 10, 0, 0, NULL };
    char dst[CHECK_PATH_MAX];
    struct volw_entry e;
    struct mem m;
    struct volw *w;
    const char *text;
    uint8_t data[70000];
    size_t j;
    int round;

    CHECK((o.enc = zst_enc_new()) != NULL);
    for (j = 0; j < sizeof(data); j++)
        data[j] = (uint8_t)((j * 2654435761u) >> 11);
    memset(&e, 0, sizeof(e));
    e.type = TAR_FILE;
    e.path = "f";
    e.mode = 0640;
    e.size = sizeof(data);
    for (round = 0; round < 3; round++) {
        mem_init(&m, vs);
        w = mem_writer(&m, &o);
        CHECK_OK(volw_add_mem(w, &e, data));
        if (round == 0) {
            volw_free(w);  /* abandoned mid-frame */
            mem_cleanup(&m);
            continue;
        }
        CHECK_OK(volw_finish(w));
        volw_free(w);
        check_tmpdir(dst);
        CHECK_EQ_INT(mem_unpack(&m, dst, 1, 1 << 20, &text), VOLR_OK);
        check_rmtree(dst);
        mem_cleanup(&m);
    }
    zst_enc_free(o.enc);
}

TEST(volume_names)
{
    char out[VOLUME_NAME_MAX], out2[VOLUME_NAME_MAX], path[400];
    size_t n, n2, base;

    CHECK_OK(volume_file_name("data", 7, out, sizeof(out)));
    CHECK_EQ_STR(out, "data.00007.tar.zst");
    CHECK_EQ_ERR(volume_file_name("data", 7, out, 10), FERRY_ERR_TOO_LARGE);
    CHECK_OK(volume_piece_name("d/big.bin", 9, 12, out, sizeof(out), &n));
    CHECK_EQ_STR(out, "d/big.bin.ferry-piece-00012");
    /* Room for the path, the mark, a cut's tag and the NUL, or nothing. */
    CHECK_EQ_ERR(volume_piece_name("d/big.bin", 9, 12, out, 44, &n),
        FERRY_ERR_TOO_LARGE);
    CHECK_OK(volume_piece_name("d/big.bin", 9, 12, out, 45, &n));
    /* A base too long for the mark is cut, a hash keeps names apart, and
     * the result is a valid name. */
    memset(path, 'a', sizeof(path));
    memcpy(path, "d/", 2);
    CHECK_OK(volume_piece_name(path, 252, 1, out, sizeof(out), &n));
    path[251] = 'b';
    CHECK_OK(volume_piece_name(path, 252, 1, out2, sizeof(out2), &n2));
    CHECK(strcmp(out, out2) != 0);
    base = n - 2;
    CHECK(base <= 255);
    /* A UTF-8 sequence is not cut. */
    memset(path, 'a', sizeof(path));
    memcpy(path + 200, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 10);
    CHECK_OK(volume_piece_name(path, 255, 1, out, sizeof(out), &n));
    CHECK(n <= 255);
    CHECK(text_utf8_valid(out, n));
}

TEST(volume_zst_stream)
{
    struct zst_enc *e = zst_enc_new();
    struct zst_dec *d = zst_dec_new();
    uint8_t *src = check_alloc(1 << 20), *back = check_alloc(1 << 20);
    size_t used, out, got = 0, off = 0;
    struct buf b;
    uint32_t x = 7;
    size_t i;

    CHECK(e != NULL && d != NULL);
    for (i = 0; i < (1u << 20); i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        src[i] = (uint8_t)(x >> 11);
    }
    buf_init(&b, 1u << 22);
    CHECK_OK(zst_enc_put(e, src, 1 << 20, &b));
    CHECK_OK(zst_enc_end(e, &b));
    /* Random data stays within the bound. */
    CHECK(buf_used(&b) <= zst_enc_bound(1 << 20));
    CHECK(!zst_dec_at_end(d));
    while (off < buf_used(&b) || got < (1u << 20)) {
        CHECK_OK(zst_dec_put(d, buf_ptr(&b) + off, buf_used(&b) - off,
            &used, back + got, (1u << 20) - got, &out));
        off += used;
        got += out;
        if (used == 0 && out == 0)
            break;
    }
    CHECK_EQ_U64(got, 1u << 20);
    CHECK(zst_dec_at_end(d));
    CHECK_EQ_MEM(back, src, 1u << 20);
    /* Not zstd at all. */
    zst_dec_free(d);
    d = zst_dec_new();
    CHECK_EQ_ERR(zst_dec_put(d, "not zstd, not at all", 20, &used, back,
        1 << 20, &out), FERRY_ERR_FORMAT);
    zst_dec_free(d);
    zst_enc_free(e);
    buf_cleanup(&b);
    free(src);
    free(back);
}

/* Past the most volumes a writer may make, small files and the pieces of
 * a large one are refused (TOO_LARGE), not numbered on. */
TEST(volume_count_limit)
{
    static uint8_t noise[200000];
    struct volw_opts o = { "t", VOLUME_MIN_SIZE, 0, 0, 2, NULL };
    char src[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16], name[16];
    struct volw_entry e;
    struct volw *w;
    struct mem m;
    uint32_t x = 2463534242u;
    size_t k;
    int i, fd;

    /* Bytes zstd cannot shrink, so each file fills its volume. */
    for (k = 0; k < sizeof(noise); k++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[k] = (uint8_t)x;
    }
    check_tmpdir(src);
    /* Files of 40000 bytes: one a volume. */
    mem_init(&m, UINT64_MAX);
    w = mem_writer(&m, &o);
    memset(&e, 0, sizeof(e));
    e.type = TAR_FILE;
    e.size = 40000;
    e.mode = 0640;
    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        e.path = name;
        snprintf(path, sizeof(path), "%s/%s", src, name);
        check_write_file(path, noise + i * 40000, 40000, 0);
        CHECK((fd = open(path, O_RDONLY)) >= 0);
        if (i < 2)
            CHECK_OK(volw_add(w, &e, fd));
        else
            CHECK_EQ_ERR(volw_add(w, &e, fd), FERRY_ERR_TOO_LARGE);
        close(fd);
    }
    CHECK_EQ_U64(m.nvol, 2);
    volw_free(w);
    mem_cleanup(&m);
    /* A file that needs three volumes' pieces. */
    mem_init(&m, UINT64_MAX);
    w = mem_writer(&m, &o);
    e.path = "big";
    e.size = 200000;
    snprintf(path, sizeof(path), "%s/big", src);
    check_write_file(path, noise, sizeof(noise), 0);
    CHECK((fd = open(path, O_RDONLY)) >= 0);
    CHECK_EQ_ERR(volw_add(w, &e, fd), FERRY_ERR_TOO_LARGE);
    close(fd);
    volw_free(w);
    mem_cleanup(&m);
    check_rmtree(src);
}

/* A stage's file: opened, written, hashed as the sender would, done. */
static int
stage_file(struct volstage *s, struct volstage_file *f, const char *path,
    const char *data, int whole)
{
    struct hash128 got, want;
    size_t n = strlen(data);

    CHECK_OK(volstage_file_open(s, f, path, n, whole));
    CHECK_OK(volstage_file_write(s, f, data, n));
    CHECK_OK(volstage_file_hash(s, f, &got));
    CHECK_OK(hash_mem(data, n, s->block_size, &want));
    CHECK(hash_equal(&got, &want));
    f->mode = 0640;
    return volstage_file_done(s, f);
}

/* Counts the files the writer tells were put in place. */
static int
stage_told(void *ctx, struct dest_write_file *f)
{
    uint64_t *n = ctx;

    if (f->failed == 0)
        (*n)++;
    return f->failed;
}

static void
stage_read(const char *root, const char *rel, const char *want)
{
    char p[2 * CHECK_PATH_MAX], got[64];
    struct stat st;
    ssize_t n;
    int fd;

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    CHECK((fd = open(p, O_RDONLY)) >= 0);
    n = read(fd, got, sizeof(got) - 1);
    close(fd);
    CHECK(n >= 0);
    got[n] = '\0';
    CHECK_EQ_STR(got, want);
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0640);
}

/* Small whole files are written behind the reader and committed by the
 * stage's writer (dest_write.h), which tells each file; a piece is
 * written in place. What the writer cannot write stops it with that
 * file's path, and neither it nor what follows is put in place; bytes
 * past a file's size are refused. */
TEST(volume_stage_behind)
{
    char root[CHECK_PATH_MAX], p[2 * CHECK_PATH_MAX], name[24];
    struct volstage s;
    struct volstage_file f;
    const char *failed;
    uint64_t told = 0;
    int fd, i;

    check_tmpdir(root);
    CHECK((fd = open(root, O_RDONLY | O_DIRECTORY)) >= 0);
    CHECK_OK(volstage_init(&s, fd, 4096));
    volstage_file_init(&f);

    /* Behind: no descriptor here; in place once committed. */
    CHECK_OK(stage_file(&s, &f, "a", "alpha", 1));
    CHECK_OK(volstage_file_open(&s, &f, "b", 4, 1));
    CHECK_EQ_INT(f.fd, -1);
    CHECK_EQ_ERR(volstage_file_write(&s, &f, "bravo", 5),
        FERRY_ERR_TOO_LARGE);
    CHECK_OK(volstage_file_write(&s, &f, "brav", 4));
    f.mode = 0640;
    CHECK_OK(volstage_file_done(&s, &f));
    /* A piece of a split file is written here, at once. */
    CHECK_OK(volstage_file_open(&s, &f, "c", 7, 0));
    CHECK(f.fd >= 0);
    CHECK_EQ_ERR(volstage_file_write(&s, &f, "charlie!", 8),
        FERRY_ERR_TOO_LARGE);
    CHECK_OK(volstage_file_write(&s, &f, "charlie", 7));
    f.mode = 0640;
    CHECK_OK(volstage_file_done(&s, &f));
    CHECK_OK(dest_writer_commit(&s.w, 1, stage_told, &told));
    for (i = 0; i < 5000 && dest_writer_pending(&s.w); i++)
        usleep(1000);
    CHECK_OK(dest_writer_poll(&s.w, 0, &failed));
    CHECK_EQ_U64(told, 3);
    stage_read(root, "a", "alpha");
    stage_read(root, "b", "brav");
    stage_read(root, "c", "charlie");

    /* The writer finds its staging name taken: it names the file, and
     * neither it nor the file after it is in place. */
    snprintf(name, sizeof(name), "%llu", (unsigned long long)s.next_key);
    snprintf(p, sizeof(p), "%s/%s/%s", root, s.name, name);
    CHECK(close(open(p, O_WRONLY | O_CREAT | O_EXCL, 0600)) == 0);
    CHECK_OK(stage_file(&s, &f, "d/e", "delta", 1));
    (void)stage_file(&s, &f, "f", "foxtrot", 1);
    /* Known at once, or once the thread got there. */
    i = dest_writer_commit(&s.w, 1, stage_told, &told);
    CHECK(i == 0 || i == -EEXIST);
    CHECK_EQ_ERR(dest_writer_poll(&s.w, 1, &failed), -EEXIST);
    CHECK(failed != NULL);
    CHECK_EQ_STR(failed, "d/e");
    snprintf(p, sizeof(p), "%s/d/e", root);
    CHECK_EQ_INT(access(p, F_OK), -1);
    snprintf(p, sizeof(p), "%s/f", root);
    CHECK_EQ_INT(access(p, F_OK), -1);
    CHECK_EQ_U64(told, 3);

    volstage_file_cleanup(&f);
    volstage_cleanup(&s);
    snprintf(p, sizeof(p), "%s/%s", root, s.name);
    CHECK_EQ_INT(access(p, F_OK), -1);
    close(fd);
}
