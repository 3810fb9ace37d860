/*
 * pack.c: `ferry pack SRC... OUTDIR` (see pack.h).
 */
#include "pack.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../engine/dest_write.h"
#include "../engine/manifest.h"
#include "../engine/volume/volset.h"
#include "../engine/volume/volume.h"
#include "../engine/volume/volwrite.h"
#include "../proto/vmanifest.h"
#include "digest.h"
#include "exitcode.h"

#define PACK_FLUSH (64u << 10)

struct pack {
    struct pack_args *a;
    struct output out;
    struct xfer x;
    struct pack_src src;
    const char *outdir;
    int outfd;
    const char *name;
    /* The volume being written. */
    int vfd;
    struct digest_sha256 *vsha;
    char tmp[VOLSET_TMP_MAX], file[VOLUME_NAME_MAX];
    /* The volumes made: their SHA-256s, for SHA256SUMS. */
    char (*sums)[65];
    uint32_t nsums;
    /* The manifest, written as records come. */
    int mfd;
    struct buf mbuf;
    struct digest_sha256 *msha;
    char msum[65];
};

static void
pack_problem(struct pack_src *ps, int code, const char *path,
    const char *text)
{
    ps->x->ev.problem(ps->x->ev.ctx, SIDE_SOURCE, path, code, text);
}

static int
pack_sink_fail(struct pack *p, int r, const char *what)
{
    char msg[VOLUME_NAME_MAX + 64];

    if (!p->src.sink_err) {
        snprintf(msg, sizeof(msg), "%s: %s", what, ferry_strerror(r));
        output_fatal(&p->out, p->outdir, r, msg);
    }
    p->src.sink_err = 1;
    return r;
}

static int
pack_vol_open(void *ctx, uint32_t index)
{
    struct pack *p = ctx;
    void *nv;
    int r;

    if ((r = volume_file_name(p->name, index, p->file,
        sizeof(p->file))) != 0)
        return pack_sink_fail(p, r, p->name);
    volset_tmp_name(p->file, p->tmp, sizeof(p->tmp));
    if ((nv = xrealloc(p->sums, (index + 1) * sizeof(*p->sums))) == NULL)
        return pack_sink_fail(p, FERRY_ERR_NOMEM, p->file);
    p->sums = nv;
    if ((p->vsha = digest_sha256_new()) == NULL)
        return pack_sink_fail(p, FERRY_ERR_NOMEM, p->file);
    if ((p->vfd = volset_create(p->outfd, p->tmp)) < 0)
        return pack_sink_fail(p, p->vfd, p->tmp);
    return 0;
}

static int
pack_vol_write(void *ctx, const void *b, size_t n)
{
    struct pack *p = ctx;
    int r;

    /* Checked here too: one large file is many writes. */
    if (pack_interrupted)
        return FERRY_ERR_INTERRUPTED;
    if ((r = fsx_write_all(p->vfd, b, n)) != 0 ||
        (r = digest_sha256_update(p->vsha, b, n)) != 0)
        return pack_sink_fail(p, r, p->tmp);
    return 0;
}

static int
pack_vol_close(void *ctx, const struct volw_volume *v)
{
    struct pack *p = ctx;
    int r, fd = p->vfd;

    p->vfd = -1;
    r = digest_sha256_final(p->vsha, p->sums[v->index]);
    p->vsha = NULL;
    if (r != 0 || (r = dest_write_one(p->outfd, fd, p->tmp, p->file)) != 0)
        return pack_sink_fail(p, r, p->file);
    p->nsums = v->index;
    pack_volume_event(&p->out, "written", p->file, v->index, v->bytes,
        v->members, p->sums[v->index]);
    return 0;
}

static int
pack_man_flush(struct pack *p)
{
    int r;

    if ((r = fsx_write_all(p->mfd, buf_ptr(&p->mbuf),
        buf_used(&p->mbuf))) != 0 ||
        (r = digest_sha256_update(p->msha, buf_ptr(&p->mbuf),
        buf_used(&p->mbuf))) != 0)
        return pack_sink_fail(p, r, "manifest");
    buf_reset(&p->mbuf);
    return 0;
}

static int
pack_record(void *ctx, const struct vman_rec *rec)
{
    struct pack *p = ctx;
    int r;

    if ((r = vman_encode(&p->mbuf, rec)) != 0)
        return pack_sink_fail(p, r, "manifest");
    return buf_used(&p->mbuf) >= PACK_FLUSH ? pack_man_flush(p) : 0;
}

/* One entry of the walk into the volumes. */
static int
pack_entry(void *ctx, const char *rel, const char *local,
    const struct stat *st, const char *target)
{
    struct pack_src *p = ctx;
    struct volw_entry e;
    struct stat fst, after;
    int fd = -1, r;

    if (pack_interrupted)
        return FERRY_ERR_INTERRUPTED;
    if (p->stop != NULL && *p->stop)
        return FERRY_ERR_INTERRUPTED;
    if (S_ISDIR(st->st_mode) && p->skip_ino != 0 &&
        st->st_dev == p->skip_dev && st->st_ino == p->skip_ino) {
        pack_problem(p, 0, local, "skipping the output directory");
        return 1;
    }
    memset(&e, 0, sizeof(e));
    e.path = rel;
    e.mode = st->st_mode & 07777;
    e.mtime_sec = st->st_mtim.tv_sec;
    e.mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
    e.type = S_ISDIR(st->st_mode) ? TAR_DIR : S_ISLNK(st->st_mode) ?
        TAR_SYMLINK : TAR_FILE;
    e.target = target;
    if (e.type == TAR_FILE) {
        /* Metadata from the open file: what is read is what is said. */
        r = 0;
        if ((fd = open(local, FSX_O_READ)) < 0 || fstat(fd, &fst) != 0)
            r = -errno;
        else if (!S_ISREG(fst.st_mode))
            r = -EINVAL;
        if (r != 0) {
            if (fd >= 0)
                close(fd);
            pack_problem(p, r, local, r == -EINVAL ?
                "no longer a regular file" : ferry_strerror(r));
            p->source_failed = 1;
            return 0;
        }
        e.size = (uint64_t)fst.st_size;
        e.mode = fst.st_mode & 07777;
        e.mtime_sec = fst.st_mtim.tv_sec;
        e.mtime_nsec = (uint32_t)fst.st_mtim.tv_nsec;
    }
    r = volw_add(p->w, &e, fd);
    if (r == 0 && fd >= 0 && (fstat(fd, &after) != 0 ||
        after.st_size != fst.st_size ||
        after.st_mtim.tv_sec != fst.st_mtim.tv_sec ||
        after.st_mtim.tv_nsec != fst.st_mtim.tv_nsec))
        r = FERRY_ERR_CHANGED;
    if (fd >= 0)
        close(fd);
    if (r == FERRY_ERR_BAD_PATH || r == FERRY_ERR_USAGE) {
        pack_problem(p, r, local, "cannot be packed (name or link target "
            "too long or invalid)");
        p->source_failed = 1;
        return 0;
    }
    if (r != 0 && !p->sink_err && r != FERRY_ERR_INTERRUPTED)
        output_fatal(p->out, local, r, r == FERRY_ERR_CHANGED ?
            "file changed while it was read; nothing was packed" :
            r == FERRY_ERR_TOO_LARGE ? "more volumes than names allow "
            "(99999): choose a larger --volume-size" : ferry_strerror(r));
    return r;
}

static int
pack_notice(void *ctx, int code, const char *path, const char *text)
{
    struct pack_src *p = ctx;

    pack_problem(p, code, path, text);
    if (code != 0)
        p->source_failed = 1;
    return 0;
}

/* SHA256SUMS: the lines of other names that were there, then ours. */
static int
pack_sums(struct pack *p)
{
    int r = volset_sums(p->outfd, p->name, (const char (*)[65])p->sums,
        p->nsums, p->msum);

    return r == 0 ? 0 : pack_sink_fail(p, r, VOLSET_SUMS);
}

/* Removes what a failed run made. */
static void
pack_remove(struct pack *p, const char *mtmp)
{
    char vol[VOLUME_NAME_MAX];
    uint32_t i;

    if (p->vfd >= 0) {
        close(p->vfd);
        p->vfd = -1;
        (void)unlinkat(p->outfd, p->tmp, 0);
    }
    for (i = 1; i <= p->nsums; i++)
        if (volume_file_name(p->name, i, vol, sizeof(vol)) == 0)
            (void)unlinkat(p->outfd, vol, 0);
    (void)unlinkat(p->outfd, mtmp, 0);
}

int
pack_name_for(const char *given, const char *src, const char **name,
    char **owned)
{
    char *local = NULL, *dir = NULL, *base = NULL;
    int contents, r;

    *owned = NULL;
    if (given != NULL) {
        *name = given;
        return 0;
    }
    if ((r = manifest_source(src, &local, &contents)) == 0 &&
        (r = fsx_split(local, &dir, &base)) == 0 &&
        volset_name_ok(base) == 0)
        *owned = base, base = NULL;
    xfree(local);
    xfree(dir);
    xfree(base);
    if (r != 0)
        return r;
    if (*owned == NULL) {
        fprintf(stderr, "ferry: no set name to take from '%s': give "
            "--name NAME\n", src);
        return FERRY_ERR_USAGE;
    }
    *name = *owned;
    return 0;
}

int
pack_src_walk(struct pack_src *ps, const struct volw_opts *vo,
    const struct volw_sink *sink)
{
    struct manifest_walker walker = { pack_entry, pack_notice, ps, NULL,
        NULL };
    int i, r;

    volw_free(ps->w);
    ps->w = NULL;
    ps->source_failed = 0;
    if ((r = volw_new(vo, sink, &ps->w)) != 0)
        return r;
    for (i = 0; i < ps->nsrcs && r == 0; i++)
        r = manifest_walk(ps->srcs[i], &walker);
    return r != 0 ? r : volw_finish(ps->w);
}

static int
pack_run(struct pack *p)
{
    struct volw_sink sink = { pack_vol_open, pack_vol_write, pack_vol_close,
        pack_record, p };
    struct volw_opts vo;
    char mtmp[VOLSET_TMP_MAX], mname[VOLUME_NAME_MAX];
    char vol[VOLUME_NAME_MAX];
    struct stat st;
    int r;

    snprintf(mname, sizeof(mname), "%s%s", p->name, VOLUME_MANIFEST_SUFFIX);
    volset_tmp_name(mname, mtmp, sizeof(mtmp));
    if ((r = volume_file_name(p->name, 1, vol, sizeof(vol))) != 0)
        return EXIT_USAGE;
    if (fsx_mkdir_p(p->outdir, 0755) != 0 || (p->outfd = open(p->outdir,
        O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        fstat(p->outfd, &st) != 0) {
        r = -errno;
        output_fatal(&p->out, p->outdir, r, ferry_strerror(r));
        return EXIT_DEST;
    }
    p->src.skip_dev = st.st_dev;
    p->src.skip_ino = st.st_ino;
    if (fstatat(p->outfd, mname, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
        fstatat(p->outfd, vol, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        output_fatal(&p->out, p->outdir, FERRY_ERR_EXISTS, "a set with "
            "this name is there already: remove it or choose another "
            "--name");
        return EXIT_DEST;
    }
    if ((p->mfd = volset_create(p->outfd, mtmp)) < 0) {
        pack_sink_fail(p, p->mfd, mtmp);
        return EXIT_DEST;
    }
    memset(&vo, 0, sizeof(vo));
    if ((p->msha = digest_sha256_new()) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto fail;
    }
    vo.name = p->name;
    vo.volume_size = p->a->volume_size;
    r = pack_src_walk(&p->src, &vo, &sink);
    if (r == 0 && (r = pack_man_flush(p)) == 0) {
        r = digest_sha256_final(p->msha, p->msum);
        p->msha = NULL;
        if (r == 0)
            r = dest_write_one(p->outfd, p->mfd, mtmp, mname);
        p->mfd = -1;
        if (r != 0)
            pack_sink_fail(p, r, mname);
    }
    if (r == 0 && (r = pack_sums(p)) == 0 && (r = fsx_fsync(p->outfd)) != 0)
        pack_sink_fail(p, r, p->outdir);
    if (r == 0)
        return p->src.source_failed ? EXIT_SOURCE : EXIT_OK;
fail:
    if (p->mfd >= 0)
        close(p->mfd);
    p->mfd = -1;
    pack_remove(p, mtmp);
    if (r == FERRY_ERR_INTERRUPTED || pack_interrupted) {
        output_note(&p->out, "interrupted; nothing was packed");
        return EXIT_INTERRUPTED;
    }
    if (p->src.sink_err)
        return EXIT_DEST;
    if (r == FERRY_ERR_TOO_LARGE || r == FERRY_ERR_USAGE)
        return EXIT_USAGE;
    if (r == FERRY_ERR_NOMEM)
        output_fatal(&p->out, NULL, r, "out of memory");
    return EXIT_SOURCE;
}

int
pack_main(int argc, char **argv)
{
    struct pack_args a;
    struct pack p;
    struct pack_summary s;
    struct volw_totals t;
    char *owned = NULL, line[1200];
    uint64_t t0 = uv_hrtime();
    int code;

    if (pack_args_parse(&a, argc, argv) != 0)
        return pack_usage(&a);
    if (a.nwords < 2) {
        snprintf(a.err, sizeof(a.err), "pack needs at least one source "
            "and an output directory (see ferry --help)");
        return pack_usage(&a);
    }
    if (manifest_top_clash((const char *const *)a.words, a.nwords - 1,
        line, sizeof(line)) != 0) {
        snprintf(a.err, sizeof(a.err), "pack: %s", line[0] != '\0' ? line :
            ferry_strerror(FERRY_ERR_NOMEM));
        return pack_usage(&a);
    }
    memset(&p, 0, sizeof(p));
    p.a = &a;
    p.outfd = p.vfd = p.mfd = -1;
    p.outdir = a.words[a.nwords - 1];
    buf_init(&p.mbuf, 4 * PACK_FLUSH);
    pack_output_init(&p.out, &p.x, &a);
    p.src.srcs = a.words;
    p.src.nsrcs = a.nwords - 1;
    p.src.out = &p.out;
    p.src.x = &p.x;
    pack_signals();
    if (pack_name_for(a.name, a.words[0], &p.name, &owned) != 0) {
        code = EXIT_USAGE;
    } else {
        code = pack_run(&p);
    }
    memset(&t, 0, sizeof(t));
    if (p.src.w != NULL)
        volw_totals(p.src.w, &t);
    memset(&s, 0, sizeof(s));
    s.verb = "packed";
    s.exit_code = code;
    s.volumes = code == EXIT_OK || code == EXIT_SOURCE ? t.volumes : 0;
    s.files = t.files;
    s.bytes = t.bytes;
    s.compressed = t.compressed;
    s.elapsed = (double)(uv_hrtime() - t0) / 1e9;
    s.error = code == EXIT_OK || code == EXIT_SOURCE ? NULL : "pack failed";
    pack_summary(&p.out, &s);
    volw_free(p.src.w);
    digest_sha256_free(p.vsha);
    digest_sha256_free(p.msha);
    buf_cleanup(&p.mbuf);
    xfree(p.sums);
    xfree(owned);
    if (p.outfd >= 0)
        close(p.outfd);
    pack_args_cleanup(&a);
    return code;
}
