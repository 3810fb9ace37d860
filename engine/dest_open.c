/*
 * dest_open.c: a destination made ready (dest_int.h): DEST resolved and
 * made, its state directory found or made, its salt and its lock.
 */
#include "dest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/fsx.h"
#include "../common/log.h"

#include "volume/volstage.h"

int
dest_mkdir(const char *path, int parent_only, uint32_t flags,
    struct xfer *x)
{
    char *up = NULL, *base = NULL, *missing = NULL;
    int r = 0;

    if (!(flags & OPEN_F_MKPATH)) {
        if (parent_only)
            r = fsx_first_missing(path, &missing);
        else if ((r = fsx_split(path, &up, &base)) == 0)
            r = fsx_first_missing(up, &missing);
        if (r == 0 && missing != NULL)
            r = xfer_fail(x, -ENOENT, "%s: no such directory (a parent of "
                "the destination; --mkpath makes it)", missing);
        else if (r != 0)
            r = xfer_fail(x, r, "%s: %s", path, ferry_strerror(r));
    }
    if (r == 0 && (r = fsx_mkdir_p(path, 0755)) != 0)
        r = xfer_fail(x, r, "%s: %s", path, ferry_strerror(r));
    xfree(missing);
    xfree(up);
    xfree(base);
    return r;
}

int
dest_resolve(struct dest *d, const struct msg_plan *plan,
    const char **rename)
{
    struct stat st;
    char *dir = NULL, *base = NULL;
    int r = 0, single, is_dir = 0;

    if (d->resolved) {
        *rename = d->rename;
        return 0;
    }
    *rename = NULL;
    single = (plan->flags & PLAN_F_SINGLE_FILE) &&
        !(d->flags & OPEN_F_DEST_DIR);
    if (stat(d->path, &st) == 0)
        is_dir = S_ISDIR(st.st_mode);
    else if (errno != ENOENT)
        return xfer_fail(d->x, -errno, "%s: %s", d->path,
            ferry_strerror(-errno));
    if (!is_dir && single) {
        if ((r = fsx_split(d->path, &dir, &base)) != 0)
            return r;
        if (fsx_path_check(base, strlen(base)) != 0 ||
            strcmp(base, DEST_STATE_DIR) == 0) {
            r = xfer_fail(d->x, FERRY_ERR_BAD_PATH, "%s: %s", d->path,
                "invalid file name");
            goto out;
        }
        d->root = dir;
        d->rename = base;
        dir = base = NULL;
    } else if ((d->root = xstrdup(d->path)) == NULL) {
        return FERRY_ERR_NOMEM;
    }
    fsx_trim_slashes(d->root);
    /* What is missing of it now is this run's to make (and to take back:
     * dest_unmake). */
    if (fsx_first_missing(d->root, &d->made) != 0)
        d->made = NULL;
    if ((r = dest_mkdir(d->root, d->rename != NULL, d->flags, d->x)) != 0)
        goto out;
    d->rootfd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* Fail now, not after the first file, if we cannot write here. */
    if (d->rootfd < 0 ||
        faccessat(d->rootfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        r = -errno;
        r = xfer_fail(d->x, r, "%s: %s", d->root, ferry_strerror(r));
        goto out;
    }
    d->resolved = 1;
    dest_writer_at(&d->w, d->rootfd, d->partfd);
    *rename = d->rename;
out:
    xfree(dir);
    xfree(base);
    return r;
}


/* Reads the salt, or makes it: 16 secret bytes in a file of ours. */
static int
dest_salt_load(struct dest *d)
{
    struct stat st;
    size_t got;
    int fd, r;

    fd = openat(d->statefd, DEST_SALT, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
        O_CLOEXEC);
    if (fd >= 0) {
        r = FERRY_ERR_STATE;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && (st.st_mode & 077) == 0 &&
            fsx_pread_full(fd, d->salt, sizeof(d->salt), 0, &got) == 0 &&
            got == sizeof(d->salt))
            r = 0;
        close(fd);
        return r;
    }
    if (errno != ENOENT)
        return errno == ELOOP ? FERRY_ERR_STATE : -errno;
    if (getrandom(d->salt, sizeof(d->salt), 0) != (ssize_t)sizeof(d->salt))
        return -EIO;
    fd = openat(d->statefd, DEST_SALT, O_WRONLY | O_CREAT | O_EXCL |
        O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    r = fsx_write_all(fd, d->salt, sizeof(d->salt));
    close(fd);
    return r;
}

/* Takes the destination's lock, waiting a while for a holder that is
 * going away (the agent of a connection that just died). */
static int
dest_lock(struct dest *d)
{
    char info[96], held[96];
    uint64_t until = clock_ms() + DEST_LOCK_WAIT_MS;
    struct stat st;
    int fd, n, i;

    fd = openat(d->statefd, DEST_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
        O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == ELOOP ? FERRY_ERR_STATE : -errno;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid()) {
        close(fd);
        return FERRY_ERR_STATE;
    }
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            close(fd);
            return -errno;
        }
        if (clock_ms() >= until) {
            dest_lock_holder(fd, held, sizeof(held));
            close(fd);
            return xfer_fail(d->x, -EBUSY, "%s: another ferry transfer is "
                "writing here (%s); run again once it has finished",
                d->root, held[0] ? held : "holder unknown");
        }
        usleep(100 * 1000);
    }
    /* The holder we waited for tidied the state directory away as it
     * ended (dest_tidy unlinks the lock, then the directory, then lets
     * go): this lock guards a directory that is gone. */
    if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
        close(fd);
        return -EAGAIN;
    }
    n = snprintf(info, sizeof(info), "pid %ld, transfer ", (long)getpid());
    for (i = 0; i < 8; i++)
        n += snprintf(info + n, sizeof(info) - (size_t)n, "%02x",
            d->transfer_id[i]);
    info[n++] = '\n';
    if (ftruncate(fd, 0) != 0 || fsx_pwrite_all(fd, info, (size_t)n, 0) != 0)
        log_debug("%s: cannot record the lock holder", d->root);
    d->lockfd = fd;
    return 0;
}

/* Opens (create: or makes) the state directory; locked and checked. */
static int
dest_open_state(struct dest *d, int create)
{
    struct partial_info *v;
    size_t n;
    int r, fd, tries = 0;

again:
    if ((r = fsx_open_private_dir(d->rootfd, DEST_STATE_DIR, create,
        &d->statefd)) != 0)
        goto fail;
    fd = openat(d->statefd, DEST_MARKER, O_WRONLY | O_CREAT | O_NOFOLLOW |
        O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    /* Each holder that tidies away once lets one waiter in this way. */
    if ((r = dest_lock(d)) == -EAGAIN && ++tries < DEST_LOCK_TRIES) {
        close(d->statefd);
        d->statefd = -1;
        goto again;
    }
    if (r != 0 ||
        (r = dest_salt_load(d)) != 0 ||
        (r = fsx_open_private_dir(d->statefd, DEST_PART_DIR, 1,
        &d->partfd)) != 0)
        goto fail;
    /* We alone write here now: what a dead run left is ours to expire,
     * and the volumes it was reading are gone (volrecv.c stages here). */
    if (partial_list(d->partfd, 1, &v, &n) == 0)
        partial_list_free(v, n);
    volstage_sweep(d->partfd);
    dest_writer_at(&d->w, d->rootfd, d->partfd);
    return 0;
fail:
    /* A lock held by another transfer has said so already; the first
     * message is the one kept. */
    if (r == FERRY_ERR_STATE)
        r = xfer_fail(d->x, r, "%s/%s: not a private directory of this "
            "user (a link, another owner, or writable by others); remove "
            "it", d->root, DEST_STATE_DIR);
    else
        r = xfer_fail(d->x, r, "%s/%s: %s", d->root, DEST_STATE_DIR,
            ferry_strerror(r));
    if (d->partfd >= 0)
        close(d->partfd);
    if (d->statefd >= 0)
        close(d->statefd);
    d->partfd = d->statefd = -1;
    return r;
}

int
dest_part_dir(struct dest *d, int *partfd)
{
    int r;

    *partfd = -1;
    /* Once refused (another transfer holds it, or it is not ours), say
     * so at once from then on. */
    if (d->state_err != 0)
        return d->state_err;
    if (d->partfd < 0 && (r = dest_open_state(d, 1)) != 0) {
        d->state_err = r;
        return r;
    }
    *partfd = d->partfd;
    return 0;
}

int
dest_find_state(struct dest *d)
{
    struct stat st;
    int partfd, r;

    if (d->partfd >= 0)
        return 1;
    if (d->state_err != 0)
        return d->state_err;
    if (d->state_checked)
        return 0;
    d->state_checked = 1;
    if (fstatat(d->rootfd, DEST_STATE_DIR, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    return (r = dest_part_dir(d, &partfd)) == 0 ? 1 : r;
}
