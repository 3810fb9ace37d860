#include "mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/arena.h"
#include "../common/buf.h"
#include "../common/text.h"
#include "../engine/dest.h"
#include "../engine/manifest.h"
#include "../engine/partial.h"
#include "../engine/prune.h"
#include "../engine/xfer.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "exitcode.h"
#include "output.h"
#include "run.h"
#include "space.h"
#include "status.h"

/* The client's role in LIST and DELETE: entries and notices, to END. */
struct mirror_collect {
    struct xfer *x;
    struct manifest m;
    /* With OPEN_F_READINESS: each entry's ENTRY_S_* state, by id. */
    int want_states;
    uint8_t *states;
    size_t nstates, cap;
};

static int
mirror_collect_step(void *role, struct conn_step *st)
{
    struct mirror_collect *c = role;
    struct msg_entry e;
    struct msg_notice nt;
    struct frame f;
    size_t off = 0;
    char rel[PROTO_MAX_PATH + 1], path[PROTO_MAX_PATH + 1];
    char text[PROTO_MAX_MESSAGE + 1];
    int r;

    while ((r = conn_step_frame(st, &off, &f)) > 0) {
        switch (f.type) {
        case MSG_ENTRY:
            if ((r = msg_entry_decode(f.payload, f.len, &e)) != 0)
                return r;
            memcpy(rel, e.path.p, e.path.len);
            rel[e.path.len] = '\0';
            if ((r = manifest_add_listed(&c->m, rel, e.kind, e.mode, e.size,
                e.mtime_sec, e.mtime_nsec)) != 0)
                return r;
            if (c->want_states) {
                uint8_t *v;

                if ((v = xgrow(c->states, c->nstates, &c->cap, 1,
                    256)) == NULL)
                    return FERRY_ERR_NOMEM;
                c->states = v;
                c->states[c->nstates++] = e.state;
            }
            break;
        case MSG_NOTICE:
            if ((r = msg_notice_decode(f.payload, f.len, &nt)) != 0)
                return r;
            snprintf(path, sizeof(path), "%.*s", (int)nt.path.len,
                nt.path.p);
            snprintf(text, sizeof(text), "%.*s", (int)nt.text.len,
                nt.text.p);
            if ((r = manifest_notice(&c->m, proto_err_from_wire(nt.code),
                path, text)) != 0)
                return r;
            break;
        case MSG_END:
            st->done = 1;
            return off == st->in_len ? 0 : FERRY_ERR_PROTOCOL;
        case MSG_ERROR:
            return xfer_peer_error(c->x, f.payload, f.len);
        default:
            return FERRY_ERR_PROTOCOL;
        }
    }
    if (r < 0)
        return r;
    return st->eof ? FERRY_ERR_CLOSED : 0;
}

/* Runs op on the remote side into c. */
static int
mirror_remote(const struct cli *cli, uint8_t op, uint32_t flags,
    const char *const *paths, size_t npaths, const struct filter *f,
    struct mirror_collect *c)
{
    struct xfer x;
    struct run_op ro;

    memset(&x, 0, sizeof(x));
    manifest_init(&c->m);
    c->x = &x;
    c->states = NULL;
    c->nstates = c->cap = 0;
    c->want_states = (flags & OPEN_F_READINESS) != 0;
    memset(&ro, 0, sizeof(ro));
    ro.op = op;
    ro.flags = flags;
    ro.paths = paths;
    ro.npaths = (uint16_t)npaths;
    ro.filter = f;
    ro.role_step = mirror_collect_step;
    ro.role = c;
    return run_command(cli, &ro);
}

int
mirror_list(const struct cli *cli, const char *path, struct manifest *out,
    uint8_t **states)
{
    struct mirror_collect c;
    int code;

    code = mirror_remote(cli, OPEN_LIST, states != NULL ?
        OPEN_F_READINESS : 0, &path, 1,
        cli->filter.n > 0 ? &cli->filter : NULL, &c);
    *out = c.m;
    if (states != NULL)
        *states = c.states;
    else
        xfree(c.states);
    return code;
}

/* What the comparison found. */
struct mirror_report {
    struct output out;
    struct xfer x;
    int dry_run;
    int silent;         /* only the totals: the space check */
    uint64_t nsend, bsend, nskip, bskip, ndel, bdel;
    /* The space check's: what an earlier run kept of each file in the
     * destination's state directory (sorted by path), and of the files
     * to send, how much of them that is. */
    struct partial_info *kept;
    size_t nkept;
    uint64_t bkept;
    /* The rules --delete keeps excluded entries by: a push's are the
     * command's and its sources' ignore files (as its scan read them). */
    struct filter scan_rules;
    const struct filter *rules;
    struct run_opts o;  /* what the transfer moves */
};

static void
mirror_line(struct mirror_report *rp, const char *action, const char *rel,
    uint64_t bytes)
{
    char esc[8192], sz[32];
    struct buf b;

    if (rp->silent || (!rp->dry_run && strcmp(action, "delete") != 0))
        return;
    /* A dry run lists what would change; the files already up to date
     * (most of a tree synced before) only with -v. */
    if (strcmp(action, "skip") == 0 && rp->out.verbose < 1)
        return;
    if (rp->out.json) {
        buf_init(&b, 1 << 16);
        output_json_end(&rp->out, &b, output_json_begin(&b, rp->dry_run ?
            "dry_run" : "deleted") || output_json_str(&b, "action",
            action) || output_json_str(&b, "path", rel) ||
            output_json_num(&b, "bytes", bytes));
        return;
    }
    if (!rp->dry_run && rp->out.verbose < 1)
        return;
    text_bytes((double)bytes, sz, sizeof(sz));
    printf("%-8s %10s  %s\n", rp->dry_run ? action : "deleted", sz,
        text_escape(rel, strlen(rel), esc, sizeof(esc)));
}

static int
mirror_rel_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
mirror_kept_cmp(const void *a, const void *b)
{
    return strcmp(((const struct partial_info *)a)->path,
        ((const struct partial_info *)b)->path);
}

/* The bytes of a file of size bytes at rel that the destination keeps
 * from an earlier run: a resume writes only the rest. */
static uint64_t
mirror_kept_of(const struct mirror_report *rp, const char *rel,
    uint64_t size)
{
    struct partial_info key = { .path = (char *)rel };
    const struct partial_info *k;

    k = rp->nkept == 0 ? NULL : bsearch(&key, rp->kept, rp->nkept,
        sizeof(key), mirror_kept_cmp);
    return k == NULL ? 0 : k->done < size ? k->done : size;
}

/*
 * What an earlier run left unfinished in the destination's state
 * directory, into rp->kept: the agent's answer to STATUS for a push, the
 * local directory for a pull. Whether a file's kept data is resumed or
 * replaced, a new run writes its staging file over it, so it needs room
 * only for the rest. None when it cannot be read: whole files are
 * counted then.
 */
static void
mirror_find_kept(struct mirror_report *rp, const struct cli *cli)
{
    struct status st;
    struct run_op ro;

    if (cli->cmd == CMD_PUSH) {
        status_init(&st, NULL);
        status_op(&st, cli, OPEN_STATUS, &ro);
        if (run_command(cli, &ro) == EXIT_OK) {
            rp->kept = st.v;
            rp->nkept = st.n;
            st.v = NULL;
            st.n = 0;
        }
        status_cleanup(&st);
    } else if (dest_state_list(rp->o.dest, 0, &rp->kept,
        &rp->nkept) != 0) {
        rp->kept = NULL;
        rp->nkept = 0;
    }
    if (rp->nkept > 1)
        qsort(rp->kept, rp->nkept, sizeof(*rp->kept), mirror_kept_cmp);
}

/* An entry and its path. */
struct mirror_named {
    const char *rel;
    const struct mentry *e;
};

/* Entries by name. */
static int
mirror_named_cmp(const void *a, const void *b)
{
    return strcmp(((const struct mirror_named *)a)->rel,
        ((const struct mirror_named *)b)->rel);
}

/* m's entries with their paths (kept in store), by id; NULL when memory
 * runs out. */
static struct mirror_named *
mirror_name_all(const struct manifest *m, struct arena *store)
{
    struct mirror_named *v = xcalloc(m->n + 1, sizeof(*v));
    char rel[MANIFEST_REL_MAX];
    size_t i;

    for (i = 0; v != NULL && i < m->n; i++) {
        manifest_rel(m, i, rel);
        v[i].e = manifest_entry(m, i);
        if ((v[i].rel = arena_strndup(store, rel, strlen(rel))) == NULL) {
            xfree(v);
            return NULL;
        }
    }
    return v;
}

/* 1 if rel (or a directory above it) is excluded by f. */
static int
mirror_excluded(const struct filter *f, const char *rel, int is_dir)
{
    char buf[PROTO_MAX_PATH + 1];
    char *slash;

    if (filter_excluded(f, rel, is_dir))
        return 1;
    snprintf(buf, sizeof(buf), "%s", rel);
    while ((slash = strrchr(buf, '/')) != NULL) {
        *slash = '\0';
        if (filter_excluded(f, buf, 1))
            return 1;
    }
    return 0;
}

/* 1 if rel is beneath dir (a path of dlen bytes). */
static int
mirror_beneath(const char *rel, const char *dir, size_t dlen)
{
    return dlen > 0 && strncmp(rel, dir, dlen) == 0 && rel[dlen] == '/';
}

/*
 * 1 if the sources send the destination directory itself: one of them
 * names a directory's contents ("dir/", "dir/.", "."). Otherwise they
 * send entries into it ("dir", a file, a pull's glob), and what else
 * the destination holds is not theirs to mirror (rsync's rule).
 */
static int
mirror_root_sent(const struct cli *cli, const struct run_opts *o,
    const struct manifest *src)
{
    char *local;
    int i, contents, sent = 0;

    if (cli->cmd == CMD_PUSH)
        return src->contents;
    for (i = 0; i < o->nsources && !sent; i++) {
        if (manifest_source(o->sources[i], &local, &contents) != 0)
            return 0;
        sent = contents;
        xfree(local);
    }
    return sent;
}

/* 1 if the directory that holds rel (a destination entry's path) is one
 * the sources send, so --delete may remove rel: the destination itself
 * when root_sent, else a directory named in names (the sources' paths,
 * sorted, ns of them). */
static int
mirror_parent_sent(const char *rel, const char **names, size_t ns,
    int root_sent)
{
    char parent[MANIFEST_REL_MAX];
    const char *slash = strrchr(rel, '/'), *key = parent;

    if (slash == NULL)
        return root_sent;
    if ((size_t)(slash - rel) >= sizeof(parent))
        return 0;
    memcpy(parent, rel, (size_t)(slash - rel));
    parent[slash - rel] = '\0';
    return bsearch(&key, names, ns, sizeof(*names), mirror_rel_cmp) != NULL;
}

/*
 * Compares the sources src (paths relative to the destination directory)
 * with the destination's entries dst: reports what would be sent and
 * skipped (dry run), and what the destination has that the sources do not
 * (with del_mode, cli->delete's value or 0) in the directories they send;
 * the topmost of those go into *del (paths kept in pathstore), *ndel of
 * them.
 */
static int
mirror_compare(struct mirror_report *rp, const struct cli *cli,
    int del_mode, const struct manifest *src, const struct manifest *dst,
    struct arena *pathstore, const char ***del, size_t *ndel)
{
    const char **names = NULL, *gone = NULL, *kept = NULL;
    struct mirror_named *byname, *dnamed, *snamed;
    size_t i, ns = 0, nd = 0, gl = 0, kl = 0;
    int root_sent = mirror_root_sent(cli, &rp->o, src);

    *del = NULL;
    *ndel = 0;
    byname = xcalloc(dst->n + 1, sizeof(*byname));
    names = xcalloc(dst->n + src->n + 1, sizeof(*names));
    dnamed = mirror_name_all(dst, pathstore);
    snamed = mirror_name_all(src, pathstore);
    if (byname == NULL || names == NULL || dnamed == NULL ||
        snamed == NULL) {
        xfree(byname);
        xfree(names);
        xfree(dnamed);
        xfree(snamed);
        return FERRY_ERR_NOMEM;
    }
    memcpy(byname, dnamed, dst->n * sizeof(*byname));
    qsort(byname, dst->n, sizeof(*byname), mirror_named_cmp);
    for (i = 0; i < src->n; i++) {
        const struct mentry *s = snamed[i].e, *d;
        const struct mirror_named *hit;

        if (s->kind != ENTRY_FILE)
            continue;
        hit = bsearch(&snamed[i], byname, dst->n, sizeof(*byname),
            mirror_named_cmp);
        d = hit != NULL ? hit->e : NULL;
        if (d != NULL && d->kind == ENTRY_FILE && d->size == s->size &&
            d->mtime_sec == s->mtime_sec && d->mtime_nsec == s->mtime_nsec) {
            rp->nskip++;
            rp->bskip += s->size;
            mirror_line(rp, "skip", snamed[i].rel, s->size);
        } else {
            rp->nsend++;
            rp->bsend += s->size;
            rp->bkept += mirror_kept_of(rp, snamed[i].rel, s->size);
            mirror_line(rp, "send", snamed[i].rel, s->size);
        }
    }
    /* Now the other way: the sources' names, sorted. */
    for (i = 0; i < src->n; i++)
        names[i] = snamed[i].rel;
    ns = src->n;
    qsort(names, ns, sizeof(*names), mirror_rel_cmp);
    for (i = 0; del_mode && i < dst->n; i++) {
        const struct mirror_named *d = &dnamed[i];

        /* Entries come directory first, so what lies beneath a removed
         * or kept directory follows it. */
        if (gone != NULL && mirror_beneath(d->rel, gone, gl)) {
            rp->ndel += d->e->kind != ENTRY_DIR;
            rp->bdel += d->e->size;
            mirror_line(rp, "delete", d->rel, d->e->size);
            continue;
        }
        if (kept != NULL && mirror_beneath(d->rel, kept, kl))
            continue;
        gone = kept = NULL;
        if (bsearch(&d->rel, names, ns, sizeof(*names),
            mirror_rel_cmp) != NULL)
            continue;
        if (!mirror_parent_sent(d->rel, names, ns, root_sent) ||
            (del_mode == 1 && mirror_excluded(rp->rules, d->rel,
            d->e->kind == ENTRY_DIR))) {
            kept = d->rel;
            kl = strlen(kept);
            continue;
        }
        rp->ndel += d->e->kind != ENTRY_DIR;
        rp->bdel += d->e->size;
        mirror_line(rp, "delete", d->rel, d->e->size);
        names[ns + nd++] = d->rel;
        gone = d->rel;
        gl = strlen(gone);
    }
    if (nd > 0)
        memmove(names, names + ns, nd * sizeof(*names));
    xfree(byname);
    xfree(dnamed);
    xfree(snamed);
    *del = names;
    *ndel = nd;
    return 0;
}

int
mirror_diff(const struct cli *cli, const struct run_opts *o, int del_mode,
    const struct manifest *src, const struct manifest *dst,
    struct arena *store, struct mirror_counts *n, const char ***del,
    size_t *ndel)
{
    struct mirror_report rp;
    int r;

    memset(&rp, 0, sizeof(rp));
    rp.silent = 1;
    rp.o = *o;
    rp.rules = &cli->filter;
    r = mirror_compare(&rp, cli, del_mode, src, dst, store, del, ndel);
    *n = (struct mirror_counts){ rp.nsend, rp.bsend, rp.nskip, rp.bskip,
        rp.ndel, rp.bdel };
    return r;
}

/* The notice of a listing with code, if any. */
static const struct mnotice *
mirror_notice(const struct manifest *m, int code)
{
    size_t i;

    for (i = 0; i < manifest_notices(m); i++)
        if (manifest_notice_at(m, i)->code == code)
            return manifest_notice_at(m, i);
    return NULL;
}

/* Problems the listing of the sources met (a source missing): one line
 * each, as a transfer says them (none when silent: the transfer will).
 * Returns EXIT_SOURCE if any. */
static int
mirror_source_notices(struct mirror_report *rp, const struct manifest *m,
    const char *host)
{
    char where[PROTO_MAX_PATH + 256];
    size_t i;

    for (i = 0; i < manifest_notices(m) && !rp->silent; i++) {
        snprintf(where, sizeof(where), "%s%s%s", host ? host : "",
            host ? ":" : "", manifest_notice_at(m, i)->path);
        output_fatal(&rp->out, where, manifest_notice_at(m, i)->code,
            manifest_notice_at(m, i)->text);
    }
    return manifest_notices(m) > 0 ? EXIT_SOURCE : EXIT_OK;
}

/* The destination of a push, listed by the agent: its entries relative
 * to it, or none when it is missing; *is_dir 0 when it is not a
 * directory (then, for one file, its entry in *dst under its name). */
static int
mirror_push_dest(const struct cli *cli, struct manifest *dst, int *is_dir)
{
    const char *paths[1] = { cli->remote.path };
    struct mirror_collect c;
    int code;

    *is_dir = 1;
    if ((code = mirror_remote(cli, OPEN_LIST, OPEN_F_DEST_DIR, paths, 1,
        NULL, &c)) != EXIT_OK) {
        manifest_cleanup(&c.m);
        return code;
    }
    if (mirror_notice(&c.m, -ENOTDIR) != NULL) {
        *is_dir = 0;
        manifest_cleanup(&c.m);
        if ((code = mirror_remote(cli, OPEN_LIST, 0, paths, 1, NULL,
            &c)) != EXIT_OK) {
            manifest_cleanup(&c.m);
            return code;
        }
    } else if (mirror_notice(&c.m, -ENOENT) != NULL) {
        *is_dir = -1;
    }
    *dst = c.m;
    return EXIT_OK;
}

/* The destination of a pull, here: as mirror_push_dest. */
static int
mirror_pull_dest(const char *dest, struct manifest *dst, int *is_dir)
{
    struct stat st;

    manifest_init(dst);
    *is_dir = 1;
    if (stat(dest, &st) != 0) {
        *is_dir = -1;
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        *is_dir = 0;
        return manifest_scan(dst, dest);
    }
    return manifest_scan_contents(dst, dest);
}

/* Removes del[0..n) beneath the destination. Returns an exit status. */
static int
mirror_delete(struct mirror_report *rp, const struct cli *cli, const char **del,
    size_t n)
{
    const char *dest = rp->o.dest;
    const char *paths[MIRROR_DELETE_BATCH + 1];
    struct mirror_collect c;
    size_t i, k;
    int code = EXIT_OK, r, fd;

    if (cli->cmd == CMD_PUSH) {
        paths[0] = cli->remote.path;
        for (i = 0; i < n && code == EXIT_OK; i += k) {
            for (k = 0; k < MIRROR_DELETE_BATCH && i + k < n; k++)
                paths[k + 1] = del[i + k];
            code = mirror_remote(cli, OPEN_DELETE, 0, paths, k + 1, NULL, &c);
            for (size_t j = 0; j < manifest_notices(&c.m); j++) {
                const struct mnotice *no = manifest_notice_at(&c.m, j);

                output_fatal(&rp->out, no->path, no->code, no->text);
            }
            if (code == EXIT_OK && manifest_notices(&c.m) > 0)
                code = EXIT_DEST;
            manifest_cleanup(&c.m);
        }
        return code;
    }
    if (n == 0)
        return EXIT_OK;
    if ((fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        output_fatal(&rp->out, dest, -errno, ferry_strerror(-errno));
        return EXIT_DEST;
    }
    for (i = 0; i < n; i++)
        if ((r = prune_beneath(fd, del[i])) != 0) {
            char where[PROTO_MAX_PATH * 2 + 2];

            snprintf(where, sizeof(where), "%s/%s", dest, del[i]);
            output_fatal(&rp->out, where, r, ferry_strerror(r));
            code = EXIT_DEST;
        }
    close(fd);
    return code;
}

static void
mirror_summary(struct mirror_report *rp, int code)
{
    char a[32], b[32], c[32];
    struct buf jb;

    if (rp->out.json) {
        buf_init(&jb, 1 << 12);
        output_json_end(&rp->out, &jb, output_json_begin(&jb, "summary") ||
            output_json_raw(&jb, "ok", code == EXIT_OK ? "true" : "false") ||
            output_json_num(&jb, "exit_code", (uint64_t)code) ||
            output_json_raw(&jb, "dry_run", rp->dry_run ? "true" :
            "false") ||
            output_json_num(&jb, "files_send", rp->nsend) ||
            output_json_num(&jb, "bytes_send", rp->bsend) ||
            output_json_num(&jb, "files_skip", rp->nskip) ||
            output_json_num(&jb, "bytes_skip", rp->bskip) ||
            output_json_num(&jb, "files_delete", rp->ndel) ||
            output_json_num(&jb, "bytes_delete", rp->bdel) ||
            output_json_command(&jb));
        return;
    }
    if (rp->out.quiet)
        return;
    text_bytes((double)rp->bsend, a, sizeof(a));
    text_bytes((double)rp->bskip, b, sizeof(b));
    text_bytes((double)rp->bdel, c, sizeof(c));
    if (rp->dry_run)
        fprintf(stderr, "ferry: dry run: %" PRIu64 " to send (%s), %"
            PRIu64 " up to date (%s)%s%" PRIu64 "%s%s%s; nothing was "
            "changed\n", rp->nsend, a, rp->nskip, b,
            rp->out.json ? "" : ", ", rp->ndel, " to delete (", c, ")");
    else
        fprintf(stderr, "ferry: %" PRIu64 " deleted (%s)\n", rp->ndel, c);
}

/* The two trees of a push or pull: the sources in *src (a push's are
 * scanned unless scanned, its run's scan, is given), the destination in
 * *dst (is_dir as mirror_push_dest). Returns an exit status; r gets an
 * error of our own. */
static int
mirror_trees(struct mirror_report *rp, const struct cli *cli,
    const struct manifest *scanned, struct manifest *src,
    struct manifest *dst, int *is_dir, int *r)
{
    const struct manifest *s = scanned != NULL ? scanned : src;
    struct mirror_collect c;
    int code = EXIT_OK, i;

    *r = 0;
    rp->rules = &cli->filter;
    if (cli->cmd == CMD_PUSH) {
        if (scanned == NULL && (*r = filter_copy(&rp->scan_rules,
            &cli->filter)) != 0)
            return code;
        rp->rules = &rp->scan_rules;
        manifest_set_filter(src, &rp->scan_rules, 1);
        for (i = 0; scanned == NULL && i < cli->nlocal && *r == 0; i++)
            *r = manifest_scan(src, cli->local_paths[i]);
        if (*r == 0 && manifest_notices(s) > 0)
            code = mirror_source_notices(rp, s, NULL);
        if (*r == 0 && (code == EXIT_OK || code == EXIT_SOURCE)) {
            int c2 = mirror_push_dest(cli, dst, is_dir);

            code = c2 != EXIT_OK ? c2 : code;
        }
        return code;
    }
    code = mirror_remote(cli, OPEN_LIST, 0,
        (const char *const *)rp->o.sources, (size_t)rp->o.nsources,
        cli->filter.n > 0 ? &cli->filter : NULL, &c);
    *src = c.m;
    if (code == EXIT_OK)
        code = mirror_source_notices(rp, src, cli->remote.local ? "local" :
            cli->remote.host);
    if (code == EXIT_OK || code == EXIT_SOURCE)
        *r = mirror_pull_dest(rp->o.dest, dst, is_dir);
    return code;
}

int
mirror_space_need(const struct cli *cli, const struct run_opts *o,
    const struct manifest *scanned, uint64_t *need)
{
    struct mirror_report rp;
    struct manifest src, dst;
    struct arena paths;
    const char **del = NULL;
    size_t ndel = 0;
    int code, is_dir = 1, r;

    memset(&rp, 0, sizeof(rp));
    rp.out.json = cli->json;
    rp.out.quiet = cli->quiet;
    rp.o = *o;
    rp.silent = 1;
    output_init(&rp.out, &rp.x);
    manifest_init(&src);
    manifest_init(&dst);
    arena_init(&paths);
    *need = 0;
    if (cli->cmd != CMD_PUSH)
        scanned = NULL;
    code = mirror_trees(&rp, cli, scanned, &src, &dst, &is_dir, &r);
    /* A source that is missing counts nothing; the transfer says so. */
    if (code == EXIT_SOURCE)
        code = EXIT_OK;
    if (r == 0 && code == EXIT_OK) {
        mirror_find_kept(&rp, cli);
        r = mirror_compare(&rp, cli, 0, scanned != NULL ? scanned : &src,
            &dst, &paths, &del, &ndel);
    }
    if (r != 0) {
        output_fatal(&rp.out, NULL, r, ferry_strerror(r));
        code = cli->cmd == CMD_PUSH ? EXIT_SOURCE : EXIT_DEST;
    }
    *need = rp.bsend - rp.bkept;
    partial_list_free(rp.kept, rp.nkept);
    xfree(del);
    arena_cleanup(&paths);
    manifest_cleanup(&src);
    manifest_cleanup(&dst);
    filter_cleanup(&rp.scan_rules);
    return code;
}

int
mirror_main(const struct cli *cli)
{
    struct mirror_report rp;
    struct manifest src, dst;
    struct arena paths;
    const char **del = NULL;
    size_t ndel = 0;
    int code = EXIT_OK, is_dir = 1, r = 0, dest_dir, del_mode = cli->delete;
    char top[MANIFEST_REL_MAX];
    const char *dest;

    memset(&rp, 0, sizeof(rp));
    rp.out.json = cli->json;
    rp.out.quiet = cli->quiet;
    rp.out.verbose = cli->verbose;
    rp.dry_run = cli->dry_run;
    output_init(&rp.out, &rp.x);
    manifest_init(&src);
    manifest_init(&dst);
    arena_init(&paths);
    run_opts_of(cli, &rp.o);
    if (!cli->dry_run && (code = space_transfer(cli, NULL)) != EXIT_OK)
        return code;
    dest = cli->cmd == CMD_PUSH ? cli->remote.path : rp.o.dest;
    code = mirror_trees(&rp, cli, NULL, &src, &dst, &is_dir, &r);
    dest_dir = dest[0] != '\0' && dest[strlen(dest) - 1] == '/';
    if (r == 0 && (code == EXIT_OK || (code == EXIT_SOURCE &&
        cli->dry_run))) {
        /* One file into a name that is not a directory: it is renamed,
         * and a mirror deletes nothing. */
        if (manifest_single_file(&src) && is_dir != 1 && !dest_dir) {
            del_mode = 0;
            if (dst.n == 1)
                r = manifest_rename_top(&src,
                    manifest_rel(&dst, 0, top));
        }
        if (r == 0)
            r = mirror_compare(&rp, cli, del_mode, &src, &dst, &paths,
                &del, &ndel);
    }
    if (r != 0) {
        output_fatal(&rp.out, NULL, r, ferry_strerror(r));
        code = cli->cmd == CMD_PUSH ? EXIT_SOURCE : EXIT_DEST;
    }
    if (r == 0 && code == EXIT_OK && !cli->dry_run && ndel > 0)
        code = mirror_delete(&rp, cli, del, ndel);
    if (r == 0 && (cli->dry_run || ndel > 0 || cli->json))
        mirror_summary(&rp, code);
    xfree(del);
    arena_cleanup(&paths);
    manifest_cleanup(&src);
    manifest_cleanup(&dst);
    filter_cleanup(&rp.scan_rules);
    return code;
}
