#include "prune.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fsx.h"
#include "dest.h"

/* Empties the directory name beneath parent, then removes it. */
static int
prune_dir(int parent, const char *name, int depth)
{
    struct dirent *de;
    struct stat st;
    DIR *d;
    int fd, r = 0;

    if (depth > PRUNE_MAX_DEPTH)
        return FERRY_ERR_TOO_LARGE;
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
        O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if ((d = fdopendir(fd)) == NULL) {
        r = -errno;
        close(fd);
        return r;
    }
    for (;;) {
        errno = 0;
        if ((de = readdir(d)) == NULL) {
            r = -errno;
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            r = -errno;
            break;
        }
        if (S_ISDIR(st.st_mode))
            r = prune_dir(dirfd(d), de->d_name, depth + 1);
        else if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno != ENOENT)
            r = -errno;
        if (r != 0)
            break;
    }
    closedir(d);
    if (r == 0 && unlinkat(parent, name, AT_REMOVEDIR) != 0 &&
        errno != ENOENT)
        r = -errno;
    return r;
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
