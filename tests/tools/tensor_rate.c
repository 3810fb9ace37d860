/*
 * tensor_rate: what the tensor codec makes of two saves of one training
 * run, and how fast one core codes them, beside zstd and XXH3, in memory,
 * for docs/BENCHMARKS.md.
 *
 *     tensor_rate [MiB] [block KiB]     (default 10 and 1024)
 *     tensor_rate -f OLD NEW            (files, for tests)
 *
 * Two pairs are made here, an older and a newer save each:
 *   bf16   a safetensors file of MiB of bf16 weights, normal with sigma
 *          0.02; the newer save adds normal noise of sigma 4e-4 to every
 *          weight (what a stretch of training does), rounded to bf16;
 *   adamw  a torch.save zip of 6 x MiB: fp32 weights (as above, unrounded),
 *          AdamW's exp_avg (normal, sigma 1e-4; the newer is 0.9 of the
 *          older plus new noise of the same sigma: a moving average of
 *          gradients) and exp_avg_sq (the square of a normal of sigma
 *          1e-3; the newer is the older times 1 + 0.05 noise, a slower
 *          average), each a third of it.
 *
 * For each pair, the newer save's bytes on the wire as a share of its
 * size, cut into blocks of the block size as a transfer cuts it:
 *   zstd-1, zstd-3  each block compressed alone (ferry's compression)
 *   planes          tensor pieces without the older save (PLAIN)
 *   xor, sub        with it, every piece XOR, or every piece SUB
 *   auto            with it, the mode (and a storage's width) chosen per
 *                   piece from a sample (what the codec does)
 * at zstd levels 1 and 3; then one core's rates in MB/s of file bytes:
 * coding (auto, level 1) and rebuilding (against the older save) next to
 * zstd level 1's and XXH3's, by the thread's CPU time (the best of three
 * runs). Every coded block is rebuilt and compared.
 *
 * With -f, NEW is coded against OLD in 1 MiB blocks, every block rebuilt
 * and compared, and one line says "tensors T paired P coded C of N"
 * (exit 1 if a block does not come back).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../common/hash.h"
#include "../../common/zst.h"
#include "../../engine/tensor/tensor_codec.h"

/* The thread's CPU time: rates per core that other work on the machine
 * does not stretch. */
static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double
uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* Normal-ish: the sum of 12 uniforms less 6 (Irwin-Hall), which needs
 * no libm. */
static double
normal(void)
{
    double s = -6.0;
    int i;

    for (i = 0; i < 12; i++)
        s += uniform();
    return s;
}

static uint16_t
bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    /* Round to nearest even, as torch's conversion does. */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static float
from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;

    memcpy(&f, &u, 4);
    return f;
}

static void
put_le(uint8_t *p, uint64_t v, int n)
{
    int i;

    for (i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

struct file {
    uint8_t *p;
    size_t n;
};

/* A safetensors pair: 8 tensors of bf16 weights. */
static void
make_bf16(size_t bytes, struct file *old, struct file *new)
{
    char hdr[4096];
    size_t per = bytes / 8 / 2 * 2, h = 0, i, k, data;
    uint16_t a, b;
    float w;

    h += (size_t)snprintf(hdr + h, sizeof(hdr) - h, "{");
    for (k = 0; k < 8; k++)
        h += (size_t)snprintf(hdr + h, sizeof(hdr) - h,
            "%s\"layers.%zu.weight\":{\"dtype\":\"BF16\",\"shape\":[%zu],"
            "\"data_offsets\":[%zu,%zu]}", k ? "," : "", k, per / 2,
            k * per, (k + 1) * per);
    h += (size_t)snprintf(hdr + h, sizeof(hdr) - h, "}");
    while (h % 8 != 0)
        hdr[h++] = ' ';
    data = 8 + h;
    old->n = new->n = data + 8 * per;
    old->p = malloc(old->n);
    new->p = malloc(new->n);
    put_le(old->p, h, 8);
    memcpy(old->p + 8, hdr, h);
    memcpy(new->p, old->p, data);
    for (i = 0; i < 8 * per / 2; i++) {
        a = bf16((float)(0.02 * normal()));
        w = from_bf16(a) + (float)(4e-4 * normal());
        b = bf16(w);
        put_le(old->p + data + 2 * i, a, 2);
        put_le(new->p + data + 2 * i, b, 2);
    }
}

/* A stored zip member as torch.save writes one (no CRC: nothing here
 * reads it). */
static size_t
zip_local(uint8_t *p, const char *name, size_t len)
{
    size_t nl = strlen(name);

    put_le(p, 0x04034b50u, 4);
    put_le(p + 4, 20, 2);
    memset(p + 6, 0, 8);
    put_le(p + 14, 0, 4);
    put_le(p + 18, len, 4);
    put_le(p + 22, len, 4);
    put_le(p + 26, nl, 2);
    put_le(p + 28, 0, 2);
    memcpy(p + 30, name, nl);
    return 30 + nl;
}

static size_t
zip_central(uint8_t *p, const char *name, size_t len, size_t local)
{
    size_t nl = strlen(name);

    memset(p, 0, 46);
    put_le(p, 0x02014b50u, 4);
    put_le(p + 4, 20, 2);
    put_le(p + 6, 20, 2);
    put_le(p + 20, len, 4);
    put_le(p + 24, len, 4);
    put_le(p + 28, nl, 2);
    put_le(p + 42, local, 4);
    memcpy(p + 46, name, nl);
    return 46 + nl;
}

/* The three kinds of storage of the AdamW pair. */
static void
fill_adamw(int kind, float *a, float *b, size_t count)
{
    size_t i;
    float g;

    for (i = 0; i < count; i++) {
        switch (kind) {
        case 0:
            a[i] = (float)(0.02 * normal());
            b[i] = a[i] + (float)(4e-4 * normal());
            break;
        case 1:
            a[i] = (float)(1e-4 * normal());
            b[i] = 0.9f * a[i] + (float)(1e-4 * normal());
            break;
        default:
            g = (float)(1e-3 * normal());
            a[i] = g * g;
            b[i] = a[i] * (1.0f + (float)(0.05 * normal()));
            break;
        }
    }
}

/* A torch.save pair: data.pkl, 6 storages (weights, exp_avg, exp_avg_sq
 * of two layers), version. */
static void
make_adamw(size_t bytes, struct file *old, struct file *new)
{
    static const char *names[] = { "archive/data.pkl", "archive/data/0",
        "archive/data/1", "archive/data/2", "archive/data/3",
        "archive/data/4", "archive/data/5", "archive/version" };
    size_t len[8], local[8], per = bytes / 6 / 4 * 4, i, pos = 0, cd, k;

    old->n = 6 * per + (64u << 10);
    old->p = calloc(1, old->n);
    new->p = calloc(1, old->n);
    for (i = 0; i < 8; i++) {
        len[i] = i == 0 ? 4096 : i == 7 ? 2 : per;
        local[i] = pos;
        pos += zip_local(old->p + pos, names[i], len[i]);
        if (i == 0) {
            for (k = 0; k < len[i]; k++)
                old->p[pos + k] = (uint8_t)(uniform() * 64 + 32);
        } else if (i == 7) {
            memcpy(old->p + pos, "3\n", 2);
        } else {
            float *a = malloc(per), *b = malloc(per);

            fill_adamw((int)(i - 1) % 3, a, b, per / 4);
            memcpy(old->p + pos, a, per);
            memcpy(new->p + pos, b, per);
            free(a);
            free(b);
        }
        pos += len[i];
    }
    cd = pos;
    for (i = 0; i < 8; i++)
        pos += zip_central(old->p + pos, names[i], len[i], local[i]);
    memset(old->p + pos, 0, 22);
    put_le(old->p + pos, 0x06054b50u, 4);
    put_le(old->p + pos + 8, 8, 2);
    put_le(old->p + pos + 10, 8, 2);
    put_le(old->p + pos + 12, pos - cd, 4);
    put_le(old->p + pos + 16, cd, 4);
    pos += 22;
    old->n = new->n = pos;
    /* The same records around different storages. */
    for (i = 0; i < 8; i++) {
        k = local[i] + 30 + strlen(names[i]);
        memcpy(new->p + local[i], old->p + local[i], k - local[i]);
        if (i == 0 || i == 7)
            memcpy(new->p + k, old->p + k, len[i]);
    }
    memcpy(new->p + cd, old->p + cd, pos - cd);
}

static int
mem_read(void *arg, uint64_t off, uint8_t *dst, size_t n)
{
    const struct file *f = arg;

    if (off > f->n || n > f->n - off)
        return FERRY_ERR_PROTOCOL;
    memcpy(dst, f->p + off, n);
    return 0;
}

struct pair {
    const char *name;
    struct file old, new;
    struct tensor_layout lo, ln;
    size_t *match;
};

/* Codes the newer save block by block; returns the bytes out and, with
 * check, rebuilds each block and compares. */
static uint64_t
code(struct pair *pr, struct tensor_codec *c, const struct tensor_codec_opts
    *o, int with_ref, size_t block, int check, double *secs,
    struct tensor_codec_stats *st)
{
    struct tensor_codec_ref ref = { &pr->lo, pr->match, mem_read, &pr->old };
    struct tensor_piece *tp = tensor_piece_new();
    uint8_t *back = malloc(block);
    uint64_t total = 0, off;
    size_t n;
    struct buf out;
    double t0 = now(), t = 0;

    buf_init(&out, TENSOR_CODEC_BOUND(block));
    for (off = 0; off < pr->new.n; off += n) {
        n = pr->new.n - off < block ? (size_t)(pr->new.n - off) : block;
        buf_reset(&out);
        if (tensor_codec_block(c, o, &pr->ln, with_ref ? &ref : NULL, off,
            pr->new.p + off, n, &out, st) != 0)
            abort();
        total += buf_used(&out);
        if (check) {
            double t1 = now();

            if (tensor_piece_decode_seq(tp, buf_ptr(&out), buf_used(&out),
                mem_read, &pr->old, back, n) != 0 ||
                memcmp(back, pr->new.p + off, n) != 0) {
                fprintf(stderr, "%s: block at %llu does not rebuild\n",
                    pr->name, (unsigned long long)off);
                exit(1);
            }
            t += now() - t1;
        }
    }
    if (secs != NULL) {
        secs[0] = now() - t0 - t;
        secs[1] = t;
    }
    buf_cleanup(&out);
    free(back);
    tensor_piece_free(tp);
    return total;
}

static uint64_t
zstd_blocks(const struct file *f, int level, size_t block, double *secs)
{
    struct zst *z = zst_new();
    uint8_t *dst = malloc(block + block / 8 + 1024), *back = malloc(block);
    uint64_t total = 0, off;
    size_t n, len;
    double t0 = now(), t1, td = 0;

    for (off = 0; off < f->n; off += n) {
        n = f->n - off < block ? (size_t)(f->n - off) : block;
        if (zst_compress(z, level, dst, block + block / 8 + 1024,
            f->p + off, n, &len) != 0)
            abort();
        total += len < n ? len : n;
        t1 = now();
        if (zst_decompress(z, back, n, dst, len) != 0)
            abort();
        td += now() - t1;
    }
    if (secs != NULL) {
        secs[0] = now() - t0 - td;
        secs[1] = td;
    }
    free(dst);
    free(back);
    zst_free(z);
    return total;
}

static void
ratios(struct pair *pr, struct tensor_codec *c, size_t block)
{
    static const struct {
        const char *name;
        int mode, ref;
    } rows[] = {
        { "planes", TENSOR_CODEC_AUTO, 0 },
        { "xor", TENSOR_XOR, 1 },
        { "sub", TENSOR_SUB, 1 },
        { "auto", TENSOR_CODEC_AUTO, 1 },
    };
    struct tensor_codec_opts o;
    struct tensor_codec_stats st;
    double n = (double)pr->new.n;
    size_t i;
    int level;

    printf("%-6s zstd-1 %.3f  zstd-3 %.3f\n", pr->name,
        zstd_blocks(&pr->new, 1, block, NULL) / n,
        zstd_blocks(&pr->new, 3, block, NULL) / n);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        printf("%-6s %-6s", pr->name, rows[i].name);
        for (level = 1; level <= 3; level += 2) {
            memset(&o, 0, sizeof(o));
            memset(&st, 0, sizeof(st));
            o.level = level;
            o.mode = rows[i].mode;
            printf(" %.3f", code(pr, c, &o, rows[i].ref, block, level == 1,
                NULL, &st) / n);
            if (level == 1 && rows[i].ref && o.mode == TENSOR_CODEC_AUTO)
                printf(" (pieces xor %llu sub %llu; width 2 %llu, 4 %llu)",
                    (unsigned long long)st.pieces[TENSOR_XOR],
                    (unsigned long long)st.pieces[TENSOR_SUB],
                    (unsigned long long)st.wide[2],
                    (unsigned long long)st.wide[4]);
        }
        printf("\n");
    }
}

static void
best(double *b, const double *secs, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (b[i] == 0 || secs[i] < b[i])
            b[i] = secs[i];
}

static void
rates(struct pair *pr, struct tensor_codec *c, size_t block)
{
    struct tensor_codec_opts o = { 1, TENSOR_CODEC_AUTO, 0 };
    double secs[2], codec[2] = { 0, 0 }, zstd[2] = { 0, 0 }, xxh = 0;
    double mb = (double)pr->new.n / 1e6, t0;
    struct hash128 h;
    size_t off, n;
    int run;

    for (run = 0; run < 3; run++) {
        code(pr, c, &o, 1, block, 1, secs, NULL);
        best(codec, secs, 2);
        zstd_blocks(&pr->new, 1, block, secs);
        best(zstd, secs, 2);
        t0 = now();
        for (off = 0; off < pr->new.n; off += n) {
            n = pr->new.n - off < block ? pr->new.n - off : block;
            hash_block(pr->new.p + off, n, &h);
        }
        secs[0] = now() - t0;
        best(&xxh, secs, 1);
    }
    printf("%-6s encode %5.0f MB/s  decode %5.0f MB/s  zstd-1 %5.0f / %5.0f "
        "MB/s  xxh3 %5.0f MB/s\n", pr->name, mb / codec[0], mb / codec[1],
        mb / zstd[0], mb / zstd[1], mb / xxh);
}

/* How many elements the newer save left as they were (a storage's
 * width taken as 4, which the pair's are). */
static void
unchanged(const struct pair *pr)
{
    size_t i, k, w, same = 0, all = 0;
    const struct tensor_range *t;

    for (i = 0; i < pr->ln.n; i++) {
        t = &pr->ln.v[i];
        w = t->width ? t->width : 4;
        for (k = 0; k + w <= t->len; k += w, all++)
            same += memcmp(pr->old.p + t->off + k, pr->new.p + t->off + k,
                w) == 0;
    }
    printf("%-6s %zu bytes, %zu tensors, %.1f%% of elements unchanged\n",
        pr->name, pr->new.n, pr->ln.n, 100.0 * (double)same / (double)all);
}

static int
read_file(const char *path, struct file *f)
{
    struct stat st;
    ssize_t got;
    size_t at = 0;
    int fd;

    if ((fd = open(path, O_RDONLY)) < 0 || fstat(fd, &st) != 0)
        return -1;
    f->n = (size_t)st.st_size;
    if ((f->p = malloc(f->n + 1)) == NULL)
        return -1;
    while (at < f->n && (got = read(fd, f->p + at, f->n - at)) > 0)
        at += (size_t)got;
    close(fd);
    return at == f->n ? 0 : -1;
}

static int
files(const char *old, const char *new)
{
    struct tensor_codec_opts o = { 1, TENSOR_CODEC_AUTO, 0 };
    struct tensor_codec *c = tensor_codec_new();
    struct pair pr;
    uint64_t coded;
    size_t i, paired = 0;

    memset(&pr, 0, sizeof(pr));
    pr.name = new;
    if (c == NULL || read_file(old, &pr.old) != 0 ||
        read_file(new, &pr.new) != 0 ||
        tensor_layout_mem(pr.old.p, pr.old.n, &pr.lo) != 0 ||
        tensor_layout_mem(pr.new.p, pr.new.n, &pr.ln) != 0 ||
        tensor_layout_pair(&pr.ln, &pr.lo, &pr.match) != 0) {
        perror("tensor_rate");
        return 1;
    }
    coded = code(&pr, c, &o, 1, 1u << 20, 1, NULL, NULL);
    for (i = 0; i < pr.ln.n; i++)
        paired += pr.match[i] != SIZE_MAX;
    printf("tensors %zu paired %zu coded %llu of %zu\n", pr.ln.n, paired,
        (unsigned long long)coded, pr.new.n);
    /* Freed, so that a run under LeakSanitizer says only what leaks. */
    tensor_codec_free(c);
    tensor_layout_cleanup(&pr.lo);
    tensor_layout_cleanup(&pr.ln);
    free(pr.match);
    free(pr.old.p);
    free(pr.new.p);
    return 0;
}

int
main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 10;
    size_t block = (argc > 2 ? (size_t)atoi(argv[2]) : 1024) << 10;
    struct tensor_codec *c;
    struct pair pr[2];
    size_t i;

    if (argc == 4 && strcmp(argv[1], "-f") == 0)
        return files(argv[2], argv[3]);
    c = tensor_codec_new();
    if (c == NULL || mib == 0 || block == 0 ||
        block > PROTO_MAX_TENSOR_PIECE) {
        fprintf(stderr, "usage: tensor_rate [MiB] [block KiB (<= 4096)] | "
            "-f OLD NEW\n");
        return 2;
    }
    memset(pr, 0, sizeof(pr));
    pr[0].name = "bf16";
    make_bf16(mib << 20, &pr[0].old, &pr[0].new);
    pr[1].name = "adamw";
    make_adamw(6 * (mib << 20), &pr[1].old, &pr[1].new);
    for (i = 0; i < 2; i++) {
        if (tensor_layout_mem(pr[i].old.p, pr[i].old.n, &pr[i].lo) != 0 ||
            tensor_layout_mem(pr[i].new.p, pr[i].new.n, &pr[i].ln) != 0 ||
            pr[i].ln.n == 0 ||
            tensor_layout_pair(&pr[i].ln, &pr[i].lo, &pr[i].match) != 0) {
            fprintf(stderr, "%s: no tensors found\n", pr[i].name);
            return 1;
        }
        unchanged(&pr[i]);
    }
    printf("share of the file on the wire, blocks of %zu KiB, zstd level "
        "1 then 3:\n", block >> 10);
    for (i = 0; i < 2; i++)
        ratios(&pr[i], c, block);
    printf("one core:\n");
    for (i = 0; i < 2; i++)
        rates(&pr[i], c, block);
    return 0;
}
