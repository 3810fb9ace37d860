/* volkeep.c: the agent's side of a push with --keep-volumes (volkeep.h). */
#include "volkeep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../common/log.h"
#include "../../common/sha256.h"
#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "../../proto/msg_keep.h"
#include "../../proto/msg_vol.h"
#include "../dest.h"
#include "../dest_write.h"
#include "../owned.h"
#include "volset.h"
#include "volume.h"

/* What one step of the read-back hashes: the steps stay short, and a
 * volume's KEEP_VOL leaves as soon as it is read. */
#define KEEP_SCAN_STEP (64u << 20)
#define KEEP_READ (1u << 20)

enum keep_state { K_SCAN, K_RECV, K_DONE };

/* A volume of the set: its size and SHA-256; and for one this run
 * committed, what identified it then, until it is recorded as ferry's. */
struct volkeep_vol {
    uint64_t bytes;
    uint8_t sha[SHA256_LEN];
    int unrecorded;
    struct owned_id own;
};

struct volkeep {
    struct xfer *x;
    enum keep_state state;
    char name[256];
    char *dir;               /* where the volumes go, for messages */
    int dirfd;
    /* Volumes held when the run began: 1..nheld. */
    struct volkeep_vol *held;
    uint32_t nheld;
    /* The set so far: volumes 1..next-1, sent or confirmed. */
    struct volkeep_vol *set;
    uint32_t next;
    /* Reading back volume nheld + 1. */
    int sfd;
    struct sha256 ssha;
    uint64_t sbytes;
    uint8_t *rbuf;
    /* The volume being received (0: none). */
    uint32_t open;
    int vfd;
    struct sha256 vsha;
    uint64_t vbytes, max_vbytes;
    char vtmp[VOLSET_TMP_MAX], vfile[VOLUME_NAME_MAX];
    /* The manifest, under its temporary name. */
    int mfd;
    struct sha256 msha;
    uint64_t mbytes;
    char mtmp[VOLSET_TMP_MAX], mfile[VOLUME_NAME_MAX];
};

/* Fails the transfer naming file, one of the set's, with its directory. */
static int
volkeep_fail(struct volkeep *k, int r, const char *file)
{
    return xfer_fail(k->x, r, "%s/%s: %s", k->dir, file, ferry_strerror(r));
}

/*
 * Records the volumes this run committed as ferry's (DIR/.ferry/owned);
 * with last, then removes the volumes of the name past the set's last (an
 * older, longer set of that name, as far as they run on without a gap)
 * that ferry committed and nobody changed since. A file of such a name
 * that ferry did not write, or that changed, stays. A volume the record
 * has no room for stays unrecorded, and so is never removed.
 */
static int
volkeep_record(struct volkeep *k, uint32_t last)
{
    char vol[VOLUME_NAME_MAX];
    struct owned o;
    uint32_t i;
    int r, st;

    owned_init(&o);
    if ((r = owned_open(&o, k->dirfd, 1)) != 0)
        goto out;
    for (i = 1; i < k->next; i++) {
        if (!k->set[i].unrecorded ||
            volume_file_name(k->name, i, vol, sizeof(vol)) != 0)
            continue;
        r = owned_put(&o, vol, &k->set[i].own, 0, 0);
        if (r != 0 && r != FERRY_ERR_TOO_LARGE)
            goto out;
        k->set[i].unrecorded = 0;
    }
    for (i = last + 1; last > 0 && i <= PROTO_MAX_KEEP_VOLUMES; i++) {
        if (volume_file_name(k->name, i, vol, sizeof(vol)) != 0)
            break;
        if ((st = owned_check(&o, k->dirfd, vol)) == OWNED_GONE) {
            owned_drop(&o, vol);
            break;
        }
        /* One changed since is the user's from now on: forgotten too. */
        if (st == OWNED_YES && unlinkat(k->dirfd, vol, 0) != 0)
            continue;
        owned_drop(&o, vol);
    }
    r = owned_save(&o);
out:
    owned_cleanup(&o);
    return r;
}

int
volkeep_new(const char *dir, const char *name, uint32_t flags,
    struct xfer *x, struct volkeep **out)
{
    struct volkeep *k;
    int r;

    *out = NULL;
    if (volset_name_ok(name) != 0)
        return xfer_fail(x, FERRY_ERR_BAD_PATH, "%.200s: not a name for a "
            "set of volumes (no '/', not starting with '.' or '-')", name);
    if ((k = xcalloc(1, sizeof(*k))) == NULL)
        return FERRY_ERR_NOMEM;
    k->x = x;
    k->max_vbytes = PROTO_MAX_VOLUME_SIZE;
    k->dirfd = k->sfd = k->vfd = k->mfd = -1;
    snprintf(k->name, sizeof(k->name), "%s", name);
    if ((k->dir = xstrdup(dir)) == NULL) {
        volkeep_free(k);
        return FERRY_ERR_NOMEM;
    }
    fsx_trim_slashes(k->dir);
    snprintf(k->mfile, sizeof(k->mfile), "%s%s", name,
        VOLUME_MANIFEST_SUFFIX);
    volset_tmp_name(k->mfile, k->mtmp, sizeof(k->mtmp));
    k->next = 1;
    if ((k->rbuf = xmalloc(KEEP_READ)) == NULL) {
        volkeep_free(k);
        return FERRY_ERR_NOMEM;
    }
    if ((r = dest_mkdir(dir, 0, flags, x)) != 0) {
        volkeep_free(k);
        return r;
    }
    if ((k->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
        O_CLOEXEC)) < 0) {
        r = -errno;
        volkeep_free(k);
        return xfer_fail(x, r, "%s: %s", dir, ferry_strerror(r));
    }
    /* Two runs writing one directory would take each other's temporary
     * files. */
    if (flock(k->dirfd, LOCK_EX | LOCK_NB) != 0) {
        r = errno == EWOULDBLOCK ? -EBUSY : -errno;
        volkeep_free(k);
        return xfer_fail(x, r, "%s: another push is storing volumes "
            "there", dir);
    }
    *out = k;
    return 0;
}

void
volkeep_free(struct volkeep *k)
{
    uint32_t i;

    if (k == NULL)
        return;
    /* A run cut short keeps the volumes it finished (a re-run keeps them
     * too): they are ferry's, recorded as such. */
    for (i = 1; i < k->next && k->dirfd >= 0; i++)
        if (k->set[i].unrecorded) {
            if (volkeep_record(k, 0) != 0)
                log_warn("%s: cannot record the volumes stored there",
                    k->dir);
            break;
        }
    if (k->sfd >= 0)
        close(k->sfd);
    if (k->vfd >= 0) {
        close(k->vfd);
        (void)unlinkat(k->dirfd, k->vtmp, 0);
    }
    if (k->mfd >= 0) {
        close(k->mfd);
        (void)unlinkat(k->dirfd, k->mtmp, 0);
    }
    if (k->dirfd >= 0)
        close(k->dirfd);
    xfree(k->rbuf);
    xfree(k->held);
    xfree(k->set);
    xfree(k->dir);
    xfree(k);
}

/* Room for volume index in held and set. */
static int
volkeep_room(struct volkeep *k, uint32_t index)
{
    void *p;

    if (index % 64 != 1)
        return 0;
    if ((p = xrealloc(k->held, (index + 64) * sizeof(*k->held))) == NULL)
        return FERRY_ERR_NOMEM;
    k->held = p;
    memset(&k->held[index], 0, 64 * sizeof(*k->held));
    if ((p = xrealloc(k->set, (index + 64) * sizeof(*k->set))) == NULL)
        return FERRY_ERR_NOMEM;
    k->set = p;
    memset(&k->set[index], 0, 64 * sizeof(*k->set));
    return 0;
}

/* Reads back the held volumes a step at a time: each one's KEEP_VOL,
 * then END once the next index is missing (or not a plain file). */
static int
volkeep_scan(struct volkeep *k, struct conn_step *st)
{
    struct msg_keep_vol m;
    struct stat sb;
    uint64_t done = 0;
    uint32_t index = k->nheld + 1;
    ssize_t n;
    int r;

    if (k->sfd < 0) {
        if (index > PROTO_MAX_KEEP_VOLUMES ||
            volume_file_name(k->name, index, k->vfile,
            sizeof(k->vfile)) != 0 ||
            (k->sfd = openat(k->dirfd, k->vfile, O_RDONLY | O_NOFOLLOW |
            O_CLOEXEC)) < 0 || fstat(k->sfd, &sb) != 0 ||
            !S_ISREG(sb.st_mode)) {
            if (k->sfd >= 0)
                close(k->sfd);
            k->sfd = -1;
            k->state = K_RECV;
            return msg_end_encode(st->out);
        }
        sha256_init(&k->ssha);
        k->sbytes = 0;
    }
    while (done < KEEP_SCAN_STEP) {
        if ((n = read(k->sfd, k->rbuf, KEEP_READ)) < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            return volkeep_fail(k, r, k->vfile);
        }
        if (n == 0)
            break;
        sha256_update(&k->ssha, k->rbuf, (size_t)n);
        k->sbytes += (uint64_t)n;
        done += (uint64_t)n;
    }
    st->more = 1;
    if (done >= KEEP_SCAN_STEP)
        return 0;
    close(k->sfd);
    k->sfd = -1;
    if (k->sbytes > PROTO_MAX_VOLUME_SIZE) {
        k->state = K_RECV;   /* not one of ours: the set ends before it */
        return msg_end_encode(st->out);
    }
    if ((r = volkeep_room(k, index)) != 0)
        return r;
    k->nheld = index;
    k->held[index].bytes = k->sbytes;
    sha256_final(&k->ssha, k->held[index].sha);
    memset(&m, 0, sizeof(m));
    m.volume = index;
    m.bytes = k->sbytes;
    memcpy(m.sha256, k->held[index].sha, sizeof(m.sha256));
    return msg_keep_vol_encode(st->out, &m);
}

static int
volkeep_begin(struct volkeep *k, const struct frame *f)
{
    struct msg_vol_begin m;
    int r;

    if ((r = msg_vol_begin_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (k->open != 0 || m.volume != k->next ||
        m.volume > PROTO_MAX_KEEP_VOLUMES)
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "VOL_BEGIN %u: the set "
            "needs volume %u next", m.volume, k->next);
    if ((r = volkeep_room(k, m.volume)) != 0 ||
        (r = volume_file_name(k->name, m.volume, k->vfile,
        sizeof(k->vfile))) != 0)
        return r;
    volset_tmp_name(k->vfile, k->vtmp, sizeof(k->vtmp));
    if ((k->vfd = volset_create(k->dirfd, k->vtmp)) < 0) {
        r = k->vfd;
        k->vfd = -1;
        return volkeep_fail(k, r, k->vtmp);
    }
    k->open = m.volume;
    k->vbytes = 0;
    sha256_init(&k->vsha);
    return 0;
}

static int
volkeep_data(struct volkeep *k, const struct frame *f)
{
    struct msg_vol_data m;
    int r;

    if ((r = msg_vol_data_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (k->open == 0 || m.volume != k->open)
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "VOL_DATA of volume %u, "
            "which is not being sent", m.volume);
    if (m.len > k->max_vbytes - k->vbytes)
        return xfer_fail(k->x, FERRY_ERR_TOO_LARGE, "volume %u: larger "
            "than a volume may be", m.volume);
    if ((r = fsx_write_all(k->vfd, m.data, m.len)) != 0)
        return volkeep_fail(k, r, k->vtmp);
    sha256_update(&k->vsha, m.data, m.len);
    k->vbytes += m.len;
    return 0;
}

/* KEEP_VOL: the end of the volume sent, or the held one confirmed. */
static int
volkeep_on_vol(struct volkeep *k, const struct frame *f)
{
    struct msg_keep_vol m;
    struct volkeep_vol *v;
    int r, fd;

    if ((r = msg_keep_vol_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (m.volume != k->next)
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "KEEP_VOL %u: the set "
            "needs volume %u next", m.volume, k->next);
    v = &k->set[m.volume];
    if (k->open == 0) {
        if (m.volume > k->nheld || m.bytes != k->held[m.volume].bytes ||
            memcmp(m.sha256, k->held[m.volume].sha, SHA256_LEN) != 0)
            return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "volume %u: kept, "
                "but it is not the one here", m.volume);
        *v = k->held[m.volume];
        k->next++;
        return 0;
    }
    if (m.bytes != k->vbytes)
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "volume %u: %llu bytes "
            "said, %llu came", m.volume, (unsigned long long)m.bytes,
            (unsigned long long)k->vbytes);
    v->bytes = k->vbytes;
    sha256_final(&k->vsha, v->sha);
    if (memcmp(v->sha, m.sha256, SHA256_LEN) != 0)
        return xfer_fail(k->x, FERRY_ERR_HASH_MISMATCH, "volume %u: its "
            "SHA-256 is not the one said", m.volume);
    fd = k->vfd;
    k->vfd = -1;
    if ((r = dest_write_one(k->dirfd, fd, k->vtmp, k->vfile)) != 0) {
        (void)unlinkat(k->dirfd, k->vtmp, 0);
        return volkeep_fail(k, r, k->vfile);
    }
    /* One that cannot be identified is never recorded, so never pruned. */
    v->unrecorded = owned_identify(k->dirfd, k->vfile, 0, &v->own) == 0;
    k->open = 0;
    k->next++;
    return 0;
}

static int
volkeep_on_man(struct volkeep *k, const struct frame *f)
{
    struct msg_keep_man m;
    int r;

    if ((r = msg_keep_man_decode(f->payload, f->len, &m)) != 0)
        return r;
    /* Offset 0 starts the manifest again: the client packs anew when a
     * held volume turns out not to be the one its sources make now. */
    if (m.offset == 0) {
        if (k->mfd >= 0)
            close(k->mfd);
        if ((k->mfd = volset_create(k->dirfd, k->mtmp)) < 0) {
            r = k->mfd;
            k->mfd = -1;
            return volkeep_fail(k, r, k->mtmp);
        }
        sha256_init(&k->msha);
        k->mbytes = 0;
    } else if (k->mfd < 0 || m.offset != k->mbytes) {
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "KEEP_MAN at %llu: the "
            "manifest has %llu bytes", (unsigned long long)m.offset,
            (unsigned long long)k->mbytes);
    }
    if ((r = fsx_write_all(k->mfd, m.data, m.len)) != 0)
        return volkeep_fail(k, r, k->mtmp);
    sha256_update(&k->msha, m.data, m.len);
    k->mbytes += m.len;
    return 0;
}

static int
volkeep_on_done(struct volkeep *k, const struct frame *f, struct buf *out)
{
    char (*sums)[65] = NULL;
    uint8_t sha[SHA256_LEN];
    char msum[65];
    struct msg_keep_done m;
    uint32_t i;
    int r, fd;

    if ((r = msg_keep_done_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (k->open != 0 || m.volumes != k->next - 1)
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "KEEP_DONE of %u "
            "volumes: %u came", m.volumes, k->next - 1);
    if (k->mfd < 0 || m.manifest_bytes != k->mbytes)
        return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "KEEP_DONE: a manifest "
            "of %llu bytes said, %llu came",
            (unsigned long long)m.manifest_bytes,
            (unsigned long long)k->mbytes);
    sha256_final(&k->msha, sha);
    if (memcmp(sha, m.sha256, SHA256_LEN) != 0)
        return xfer_fail(k->x, FERRY_ERR_HASH_MISMATCH, "%s: its SHA-256 "
            "is not the one said", k->mfile);
    fd = k->mfd;
    k->mfd = -1;
    if ((r = dest_write_one(k->dirfd, fd, k->mtmp, k->mfile)) != 0) {
        (void)unlinkat(k->dirfd, k->mtmp, 0);
        return volkeep_fail(k, r, k->mfile);
    }
    if ((sums = xcalloc((size_t)m.volumes + 1, sizeof(*sums))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 1; i <= m.volumes; i++)
        sha256_hex(k->set[i].sha, sums[i]);
    sha256_hex(sha, msum);
    if ((r = volkeep_record(k, m.volumes)) != 0) {
        xfree(sums);
        return xfer_fail(k->x, r, "%s: %s", k->dir, dest_state_strerror(r));
    }
    r = volset_sums(k->dirfd, k->name, (const char (*)[65])sums, m.volumes,
        msum);
    xfree(sums);
    if (r == 0)
        r = fsx_fsync(k->dirfd);
    if (r != 0)
        return xfer_fail(k->x, r, "%s: %s", VOLSET_SUMS, ferry_strerror(r));
    k->state = K_DONE;
    return msg_end_encode(out);
}

int
volkeep_step(void *role, struct conn_step *st)
{
    struct volkeep *k = role;
    struct frame f;
    size_t off = 0;
    int r;

    while ((r = conn_step_frame(st, &off, &f)) > 0) {
        if (f.type == MSG_ERROR)
            return xfer_peer_error(k->x, f.payload, f.len);
        /* Nothing comes before the held volumes were said, or after
         * the end. */
        if (k->state != K_RECV)
            return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "%s out of turn",
                msg_type_name(f.type));
        switch (f.type) {
        case MSG_VOL_BEGIN: r = volkeep_begin(k, &f); break;
        case MSG_VOL_DATA: r = volkeep_data(k, &f); break;
        case MSG_KEEP_VOL: r = volkeep_on_vol(k, &f); break;
        case MSG_KEEP_MAN: r = volkeep_on_man(k, &f); break;
        case MSG_KEEP_DONE: r = volkeep_on_done(k, &f, st->out); break;
        default:
            r = xfer_fail(k->x, FERRY_ERR_PROTOCOL, "%s in a push of "
                "volumes", msg_type_name(f.type));
            break;
        }
        if (r != 0)
            return r;
    }
    if (r < 0)
        return r;
    if (k->state == K_SCAN)
        return volkeep_scan(k, st);
    if (k->state == K_DONE) {
        st->done = 1;
        return 0;
    }
    return st->eof ? FERRY_ERR_CLOSED : 0;
}

void
volkeep_set_max_volume(struct volkeep *k, uint64_t bytes)
{
    k->max_vbytes = bytes;
}
