#include "dest_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"

#include "owned.h"
#include "volume/volstage.h"

void
dest_lock_holder(int fd, char *out, size_t n)
{
    size_t got = 0;

    memset(out, 0, n);
    if (n == 0 || fsx_pread_full(fd, out, n - 1, 0, &got) != 0)
        got = 0;
    out[got] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

/* 1 when the state directory holds only the record of what ferry put
 * in the destination (owned.h) and its marker: not unfinished files, and
 * kept by a clean so that what prunes there still knows what is ours. */
static int
dest_only_record(int rootfd)
{
    struct dirent *de;
    DIR *dir;
    int fd, only = 1;

    if (fsx_open_private_dir(rootfd, DEST_STATE_DIR, 0, &fd) != 0)
        return 0;
    if ((dir = fdopendir(fd)) == NULL) {
        close(fd);
        return 0;
    }
    while (only && (de = readdir(dir)) != NULL)
        only = strcmp(de->d_name, ".") == 0 ||
            strcmp(de->d_name, "..") == 0 ||
            strcmp(de->d_name, DEST_MARKER) == 0 ||
            strcmp(de->d_name, OWNED_FILE) == 0;
    closedir(dir);
    return only;
}

struct dest_stale {
    struct partial_info **v;
    size_t *n, cap;
    int err;
};

/* A killed unpack's staging directory, listed as unfinished: its name
 * with a '/', the bytes staged there. */
static void
dest_stale_add(void *ctx, const char *name, uint64_t bytes, int64_t age_s)
{
    struct dest_stale *ds = ctx;
    char rel[FSX_NAME_MAX + 2];
    int len = snprintf(rel, sizeof(rel), "%s/", name);

    if (ds->err == 0 && len > 0 && (size_t)len < sizeof(rel))
        ds->err = partial_list_add(ds->v, ds->n, &ds->cap, rel,
            (size_t)len, bytes, bytes, age_s);
}

/* 1 if another process holds the lock of dir's state directory (the
 * holder's line into holder), else 0. Opens nothing for writing, takes
 * no lock it keeps, and follows no symlink. */
static int
dest_busy_in(const char *dir, char *holder, size_t n)
{
    struct stat st;
    int dfd, sfd = -1, fd = -1, busy = 0;

    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return 0;
    sfd = openat(dfd, DEST_STATE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
        O_CLOEXEC);
    if (sfd >= 0)
        fd = openat(sfd, DEST_LOCK, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
            O_CLOEXEC);
    /* A shared lock is refused while a transfer holds its own; one we
     * get goes with the fd, at once. */
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        busy = 1;
        dest_lock_holder(fd, holder, n);
    }
    if (fd >= 0)
        close(fd);
    if (sfd >= 0)
        close(sfd);
    close(dfd);
    return busy;
}

int
dest_busy(const char *path, char *holder, size_t n)
{
    char *dir = NULL, *base = NULL;
    struct stat st;
    int busy;

    if (n > 0)
        holder[0] = '\0';
    /* One not made yet has no state: nothing can hold it. */
    if (stat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return dest_busy_in(path, holder, n);
    /* A file a transfer replaces: the state is the parent's. */
    if (fsx_split(path, &dir, &base) != 0)
        return 0;
    busy = dest_busy_in(dir, holder, n);
    xfree(dir);
    xfree(base);
    return busy;
}

void
dest_kept(struct dest *d, uint64_t *files, uint64_t *bytes)
{
    struct partial_info *v;
    size_t n, i;

    *files = *bytes = 0;
    if (d->partfd < 0 || partial_list(d->partfd, 0, &v, &n) != 0)
        return;
    for (i = 0; i < n; i++)
        *bytes += v[i].done;
    *files = n;
    partial_list_free(v, n);
}

int
dest_state_list(const char *path, int clean, struct partial_info **out,
    size_t *n)
{
    struct xfer x;
    struct dest *d;
    uint8_t id[16] = { 0 };
    struct stat st;
    int r = 0;

    *out = NULL;
    *n = 0;
    memset(&x, 0, sizeof(x));
    if ((d = dest_new(path, 0, id, &x)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((d->root = xstrdup(path)) == NULL) {
        dest_free(d);
        return FERRY_ERR_NOMEM;
    }
    if ((d->rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        r = -errno;
        goto out;
    }
    if (fstatat(d->rootfd, DEST_STATE_DIR, &st, AT_SYMLINK_NOFOLLOW) != 0)
        goto out;
    if (clean) {
        /* Locked: a live transfer's state is not ours to remove. Do not
         * wait for it either. */
        if ((r = fsx_open_private_dir(d->rootfd, DEST_STATE_DIR, 0,
            &d->statefd)) != 0)
            goto out;
        d->lockfd = openat(d->statefd, DEST_LOCK, O_RDWR | O_CREAT |
            O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (d->lockfd >= 0 && flock(d->lockfd, LOCK_EX | LOCK_NB) != 0) {
            r = -EBUSY;
            goto out;
        }
        if (fsx_open_private_dir(d->statefd, DEST_PART_DIR, 0,
            &d->partfd) == 0) {
            r = partial_list(d->partfd, 0, out, n);
            partial_clear(d->partfd);
        }
        if (r == 0) {
            dest_tidy(d);
            if (fstatat(d->rootfd, DEST_STATE_DIR, &st,
                AT_SYMLINK_NOFOLLOW) == 0 && !dest_only_record(d->rootfd))
                r = -ENOTEMPTY;
        }
        goto out;
    }
    if ((r = fsx_open_private_dir(d->rootfd, DEST_STATE_DIR, 0,
        &d->statefd)) == 0 && (r = fsx_open_private_dir(d->statefd,
        DEST_PART_DIR, 0, &d->partfd)) == 0)
        r = partial_list(d->partfd, 0, out, n);
    else if (r == -ENOENT && d->statefd >= 0)
        r = 0;  /* a state directory with the record alone (owned.h) */
    else
        r = FERRY_ERR_STATE;
out:
    /* What a killed `ferry unpack` left beside the files is unfinished
     * too: listed, and removed by a clean that went through. */
    if (r == 0 && d->rootfd >= 0) {
        struct dest_stale ds = { out, n, *n, 0 };

        (void)volstage_sweep_stale(d->rootfd, clean, dest_stale_add, &ds);
        r = ds.err;
    }
    /* A clean tidied up above; anything still open here is not to be
     * removed by dest_free (a transfer holds the lock, or the list
     * failed). */
    if (d->statefd >= 0) {
        close(d->statefd);
        d->statefd = -1;
    }
    if (d->partfd >= 0) {
        close(d->partfd);
        d->partfd = -1;
    }
    if (r != 0) {
        partial_list_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    dest_free(d);
    return r;
}

const char *
dest_state_strerror(int r)
{
    if (r == -EBUSY)
        return "a transfer is running into it; its state is kept";
    if (r == FERRY_ERR_STATE)
        return DEST_STATE_DIR " is not a private directory of this user "
            "(a link, another owner, or writable by others); remove it";
    /* Only the last step of a clean says this: the unfinished files are
     * gone, but something ferry did not make stays in the state
     * directory. */
    if (r == -ENOTEMPTY)
        return DEST_STATE_DIR " holds entries ferry did not make, so it "
            "was not removed; remove it";
    return ferry_strerror(r);
}
