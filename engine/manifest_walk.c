/*
 * manifest_walk.c: the walk of one source's tree (manifest_walk,
 * manifest.h): each entry that can be sent handed to the walker, each
 * one that cannot said in a notice, a directory's names read and
 * sorted and their lstat done ahead in parallel. Apart from
 * manifest.c, which keeps what the walk found (the entries, their
 * names and sources) and names the sources.
 */
#include "manifest_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/par.h"
#include "../proto/msg.h"
#include "dest.h"

/* The receiver keeps its state in this directory at the top of a
 * destination, and refuses the name there from a sender: a source's own
 * (a destination's state, or anything else of that name) is never data
 * (a push, a pull, a dry run's listing, ferry pack). */
#define MANIFEST_STATE_DIR DEST_STATE_DIR

static int
manifest_walk_say(const struct manifest_walker *w, int code, const char *path,
    const char *text)
{
    return w->notice(w->ctx, code, path, text);
}

/* Hands the entry at local (named rel, lstat result st) to the walker,
 * unless it cannot be sent: then a notice. *added says which. */
static int
manifest_walk_entry(const struct manifest_walker *w, const char *rel,
    const char *local, const struct stat *st, int *added)
{
    char linkbuf[PROTO_MAX_LINK + 1];
    ssize_t n = 0;
    int r;

    *added = 0;
    if (w->filter != NULL && filter_excluded(w->filter, rel,
        S_ISDIR(st->st_mode)))
        return 0;
    if (fsx_path_check(rel, strlen(rel)) != 0)
        return manifest_walk_say(w, FERRY_ERR_BAD_PATH, local,
            "name cannot be sent (too long or invalid)");
    if (S_ISLNK(st->st_mode)) {
        n = readlink(local, linkbuf, sizeof(linkbuf));
        if (n < 0)
            return manifest_walk_say(w, -errno, local, ferry_strerror(-errno));
        if (n == 0 || (size_t)n > PROTO_MAX_LINK)
            return manifest_walk_say(w, FERRY_ERR_TOO_LARGE, local,
                "symlink target too long");
        linkbuf[n] = '\0';
    } else if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
        return manifest_walk_say(w, 0, local,
            "skipping: not a regular file, directory or symlink");
    }
    r = w->entry(w->ctx, rel, local, st, S_ISLNK(st->st_mode) ? linkbuf :
        NULL);
    *added = r == 0;
    /* 1: the walker wants this directory's contents left out. */
    return r == 1 ? 0 : r;
}

/* A directory's names, sorted: in one buffer, with offsets. */
struct dir_names {
    char *buf;
    size_t len, cap;
    size_t *off;
    size_t n, ncap;
};

static void
manifest_walk_names_free(struct dir_names *dn)
{
    xfree(dn->buf);
    xfree(dn->off);
}

static int
manifest_walk_name_cmp(const void *a, const void *b, void *buf)
{
    return strcmp((const char *)buf + *(const size_t *)a,
        (const char *)buf + *(const size_t *)b);
}

/* Lists the names in the directory open at dfd (sorted), without "." and
 * "..". One buffer for all of them: a million files in a thousand
 * directories cost no million small allocations. */
static int
manifest_walk_list_dir(int dfd, struct dir_names *dn)
{
    DIR *d;
    struct dirent *de;
    int fd, r = 0;

    memset(dn, 0, sizeof(*dn));
    if ((fd = dup(dfd)) < 0)
        return -errno;
    if ((d = fdopendir(fd)) == NULL) {
        r = -errno;
        close(fd);
        return r;
    }
    for (;;) {
        size_t nl;
        void *nv;

        errno = 0;
        if ((de = readdir(d)) == NULL) {
            r = -errno;
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        nl = strlen(de->d_name) + 1;
        if ((nv = xgrow(dn->off, dn->n, &dn->ncap, sizeof(*dn->off),
            32)) == NULL) {
            r = FERRY_ERR_NOMEM;
            break;
        }
        dn->off = nv;
        while (dn->len + nl > dn->cap) {
            size_t ncap = dn->cap ? 2 * dn->cap : 4096;

            if ((nv = xrealloc(dn->buf, ncap)) == NULL) {
                r = FERRY_ERR_NOMEM;
                break;
            }
            dn->buf = nv;
            dn->cap = ncap;
        }
        if (r != 0)
            break;
        memcpy(dn->buf + dn->len, de->d_name, nl);
        dn->off[dn->n++] = dn->len;
        dn->len += nl;
    }
    closedir(d);  /* closes the dup, not dfd */
    if (r != 0) {
        manifest_walk_names_free(dn);
        return r;
    }
    if (dn->n > 1)
        qsort_r(dn->off, dn->n, sizeof(*dn->off), manifest_walk_name_cmp,
            dn->buf);
    return 0;
}

/* A directory's names looked up ahead, by a thread a CPU (up to 8) at
 * once: MANIFEST_STAT_AHEAD at a time, in directories of at least
 * MANIFEST_STAT_MIN names, above MANIFEST_STAT_DEPTH only, so that the
 * walk's memory for them stays bounded (64 levels of about 150 KiB). */
#define MANIFEST_STAT_AHEAD 1024u
#define MANIFEST_STAT_MIN 64u
#define MANIFEST_STAT_DEPTH 64

struct stat_ahead {
    int dfd;
    const struct dir_names *dn;
    size_t first;
    struct stat *st;
    int *err;
};

static void
manifest_walk_stat_one(void *arg, unsigned i)
{
    struct stat_ahead *a = arg;

    a->err[i] = fstatat(a->dfd, a->dn->buf + a->dn->off[a->first + i],
        &a->st[i], AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
}

static int
manifest_walk_dir(const struct manifest_walker *w, const char *rel,
    const char *local, int depth)
{
    struct stat_ahead ahead = { -1, NULL, 0, NULL, NULL };
    struct par_pool *pool = NULL;
    struct dir_names dn;
    struct stat one_st;
    size_t i, nahead = 1;
    int r, dfd, one_err;

    if (depth > 1000)
        return manifest_walk_say(w, FERRY_ERR_TOO_LARGE, local,
            "directory tree too deep");
    /* Below the top, a directory that became a symlink since its lstat
     * is not followed. Its entries are looked at from its fd: no walk of
     * the whole path for each one. */
    if ((dfd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
        (depth > 0 ? O_NOFOLLOW : 0))) < 0 ||
        (r = manifest_walk_list_dir(dfd, &dn)) != 0) {
        r = dfd < 0 ? -errno : r;
        if (dfd >= 0)
            close(dfd);
        if (r == FERRY_ERR_NOMEM)
            return r;
        return manifest_walk_say(w, r, local, ferry_strerror(r));
    }
    /* One name at a time, or a batch of them on the pool's threads. */
    ahead.dfd = dfd;
    ahead.dn = &dn;
    ahead.st = &one_st;
    ahead.err = &one_err;
    if (w->pool != NULL && dn.n >= MANIFEST_STAT_MIN &&
        depth < MANIFEST_STAT_DEPTH && (*w->pool != NULL ||
        (*w->pool = par_pool_new(par_cpus() < 8 ? par_cpus() : 8)) !=
        NULL)) {
        size_t want = dn.n < MANIFEST_STAT_AHEAD ? dn.n : MANIFEST_STAT_AHEAD;
        struct stat *sts = xmalloc(want * sizeof(*sts));
        int *errs = xmalloc(want * sizeof(*errs));

        if (sts != NULL && errs != NULL) {
            ahead.st = sts;
            ahead.err = errs;
            nahead = want;
            pool = *w->pool;
        } else {
            xfree(sts);
            xfree(errs);
        }
    }
    for (i = 0; i < dn.n && r == 0; i++) {
        const char *name = dn.buf + dn.off[i];
        char *crel = manifest_path_join(rel, name);
        char *cloc = manifest_path_join(local, name);
        const struct stat *st;
        int added, err;

        if (i == 0 || i - ahead.first >= nahead) {
            ahead.first = i;
            par_for(pool, (unsigned)(dn.n - i < nahead ? dn.n - i : nahead),
                manifest_walk_stat_one, &ahead);
        }
        st = &ahead.st[i - ahead.first];
        err = ahead.err[i - ahead.first];
        if (crel == NULL || cloc == NULL) {
            r = FERRY_ERR_NOMEM;
        } else if (err != 0) {
            /* Vanished between readdir and lstat: rsync calls this a
             * vanished file; it is a warning, not a failure. */
            r = err == ENOENT ? 0 : manifest_walk_say(w, -err, cloc,
                ferry_strerror(-err));
        } else if (depth == 0 && strcmp(name, MANIFEST_STATE_DIR) == 0) {
            r = 0;
        } else if ((r = manifest_walk_entry(w, crel, cloc, st, &added)) == 0 &&
            added && S_ISDIR(st->st_mode)) {
            r = manifest_walk_dir(w, crel, cloc, depth + 1);
        }
        xfree(crel);
        xfree(cloc);
    }
    if (nahead > 1) {
        xfree(ahead.st);
        xfree(ahead.err);
    }
    close(dfd);
    manifest_walk_names_free(&dn);
    return r;
}

int
manifest_walk(const char *src, const struct manifest_walker *w)
{
    char *dir = NULL, *base = NULL, *local = NULL;
    struct stat st;
    int r, added, contents;

    if ((r = manifest_source(src, &local, &contents)) != 0)
        return r;
    if (lstat(local, &st) != 0) {
        r = manifest_walk_say(w, -errno, src, ferry_strerror(-errno));
        goto out;
    }
    if (contents && S_ISLNK(st.st_mode)) {
        /* "link/" names the directory the link points to, as in rsync. */
        if (stat(local, &st) != 0 || !S_ISDIR(st.st_mode)) {
            r = manifest_walk_say(w, -ENOTDIR, src, ferry_strerror(-ENOTDIR));
            goto out;
        }
    }
    if (contents && S_ISDIR(st.st_mode)) {
        r = manifest_walk_dir(w, "", local, 0);
        goto out;
    }
    if ((r = fsx_split(local, &dir, &base)) != 0)
        goto out;
    if ((r = manifest_walk_entry(w, base, local, &st, &added)) != 0 || !added)
        goto out;
    if (S_ISDIR(st.st_mode))
        r = manifest_walk_dir(w, base, local, 0);
out:
    xfree(dir);
    xfree(base);
    xfree(local);
    return r;
}
