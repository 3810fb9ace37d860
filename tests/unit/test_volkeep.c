/*
 * The agent's side of a push with --keep-volumes (engine/volume/volkeep.c),
 * fed frame by frame: each row of the table is a script of frames, the error
 * the last one must bring (every earlier one must pass), the frames the agent
 * sent, and the directory afterwards. So each check the agent makes has a row
 * that fails without it. Then the messages' bounds, OPEN KEEP's shape and
 * SHA-256 itself.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#include "../../common/sha256.h"
#include "../../engine/volume/volkeep.h"
#include "../../engine/xfer.h"
#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "../../proto/msg_keep.h"
#include "../../proto/msg_vol.h"

#define KV_STEPS 12

/* The table's steps name only the fields they use: { KD, 1, 3000 }. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* Script steps. */
enum {
    KB = 1,   /* VOL_BEGIN a */
    KD,       /* VOL_DATA of volume a: b bytes of its pattern */
    KE,       /* KEEP_VOL a: what was sent of it, or the held one's */
    KM,       /* KEEP_MAN at offset a (~0: where it stands), b bytes */
    KF,       /* KEEP_DONE a volumes, the manifest as sent */
    KEOF,     /* the client hangs up */
    KJUNK     /* a frame of another kind (BLOCK) */
};

/* What a step gets wrong on purpose. */
enum { OK, BADSHA, BADBYTES, EARLY };

struct kv_step {
    int op;
    uint64_t a, b;
    int v;
};

struct kv_case {
    const char *name;
    unsigned held;           /* volumes there before (1..held) */
    struct kv_step s[KV_STEPS];
    int err;
    const char *out;         /* what the agent sent */
    const char *files;       /* the directory afterwards */
};

/* The byte i of volume k's pattern. */
static uint8_t
kv_byte(uint64_t k, uint64_t i)
{
    return (uint8_t)(k * 31 + i * 7 + (i >> 8));
}

/* What the script sent, to say its sizes and hashes right. */
struct kv_model {
    struct sha256 vol[8], man;
    uint64_t vbytes[8], mbytes;
    uint8_t held_sha[8][SHA256_LEN];
    uint64_t held_bytes[8];
};

static void
kv_held(const char *dir, unsigned n, struct kv_model *m)
{
    char p[CHECK_PATH_MAX + 32];
    uint8_t buf[1500];
    struct sha256 s;
    unsigned k, i;

    for (k = 1; k <= n; k++) {
        for (i = 0; i < sizeof(buf); i++)
            buf[i] = kv_byte(k + 100, i);
        snprintf(p, sizeof(p), "%s/set.%05u.tar.zst", dir, k);
        check_write_file(p, buf, 1000 + k, 0);
        sha256_init(&s);
        sha256_update(&s, buf, 1000 + k);
        sha256_final(&s, m->held_sha[k]);
        m->held_bytes[k] = 1000 + k;
    }
}

/* Appends the frame of step st to b. */
static void
kv_frame(struct buf *b, const struct kv_step *st, struct kv_model *m,
    int open)
{
    uint8_t data[4096];
    uint64_t i;

    for (i = 0; i < sizeof(data); i++)
        data[i] = kv_byte(st->a, i);
    switch (st->op) {
    case KB: {
        struct msg_vol_begin v = { (uint32_t)st->a };

        CHECK_OK(msg_vol_begin_encode(b, &v));
        if (st->a < 8) {
            sha256_init(&m->vol[st->a]);
            m->vbytes[st->a] = 0;
        }
        break;
    }
    case KD: {
        struct msg_vol_data v = { (uint32_t)st->a, data, st->b };

        CHECK_OK(msg_vol_data_encode(b, &v));
        if (st->a < 8) {
            sha256_update(&m->vol[st->a], data, st->b);
            m->vbytes[st->a] += st->b;
        }
        break;
    }
    case KE: {
        struct msg_keep_vol v;

        memset(&v, 0, sizeof(v));
        v.volume = (uint32_t)st->a;
        if (open) {
            struct sha256 tmp = m->vol[st->a < 8 ? st->a : 0];

            sha256_final(&tmp, v.sha256);
            v.bytes = m->vbytes[st->a < 8 ? st->a : 0];
        } else if (st->a < 8) {
            memcpy(v.sha256, m->held_sha[st->a], SHA256_LEN);
            v.bytes = m->held_bytes[st->a];
        }
        if (st->v == BADSHA)
            v.sha256[5] ^= 1;
        if (st->v == BADBYTES)
            v.bytes++;
        CHECK_OK(msg_keep_vol_encode(b, &v));
        break;
    }
    case KM: {
        struct msg_keep_man v = { st->a == ~0ull ? m->mbytes : st->a,
            data, st->b };

        CHECK_OK(msg_keep_man_encode(b, &v));
        if (v.offset == 0) {
            sha256_init(&m->man);
            m->mbytes = 0;
        }
        sha256_update(&m->man, data, st->b);
        m->mbytes += st->b;
        break;
    }
    case KF: {
        struct msg_keep_done v;
        struct sha256 tmp = m->man;

        memset(&v, 0, sizeof(v));
        v.volumes = (uint32_t)st->a;
        v.manifest_bytes = m->mbytes;
        sha256_final(&tmp, v.sha256);
        if (st->v == BADSHA)
            v.sha256[0] ^= 1;
        if (st->v == BADBYTES)
            v.manifest_bytes--;
        CHECK_OK(msg_keep_done_encode(b, &v));
        break;
    }
    case KJUNK: {
        size_t mark;

        CHECK_OK(frame_begin(b, MSG_BLOCK, &mark));
        CHECK_OK(buf_put_u32(b, 1));
        CHECK_OK(frame_finish(b, mark));
        break;
    }
    default:
        break;
    }
}

/* The frames in out as tokens: "KEEP_VOL:1 END". */
static void
kv_tokens(const struct buf *out, char *text, size_t cap)
{
    const uint8_t *p = buf_ptr(out);
    size_t n = buf_used(out), used;
    struct frame f;

    text[0] = '\0';
    while (n > 0 && frame_parse(p, n, &f, &used) == 0) {
        size_t l = strlen(text);

        if (f.type == MSG_KEEP_VOL) {
            struct msg_keep_vol v;

            CHECK_OK(msg_keep_vol_decode(f.payload, f.len, &v));
            snprintf(text + l, cap - l, "%sKEEP_VOL:%u", l ? " " : "",
                v.volume);
        } else {
            snprintf(text + l, cap - l, "%s%s", l ? " " : "",
                msg_type_name(f.type));
        }
        p += used;
        n -= used;
    }
}

/* The directory's names, sorted, space-separated. */
static void
kv_files(const char *dir, char *text, size_t cap)
{
    struct dirent **v;
    int n, i;

    text[0] = '\0';
    CHECK((n = scandir(dir, &v, NULL, alphasort)) >= 0);
    for (i = 0; i < n; i++) {
        size_t l = strlen(text);

        /* The state directory is ferry's record (volkeep_prunes_own). */
        if (strcmp(v[i]->d_name, ".") != 0 &&
            strcmp(v[i]->d_name, "..") != 0 &&
            strcmp(v[i]->d_name, ".ferry") != 0)
            snprintf(text + l, cap - l, "%s%s", l ? " " : "", v[i]->d_name);
        free(v[i]);
    }
    free(v);
}

/* One step of the role with in (may be empty). */
static int
kv_step(struct volkeep *k, struct buf *in, struct buf *out, int eof,
    int *more)
{
    struct conn_step st;
    int r;

    memset(&st, 0, sizeof(st));
    st.in = buf_used(in) ? buf_ptr(in) : NULL;
    st.in_len = buf_used(in);
    st.eof = eof;
    st.out = out;
    r = volkeep_step(k, &st);
    buf_reset(in);
    *more = st.more;
    return r;
}

static const struct kv_case kv_cases[] = {
    { "new_set", 0, { { KB, 1 }, { KD, 1, 3000 }, { KD, 1, 10 }, { KE, 1 },
        { KM, 0, 40 }, { KM, ~0ull, 9 }, { KF, 1 } }, 0, "END END",
        "SHA256SUMS set.00001.tar.zst set.manifest" },
    { "held_kept", 2, { { KE, 1 }, { KE, 2 }, { KB, 3 }, { KD, 3, 100 },
        { KE, 3 }, { KM, 0, 10 }, { KF, 3 } }, 0,
        "KEEP_VOL:1 KEEP_VOL:2 END END",
        "SHA256SUMS set.00001.tar.zst set.00002.tar.zst set.00003.tar.zst "
        "set.manifest" },
    { "held_sent_again", 1, { { KB, 1 }, { KD, 1, 100 }, { KE, 1 },
        { KM, 0, 10 }, { KF, 1 } }, 0, "KEEP_VOL:1 END END",
        "SHA256SUMS set.00001.tar.zst set.manifest" },
    /* Held, but not stored by ferry: a shorter set leaves them. */
    { "shorter_set_keeps_others", 3, { { KE, 1 }, { KM, 0, 10 }, { KF, 1 } },
        0, "KEEP_VOL:1 KEEP_VOL:2 KEEP_VOL:3 END END",
        "SHA256SUMS set.00001.tar.zst set.00002.tar.zst set.00003.tar.zst "
        "set.manifest" },
    { "manifest_restarts", 0, { { KM, 0, 30 }, { KM, 0, 20 }, { KB, 1 },
        { KD, 1, 5 }, { KE, 1 }, { KF, 1 } }, 0, "END END",
        "SHA256SUMS set.00001.tar.zst set.manifest" },
    { "begin_skips", 0, { { KB, 2 } }, FERRY_ERR_PROTOCOL, "END", "" },
    { "begin_twice", 0, { { KB, 1 }, { KB, 1 } }, FERRY_ERR_PROTOCOL, "END",
        "" },
    { "data_unopened", 0, { { KD, 1, 10 } }, FERRY_ERR_PROTOCOL, "END", "" },
    { "data_other", 0, { { KB, 1 }, { KD, 2, 10 } }, FERRY_ERR_PROTOCOL,
        "END", "" },
    { "end_bytes", 0, { { KB, 1 }, { KD, 1, 10 }, { KE, 1, 0, BADBYTES } },
        FERRY_ERR_PROTOCOL, "END", "" },
    { "end_sha", 0, { { KB, 1 }, { KD, 1, 10 }, { KE, 1, 0, BADSHA } },
        FERRY_ERR_HASH_MISMATCH, "END", "" },
    { "end_other", 0, { { KB, 1 }, { KD, 1, 10 }, { KE, 2 } },
        FERRY_ERR_PROTOCOL, "END", "" },
    { "keep_unheld", 0, { { KE, 1 } }, FERRY_ERR_PROTOCOL, "END", "" },
    { "keep_sha", 1, { { KE, 1, 0, BADSHA } }, FERRY_ERR_PROTOCOL,
        "KEEP_VOL:1 END", "set.00001.tar.zst" },
    { "keep_bytes", 1, { { KE, 1, 0, BADBYTES } }, FERRY_ERR_PROTOCOL,
        "KEEP_VOL:1 END", "set.00001.tar.zst" },
    { "man_gap", 0, { { KM, 0, 10 }, { KM, 5, 10 } }, FERRY_ERR_PROTOCOL,
        "END", "" },
    { "man_unbegun", 0, { { KM, 10, 10 } }, FERRY_ERR_PROTOCOL, "END", "" },
    { "done_count", 0, { { KB, 1 }, { KD, 1, 5 }, { KE, 1 }, { KM, 0, 5 },
        { KF, 2 } }, FERRY_ERR_PROTOCOL, "END", "set.00001.tar.zst" },
    { "done_open", 0, { { KB, 1 }, { KD, 1, 5 }, { KE, 1 }, { KM, 0, 5 },
        { KB, 2 }, { KF, 1 } }, FERRY_ERR_PROTOCOL, "END",
        "set.00001.tar.zst" },
    { "done_no_manifest", 0, { { KB, 1 }, { KD, 1, 5 }, { KE, 1 },
        { KF, 1 } }, FERRY_ERR_PROTOCOL, "END", "set.00001.tar.zst" },
    { "done_man_bytes", 0, { { KB, 1 }, { KD, 1, 5 }, { KE, 1 },
        { KM, 0, 5 }, { KF, 1, 0, BADBYTES } }, FERRY_ERR_PROTOCOL, "END",
        "set.00001.tar.zst" },
    { "done_man_sha", 0, { { KB, 1 }, { KD, 1, 5 }, { KE, 1 }, { KM, 0, 5 },
        { KF, 1, 0, BADSHA } }, FERRY_ERR_HASH_MISMATCH, "END",
        "set.00001.tar.zst" },
    { "after_done", 0, { { KB, 1 }, { KD, 1, 5 }, { KE, 1 }, { KM, 0, 5 },
        { KF, 1 }, { KB, 2 } }, FERRY_ERR_PROTOCOL, "END END",
        "SHA256SUMS set.00001.tar.zst set.manifest" },
    { "before_held_said", 1, { { KB, 1, 0, EARLY } }, FERRY_ERR_PROTOCOL,
        "", "set.00001.tar.zst" },
    { "other_frame", 0, { { KJUNK } }, FERRY_ERR_PROTOCOL, "END", "" },
    { "cut_cleans_up", 0, { { KB, 1 }, { KD, 1, 50 }, { KM, 0, 5 },
        { KEOF } }, FERRY_ERR_CLOSED, "END", "" },
};

static void
kv_run(const struct kv_case *c)
{
    char dir[CHECK_PATH_MAX], text[1024];
    struct kv_model m;
    struct volkeep *k = NULL;
    struct buf in, out;
    struct xfer x;
    int i, r = 0, more, open = 0, early;

    check_note("%s", c->name);
    memset(&m, 0, sizeof(m));
    memset(&x, 0, sizeof(x));
    check_tmpdir(dir);
    kv_held(dir, c->held, &m);
    buf_init(&in, 1u << 24);
    buf_init(&out, 1u << 24);
    CHECK_OK(volkeep_new(dir, "set", 0, &x, &k));
    early = c->s[0].v == EARLY;
    /* The read-back of what is held, a step at a time, then END. */
    do {
        if (early)
            kv_frame(&in, &c->s[0], &m, 0);
        r = kv_step(k, &in, &out, 0, &more);
    } while (r == 0 && more && !early);
    for (i = early; r == 0 && i < KV_STEPS && c->s[i].op != 0; i++) {
        if (c->s[i].op == KEOF) {
            r = kv_step(k, &in, &out, 1, &more);
            break;
        }
        kv_frame(&in, &c->s[i], &m, open);
        if (c->s[i].op == KB)
            open = 1;
        if (c->s[i].op == KE)
            open = 0;
        r = kv_step(k, &in, &out, 0, &more);
        if (r != 0 && (i + 1 < KV_STEPS && c->s[i + 1].op != 0))
            check_fail(__FILE__, __LINE__, "step %d failed early: %s", i,
                ferry_strerror(r));
    }
    CHECK_EQ_ERR(r, c->err);
    if (c->err != 0)
        CHECK(x.local_error[0] != '\0' || c->err == FERRY_ERR_CLOSED);
    kv_tokens(&out, text, sizeof(text));
    CHECK_EQ_STR(text, c->out);
    volkeep_free(k);
    /* No temporary file is left, whatever happened. */
    kv_files(dir, text, sizeof(text));
    CHECK_EQ_STR(text, c->files);
    buf_cleanup(&in);
    buf_cleanup(&out);
    check_rmtree(dir);
}

TEST(volkeep_rules)
{
    size_t i;

    for (i = 0; i < sizeof(kv_cases) / sizeof(kv_cases[0]); i++)
        kv_run(&kv_cases[i]);
}

/* A whole push of the set into dir: each step must pass. */
static void
kv_push(const char *dir, const struct kv_step *s, size_t n)
{
    struct volkeep *k = NULL;
    struct kv_model m;
    struct buf in, out;
    struct xfer x;
    size_t i;
    int more, open = 0;

    memset(&m, 0, sizeof(m));
    memset(&x, 0, sizeof(x));
    buf_init(&in, 1u << 24);
    buf_init(&out, 1u << 24);
    CHECK_OK(volkeep_new(dir, "set", 0, &x, &k));
    do
        CHECK_OK(kv_step(k, &in, &out, 0, &more));
    while (more);
    for (i = 0; i < n; i++) {
        kv_frame(&in, &s[i], &m, open);
        open = s[i].op == KB ? 1 : s[i].op == KE ? 0 : open;
        CHECK_OK(kv_step(k, &in, &out, 0, &more));
    }
    volkeep_free(k);
    buf_cleanup(&in);
    buf_cleanup(&out);
}

/* A set that shrank loses the volumes past its new last one that ferry
 * stored, unchanged; a volume the user changed since, and a file of such
 * a name that ferry did not write, stay. */
TEST(volkeep_prunes_own)
{
    static const struct kv_step four[] = { { KB, 1 }, { KD, 1, 100 },
        { KE, 1 }, { KB, 2 }, { KD, 2, 100 }, { KE, 2 }, { KB, 3 },
        { KD, 3, 100 }, { KE, 3 }, { KB, 4 }, { KD, 4, 100 }, { KE, 4 },
        { KB, 5 }, { KD, 5, 100 }, { KE, 5 }, { KM, 0, 10 }, { KF, 5 } };
    static const struct kv_step one[] = { { KB, 1 }, { KD, 1, 100 },
        { KE, 1 }, { KM, 0, 10 }, { KF, 1 } };
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 32], text[1024];
    FILE *f;

    check_tmpdir(dir);
    kv_push(dir, four, sizeof(four) / sizeof(four[0]));
    kv_files(dir, text, sizeof(text));
    CHECK_EQ_STR(text, "SHA256SUMS set.00001.tar.zst set.00002.tar.zst "
        "set.00003.tar.zst set.00004.tar.zst set.00005.tar.zst "
        "set.manifest");
    /* Volume 3 changed by its user; volume 4 replaced by a file of the
     * same name and content that ferry did not write. */
    snprintf(p, sizeof(p), "%s/set.00003.tar.zst", dir);
    CHECK((f = fopen(p, "a")) != NULL);
    fputs("mine", f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/set.00004.tar.zst", dir);
    CHECK(unlink(p) == 0);
    check_write_file(p, "theirs", 6, 0);
    kv_push(dir, one, sizeof(one) / sizeof(one[0]));
    kv_files(dir, text, sizeof(text));
    CHECK_EQ_STR(text, "SHA256SUMS set.00001.tar.zst set.00003.tar.zst "
        "set.00004.tar.zst set.manifest");
    check_rmtree(dir);
}

/* SHA256SUMS keeps other sets' lines and lists this set's. */
TEST(volkeep_sums)
{
    static const char other[] = "00000000000000000000000000000000000000"
        "00000000000000000000000000  other.manifest\n";
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 32], got[4096];
    struct volkeep *k = NULL;
    struct kv_model m;
    struct buf in, out;
    struct kv_step st[] = { { KB, 1 }, { KD, 1, 5 }, { KE, 1 },
        { KM, 0, 5 }, { KF, 1 } };
    struct xfer x;
    FILE *f;
    size_t i, n;
    int more, open = 0;

    memset(&m, 0, sizeof(m));
    memset(&x, 0, sizeof(x));
    check_tmpdir(dir);
    snprintf(p, sizeof(p), "%s/SHA256SUMS", dir);
    check_write_file(p, other, sizeof(other) - 1, 0);
    buf_init(&in, 1u << 24);
    buf_init(&out, 1u << 24);
    CHECK_OK(volkeep_new(dir, "set", 0, &x, &k));
    CHECK_OK(kv_step(k, &in, &out, 0, &more));
    for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
        kv_frame(&in, &st[i], &m, open);
        open = st[i].op == KB ? 1 : st[i].op == KE ? 0 : open;
        CHECK_OK(kv_step(k, &in, &out, 0, &more));
    }
    volkeep_free(k);
    CHECK((f = fopen(p, "r")) != NULL);
    n = fread(got, 1, sizeof(got) - 1, f);
    fclose(f);
    got[n] = '\0';
    CHECK(strncmp(got, other, sizeof(other) - 1) == 0);
    CHECK(strstr(got, "  set.00001.tar.zst\n") != NULL);
    CHECK(strstr(got, "  set.manifest\n") != NULL);
    buf_cleanup(&in);
    buf_cleanup(&out);
    check_rmtree(dir);
}

/* A volume that grows past its bound is refused, and nothing of it
 * stays (the bound lowered from PROTO_MAX_VOLUME_SIZE to reach it). */
TEST(volkeep_volume_bound)
{
    char dir[CHECK_PATH_MAX], text[512];
    struct volkeep *k = NULL;
    struct kv_model m;
    struct buf in, out;
    struct kv_step st[] = { { KB, 1 }, { KD, 1, 6 }, { KD, 1, 6 } };
    struct xfer x;
    size_t i;
    int more, open = 0, r = 0;

    memset(&m, 0, sizeof(m));
    memset(&x, 0, sizeof(x));
    check_tmpdir(dir);
    buf_init(&in, 1u << 24);
    buf_init(&out, 1u << 24);
    CHECK_OK(volkeep_new(dir, "set", 0, &x, &k));
    volkeep_set_max_volume(k, 11);
    CHECK_OK(kv_step(k, &in, &out, 0, &more));
    for (i = 0; i < 2; i++) {
        kv_frame(&in, &st[i], &m, open);
        open = st[i].op == KB ? 1 : open;
        CHECK_OK(kv_step(k, &in, &out, 0, &more));
    }
    kv_frame(&in, &st[2], &m, open);
    r = kv_step(k, &in, &out, 0, &more);
    CHECK_EQ_ERR(r, FERRY_ERR_TOO_LARGE);
    CHECK(strstr(x.local_error, "larger than a volume may be") != NULL);
    volkeep_free(k);
    kv_files(dir, text, sizeof(text));
    CHECK(strstr(text, "tmp") == NULL);
    buf_cleanup(&in);
    buf_cleanup(&out);
    check_rmtree(dir);
}

/* Set names the agent refuses, and a second run into one directory. */
TEST(volkeep_names)
{
    static const char *const bad[] = { ".hidden", "a/b", "-x", "", "a\nb" };
    char dir[CHECK_PATH_MAX], sub[CHECK_PATH_MAX + 16];
    char want[CHECK_PATH_MAX + 32];
    struct volkeep *k = NULL, *k2 = NULL;
    struct xfer x;
    size_t i;

    memset(&x, 0, sizeof(x));
    check_tmpdir(dir);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("%s", bad[i]);
        CHECK_EQ_ERR(volkeep_new(dir, bad[i], 0, &x, &k),
            FERRY_ERR_BAD_PATH);
        CHECK(k == NULL);
    }
    CHECK_OK(volkeep_new(dir, "set", 0, &x, &k));
    CHECK_EQ_ERR(volkeep_new(dir, "set", 0, &x, &k2), -EBUSY);
    volkeep_free(k);
    k = NULL;
    /* As a push's destination: the last component is made, a missing
     * parent is named unless MKPATH (rsync's --mkpath) makes it. */
    snprintf(sub, sizeof(sub), "%s/new", dir);
    CHECK_OK(volkeep_new(sub, "set", 0, &x, &k));
    volkeep_free(k);
    k = NULL;
    snprintf(sub, sizeof(sub), "%s/typo/new", dir);
    memset(&x, 0, sizeof(x));
    CHECK_EQ_ERR(volkeep_new(sub, "set", 0, &x, &k), -ENOENT);
    CHECK(k == NULL);
    snprintf(want, sizeof(want), "%s/typo: no such directory", dir);
    CHECK(strstr(x.local_error, want) != NULL);
    CHECK(strstr(x.local_error, "--mkpath") != NULL);
    snprintf(want, sizeof(want), "%s/typo", dir);
    CHECK(access(want, F_OK) != 0);
    CHECK_OK(volkeep_new(sub, "set", OPEN_F_MKPATH, &x, &k));
    volkeep_free(k);
    check_rmtree(dir);
}

/* The messages' bounds, and OPEN KEEP's shape. */
TEST(volkeep_messages)
{
    static const char *const two[] = { "dir", "set" };
    struct msg_keep_vol v = { .volume = 1, .bytes = 1 };
    struct msg_keep_done d = { .volumes = 1 };
    struct msg_keep_man mm = { .offset = 0, .data = (const uint8_t *)"x",
        .len = 1 };
    struct msg_open o = { .op = OPEN_KEEP, .block_size = 1u << 20,
        .npaths = 2 };
    struct msg_open od;
    struct frame f;
    struct buf b;
    size_t used;

    buf_init(&b, 1u << 16);
    v.volume = PROTO_MAX_KEEP_VOLUMES + 1;
    CHECK_EQ_ERR(msg_keep_vol_encode(&b, &v), FERRY_ERR_USAGE);
    v.volume = 1;
    v.bytes = PROTO_MAX_VOLUME_SIZE + 1;
    CHECK_EQ_ERR(msg_keep_vol_encode(&b, &v), FERRY_ERR_USAGE);
    d.manifest_bytes = PROTO_MAX_KEEP_MANIFEST + 1;
    CHECK_EQ_ERR(msg_keep_done_encode(&b, &d), FERRY_ERR_USAGE);
    mm.offset = PROTO_MAX_KEEP_MANIFEST;
    CHECK_EQ_ERR(msg_keep_man_encode(&b, &mm), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    /* Hand-made frames over the limits: TOO_LARGE. */
    CHECK_OK(buf_put_u32(&b, PROTO_MAX_KEEP_VOLUMES + 1));
    CHECK_OK(buf_put_u64(&b, 5));
    CHECK_OK(buf_put(&b, "0123456789abcdef0123456789abcdef", 32));
    CHECK_EQ_ERR(msg_keep_vol_decode(buf_ptr(&b), buf_used(&b), &v),
        FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(msg_keep_done_decode(buf_ptr(&b), buf_used(&b), &d),
        FERRY_ERR_TOO_LARGE);
    buf_reset(&b);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, PROTO_MAX_VOLUME_SIZE + 1));
    CHECK_OK(buf_put(&b, "0123456789abcdef0123456789abcdef", 32));
    CHECK_EQ_ERR(msg_keep_vol_decode(buf_ptr(&b), buf_used(&b), &v),
        FERRY_ERR_TOO_LARGE);
    buf_reset(&b);
    CHECK_OK(buf_put_u64(&b, PROTO_MAX_KEEP_MANIFEST));
    CHECK_OK(buf_put_str32(&b, "x", 1));
    CHECK_EQ_ERR(msg_keep_man_decode(buf_ptr(&b), buf_used(&b), &mm),
        FERRY_ERR_TOO_LARGE);
    buf_reset(&b);
    /* OPEN KEEP: two paths, no flags. */
    CHECK_OK(msg_open_encode(&b, &o, two));
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_OK(msg_open_decode(f.payload, f.len, &od));
    CHECK_EQ_U64(od.op, OPEN_KEEP);
    buf_reset(&b);
    o.npaths = 1;
    CHECK_OK(msg_open_encode(&b, &o, two));
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_EQ_ERR(msg_open_decode(f.payload, f.len, &od), FERRY_ERR_FORMAT);
    buf_reset(&b);
    o.npaths = 2;
    o.flags = OPEN_F_CHECKSUM;
    CHECK_OK(msg_open_encode(&b, &o, two));
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_EQ_ERR(msg_open_decode(f.payload, f.len, &od), FERRY_ERR_FORMAT);
    buf_cleanup(&b);
}

/* SHA-256 against FIPS 180-2's examples, fed whole and in pieces. */
TEST(volkeep_sha256)
{
    static const char abc_hex[] = "ba7816bf8f01cfea414140de5dae2223"
        "b00361a396177a9cb410ff61f20015ad";
    static const char two_hex[] = "248d6a61d20638b8e5c026930c3e6039"
        "a33ce45964ff2167f6ecedd419db06c1";
    static const char mil_hex[] = "cdc76e5c9914fb9281a1c7e284d73e67"
        "f1809a48a497200e046d39ccc7112cd0";
    static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklm"
        "klmnlmnomnopnopq";
    uint8_t d[SHA256_LEN], a[1000];
    char hex[65];
    struct sha256 s;
    size_t i;

    sha256_init(&s);
    sha256_update(&s, "abc", 3);
    sha256_final(&s, d);
    sha256_hex(d, hex);
    CHECK_EQ_STR(hex, abc_hex);
    sha256_init(&s);
    for (i = 0; i < sizeof(two) - 1; i++)
        sha256_update(&s, two + i, 1);
    sha256_final(&s, d);
    sha256_hex(d, hex);
    CHECK_EQ_STR(hex, two_hex);
    memset(a, 'a', sizeof(a));
    sha256_init(&s);
    for (i = 0; i < 1000; i++)
        sha256_update(&s, a, sizeof(a));
    sha256_final(&s, d);
    sha256_hex(d, hex);
    CHECK_EQ_STR(hex, mil_hex);
}
