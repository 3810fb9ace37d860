/*
 * roles.c: the harness of roles.h. Frames of a script are encoded with
 * the protocol's own encoders, the frames a role sends are decoded with
 * its own decoders and written as text, and the destination is read
 * back from disk.
 */
#include "roles.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../common/zst.h"
#include "../../engine/delta/delta_index.h"
#include "../../engine/manifest.h"
#include "../../proto/frame.h"
#include "../../proto/msg_filter.h"
#include "../../proto/msg_space.h"
#include "../../proto/msg_vol.h"

const uint8_t rt_tid[16] = { 't', 'r', 'a', 'n', 's', 'f', 'e',
    'r', '-', 'i', 'd', '-', '0', '0', '0', '1' };
const uint8_t rt_tkey[32] = "the transfer's secret, 32 bytes";

/* Setup and teardown of the scratch root. */

void
rt_path(const struct rt *rt, const char *rel, char out[CHECK_PATH_MAX])
{
    if (snprintf(out, CHECK_PATH_MAX, "%s/%s", rt->root, rel) >=
        CHECK_PATH_MAX)
        check_fail(__FILE__, __LINE__, "path too long: %s", rel);
}

void
rt_mkdir(struct rt *rt, const char *rel, unsigned mode)
{
    char p[CHECK_PATH_MAX];

    rt_path(rt, rel, p);
    CHECK_EQ_INT(mkdir(p, (mode_t)mode), 0);
    CHECK_EQ_INT(chmod(p, (mode_t)mode), 0);
}

void
rt_link(struct rt *rt, const char *rel, const char *target)
{
    char p[CHECK_PATH_MAX];

    rt_path(rt, rel, p);
    CHECK_EQ_INT(symlink(target, p), 0);
}

void
rt_init(struct rt *rt, const struct rt_case *c)
{
    char p[CHECK_PATH_MAX];

    memset(rt, 0, sizeof(*rt));
    rt->c = c;
    manifest_init(&rt->live_mf);
    check_tmpdir(rt->root);
    rt_mkdir(rt, "outside", 0755);
    rt_path(rt, "outside/keep", p);
    check_write_file(p, "abc", 3, 0);
    rt->x.caps = (RT_CAPS_ALL | c->caps_on) & ~c->caps_off;
    rt_waker_set(&rt->x);
    rt->pol.home = rt->root;
    rt->spol.resolve = policy_resolve;
    rt->spol.ctx = &rt->pol;
}

void
rt_finish(struct rt *rt)
{
    char p[CHECK_PATH_MAX], buf[8];
    struct dirent *de;
    struct stat st;
    DIR *dir;
    int fd;

    /* Nothing but the destination, the source, outside/keep and a row's
     * store of kept signatures. */
    CHECK((dir = opendir(rt->root)) != NULL);
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        check_note("%s", de->d_name);
        CHECK(strcmp(de->d_name, "dest") == 0 ||
            strcmp(de->d_name, "src") == 0 ||
            strcmp(de->d_name, "outside") == 0 ||
            (rt->c->kept && strcmp(de->d_name, "kept") == 0));
    }
    closedir(dir);
    check_note_clear();
    rt_path(rt, "outside", p);
    CHECK((dir = opendir(p)) != NULL);
    while ((de = readdir(dir)) != NULL)
        CHECK(de->d_name[0] == '.' || strcmp(de->d_name, "keep") == 0);
    closedir(dir);
    rt_path(rt, "outside/keep", p);
    CHECK_EQ_INT(lstat(p, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((fd = open(p, O_RDONLY)) >= 0);
    CHECK_EQ_INT(read(fd, buf, sizeof(buf)), 3);
    close(fd);
    CHECK_EQ_MEM(buf, "abc", 3);
    check_rmtree(rt->root);
}

/* The content model. */

void
rt_content(const char *path, uint64_t off, uint8_t *buf, size_t n)
{
    uint8_t seed = (uint8_t)hash_name64(path, strlen(path));
    size_t i;

    const char *base = strrchr(path, '/');
    static const uint8_t zip[4] = { 'P', 'K', 3, 4 };

    /* Runs of 61 equal bytes: compressible, and no two blocks alike. */
    for (i = 0; i < n; i++)
        buf[i] = (uint8_t)(seed + (off + i) / 61);
    /* A file named torn*: a zip's first header and no end, so a zip cut
     * short (formcheck.h). */
    base = base != NULL ? base + 1 : path;
    if (strncmp(base, "torn", 4) == 0)
        for (i = 0; i < n && off + i < sizeof(zip); i++)
            buf[i] = zip[off + i];
}

void
rt_write(struct rt *rt, const char *rel, uint64_t n)
{
    char p[CHECK_PATH_MAX];
    uint8_t *buf = check_alloc(n > 0 ? n : 1);

    rt_content(rel, 0, buf, n);
    rt_path(rt, rel, p);
    check_write_file(p, buf, n, 0);
    free(buf);
}

void
rt_make_source(struct rt *rt)
{
    rt_mkdir(rt, "src", 0755);
    rt_mkdir(rt, "src/d", 0755);
    rt_write(rt, "src/a", 100);
    rt_write(rt, "src/d/b", 150000);
    rt_write(rt, "src/e", 0);
    rt_link(rt, "src/ln", "a");
}

struct rt_file *
rt_file(struct rt *rt, uint32_t id)
{
    size_t i;

    for (i = rt->nfiles; i-- > 0;)
        if (rt->files[i].id == id)
            return &rt->files[i];
    return NULL;
}

const struct rt_file *
rt_file_at(const struct rt *rt, const char *path)
{
    size_t i;

    for (i = rt->nfiles; i-- > 0;)
        if (strcmp(rt->files[i].path, path) == 0)
            return &rt->files[i];
    return NULL;
}

static void
rt_file_add(struct rt *rt, uint32_t id, const char *path, uint64_t size)
{
    const struct rt_file *old = rt_file_at(rt, path);
    struct rt_file *f;

    CHECK(rt->nfiles < RT_MAX_FILES);
    f = &rt->files[rt->nfiles++];
    /* The same path in a later run keeps its zero blocks. */
    if (old != NULL)
        *f = *old;
    else
        memset(f, 0, sizeof(*f));
    f->id = id;
    snprintf(f->path, sizeof(f->path), "%s", path);
    f->size = size;
}

static int
rt_is_zero(const struct rt_file *f, uint64_t k)
{
    size_t i;

    for (i = 0; i < f->nzeros; i++)
        if (f->zeros[i] == k)
            return 1;
    return 0;
}

static size_t
rt_block_len(const struct rt_file *f, uint64_t k)
{
    uint64_t off = k * RT_BS;

    return f->size - off < RT_BS ? (size_t)(f->size - off) : RT_BS;
}

/* Block k of f as the model has it. */
static void
rt_block(const struct rt_file *f, uint64_t k, uint8_t *buf)
{
    size_t n = rt_block_len(f, k);

    if (rt_is_zero(f, k))
        memset(buf, 0, n);
    else
        rt_content(f->path, k * RT_BS, buf, n);
}

static void
rt_file_hash(const struct rt_file *f, struct hash128 *out)
{
    struct hash_file *hf = hash_file_new(f->size, RT_BS);
    uint8_t *buf = check_alloc(RT_BS);
    struct hash128 h;
    uint64_t k;

    CHECK(hf != NULL);
    for (k = 0; k * RT_BS < f->size; k++) {
        rt_block(f, k, buf);
        hash_block(buf, rt_block_len(f, k), &h);
        hash_file_add(hf, &h);
    }
    hash_file_final(hf, out);
    hash_file_free(hf);
    free(buf);
}

/* Encoding a script's frames. */

static void
rt_encode_block(struct rt *rt, const struct rt_frame *fr, uint64_t k,
    struct buf *b, uint8_t *buf, uint8_t *zbuf)
{
    struct rt_file *f = rt_file(rt, fr->id), unknown;
    struct msg_block m;
    struct zst *z;
    size_t n;

    if (f == NULL) {
        /* Data for a file the script never offered. */
        memset(&unknown, 0, sizeof(unknown));
        snprintf(unknown.path, sizeof(unknown.path), "?");
        unknown.size = (uint64_t)1 << 40;
        f = &unknown;
    }
    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    if (fr->v == RV_RAW) {
        m.offset = fr->a;
        n = (size_t)fr->b;
        rt_content(f->path, m.offset, buf, n);
    } else {
        m.offset = k * RT_BS;
        if (fr->v == RV_ZERO && !rt_is_zero(f, k)) {
            CHECK(f->nzeros < RT_MAX_ZEROS);
            f->zeros[f->nzeros++] = k;
        }
        n = rt_block_len(f, k);
        rt_block(f, k, buf);
    }
    m.raw_len = (uint32_t)n;
    hash_block(buf, n, &m.hash);
    m.data = buf;
    m.data_len = n;
    if (fr->v == RV_ZERO) {
        m.flags = BLOCK_F_ZERO;
        m.data = NULL;
        m.data_len = 0;
    } else if (fr->v == RV_ZSTD || fr->v == RV_BADZSTD) {
        /* BADZSTD: a frame of one byte less than raw_len. */
        CHECK((z = zst_new()) != NULL);
        CHECK_OK(zst_compress(z, ZST_LEVEL, zbuf, n - 1, buf,
            fr->v == RV_BADZSTD ? n - 1 : n, &m.data_len));
        zst_free(z);
        m.flags = BLOCK_F_ZSTD;
        m.data = zbuf;
    } else if (fr->v == RV_BADHASH) {
        m.hash.b[0] ^= 1;
    }
    CHECK_OK(msg_block_encode(b, &m));
}

/* The signatures of ds's pieces of a basis holding path's model bytes, but
 * for pieces [hole, hole + nhole), left as no data has them. */
static void
rt_model_sigs(const char *path, const struct msg_delta_sigs *ds,
    uint64_t hole, uint64_t nhole, uint64_t shift, uint8_t *sigs)
{
    uint8_t *piece = check_alloc(ds->sig_block);
    uint64_t j, off, len;

    for (j = ds->first; j < ds->first + ds->count; j++) {
        if (j >= hole && j < hole + nhole)
            continue;
        off = j * ds->sig_block;
        len = ds->basis_size - off < ds->sig_block ? ds->basis_size - off :
            ds->sig_block;
        rt_content(path, off + shift, piece, (size_t)len);
        delta_sign(piece, (size_t)len, sigs + (j - ds->first) * DELTA_SIG_LEN);
    }
    free(piece);
}

/* DELTA_BLOCKS: hashes of all zero bytes, or of the model's blocks. */
static void
rt_encode_delta_blocks(const struct rt_frame *fr, struct buf *b)
{
    uint64_t basis = (uint64_t)fr->flags << 10, j, off, len;
    struct msg_delta_blocks m;
    struct hash128 h;
    uint8_t *hashes, *block;

    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    m.block_size = fr->code != 0 ? (uint32_t)fr->code : RT_BS;
    m.first = fr->a;
    m.count = (uint32_t)fr->b;
    hashes = check_alloc(fr->b * HASH_LEN + 1);
    memset(hashes, 0, fr->b * HASH_LEN);
    block = check_alloc(m.block_size);
    for (j = m.first; fr->v == RV_MODEL && j < m.first + m.count; j++) {
        off = j * m.block_size;
        len = basis - off < m.block_size ? basis - off : m.block_size;
        rt_content(fr->s, off, block, (size_t)len);
        hash_block(block, (size_t)len, &h);
        memcpy(hashes + (j - m.first) * HASH_LEN, h.b, HASH_LEN);
    }
    m.hashes = hashes;
    CHECK_OK(msg_delta_blocks_encode(b, &m));
    free(block);
    free(hashes);
}

/* DELTA_SIGS of pieces nobody has, and DELTA: block a of the file as one
 * COPY of the basis from b, with the hash of the model's block. */
static void
rt_encode_delta(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    struct rt_file *f = rt_file(rt, fr->id), unknown;
    struct msg_delta_sigs ds;
    struct msg_delta_op op;
    struct msg_delta m;
    uint8_t *buf;

    if (fr->type == MSG_DELTA_SIGS) {
        memset(&ds, 0, sizeof(ds));
        ds.id = fr->id;
        ds.basis_size = (uint64_t)fr->flags << 10;
        ds.sig_block = fr->v != RV_MODEL && fr->code != 0 ?
            (uint32_t)fr->code : PROTO_MIN_SIG_BLOCK;
        ds.first = fr->a;
        ds.count = (uint32_t)fr->b;
        buf = check_alloc(fr->b * DELTA_SIG_LEN + 1);
        memset(buf, 0, fr->b * DELTA_SIG_LEN);
        if (fr->v == RV_MODEL)
            rt_model_sigs(fr->s, &ds, (uint64_t)fr->kind,
                (uint64_t)fr->code, fr->shift, buf);
        ds.sigs = buf;
        CHECK_OK(msg_delta_sigs_encode(b, &ds));
        free(buf);
        return;
    }
    if (fr->type == MSG_DELTA_BLOCKS) {
        rt_encode_delta_blocks(fr, b);
        return;
    }
    if (f == NULL) {
        /* A DELTA for a file the script never offered. */
        memset(&unknown, 0, sizeof(unknown));
        snprintf(unknown.path, sizeof(unknown.path), "?");
        unknown.size = (uint64_t)1 << 40;
        f = &unknown;
    }
    buf = check_alloc(RT_BS);
    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    m.offset = fr->a * RT_BS;
    m.raw_len = (uint32_t)rt_block_len(f, fr->a);
    rt_block(f, fr->a, buf);
    hash_block(buf, m.raw_len, &m.hash);
    if (fr->v == RV_BADHASH)
        m.hash.b[0] ^= 1;
    memset(&op, 0, sizeof(op));
    op.kind = fr->v == RV_LITERAL ? DELTA_OP_LITERAL : DELTA_OP_COPY;
    op.len = m.raw_len;
    op.from = fr->b;
    op.data = buf;
    CHECK_OK(msg_delta_encode(b, &m, &op, 1));
    free(buf);
}

/* SIGS HAVE: the hashes of the sender's own blocks (or not quite). */
static void
rt_encode_sigs(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    uint8_t *hashes = check_alloc(fr->b * HASH_LEN + 1);
    uint8_t *buf = check_alloc(RT_BS);
    struct manifest *mf = rt->plan != NULL ? plan_manifest(rt->plan) : NULL;
    struct msg_sigs m;
    struct hash128 h;
    uint64_t k;
    ssize_t got;
    int fd = -1;

    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    m.first = fr->a;
    m.count = (uint32_t)fr->b;
    m.flags = (uint8_t)fr->flags;
    memset(hashes, 0, fr->b * HASH_LEN);
    if (mf != NULL && fr->id < mf->n)
        fd = manifest_open(mf, fr->id, O_RDONLY);
    for (k = 0; (m.flags & SIGS_F_HAVE) && k < fr->b; k++) {
        got = fd >= 0 ? pread(fd, buf, RT_BS, (off_t)((fr->a + k) * RT_BS)) :
            0;
        hash_block(buf, got > 0 ? (size_t)got : 0, &h);
        if (fr->v == RV_BADHASH)
            h.b[0] ^= 1;
        memcpy(hashes + k * HASH_LEN, h.b, HASH_LEN);
    }
    if (fd >= 0)
        close(fd);
    m.hashes = (m.flags & SIGS_F_HAVE) ? hashes : NULL;
    CHECK_OK(msg_sigs_encode(b, &m));
    free(buf);
    free(hashes);
}

static void
rt_encode_entry(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    struct msg_entry m;

    memset(&m, 0, sizeof(m));
    m.id = fr->id;
    m.kind = fr->kind;
    m.mode = fr->flags ? fr->flags : fr->kind == ENTRY_DIR ? 0755 : 0644;
    m.size = fr->a;
    m.mtime_sec = RT_MTIME;
    m.path.p = fr->s;
    m.path.len = strlen(fr->s);
    m.target.p = fr->t;
    m.target.len = fr->t != NULL ? strlen(fr->t) : 0;
    if (fr->kind == ENTRY_FILE)
        rt_file_add(rt, fr->id, fr->s, fr->a);
    /* A sender that hashes what it offers (--checksum, --adopt). */
    if (fr->kind == ENTRY_FILE &&
        (rt->c->flags & (OPEN_F_CHECKSUM | OPEN_F_ADOPT))) {
        m.has_hash = 1;
        rt_file_hash(rt_file(rt, fr->id), &m.hash);
        if (fr->v == RV_BADHASH)
            m.hash.b[0] ^= 1;
    }
    CHECK_OK(msg_entry_encode(b, &m));
}

static void
rt_encode_session(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    const char *paths[2] = { fr->s, fr->t };
    struct msg_hello h;
    struct msg_open o;
    struct msg_open_ok ok;
    struct msg_join j;

    switch (fr->type) {
    case MSG_HELLO:
        memset(&h, 0, sizeof(h));
        h.version_min = fr->a ? (uint16_t)fr->a : PROTO_VERSION_MIN;
        h.version_max = fr->b ? (uint16_t)fr->b : PROTO_VERSION_MAX;
        /* A scripted client checks space: the agent's scan of a pull
         * ends before PLAN (a live one runs on a thread of its own,
         * which these rows would race). */
        h.caps = ((RT_CAPS_ALL & ~(uint64_t)PROTO_CAP_LIVE) |
            rt->c->caps_on) & ~rt->c->caps_off;
        h.software.p = "ferry test";
        h.software.len = strlen(h.software.p);
        CHECK_OK(msg_hello_encode(b, &h));
        break;
    case MSG_OPEN:
        memset(&o, 0, sizeof(o));
        o.op = fr->kind;
        o.flags = fr->flags;
        o.block_size = RT_BS;
        memcpy(o.transfer_id, rt_tid, sizeof(rt_tid));
        memcpy(o.transfer_key, rt_tkey, sizeof(rt_tkey));
        if (fr->v == RV_OTHER)
            o.transfer_id[0] ^= 1;
        o.npaths = fr->t != NULL ? 2 : 1;
        CHECK_OK(msg_open_encode(b, &o, paths));
        break;
    case MSG_OPEN_OK:
        memset(&ok, 0, sizeof(ok));
        CHECK_OK(msg_open_ok_encode(b, &ok));
        break;
    case MSG_SPACE: {
        struct msg_space sp = { fr->a, fr->b, 0 };

        CHECK_OK(msg_space_encode(b, &sp));
        break;
    }
    case MSG_FILTERS: {
        /* fr->a copies (at least one) of the rule kind, s. */
        size_t n = fr->a ? (size_t)fr->a : 1, i;
        const char **pats = check_alloc(n * sizeof(*pats));
        uint8_t *acts = check_alloc(n);

        for (i = 0; i < n; i++) {
            pats[i] = fr->s;
            acts[i] = fr->kind;
        }
        CHECK_OK(msg_filters_encode(b, acts, pats, n));
        free(pats);
        free(acts);
        break;
    }
    case MSG_JOIN:
        memcpy(j.transfer_id, rt_tid, sizeof(rt_tid));
        memcpy(j.transfer_key, rt_tkey, sizeof(rt_tkey));
        if (fr->v == RV_OTHER)
            j.transfer_id[0] ^= 1;
        if (fr->v == RV_OTHER_KEY)
            j.transfer_key[31] ^= 1;
        j.stream = (uint16_t)fr->id;
        CHECK_OK(msg_join_encode(b, &j));
        break;
    default:
        CHECK_OK(msg_join_ok_encode(b));
        break;
    }
}

static void
rt_encode_vol_opts(const struct rt_frame *fr, struct buf *b)
{
    struct msg_vol_opts m;

    memset(&m, 0, sizeof(m));
    m.threshold = fr->a;
    m.volume_size = fr->b;
    CHECK_OK(msg_vol_opts_encode(b, &m));
}

void
rt_encode(struct rt *rt, const struct rt_frame *fr, struct buf *b)
{
    uint8_t *buf, *zbuf;
    struct rt_file *f;
    struct msg_plan plan;
    struct msg_totals totals;
    struct msg_ready ready;
    struct msg_reply rep;
    struct msg_match mm;
    struct msg_file_end fe;
    struct msg_file_done fd;
    struct msg_delta_stop dstop;
    struct msg_delta_go dgo;
    struct msg_notice no;
    struct msg_error er;
    struct msg_summary sum;
    struct msg_readback rb;
    struct msg_probe pr;
    struct msg_stop stop;
    struct msg_retire ret;
    struct msg_busy busy;
    uint64_t k;

    switch (fr->type) {
    case MSG_PLAN:
        memset(&plan, 0, sizeof(plan));
        plan.flags = fr->flags;
        plan.ntop = 1;
        plan.entries_total = plan.files_total = fr->a;
        CHECK_OK(msg_plan_encode(b, &plan));
        break;
    case MSG_TOTALS:
        memset(&totals, 0, sizeof(totals));
        totals.entries_total = fr->a;
        CHECK_OK(msg_totals_encode(b, &totals));
        break;
    case MSG_ENTRY:
        rt_encode_entry(rt, fr, b);
        break;
    case MSG_BLOCK:
        buf = check_alloc(RT_BS);
        zbuf = check_alloc(RT_BS);
        for (k = fr->a; k < fr->a + (fr->b > 0 && fr->v != RV_RAW ? fr->b :
            1); k++)
            rt_encode_block(rt, fr, k, b, buf, zbuf);
        free(zbuf);
        free(buf);
        break;
    case MSG_MATCH:
        mm.id = fr->id;
        mm.first = fr->a;
        mm.count = (uint32_t)fr->b;
        CHECK_OK(msg_match_encode(b, &mm));
        break;
    case MSG_FILE_END:
        memset(&fe, 0, sizeof(fe));
        fe.id = fr->id;
        fe.code = proto_err_to_wire(fr->code);
        fe.text.p = fr->code != 0 ? "gave up" : "";
        fe.text.len = strlen(fe.text.p);
        if (fr->code == 0 && (f = rt_file(rt, fr->id)) != NULL)
            rt_file_hash(f, &fe.hash);
        if (fr->v == RV_BADHASH)
            fe.hash.b[0] ^= 1;
        CHECK_OK(msg_file_end_encode(b, &fe));
        break;
    case MSG_NOTICE:
        no.code = proto_err_to_wire(fr->code);
        no.path.p = "gone";
        no.path.len = 4;
        no.text.p = "vanished";
        no.text.len = 8;
        CHECK_OK(msg_notice_encode(b, &no));
        break;
    case MSG_END:
        CHECK_OK(msg_end_encode(b));
        break;
    case MSG_ERROR:
        er.code = proto_err_to_wire(fr->code);
        er.text.p = "peer says no";
        er.text.len = strlen(er.text.p);
        CHECK_OK(msg_error_encode(b, &er));
        break;
    case MSG_VOL_OPTS:
        rt_encode_vol_opts(fr, b);
        break;
    case MSG_READY:
        ready.rename.p = fr->s != NULL ? fr->s : "";
        ready.rename.len = strlen(ready.rename.p);
        CHECK_OK(msg_ready_encode(b, &ready));
        break;
    case MSG_REPLY:
        memset(&rep, 0, sizeof(rep));
        rep.id = fr->id;
        rep.action = fr->kind;
        rep.flags = (uint8_t)fr->flags;
        rep.code = proto_err_to_wire(fr->code);
        rep.text.p = "";
        CHECK_OK(msg_reply_encode(b, &rep));
        break;
    case MSG_SIGS:
        rt_encode_sigs(rt, fr, b);
        break;
    case MSG_DELTA_SIGS:
    case MSG_DELTA_BLOCKS:
    case MSG_DELTA:
        rt_encode_delta(rt, fr, b);
        break;
    case MSG_DELTA_STOP:
        dstop.id = fr->id;
        CHECK_OK(msg_delta_stop_encode(b, &dstop));
        break;
    case MSG_BASIS:
    case MSG_TENSOR:
        rt_encode_tensor(rt, fr, b);
        break;
    case MSG_DELTA_GO:
        dgo.id = fr->id;
        CHECK_OK(msg_delta_go_encode(b, &dgo));
        break;
    case MSG_FILE_DONE:
        memset(&fd, 0, sizeof(fd));
        fd.id = fr->id;
        fd.code = proto_err_to_wire(fr->code);
        fd.text.p = "";
        CHECK_OK(msg_file_done_encode(b, &fd));
        break;
    case MSG_SUMMARY:
        memset(&sum, 0, sizeof(sum));
        CHECK_OK(msg_summary_encode(b, &sum));
        break;
    case MSG_PROBE:
        memset(&pr, 0, sizeof(pr));
        pr.ask = (uint32_t)fr->a;
        CHECK_OK(msg_probe_encode(b, &pr));
        break;
    case MSG_READBACK:
        rb.bytes = fr->a * RT_BS;
        rb.ns = 1000;
        CHECK_OK(msg_readback_encode(b, &rb));
        break;
    case MSG_BUSY:
        busy.holder.p = "pid 1, transfer 00";
        busy.holder.len = strlen(busy.holder.p);
        CHECK_OK(msg_busy_encode(b, &busy));
        break;
    case MSG_STOP:
        stop.id = fr->id;
        stop.kept_files = fr->a;
        stop.kept_bytes = fr->a * RT_BS;
        CHECK_OK(msg_stop_encode(b, &stop));
        break;
    case MSG_RETIRE:
        ret.stream = (uint16_t)fr->a;
        CHECK_OK(msg_retire_encode(b, &ret));
        break;
    default:
        rt_encode_session(rt, fr, b);
        break;
    }
}

/* The frames a role sent, as text. */

static void
rt_say(struct rt *rt, unsigned stream, const char *fmt, ...)
    FERRY_PRINTF(3, 4);

static void
rt_say(struct rt *rt, unsigned stream, const char *fmt, ...)
{
    size_t room = sizeof(rt->out) - rt->out_len;
    va_list ap;
    int n;

    rt->last_tok = rt->out_len;
    if (rt->out_len > 0) {
        rt->out[rt->out_len++] = ' ';
        room--;
    }
    va_start(ap, fmt);
    n = vsnprintf(rt->out + rt->out_len, room, fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < room);
    rt->out_len += (size_t)n;
    if (stream > 0) {
        n = snprintf(rt->out + rt->out_len, room - (size_t)n, "@%u", stream);
        rt->out_len += (size_t)n;
    }
    rt->last_block = 0;
}

/* KIND:id:i (BLOCK or DELTA), or the last token grown to
 * KIND:id:first-i. */
static void
rt_say_block(struct rt *rt, unsigned stream, const char *kind, uint32_t id,
    uint64_t k)
{
    if (rt->last_block == kind[0] && rt->lb_stream == stream &&
        rt->lb_id == id && rt->lb_last + 1 == k) {
        rt->out_len = rt->last_tok;
        rt->out[rt->out_len] = '\0';
        rt_say(rt, stream, "%s:%u:%llu-%llu", kind, id,
            (unsigned long long)rt->lb_first, (unsigned long long)k);
    } else {
        rt_say(rt, stream, "%s:%u:%llu", kind, id, (unsigned long long)k);
        rt->lb_first = k;
    }
    rt->last_block = kind[0];
    rt->lb_stream = stream;
    rt->lb_id = id;
    rt->lb_last = k;
}

static const char *
rt_code(int32_t wire)
{
    return ferry_errname(proto_err_from_wire(wire));
}

/* One frame the role sent. */
static void
rt_render_one(struct rt *rt, unsigned k, const struct frame *f)
{
    struct msg_ready ready;
    struct msg_reply rep;
    struct msg_sigs sg;
    struct msg_block bl;
    struct msg_match mm;
    struct msg_file_end fe;
    struct msg_file_done fd;
    struct msg_summary sum;
    struct msg_readback rb;
    struct msg_probe pr;
    struct msg_plan plan;
    struct msg_totals totals;
    struct msg_entry en;
    struct msg_error er;
    struct msg_partial pa;
    struct msg_stop stop;
    struct msg_delta_sigs ds;
    struct msg_delta_blocks db;
    struct msg_delta_stop dst;
    struct msg_delta_go dgo;
    struct msg_delta dl;
    struct msg_basis bas;
    struct msg_tensor ten;
    const uint8_t *p = f->payload;
    size_t n = f->len, i;

    switch (f->type) {
    case MSG_PLAN:
        CHECK_OK(msg_plan_decode(p, n, &plan));
        if (plan.flags & PLAN_F_LIVE)
            rt_say(rt, k, "PLAN+L");
        else
            rt_say(rt, k, "PLAN:%llu",
                (unsigned long long)plan.entries_total);
        break;
    case MSG_TOTALS:
        CHECK_OK(msg_totals_decode(p, n, &totals));
        rt_say(rt, k, "TOTALS:%llu",
            (unsigned long long)totals.entries_total);
        break;
    case MSG_READY:
        CHECK_OK(msg_ready_decode(p, n, &ready));
        rt_say(rt, k, ready.rename.len ? "READY:%.*s" : "READY%.*s",
            (int)ready.rename.len, ready.rename.p);
        break;
    case MSG_ENTRY:
        CHECK_OK(msg_entry_decode(p, n, &en));
        /* A listing's readiness: !B busy, !I idle, !T torn, !W whole. */
        rt_say(rt, k, "ENTRY:%u:%.*s%s%s%s%s%s", en.id, (int)en.path.len,
            en.path.p, en.state ? "!" : "",
            en.state & ENTRY_S_BUSY ? "B" : "",
            en.state & ENTRY_S_IDLE ? "I" : "",
            en.state & ENTRY_S_TORN ? "T" : "",
            en.state & ENTRY_S_WHOLE ? "W" : "");
        break;
    case MSG_REPLY:
        CHECK_OK(msg_reply_decode(p, n, &rep));
        if (rep.action == REPLY_FAIL)
            rt_say(rt, k, "FAIL:%u:%s", rep.id, rt_code(rep.code));
        else
            rt_say(rt, k, "%s%s%s%s%s%s:%u", rep.action == REPLY_SKIP ?
                "SKIP" : "WANT", rep.flags != 0 ? "+" : "",
                rep.flags & REPLY_F_RESUME ? "R" : "",
                rep.flags & REPLY_F_DELTA ? "D" : "",
                rep.flags & REPLY_F_TENSOR ? "T" : "",
                rep.flags & REPLY_F_ADOPTED ? "A" : "", rep.id);
        break;
    case MSG_BASIS:
        CHECK_OK(msg_basis_decode(p, n, &bas));
        /* A basis that could not be read as it was: a hash no file has
         * (all ones), said as "!". */
        for (i = 0; i < HASH_LEN && bas.hash.b[i] == 0xff; i++)
            ;
        rt_say(rt, k, "BASIS:%u:%.*s%s", bas.id, (int)bas.path.len,
            bas.path.p, i == HASH_LEN ? "!" : "");
        break;
    case MSG_TENSOR:
        CHECK_OK(msg_tensor_decode(p, n, &ten));
        rt_say_block(rt, k, "TENSOR", ten.id, ten.offset / RT_BS);
        break;
    case MSG_DELTA_SIGS:
        CHECK_OK(msg_delta_sigs_decode(p, n, &ds));
        rt_say(rt, k, "DSIGS:%u:%llu+%u", ds.id,
            (unsigned long long)ds.first, ds.count);
        break;
    case MSG_DELTA_BLOCKS:
        CHECK_OK(msg_delta_blocks_decode(p, n, &db));
        rt_say(rt, k, "DBLOCKS:%u:%llu+%u", db.id,
            (unsigned long long)db.first, db.count);
        break;
    case MSG_DELTA:
        CHECK_OK(msg_delta_decode(p, n, &dl));
        rt_say_block(rt, k, "DELTA", dl.id, dl.offset / RT_BS);
        break;
    case MSG_DELTA_STOP:
        CHECK_OK(msg_delta_stop_decode(p, n, &dst));
        rt_say(rt, k, "DSTOP:%u", dst.id);
        break;
    case MSG_DELTA_GO:
        CHECK_OK(msg_delta_go_decode(p, n, &dgo));
        rt_say(rt, k, "DGO:%u", dgo.id);
        break;
    case MSG_SIGS:
        CHECK_OK(msg_sigs_decode(p, n, &sg));
        rt_say(rt, k, "%s:%u:%llu+%u", sg.flags & SIGS_F_HAVE ? "HAVE" :
            "NEED", sg.id, (unsigned long long)sg.first, sg.count);
        break;
    case MSG_BLOCK:
        CHECK_OK(msg_block_decode(p, n, &bl));
        rt_say_block(rt, k, "BLOCK", bl.id, bl.offset / RT_BS);
        break;
    case MSG_MATCH:
        CHECK_OK(msg_match_decode(p, n, &mm));
        rt_say(rt, k, "MATCH:%u:%llu+%u", mm.id,
            (unsigned long long)mm.first, mm.count);
        break;
    case MSG_FILE_END:
        CHECK_OK(msg_file_end_decode(p, n, &fe));
        rt_say(rt, k, fe.code ? "FEND:%u:%s" : "FEND:%u%.0s", fe.id,
            rt_code(fe.code));
        break;
    case MSG_FILE_DONE:
        CHECK_OK(msg_file_done_decode(p, n, &fd));
        rt_say(rt, k, fd.code ? "DONE:%u:%s" : "DONE:%u%.0s", fd.id,
            rt_code(fd.code));
        break;
    case MSG_PROBE:
        CHECK_OK(msg_probe_decode(p, n, &pr));
        rt_say(rt, k, "PROBE:%zu", pr.len);
        break;
    case MSG_READBACK:
        /* Said with the SUMMARY it must come right before. */
        CHECK_OK(msg_readback_decode(p, n, &rb));
        CHECK(!rt->readback);
        rt->readback = 1;
        rt->readback_bytes = rb.bytes;
        break;
    case MSG_SUMMARY:
        CHECK_OK(msg_summary_decode(p, n, &sum));
        CHECK_EQ_INT(rt->readback, !!(rt->x.caps & PROTO_CAP_READBACK));
        if (rt->readback_bytes > 0)
            rt_say(rt, k, "SUMMARY:%llu,%llu,%llu,read:%llu",
                (unsigned long long)sum.files_committed,
                (unsigned long long)sum.files_skipped,
                (unsigned long long)sum.files_failed,
                (unsigned long long)(rt->readback_bytes / RT_BS));
        else
            rt_say(rt, k, "SUMMARY:%llu,%llu,%llu",
                (unsigned long long)sum.files_committed,
                (unsigned long long)sum.files_skipped,
                (unsigned long long)sum.files_failed);
        rt->readback = 0;
        rt->readback_bytes = 0;
        break;
    case MSG_ERROR:
        CHECK_OK(msg_error_decode(p, n, &er));
        rt_say(rt, k, "ERROR:%s", rt_code(er.code));
        break;
    case MSG_PARTIAL:
        CHECK_OK(msg_partial_decode(p, n, &pa));
        rt_say(rt, k, "PARTIAL:%.*s", (int)pa.path.len, pa.path.p);
        break;
    case MSG_STOP:
        CHECK_OK(msg_stop_decode(p, n, &stop));
        if (stop.id == MSG_STOP_NONE)
            rt_say(rt, k, "STOP:-,%llu",
                (unsigned long long)stop.kept_files);
        else
            rt_say(rt, k, "STOP:%u,%llu", stop.id,
                (unsigned long long)stop.kept_files);
        break;
    default:
        rt_say(rt, k, "%s", msg_type_name(f->type));
        break;
    }
}

void
rt_render(struct rt *rt, unsigned k, const uint8_t *p, size_t n)
{
    struct frame f;
    size_t off = 0, used;

    while (off < n) {
        CHECK_OK(frame_parse(p + off, n - off, &f, &used));
        rt_render_one(rt, k, &f);
        off += used;
    }
}

/* 1 if the file at p holds what the model says f holds. */
int
rt_same_content(const char *p, const struct rt_file *f)
{
    uint8_t *want = check_alloc(RT_BS), *got = check_alloc(RT_BS);
    uint64_t k;
    int fd, same = 1;

    CHECK((fd = open(p, O_RDONLY)) >= 0);
    for (k = 0; same && k * RT_BS < f->size; k++) {
        size_t n = rt_block_len(f, k);

        rt_block(f, k, want);
        same = pread(fd, got, n, (off_t)(k * RT_BS)) == (ssize_t)n &&
            memcmp(want, got, n) == 0;
    }
    close(fd);
    free(want);
    free(got);
    return same;
}
