/*
 * unpack.c: `ferry unpack OUTDIR DEST` (see unpack.h).
 */
#include "unpack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../engine/volume/volread.h"
#include "../engine/volume/volstage.h"
#include "../engine/volume/volume.h"
#include "../proto/vmanifest.h"
#include "digest.h"
#include "exitcode.h"
#include "pack.h"

#define UNPACK_SUMS "SHA256SUMS"
#define UNPACK_SUMS_MAX (64u << 20)
#define UNPACK_CHUNK (1u << 20)

struct unpack {
    struct pack_args *a;
    struct output out;
    struct xfer x;
    const char *src, *dest;
    char *name;              /* the set's name, with a manifest */
    int manifest;
    int mfd;                 /* the manifest, read line by line */
    struct buf mbuf;
    size_t mpend;            /* the line handed out last */
    uint32_t nvol;
    char **files;            /* volumes, in order */
    char (*sums)[65];        /* per volume, "" if not listed */
    char msum[65];
    int have_sums;
    char *unlisted;          /* without a manifest: a volume SHA256SUMS
                                names that is not here, or NULL */
    struct volr *v;
    struct volr_stats st;
    uint64_t compressed;
    uint8_t *chunk;
};

static int
unpack_fatal(struct unpack *u, int code, int status, const char *where,
    const char *fmt, ...) FERRY_PRINTF(5, 6);

static int
unpack_fatal(struct unpack *u, int code, int status, const char *where,
    const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    output_fatal(&u->out, where, code, msg);
    return status;
}

/* The next line of the manifest (without '\n'); FERRY_ERR_SHORT at the
 * end. The line stays valid until the next call. */
static int
unpack_line(struct unpack *u, const char **line, size_t *len)
{
    const uint8_t *p, *nl;
    uint8_t *dst;
    ssize_t n;
    int r;

    buf_consume(&u->mbuf, u->mpend);
    u->mpend = 0;
    for (;;) {
        p = buf_ptr(&u->mbuf);
        nl = p != NULL ? memchr(p, '\n', buf_used(&u->mbuf)) : NULL;
        if (nl != NULL) {
            *line = (const char *)p;
            *len = (size_t)(nl - p);
            u->mpend = *len + 1;
            return 0;
        }
        if (buf_used(&u->mbuf) > VMAN_MAX_LINE)
            return FERRY_ERR_TOO_LARGE;
        if ((r = buf_reserve(&u->mbuf, 65536, &dst)) != 0)
            return r;
        n = read(u->mfd, dst, 65536);
        buf_unreserve(&u->mbuf, 65536 - (n > 0 ? (size_t)n : 0));
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n == 0)
            return FERRY_ERR_SHORT;
    }
}

static int
unpack_record(void *ctx, struct vman_rec *rec, char *store)
{
    struct unpack *u = ctx;
    const char *line = NULL;
    size_t len = 0;
    int r;

    if ((r = unpack_line(u, &line, &len)) != 0)
        return r;
    return vman_decode(line, len, rec, store);
}

/* The volume count from the manifest's last line (its end record). */
static int
unpack_tail(struct unpack *u, uint32_t *nvol)
{
    char *tail, *store, *nl;
    struct vman_rec rec;
    struct stat st;
    size_t n;
    off_t at;
    int r;

    *nvol = 0;
    if (fstat(u->mfd, &st) != 0)
        return -errno;
    n = st.st_size < (off_t)VMAN_MAX_LINE ? (size_t)st.st_size :
        VMAN_MAX_LINE;
    at = st.st_size - (off_t)n;
    tail = xmalloc(n + 1);
    store = xmalloc(VMAN_MAX_PATH + 1);
    if (tail == NULL || store == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    if ((r = fsx_pread_full(u->mfd, tail, n, (uint64_t)at, &n)) != 0)
        goto out;
    while (n > 0 && tail[n - 1] == '\n')
        n--;
    tail[n] = '\0';
    nl = memrchr(tail, '\n', n);
    nl = nl != NULL ? nl + 1 : tail;
    r = vman_decode(nl, n - (size_t)(nl - tail), &rec, store);
    if (r == 0 && (rec.type != VMAN_END || rec.volume == 0 ||
        rec.volume > VOLUME_MAX_COUNT))
        r = FERRY_ERR_FORMAT;
    if (r == 0)
        *nvol = rec.volume;
out:
    xfree(tail);
    xfree(store);
    return r;
}

/* 1 if the file name fn is that of a volume unpack reads without a
 * manifest: a .tar.zst (NAME's only, with --name), not hidden. */
static int
unpack_is_volume(const struct unpack *u, const char *fn)
{
    size_t n = strlen(fn), sl = strlen(VOLUME_SUFFIX),
        nl = u->a->name != NULL ? strlen(u->a->name) : 0;

    return n > sl && strcmp(fn + n - sl, VOLUME_SUFFIX) == 0 &&
        fn[0] != '.' && strchr(fn, '/') == NULL && (nl == 0 ||
        (strncmp(fn, u->a->name, nl) == 0 && fn[nl] == '.'));
}

/* Reads SHA256SUMS (if there) for the volumes in u->files and the
 * manifest. */
static int
unpack_sums(struct unpack *u, int srcfd)
{
    char line[VOLUME_NAME_MAX + 80], mname[VOLUME_NAME_MAX + 16];
    uint32_t i;
    FILE *f;
    int fd;

    if ((u->sums = xcalloc(u->nvol + 1, sizeof(*u->sums))) == NULL)
        return FERRY_ERR_NOMEM;
    fd = openat(srcfd, UNPACK_SUMS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
        O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if ((f = fdopen(fd, "r")) == NULL) {
        close(fd);
        return FERRY_ERR_NOMEM;
    }
    u->have_sums = 1;
    snprintf(mname, sizeof(mname), "%s%s", u->name != NULL ? u->name : "",
        VOLUME_MANIFEST_SUFFIX);
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t len = strcspn(line, "\r\n");
        const char *fn = line + 66;
        int here = 0;

        line[len] = '\0';
        if (len < 67 || strspn(line, "0123456789abcdef") != 64 ||
            line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
            continue;
        line[64] = '\0';
        if (u->name != NULL && strcmp(fn, mname) == 0)
            memcpy(u->msum, line, 65);
        for (i = 1; i <= u->nvol; i++) {
            const char *base = strrchr(u->files[i], '/');

            base = base != NULL ? base + 1 : u->files[i];
            if (strcmp(base, fn) == 0) {
                memcpy(u->sums[i], line, 65);
                here = 1;
            }
        }
        /* Without a manifest the directory is the set: a volume its sums
         * list and it does not hold was lost (a set with a manifest
         * names every volume it has; a missing one is found there). */
        if (!here && !u->manifest && u->unlisted == NULL &&
            unpack_is_volume(u, fn) &&
            (u->unlisted = xstrdup(fn)) == NULL) {
            fclose(f);
            return FERRY_ERR_NOMEM;
        }
    }
    fclose(f);
    return 0;
}

/* Volumes without a manifest: every .tar.zst in the directory (NAME's
 * only, with --name), sorted. */
static int
unpack_list(struct unpack *u, DIR *d)
{
    struct dirent *de;
    size_t n;
    char **nv;

    while ((de = readdir(d)) != NULL) {
        n = strlen(de->d_name);
        if (!unpack_is_volume(u, de->d_name))
            continue;
        if (u->nvol == VOLUME_MAX_COUNT)
            return FERRY_ERR_TOO_LARGE;
        if ((nv = xrealloc(u->files, (u->nvol + 2) * sizeof(*nv))) == NULL)
            return FERRY_ERR_NOMEM;
        u->files = nv;
        u->files[0] = NULL;
        if ((u->files[++u->nvol] = xmalloc(strlen(u->src) + n + 2)) == NULL)
            return FERRY_ERR_NOMEM;
        sprintf(u->files[u->nvol], "%s/%s", u->src, de->d_name);
    }
    return 0;
}

static int
unpack_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Finds the manifest and the volumes. Returns an exit status. */
static int
unpack_plan(struct unpack *u)
{
    char path[VOLUME_NAME_MAX + 16], *p;
    struct dirent *de;
    struct stat st;
    DIR *d;
    uint32_t i;
    int fd, r, found = 0;

    if (stat(u->src, &st) != 0)
        return unpack_fatal(u, -errno, EXIT_SOURCE, u->src, "%s",
            ferry_strerror(-errno));
    if (S_ISREG(st.st_mode)) {
        u->nvol = 1;
        if ((u->files = xcalloc(2, sizeof(*u->files))) == NULL ||
            (u->files[1] = xstrdup(u->src)) == NULL ||
            (u->sums = xcalloc(2, sizeof(*u->sums))) == NULL)
            return EXIT_DEST;
        return EXIT_OK;
    }
    if ((d = opendir(u->src)) == NULL)
        return unpack_fatal(u, -errno, EXIT_SOURCE, u->src, "%s",
            ferry_strerror(-errno));
    if (u->a->name != NULL) {
        snprintf(path, sizeof(path), "%s%s", u->a->name,
            VOLUME_MANIFEST_SUFFIX);
        if (fstatat(dirfd(d), path, &st, 0) == 0) {
            u->name = xstrdup(u->a->name);
            found = 1;
        }
    } else {
        size_t sl = strlen(VOLUME_MANIFEST_SUFFIX), n;

        while ((de = readdir(d)) != NULL) {
            n = strlen(de->d_name);
            if (n <= sl || de->d_name[0] == '.' ||
                strcmp(de->d_name + n - sl, VOLUME_MANIFEST_SUFFIX) != 0)
                continue;
            if (found++ > 0)
                break;
            u->name = xstrndup(de->d_name, n - sl);
        }
        rewinddir(d);
        if (found > 1) {
            closedir(d);
            return unpack_fatal(u, FERRY_ERR_USAGE, EXIT_USAGE, u->src,
                "several manifests: choose one with --name");
        }
    }
    if (found) {
        u->manifest = 1;
        snprintf(path, sizeof(path), "%s%s", u->name, VOLUME_MANIFEST_SUFFIX);
        fd = openat(dirfd(d), path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
            O_NONBLOCK);
        if (fd < 0 || (r = unpack_tail((u->mfd = fd, u), &u->nvol)) != 0) {
            r = fd < 0 ? -errno : r;
            closedir(d);
            return unpack_fatal(u, r, fd < 0 ? EXIT_SOURCE : EXIT_INTEGRITY,
                path, "cannot read the manifest's end: %s",
                ferry_strerror(r));
        }
        if ((u->files = xcalloc(u->nvol + 1, sizeof(*u->files))) == NULL)
            r = FERRY_ERR_NOMEM;
        for (i = 1; r == 0 && i <= u->nvol; i++) {
            if ((p = xmalloc(strlen(u->src) + VOLUME_NAME_MAX)) == NULL) {
                r = FERRY_ERR_NOMEM;
                break;
            }
            u->files[i] = p;
            sprintf(p, "%s/", u->src);
            r = volume_file_name(u->name, i, p + strlen(p), VOLUME_NAME_MAX);
        }
    } else {
        r = unpack_list(u, d);
        if (r == 0 && u->nvol > 1)
            qsort(u->files + 1, u->nvol, sizeof(*u->files), unpack_cmp);
        if (r == 0 && u->nvol == 0) {
            closedir(d);
            return unpack_fatal(u, -ENOENT, EXIT_SOURCE, u->src,
                "no manifest and no .tar.zst volumes here");
        }
    }
    if (r == 0)
        r = unpack_sums(u, dirfd(d));
    /* Every volume the manifest names is here before anything is
     * written, as a set without one is held to its SHA256SUMS. */
    for (i = 1; r == 0 && u->manifest && i <= u->nvol; i++) {
        p = strrchr(u->files[i], '/') + 1;
        if (fstatat(dirfd(d), p, &st, 0) != 0 && errno == ENOENT) {
            closedir(d);
            return unpack_fatal(u, -ENOENT, EXIT_SOURCE, u->src, "%s: "
                "named by %s%s, not here: a volume of the set is missing",
                p, u->name, VOLUME_MANIFEST_SUFFIX);
        }
    }
    closedir(d);
    if (r != 0)
        return unpack_fatal(u, r, EXIT_SOURCE, u->src, "%s",
            ferry_strerror(r));
    if (u->unlisted != NULL)
        return unpack_fatal(u, -ENOENT, EXIT_SOURCE, u->src, "%s: listed "
            "in %s, not here: a volume of the set is missing",
            u->unlisted, UNPACK_SUMS);
    if (u->manifest && !u->have_sums)
        output_note(&u->out, "%s: no %s: volumes are checked by the "
            "manifest's hashes only", u->src, UNPACK_SUMS);
    if (!u->manifest && !u->have_sums && u->nvol > 1)
        output_note(&u->out, "%s: no manifest and no %s: a volume missing "
            "from the set cannot be noticed", u->src, UNPACK_SUMS);
    return EXIT_OK;
}

/* Checks the file's SHA-256 against its SHA256SUMS line, if any. */
static int
unpack_check_sum(struct unpack *u, const char *path, const char *want)
{
    char got[65];
    int r;

    if (want[0] == '\0') {
        if (!u->have_sums)
            return EXIT_OK;
        return unpack_fatal(u, FERRY_ERR_HASH_MISMATCH, EXIT_INTEGRITY, path,
            "not listed in %s", UNPACK_SUMS);
    }
    if ((r = digest_sha256_file(path, got)) != 0)
        return unpack_fatal(u, r, EXIT_SOURCE, path, "%s",
            ferry_strerror(r));
    if (strcmp(got, want) != 0)
        return unpack_fatal(u, FERRY_ERR_HASH_MISMATCH, EXIT_INTEGRITY, path,
            "SHA-256 does not match %s: the file is damaged", UNPACK_SUMS);
    return EXIT_OK;
}

/* The exit status of the reader's failure. */
static int
unpack_volr_fail(struct unpack *u)
{
    const char *text;
    enum volr_kind k = volr_error(u->v, &text);

    output_fatal(&u->out, u->src, k == VOLR_INTEGRITY ?
        FERRY_ERR_HASH_MISMATCH : k == VOLR_DEST ? -EIO : FERRY_ERR_FORMAT,
        text != NULL ? text : "failed");
    return k == VOLR_INTEGRITY ? EXIT_INTEGRITY : k == VOLR_DEST ?
        EXIT_DEST : EXIT_PROTOCOL;
}

/* Reads volume i through the reader. Returns an exit status. */
static int
unpack_volume(struct unpack *u, uint32_t i)
{
    const char *path = u->files[i], *base = strrchr(path, '/');
    struct volr_stats before, after;
    struct stat st;
    uint64_t bytes = 0;
    ssize_t n;
    int fd, code, r = 0;

    if ((code = unpack_check_sum(u, path, u->sums[i])) != EXIT_OK)
        return code;
    if ((fd = open(path, FSX_O_READ)) < 0 || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode)) {
        r = fd < 0 ? -errno : -EINVAL;
        if (fd >= 0)
            close(fd);
        return unpack_fatal(u, r, EXIT_SOURCE, path, "%s", r == -ENOENT ?
            "volume missing" : ferry_strerror(r));
    }
    volr_stats(u->v, &before);
    if (volr_begin(u->v, i) != 0) {
        close(fd);
        return unpack_volr_fail(u);
    }
    while (r == 0 && (n = read(fd, u->chunk, UNPACK_CHUNK)) != 0) {
        if (pack_interrupted)
            r = FERRY_ERR_INTERRUPTED;
        else if (n < 0 && errno != EINTR)
            r = -errno;
        else if (n > 0 && volr_put(u->v, u->chunk, (size_t)n) != 0)
            r = FERRY_ERR_FORMAT;
        bytes += n > 0 ? (uint64_t)n : 0;
    }
    close(fd);
    if (r == FERRY_ERR_INTERRUPTED)
        return EXIT_INTERRUPTED;
    if (r < 0 && r != FERRY_ERR_FORMAT)
        return unpack_fatal(u, r, EXIT_SOURCE, path, "%s",
            ferry_strerror(r));
    if (r != 0 || volr_end(u->v) != 0)
        return unpack_volr_fail(u);
    volr_stats(u->v, &after);
    u->compressed += bytes;
    pack_volume_event(&u->out, "read", base != NULL ? base + 1 : path, i,
        bytes, after.members - before.members,
        u->sums[i][0] != '\0' ? u->sums[i] : NULL);
    return EXIT_OK;
}

/* With a manifest: its checksum, then its head. Returns an exit status. */
static int
unpack_head(struct unpack *u, struct volr_opts *vo)
{
    char path[VOLUME_NAME_MAX + 16], *store;
    struct vman_rec rec;
    int code, r;

    snprintf(path, sizeof(path), "%s/%s%s", u->src, u->name,
        VOLUME_MANIFEST_SUFFIX);
    if ((code = unpack_check_sum(u, path, u->msum)) != EXIT_OK)
        return code;
    if ((store = xmalloc(VMAN_MAX_PATH + 1)) == NULL)
        return EXIT_DEST;
    r = unpack_record(u, &rec, store);
    xfree(store);
    if (r != 0 || rec.type != VMAN_HEAD)
        return unpack_fatal(u, r != 0 ? r : FERRY_ERR_FORMAT, EXIT_INTEGRITY,
            path, "not a volume manifest (or of another version)");
    vo->manifest = 1;
    vo->block_size = rec.block_size;
    return EXIT_OK;
}

/* A staging directory a killed unpack left in DEST, removed. */
static void
unpack_stale(void *ctx, const char *name, uint64_t bytes, int64_t age_s)
{
    struct unpack *u = ctx;

    (void)bytes;
    (void)age_s;
    output_note(&u->out, "%s/%s: removed, left by an unpack that was "
        "stopped", u->dest, name);
}

static int
unpack_run(struct unpack *u)
{
    struct volr_hooks hooks = { unpack_record, NULL, u };
    struct volr_opts vo;
    uint32_t i;
    int code, rootfd, r;

    if ((code = unpack_plan(u)) != EXIT_OK)
        return code;
    memset(&vo, 0, sizeof(vo));
    if (u->manifest && (code = unpack_head(u, &vo)) != EXIT_OK)
        return code;
    if ((r = fsx_mkdir_p(u->dest, 0755)) != 0 || (rootfd = open(u->dest,
        O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        r = r != 0 ? r : -errno;
        return unpack_fatal(u, r, EXIT_DEST, u->dest, "%s",
            ferry_strerror(r));
    }
    (void)volstage_sweep_stale(rootfd, 1, unpack_stale, u);
    if ((r = volr_new(rootfd, &vo, &hooks, &u->v)) != 0) {
        close(rootfd);
        return unpack_fatal(u, r, EXIT_DEST, u->dest, "%s",
            ferry_strerror(r));
    }
    code = EXIT_OK;
    for (i = 1; i <= u->nvol && code == EXIT_OK; i++)
        code = unpack_volume(u, i);
    if (code == EXIT_OK && volr_finish(u->v) != 0)
        code = unpack_volr_fail(u);
    if (code == EXIT_INTERRUPTED)
        output_note(&u->out, "interrupted; what was complete is in place");
    volr_stats(u->v, &u->st);
    volr_free(u->v);
    u->v = NULL;
    close(rootfd);
    return code;
}

int
unpack_main(int argc, char **argv)
{
    struct pack_args a;
    struct unpack u;
    struct pack_summary s;
    uint64_t t0 = uv_hrtime();
    uint32_t i;
    int code;

    if (pack_args_parse(&a, argc, argv) != 0)
        return pack_usage(&a);
    if (a.nwords != 2) {
        snprintf(a.err, sizeof(a.err), "unpack needs the volumes' "
            "directory (or one volume) and a destination (see ferry "
            "--help)");
        return pack_usage(&a);
    }
    memset(&u, 0, sizeof(u));
    u.a = &a;
    u.mfd = -1;
    u.src = a.words[0];
    u.dest = a.words[1];
    buf_init(&u.mbuf, 2 * VMAN_MAX_LINE + 65536);
    pack_output_init(&u.out, &u.x, &a);
    pack_signals();
    memset(&s, 0, sizeof(s));
    if ((u.chunk = xmalloc(UNPACK_CHUNK)) == NULL)
        code = EXIT_DEST;
    else
        code = unpack_run(&u);
    s.verb = "unpacked";
    s.exit_code = code;
    s.volumes = u.st.volumes;
    s.files = u.st.files;
    s.bytes = u.st.bytes;
    s.compressed = u.compressed;
    s.elapsed = (double)(uv_hrtime() - t0) / 1e9;
    s.error = code == EXIT_OK ? NULL : "unpack failed";
    pack_summary(&u.out, &s);
    for (i = 0; u.files != NULL && i <= u.nvol; i++)
        xfree(u.files[i]);
    xfree(u.files);
    xfree(u.sums);
    xfree(u.unlisted);
    xfree(u.name);
    xfree(u.chunk);
    buf_cleanup(&u.mbuf);
    if (u.mfd >= 0)
        close(u.mfd);
    pack_args_cleanup(&a);
    return code;
}
