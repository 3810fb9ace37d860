/*
 * plan_source.c: the sender's source files (plan.h): opened once each,
 * checked against what the scan saw.
 */
#include "plan_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fsx.h"

int
plan_same_file(const struct mentry *e, const struct stat *st)
{
    return S_ISREG(st->st_mode) && (uint64_t)st->st_size == e->size &&
        st->st_mtim.tv_sec == e->mtime_sec &&
        (uint32_t)st->st_mtim.tv_nsec == e->mtime_nsec;
}

int
plan_open_source(struct plan *p, uint32_t id, struct stat *st)
{
    const struct mentry *e = manifest_entry(p->mf, id);
    int fd, r;

    if ((fd = manifest_open(p->mf, id, FSX_O_READ)) < 0)
        return fd == -ELOOP ? FERRY_ERR_CHANGED : fd;
    r = fstat(fd, st) != 0 ? -errno : !plan_same_file(e, st) ?
        FERRY_ERR_CHANGED : 0;
    if (r != 0) {
        close(fd);
        return r;
    }
    return fd;
}

int
plan_file_fd(struct plan *p, uint32_t id, int *fd)
{
    struct mentry *e = manifest_entry(p->mf, id);
    struct pfile *f = plan_file(p, id);
    struct stat st;
    int r;

    *fd = -1;
    if (f->fd >= 0) {
        *fd = f->fd;
        return 0;
    }
    if ((r = plan_open_source(p, id, &st)) < 0)
        return r;
    f->fd = r;
    /* Fewer blocks allocated than the size needs: it has holes. */
    f->sparse = (uint64_t)st.st_blocks * 512 < e->size;
#ifdef POSIX_FADV_SEQUENTIAL
    if (e->size > p->block_size)
        (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    *fd = f->fd;
    return 0;
}

int
plan_file_sparse(struct plan *p, uint32_t id)
{
    const struct pfile *f = plan_file(p, id);

    return f != NULL && f->sparse;
}

int *
plan_file_zst_misses(struct plan *p, uint32_t id)
{
    return &plan_file(p, id)->zst_misses;
}
