/*
 * swarm_make.c: what a swarm starts from (swarm_cond.h): the sources'
 * scan and the staging folder's name, the helper's bytes, the torrent
 * of what some box lacks (one read for both its hashes and the
 * transfers'), the per-transfer CA, and each box's `go`.
 */
#include "swarm_cond.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../proto/msg.h"
#include "digest.h"
#include "remote.h"
#include "swarm_ca.h"
#include "torrent.h"
#include "transport.h"

/* The sources' files into s->mf and s->files, and the staging folder's
 * name from what they are (path, size, mtime): the same sources find
 * the same folder in the next run, with what it holds. */
static int
swarm_scan(struct swarm *s)
{
    struct cli *cli = s->cli;
    struct digest_sha256 *d;
    char rel[MANIFEST_REL_MAX], hex[65];
    size_t id, n, k;
    int r = 0;

    manifest_init(&s->mf);
    s->have_mf = 1;
    manifest_set_filter(&s->mf, &cli->filter, 1);
    for (int i = 0; i < cli->nlocal && r == 0; i++)
        r = manifest_scan(&s->mf, cli->local_paths[i]);
    if (r != 0)
        return r;
    n = manifest_avail(&s->mf);
    if ((s->files = xcalloc(n + 1, sizeof(*s->files))) == NULL)
        return FERRY_ERR_NOMEM;
    for (id = 0; id < n; id++) {
        const struct mentry *e = manifest_entry(&s->mf, id);

        if (e->kind != ENTRY_FILE || e->size == 0)
            continue;
        if ((s->files[s->nfiles].rel = xstrdup(manifest_rel(&s->mf, id,
            rel))) == NULL)
            return FERRY_ERR_NOMEM;
        s->files[s->nfiles++].id = id;
        s->bytes += e->size;
    }
    qsort(s->files, s->nfiles, sizeof(*s->files), swarm_rel_cmp);
    if ((d = digest_sha256_new()) == NULL)
        return FERRY_ERR_NOMEM;
    for (k = 0; k < s->nfiles && r == 0; k++) {
        const struct mentry *e = manifest_entry(&s->mf, s->files[k].id);
        char meta[64];

        snprintf(meta, sizeof(meta), "%" PRIu64 " %" PRId64 ".%" PRIu32,
            (uint64_t)e->size, (int64_t)e->mtime_sec, e->mtime_nsec);
        if ((r = digest_sha256_update(d, s->files[k].rel,
            strlen(s->files[k].rel) + 1)) == 0)
            r = digest_sha256_update(d, meta, strlen(meta) + 1);
    }
    if (r == 0)
        r = digest_sha256_final(d, hex);
    else
        digest_sha256_free(d);
    if (r == 0)
        memcpy(s->job.id, hex, 16);
    return r;
}

/* A file every box still in holds already need not be shared. */
static int
swarm_wanted(const struct swarm *s, size_t k)
{
    for (int i = 0; i < s->n; i++)
        if (s->b[i].st == SB_LISTED && !s->b[i].cur[k])
            return 1;
    return 0;
}

/* Reads source file k whole into the torrent's current file and the
 * transfer's own hash of it (its blocks' XXH3), which each box's
 * transfer then sends without reading the file again: N boxes do not
 * read the sources N times. */
static int
swarm_hash_file(struct swarm *s, size_t k, uint8_t *buf)
{
    struct swarm_rel *f = &s->files[k];
    uint32_t bs = s->cli->block_size;
    uint64_t left = manifest_entry(&s->mf, f->id)->size, off = 0;
    struct hash_file *hf;
    int r = 0, fd;

    if ((fd = manifest_open(&s->mf, f->id, FSX_O_READ)) < 0)
        return fd;
    if ((hf = hash_file_new(left, bs)) == NULL)
        r = FERRY_ERR_NOMEM;
    while (r == 0 && left > 0) {
        size_t want = left < bs ? (size_t)left : bs, got = 0;
        struct hash128 bh;

        if ((r = fsx_pread_full(fd, buf, want, off, &got)) == 0 &&
            got < want)
            r = FERRY_ERR_CHANGED;  /* it shrank since the scan */
        if (r != 0)
            break;
        off += got;
        hash_block(buf, got, &bh);
        hash_file_add(hf, &bh);
        r = torrent_file_update(s->t, buf, got);
        left -= got;
    }
    close(fd);
    if (r == 0) {
        hash_file_final(hf, &f->hash);
        f->hashed = 1;
    }
    hash_file_free(hf);
    return r;
}

/* Which boxes hold file k already, as one number: files held by the
 * same boxes share a bundle, so that a box holds a bundle whole (and
 * makes it from its own copies) or lacks it whole. */
static uint64_t
swarm_holders(const struct swarm *s, size_t k)
{
    uint64_t h = 1469598103934665603ull;

    for (int i = 0; i < s->n; i++) {
        h ^= (uint64_t)(s->b[i].st == SB_LISTED && s->b[i].cur[k]) + 1;
        h *= 1099511628211ull;
    }
    return h;
}

struct swarm_small {
    uint64_t holders;
    size_t k;
};

static int
swarm_small_cmp(const void *a, const void *b)
{
    const struct swarm_small *x = a, *y = b;

    if (x->holders != y->holders)
        return x->holders < y->holders ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* The small files some box lacks, end to end in bundles: by who holds
 * them, then by path, each bundle at most SWARM_BUNDLE_BYTES (a file
 * alone beyond that, which cannot be: they are below 1 MiB). */
static int
swarm_bundle(struct swarm *s)
{
    struct swarm_small *sm;
    size_t n = 0, k, j;

    for (k = 0; k < s->nfiles; k++)
        n += swarm_wanted(s, k) &&
            manifest_entry(&s->mf, s->files[k].id)->size < SWARM_BUNDLE_BELOW;
    if (n == 0)
        return 0;
    if ((sm = xcalloc(n, sizeof(*sm))) == NULL ||
        (s->parts = xcalloc(n, sizeof(*s->parts))) == NULL ||
        (s->bundles = xcalloc(n, sizeof(*s->bundles))) == NULL) {
        xfree(sm);
        return FERRY_ERR_NOMEM;
    }
    for (k = 0, j = 0; k < s->nfiles; k++)
        if (swarm_wanted(s, k) && manifest_entry(&s->mf,
            s->files[k].id)->size < SWARM_BUNDLE_BELOW)
            sm[j++] = (struct swarm_small){ swarm_holders(s, k), k };
    qsort(sm, n, sizeof(*sm), swarm_small_cmp);
    for (j = 0; j < n; j++) {
        uint64_t size = manifest_entry(&s->mf, s->files[sm[j].k].id)->size;
        struct sfile *b = s->nbundles > 0 ? &s->bundles[s->nbundles - 1] :
            NULL;

        if (b == NULL || sm[j].holders != sm[j - 1].holders ||
            b->len + size > SWARM_BUNDLE_BYTES) {
            b = &s->bundles[s->nbundles++];
            *b = (struct sfile){ .k = SIZE_MAX, .part0 = j };
        }
        s->parts[j] = (struct spart){ sm[j].k, b->len };
        b->len += size;
        b->nparts++;
    }
    s->nparts = n;
    xfree(sm);
    return 0;
}

/* The torrent of the files some box lacks, with the CA's certificate:
 * the large ones each a file of it, the small ones in bundles. 0 with no
 * torrent when every box holds everything. */
static int
swarm_torrent(struct swarm *s, const char *ca_pem, size_t ca_len)
{
    char tpath[MANIFEST_REL_MAX + 32];
    uint8_t ih[32], *buf;
    size_t k, i;
    uint64_t len, wanted = 0;
    const char *path;
    uint32_t first, count;
    int r = 0;

    for (k = 0; k < s->nfiles; k++)
        if (swarm_wanted(s, k))
            wanted += manifest_entry(&s->mf, s->files[k].id)->size;
    if (wanted < SWARM_MIN_BYTES)
        return 0;
    s->piece_len = swarm_piece_len(wanted);
    if ((r = swarm_bundle(s)) != 0 ||
        (r = torrent_new(&s->t, SWARM_CONTENT, s->piece_len)) != 0)
        return r;
    if ((buf = xmalloc(s->cli->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    for (k = 0; k < s->nfiles && r == 0; k++) {
        if (!swarm_wanted(s, k) || manifest_entry(&s->mf,
            s->files[k].id)->size < SWARM_BUNDLE_BELOW)
            continue;
        snprintf(tpath, sizeof(tpath), "%s/%s", SWARM_FILES_DIR,
            s->files[k].rel);
        if ((r = torrent_file_begin(s->t, tpath)) == 0 &&
            (r = swarm_hash_file(s, k, buf)) == 0)
            r = torrent_file_end(s->t);
    }
    for (i = 0; i < s->nbundles && r == 0; i++) {
        const struct sfile *b = &s->bundles[i];

        snprintf(tpath, sizeof(tpath), "%s/%zu", SWARM_BUNDLES_DIR, i);
        r = torrent_file_begin(s->t, tpath);
        for (k = b->part0; k < b->part0 + b->nparts && r == 0; k++)
            r = swarm_hash_file(s, s->parts[k].k, buf);
        if (r == 0)
            r = torrent_file_end(s->t);
    }
    xfree(buf);
    if (r != 0)
        return r;
    buf_init(&s->tbytes, TORRENT_MAX_BYTES);
    if ((r = torrent_set_cert(s->t, ca_pem, ca_len)) == 0)
        r = torrent_finish(s->t, &s->tbytes, ih);
    if (r != 0)
        return r;
    s->bytes = wanted;
    s->pieces = torrent_pieces(s->t);
    s->nsf = torrent_files(s->t);
    if ((s->sf = xcalloc(s->nsf, sizeof(*s->sf))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < s->nsf; i++) {
        size_t fl = strlen(SWARM_FILES_DIR), bl = strlen(SWARM_BUNDLES_DIR);
        unsigned long j;
        ssize_t at;
        char *end;

        torrent_file_at(s->t, i, &path, &len, &first, &count);
        if (strncmp(path, SWARM_FILES_DIR "/", fl + 1) == 0 &&
            (at = swarm_file_of(s, path + fl + 1)) >= 0) {
            s->sf[i] = (struct sfile){ (size_t)at, len, first, count, 0, 0 };
        } else if (strncmp(path, SWARM_BUNDLES_DIR "/", bl + 1) == 0 &&
            (j = strtoul(path + bl + 1, &end, 10)) < s->nbundles &&
            *end == '\0') {
            s->sf[i] = s->bundles[j];
            s->sf[i].first = first;
            s->sf[i].count = count;
        } else {
            return FERRY_ERR_STATE;
        }
    }
    return 0;
}

/* path's bytes into *out, at most SWARM_HELPER_MAX of them. */
static int
swarm_slurp(const char *path, uint8_t **out, size_t *len)
{
    if (remote_read_file(path, out, len) != 0)
        return FERRY_ERR_AGENT;
    return *len <= SWARM_HELPER_MAX ? 0 : FERRY_ERR_AGENT;
}

/* One build of the helper: NAME beside this build's agent, or the file
 * env names, and its gzip copy (PATH.gz, made with it), which crosses to
 * a box with gzip in less than half the bytes. */
static int
swarm_build_load(struct swarm *s, enum swarm_arch arch, const char *name,
    const char *env)
{
    struct swarm_build *b = &s->job.helper[arch];
    uint8_t **bin = &s->helper_mem[2 * arch], **gz = bin + 1;
    char agent[4096], path[4200], gzpath[4300];
    const char *e = getenv(env), *a;
    char *slash;
    size_t len;

    if (e != NULL && e[0] != '\0') {
        snprintf(path, sizeof(path), "%s", e);
    } else {
        if ((a = transport_local_agent(agent, sizeof(agent))) == NULL)
            return FERRY_ERR_AGENT;
        snprintf(path, sizeof(path), "%s", a);
        if ((slash = strrchr(path, '/')) == NULL)
            return FERRY_ERR_AGENT;
        snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path),
            "%s", name);
    }
    if (swarm_slurp(path, bin, &len) != 0 ||
        digest_sha256_file(path, b->hash) != 0)
        return FERRY_ERR_AGENT;
    b->bin = *bin;
    b->len = len;
    snprintf(gzpath, sizeof(gzpath), "%s.gz", path);
    if (swarm_slurp(gzpath, gz, &len) == 0) {
        b->gz = *gz;
        b->gz_len = len;
    }
    return 0;
}

/* This build's helpers: x86_64's is needed, aarch64's is taken when
 * built (FERRY_SWARM and FERRY_SWARM_AARCH64 name others). */
static int
swarm_helper(struct swarm *s)
{
    (void)swarm_build_load(s, SWARM_AARCH64, "ferry-swarm-aarch64",
        "FERRY_SWARM_AARCH64");
    return swarm_build_load(s, SWARM_X86_64, "ferry-swarm", "FERRY_SWARM");
}

/* Queues `go` and the blob for box i: the torrent, its certificate and
 * its key. */
static int
swarm_go(struct swarm *s, int i)
{
    struct sbox *b = &s->b[i];
    const struct swarm_blob f[SWARM_FILES] = {
        { buf_ptr(&s->tbytes), buf_used(&s->tbytes) },
        { s->certs[i], s->cert_len[i] },
        { s->keys[i], s->key_len[i] },
    };
    int r;

    if ((r = swarm_send(b, "go %zu %zu %zu", f[0].len, f[1].len,
        f[2].len)) != 0)
        return r;
    for (int k = 0; k < SWARM_FILES; k++) {
        uint8_t *g = xroom(b->out, &b->outcap, b->outlen + f[k].len);

        if (g == NULL)
            return FERRY_ERR_NOMEM;
        b->out = g;
        memcpy(b->out + b->outlen, f[k].p, f[k].len);
        b->outlen += f[k].len;
    }
    b->st = SB_HELLO;
    b->since = swarm_now();
    b->made = 1;
    return 0;
}

/* Every box has listed its destination: the torrent of what some box
 * lacks, the CA, each box's credentials, and `go` to each. 0 with no
 * torrent when there is nothing to share. */
int
swarm_prepare(struct swarm *s)
{
    struct swarm_ca *ca = NULL;
    const char *pem;
    size_t pem_len;
    int r, i;

    if ((r = swarm_ca_new(SWARM_CA_HOURS, &ca)) != 0)
        return r;
    pem = swarm_ca_cert_pem(ca, &pem_len);
    if ((r = swarm_torrent(s, pem, pem_len)) != 0 || s->t == NULL)
        goto out;
    s->window = SWARM_WINDOW_BYTES / s->piece_len;
    if (s->window > SWARM_WINDOW)
        s->window = SWARM_WINDOW;
    if (s->window < 2)
        s->window = 2;
    s->again_cap = (size_t)s->pieces + (size_t)s->n * SWARM_WINDOW;
    if ((s->again = xcalloc(s->again_cap, sizeof(uint32_t))) == NULL ||
        (s->fed_to = xmalloc((size_t)s->pieces * sizeof(int16_t))) == NULL ||
        (s->bad = xcalloc(s->pieces, 1)) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    for (uint32_t p = 0; p < s->pieces; p++)
        s->fed_to[p] = -1;
    snprintf(s->adopt, sizeof(s->adopt), "%s/%s/%s/%s", SWARM_STAGE_DIR,
        s->job.id, SWARM_CONTENT, SWARM_FILES_DIR);
    for (i = 0; i < s->n && r == 0; i++) {
        if (s->b[i].st != SB_LISTED)
            continue;
        r = swarm_ca_issue(ca, "*", &s->certs[i], &s->cert_len[i],
            &s->keys[i], &s->key_len[i]);
        if (r == 0)
            r = swarm_go(s, i);
    }
    if (r == 0) {
        s->phase = SW_SPREADING;
        s->moved_at = swarm_now();
    }
out:
    swarm_ca_free(ca);
    return r;
}

struct swarm *
swarm_new(struct cli *cli, volatile sig_atomic_t *stop)
{
    struct swarm *s;
    int i, n = cli->nboxes;

    if ((s = xcalloc(1, sizeof(*s))) == NULL)
        return NULL;
    s->cli = cli;
    s->n = n;
    s->stop = stop;
    s->t0 = swarm_now();
    s->probe_s = SWARM_PROBE_S;
    if ((s->b = xcalloc((size_t)n, sizeof(*s->b))) == NULL ||
        (s->certs = xcalloc((size_t)n, sizeof(char *))) == NULL ||
        (s->keys = xcalloc((size_t)n, sizeof(char *))) == NULL ||
        (s->cert_len = xcalloc((size_t)n, sizeof(size_t))) == NULL ||
        (s->key_len = xcalloc((size_t)n, sizeof(size_t))) == NULL)
        goto none;
    for (i = 0; i < n; i++)
        s->b[i].sock = -1;
    if (swarm_helper(s) != 0) {
        swarm_warn(s, -1, "the boxes do not share: this ferry has no "
            "swarm helper (bin/ferry-swarm)");
        goto none;
    }
    if (swarm_scan(s) != 0 || s->bytes < SWARM_MIN_BYTES)
        goto none;          /* each box's transfer reports a scan error */
    for (i = 0; i < n; i++)
        if ((s->b[i].cur = xcalloc(s->nfiles + 1, 1)) == NULL)
            goto none;
    return s;
none:
    swarm_free(s);
    return NULL;
}

void
swarm_free(struct swarm *s)
{
    size_t k;
    int i;

    if (s == NULL)
        return;
    for (i = 0; i < s->n; i++) {
        if (s->b[i].sock >= 0)
            close(s->b[i].sock);
        xfree(s->b[i].out);
        xfree(s->b[i].cur);
        if (s->keys != NULL)
            swarm_ca_free_key(s->keys[i], s->key_len[i]);
        if (s->certs != NULL)
            xfree(s->certs[i]);
    }
    for (k = 0; s->files != NULL && k < s->nfiles; k++)
        xfree(s->files[k].rel);
    xfree(s->files);
    xfree(s->b);
    xfree(s->certs);
    xfree(s->keys);
    xfree(s->cert_len);
    xfree(s->key_len);
    if (s->have_mf)
        manifest_cleanup(&s->mf);
    torrent_free(s->t);
    buf_cleanup(&s->tbytes);
    for (int h = 0; h < 2 * SWARM_NARCH; h++)
        xfree(s->helper_mem[h]);
    xfree(s->sf);
    xfree(s->parts);
    xfree(s->bundles);
    xfree(s->again);
    xfree(s->fed_to);
    xfree(s->bad);
    xfree(s);
}
