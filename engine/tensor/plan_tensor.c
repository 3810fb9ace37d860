/*
 * plan_tensor.c: the sender's side of tensor deltas (plan.h; docs/
 * DESIGN.md, "Tensor checkpoints"): the receiver's BASIS checked against
 * the sender's own file of that path, and the layouts the blocks are
 * coded with.
 */
#include "../plan_int.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/log.h"

/* Entries either side of a file's own looked at for the path a BASIS
 * names: a basis beside the file (the same path, or --basis auto's
 * neighbour) was scanned next to it, and a path not among them is no
 * reference, which bounds the look. */
#define PLAN_BASIS_LOOK 4096u

static void
plan_tensor_free(struct plan *p, struct plan_tensor *tz)
{
    if (tz == NULL)
        return;
    p->tensor_ranges -= tz->layout.n + tz->ref_layout.n;
    tensor_layout_cleanup(&tz->layout);
    tensor_layout_cleanup(&tz->ref_layout);
    xfree(tz->match);
    if (tz->rf.fd >= 0)
        close(tz->rf.fd);
    xfree(tz);
}

void
plan_tensor_forget(struct plan *p, struct pfile *f)
{
    plan_tensor_free(p, f->tz);
    f->tz = NULL;
}

/* The id of the entry offered before whose path is path (of len bytes),
 * looked for near file id; or SIZE_MAX. */
static size_t
plan_basis_entry(struct plan *p, uint32_t id, const char *path, size_t len)
{
    char rel[MANIFEST_REL_MAX];
    size_t lo = id > PLAN_BASIS_LOOK ? id - PLAN_BASIS_LOOK : 0;
    size_t hi = p->next_entry - id > PLAN_BASIS_LOOK ?
        (size_t)id + PLAN_BASIS_LOOK : p->next_entry;
    size_t i;

    for (i = lo; i < hi; i++) {
        const char *r;

        if (manifest_entry(p->mf, i)->kind != ENTRY_FILE ||
            p->est[i] == E_PRIOR)
            continue;
        r = manifest_rel(p->mf, i, rel);
        if (strlen(r) == len && memcmp(r, path, len) == 0)
            return i;
    }
    return SIZE_MAX;
}

/* The file hash of the open reference fd (st its fstat), made once per
 * version of the file. */
static int
plan_ref_hash(struct plan *p, int fd, const struct stat *st,
    struct hash128 *h)
{
    struct plan_refhash *c;
    unsigned i, n = p->nrefhash < PLAN_REFHASHES ? p->nrefhash :
        PLAN_REFHASHES;
    int r;

    for (i = 0; i < n; i++) {
        c = &p->refhash[i];
        if (c->dev == st->st_dev && c->ino == st->st_ino &&
            c->size == (uint64_t)st->st_size &&
            c->mtime.tv_sec == st->st_mtim.tv_sec &&
            c->mtime.tv_nsec == st->st_mtim.tv_nsec &&
            c->ctime.tv_sec == st->st_ctim.tv_sec &&
            c->ctime.tv_nsec == st->st_ctim.tv_nsec) {
            *h = c->hash;
            return 0;
        }
    }
    if ((r = hash_fd(fd, (uint64_t)st->st_size, p->block_size, h)) != 0)
        return r;
    c = &p->refhash[p->nrefhash++ % PLAN_REFHASHES];
    c->dev = st->st_dev;
    c->ino = st->st_ino;
    c->size = (uint64_t)st->st_size;
    c->mtime = st->st_mtim;
    c->ctime = st->st_ctim;
    c->hash = *h;
    return 0;
}

/*
 * The reference for tz: the entry m names, if it is the receiver's basis
 * (offered, a regular file of the same size and file hash). Anything
 * else leaves tz without one; only NOMEM is an error.
 */
static int
plan_tensor_ref(struct plan *p, struct plan_tensor *tz,
    const struct msg_basis *m)
{
    size_t rid = plan_basis_entry(p, m->id, m->path.p, m->path.len);
    struct hash128 h;
    struct stat st;
    int fd, r;

    if (rid == SIZE_MAX ||
        manifest_entry(p->mf, rid)->size != m->basis_size)
        return 0;
    if ((fd = plan_open_source(p, (uint32_t)rid, &st)) < 0)
        return 0;
    if ((r = plan_ref_hash(p, fd, &st, &h)) != 0 || !hash_equal(&h,
        &m->hash)) {
        close(fd);
        return 0;
    }
    if ((r = tensor_layout_fd(fd, m->basis_size, &tz->ref_layout)) != 0 ||
        tz->ref_layout.n == 0 || tz->ref_layout.n > PLAN_MAX_TENSORS -
        p->tensor_ranges - tz->layout.n ||
        (r = tensor_layout_pair(&tz->layout, &tz->ref_layout,
        &tz->match)) != 0) {
        tensor_layout_cleanup(&tz->ref_layout);
        memset(&tz->ref_layout, 0, sizeof(tz->ref_layout));
        close(fd);
        return r == FERRY_ERR_NOMEM ? r : 0;
    }
    tz->rf.fd = fd;
    tz->rf.size = m->basis_size;
    tz->ref.layout = &tz->ref_layout;
    tz->ref.match = tz->match;
    tz->ref.read = tensor_codec_read_file;
    tz->ref.arg = &tz->rf;
    tz->has_ref = 1;
    return 0;
}

/* 1 when tensors make at least half of the file l describes. */
static int
plan_tensor_worth(const struct tensor_layout *l)
{
    uint64_t bytes = 0;
    size_t i;

    for (i = 0; i < l->n; i++)
        bytes += l->v[i].len;
    return l->form != TENSOR_FORM_NONE && l->n > 0 && bytes >= l->size / 2;
}

/* How f's blocks are coded, if they are: its layout, and the reference
 * when the sender holds the basis m names. */
static int
plan_tensor_setup(struct plan *p, struct pfile *f, const struct msg_basis *m)
{
    uint64_t size = manifest_entry(p->mf, f->id)->size;
    struct plan_tensor *tz;
    int fd, r;

    if (plan_file_fd(p, f->id, &fd) != 0)
        return 0;  /* its blocks meet the error */
    if ((tz = xcalloc(1, sizeof(*tz))) == NULL)
        return FERRY_ERR_NOMEM;
    tz->rf.fd = -1;
    if ((r = tensor_layout_fd(fd, size, &tz->layout)) != 0 ||
        !plan_tensor_worth(&tz->layout) ||
        tz->layout.n > PLAN_MAX_TENSORS - p->tensor_ranges ||
        (r = plan_tensor_ref(p, tz, m)) != 0) {
        tensor_layout_cleanup(&tz->layout);
        xfree(tz);
        return r == FERRY_ERR_NOMEM ? r : 0;
    }
    /* Without a reference, planes alone pay only where blocks would be
     * compressed. */
    if (!tz->has_ref && (!(p->flags & OPEN_F_COMPRESS) ||
        !(p->x->caps & PROTO_CAP_ZSTD))) {
        tensor_layout_cleanup(&tz->layout);
        xfree(tz);
        return 0;
    }
    p->tensor_ranges += tz->layout.n + tz->ref_layout.n;
    f->tz = tz;
    return 0;
}

int
plan_on_basis(struct plan *p, const struct msg_basis *m)
{
    struct pfile *f;
    int r;

    if (m->id >= p->next_entry)
        return FERRY_ERR_PROTOCOL;
    if ((f = plan_file(p, m->id)) == NULL)
        /* A file given up on may have ended before its BASIS came. */
        return p->est[m->id] == E_FINISHED || p->est[m->id] == E_ABORTED ?
            0 : FERRY_ERR_PROTOCOL;
    if (!f->tensor || f->basis_seen)
        return FERRY_ERR_PROTOCOL;
    f->basis_seen = 1;
    if (p->est[m->id] == E_WANTED && (r = plan_tensor_setup(p, f, m)) != 0)
        return r;
    if (f->tz != NULL)
        log_debug("entry %u: coded as tensors%s", m->id,
            f->tz->has_ref ? " against the receiver's basis" :
            ", without a reference");
    plan_delta_release(p, f);
    return 0;
}

const struct plan_tensor *
plan_file_tensor(struct plan *p, uint32_t id)
{
    const struct pfile *f = plan_file(p, id);

    return f != NULL ? f->tz : NULL;
}
