#include "prune.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fsx.h"
#include "dest.h"

static int prune_dir(int parent, const char *name, int depth);

/* One entry of a directory being emptied (ctx: its depth). */
static int
prune_entry(void *ctx, int dirfd, const struct stat *dir, const char *name,
    const struct stat *st)
{
    (void)dir;
    if (S_ISDIR(st->st_mode))
        return prune_dir(dirfd, name, *(int *)ctx + 1);
    return unlinkat(dirfd, name, 0) != 0 && errno != ENOENT ? -errno : 0;
}

/* Empties the directory name beneath parent, then removes it. */
static int
prune_dir(int parent, const char *name, int depth)
{
    int r;

    if (depth > PRUNE_MAX_DEPTH)
        return FERRY_ERR_TOO_LARGE;
    if ((r = fsx_dir_each(parent, name, prune_entry, &depth)) != 0)
        return r == -ENOENT ? 0 : r;
    if (unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int
prune_beneath(int rootfd, const char *rel)
{
    size_t sl = strlen(DEST_STATE_DIR);
    const char *name;
    struct stat st, parent;
    int dfd, r, have_parent;

    if (fsx_path_check(rel, strlen(rel)) != 0)
        return FERRY_ERR_BAD_PATH;
    if (strncmp(rel, DEST_STATE_DIR, sl) == 0 &&
        (rel[sl] == '\0' || rel[sl] == '/'))
        return FERRY_ERR_BAD_PATH;
    if ((r = fsx_open_parent(rootfd, rel, 0, &dfd, &name)) != 0)
        return r == -ENOENT ? 0 : r;
    have_parent = fstat(dfd, &parent) == 0;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        r = errno == ENOENT ? 0 : -errno;
    else if (S_ISDIR(st.st_mode))
        r = prune_dir(dfd, name, 0);
    else if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
        r = -errno;
    /* The directory keeps the mtime the transfer gave it, so the mirror
     * has the source's times; best effort. */
    if (have_parent) {
        struct timespec ts[2] = { parent.st_atim, parent.st_mtim };

        (void)futimens(dfd, ts);
    }
    close(dfd);
    return r;
}
