/*
 * dest_adopt.c: --adopt DIR (dest.h): a file the destination lacks is
 * taken from DIR/path, beneath the destination, when it holds what the
 * entry says, instead of being sent.
 */
#include "dest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/hash.h"
#include "../common/log.h"

/* The second name a kept file is linked to beside its staged one, before
 * it is renamed over its final name. */
#define DEST_ADOPT_TMP ".ferry-adopt.tmp"

int
dest_set_adopt(struct dest *d, const char *rel)
{
    size_t n = strlen(DEST_STATE_DIR);
    int r;

    if ((r = fsx_path_check(rel, strlen(rel))) != 0)
        return r;
    /* The state directory holds partial files under secret names:
     * never a place to take finished ones from. */
    if (strncmp(rel, DEST_STATE_DIR, n) == 0 &&
        (rel[n] == '\0' || rel[n] == '/'))
        return FERRY_ERR_BAD_PATH;
    xfree(d->adopt);
    return (d->adopt = xstrdup(rel)) == NULL ? FERRY_ERR_NOMEM : 0;
}

/*
 * The staged file at sname in sfd takes name in pfd: renamed, or with
 * OPEN_F_ADOPT_KEEP linked, so that the staged name stays for a swarm
 * helper that seeds from it (docs/SWARM.md). A link cannot replace a
 * name, so it is made beside the staged one and renamed over name: the
 * final name appears whole, as a rename's. One left by a crash between
 * the two is one more name of a staged file, which goes with DIR (or
 * here, the next time).
 */
static int
dest_adopt_place(const struct dest *d, int sfd, const char *sname, int pfd,
    const char *name)
{
    if (!(d->flags & OPEN_F_ADOPT_KEEP))
        return renameat(sfd, sname, pfd, name);
    if (strcmp(sname, DEST_ADOPT_TMP) == 0)
        return -1;
    (void)unlinkat(sfd, DEST_ADOPT_TMP, 0);
    if (linkat(sfd, sname, sfd, DEST_ADOPT_TMP, 0) != 0)
        return -1;
    if (renameat(sfd, DEST_ADOPT_TMP, pfd, name) != 0) {
        (void)unlinkat(sfd, DEST_ADOPT_TMP, 0);
        return -1;
    }
    return 0;
}

/* A staged file's data durable before its final name is: on Linux one
 * syncfs for all that DIR holds (a swarm wrote it before the transfer
 * began), the first time; elsewhere an fsync each. */
static int
dest_adopt_durable(struct dest *d, int fd)
{
#ifdef __linux__
    (void)fd;
    if (d->adopt_synced)
        return 0;
    d->adopt_synced = 1;
    return syncfs(d->rootfd) == 0 ? 0 : -errno;
#else
    (void)d;
    return fsx_fsync(fd);
#endif
}

/*
 * --adopt: DIR/path takes the place of name in pfd when it holds what m
 * says. It is opened beneath the root as every destination path is, but
 * never made (fsx_open_parent without create) and never through a link;
 * only a regular file is opened at all (opening a device can act on it).
 * One of several names is left: its mode and mtime are about to change,
 * and its other names would see that. It is looked at again where it
 * stands after the hash and the sync, so that what is renamed is the
 * file that was hashed, at the size that was hashed (a writer still at
 * it would otherwise put more under the final name). The data is durable
 * before the rename or the link (dest_adopt_durable, dest_adopt_place);
 * mode, mtime and name are with the next sync, before the end is said
 * (dest_flush). 1 if adopted; any failure only means that the file is
 * sent.
 */
int
dest_adopt(struct dest *d, const struct msg_entry *m, const char *path,
    uint32_t block_size, int pfd, const char *name)
{
    char staged[2 * FSX_PATH_MAX + 2];
    struct stat st, fst, now;
    struct hash128 h;
    const char *sname;
    int sfd, fd = -1, n, ok = 0;

    if (d->adopt == NULL || !m->has_hash)
        return 0;
    n = snprintf(staged, sizeof(staged), "%s/%s", d->adopt, path);
    if (n < 0 || (size_t)n >= sizeof(staged) ||
        fsx_open_parent(d->rootfd, staged, 0, &sfd, &sname) != 0)
        return 0;
    if (fstatat(sfd, sname, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) && st.st_nlink == 1 &&
        (uint64_t)st.st_size == m->size &&
        (fd = openat(sfd, sname, FSX_O_READ)) >= 0 &&
        fstat(fd, &fst) == 0 && fst.st_dev == st.st_dev &&
        fst.st_ino == st.st_ino &&
        hash_fd(fd, m->size, block_size, &h) == 0 &&
        hash_equal(&h, &m->hash) &&
        fchmod(fd, m->mode) == 0 &&
        fsx_set_mtime(fd, -1, NULL, m->mtime_sec, m->mtime_nsec) == 0 &&
        dest_adopt_durable(d, fd) == 0 &&
        fstatat(sfd, sname, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
        now.st_nlink == 1 && (uint64_t)now.st_size == m->size &&
        dest_adopt_place(d, sfd, sname, pfd, name) == 0) {
        ok = 1;
        /* The new name durable, as a commit's are (the old one going
         * needs no sync: a crash that brings it back leaves a copy):
         * with the next batch's sync (dest_flush), elsewhere now. */
        d->adopt_unsynced++;
#ifndef __linux__
        if (fsx_fsync(pfd) != 0)
            log_debug("%s: sync after adopting: %s", path,
                strerror(errno));
#endif
    }
    if (fd >= 0)
        close(fd);
    close(sfd);
    return ok;
}

