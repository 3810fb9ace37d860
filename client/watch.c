#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/text.h"
#include "../engine/dest.h"
#include "../engine/manifest.h"
#include "../engine/owned.h"
#include "../engine/prune.h"
#include "../engine/xfer.h"
#include "../proto/msg.h"
#include "exitcode.h"
#include "mirror.h"
#include "output.h"
#include "space.h"

/* The runner */

static volatile sig_atomic_t watch_stop;

static void
watch_on_signal(int sig)
{
    (void)sig;
    watch_stop = 1;
}

/* Between pulls Ctrl-C ends the watch (a pull's own handling ends it in
 * a pull, and puts the default back after). */
static void
watch_catch(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = watch_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

struct watch {
    const struct cli *cli;
    struct watch_table t;
    struct output out;
    struct xfer x;
    const char *dir;      /* what each look lists */
    char *prefix;         /* owned: unit NAME is pulled from PREFIX/NAME */
    char *listed;         /* owned: dir, when it had to be made */
    const char *local;    /* where units go: LOCAL or LOCAL/BASE */
    char *local_own;      /* owned: local, when it had to be made */
    char waiting[PROTO_MAX_PATH + 160];  /* what is missing, as said */
    int localfd;
    uint64_t npulled;
    int said_damaged;     /* the record's damage was said */
};

/* {"event":"watch","action":...,"path":...,"bytes":...} or a line. */
static void
watch_say(struct watch *w, const char *action, const struct watch_unit *u,
    const char *text)
{
    char esc[1024];
    struct buf jb;

    if (w->out.json) {
        buf_init(&jb, 1 << 14);
        output_json_end(&w->out, &jb, output_json_begin(&jb, "watch") ||
            output_json_str(&jb, "action", action) ||
            (u != NULL && output_json_str(&jb, "path", u->name)) ||
            (u != NULL && output_json_num(&jb, "bytes", u->size)) ||
            (text != NULL && output_json_str(&jb, "message", text)));
        return;
    }
    if (w->out.quiet && strcmp(action, "gave_up") != 0 &&
        strcmp(action, "left_alone") != 0)
        return;
    fprintf(stderr, "ferry: watch: %s%s%s\n", u != NULL ?
        text_escape(u->name, strlen(u->name), esc, sizeof(esc)) : "",
        u != NULL && text != NULL ? ": " : "", text != NULL ? text : action);
}

/* "DIR/NAME" or "DIR/NAME/" (a directory's contents). */
static char *
watch_join(const char *dir, const char *name, int contents)
{
    size_t dl = strlen(dir);
    size_t n;
    char *p;

    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    n = dl + strlen(name) + 3;
    if ((p = xmalloc(n)) == NULL)
        return NULL;
    snprintf(p, n, "%.*s%s%s%s", (int)dl, dir, dl > 0 &&
        dir[dl - 1] != '/' ? "/" : "", name, contents ? "/" : "");
    return p;
}

/* ".NAME.ferry-watch": where a directory unit is pulled before it is
 * placed. */
static void
watch_staging(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, ".%s.ferry-watch", name);
}

/* Says once per version of u that it is left alone, and why. */
static void
watch_leave(struct watch *w, struct watch_unit *u, const char *why)
{
    char text[PROTO_MAX_PATH + 200], esc[PROTO_MAX_PATH + 64];

    if (u->left_alone)
        return;
    u->left_alone = 1;
    snprintf(text, sizeof(text), "%s/%s %s: left alone", w->local,
        text_escape(u->name, strlen(u->name), esc, sizeof(esc)), why);
    watch_say(w, "left_alone", u, text);
}

/* The record of what this watch pulled into LOCAL, opened (locked);
 * a damaged one is said once. 0 or an error (said). */
static int
watch_record(struct watch *w, struct owned *o, int create)
{
    char text[PROTO_MAX_PATH + 200];
    int r;

    owned_init(o);
    if ((r = owned_open(o, w->localfd, create)) != 0) {
        snprintf(text, sizeof(text), "%s: %s", w->local,
            dest_state_strerror(r));
        watch_say(w, "error", NULL, text);
        owned_cleanup(o);
        return r;
    }
    if (o->damaged && !w->said_damaged) {
        w->said_damaged = 1;
        snprintf(text, sizeof(text), "%s/%s/%s cannot be read as a record "
            "of what this watch pulled: what is there counts as yours, and "
            "--keep leaves it", w->local, DEST_STATE_DIR, OWNED_FILE);
        watch_say(w, "error", NULL, text);
    }
    return 0;
}

/*
 * Before u is pulled: LOCAL/NAME (and a directory's staging) must be
 * free, or be what this watch put there, unchanged. A directory's staging
 * is made here and recorded, so that a staging name found later is known
 * to be ours. Returns 1 to pull, 0 when u is left alone (said), or an
 * error (said).
 */
static int
watch_claim(struct watch *w, struct watch_unit *u)
{
    char staged[PROTO_MAX_PATH + 32], text[PROTO_MAX_PATH + 128];
    struct owned_id id;
    struct owned o;
    int r, go = 0;

    if ((r = watch_record(w, &o, 1)) != 0)
        return r;
    if (owned_check(&o, w->localfd, u->name) == OWNED_NO) {
        watch_leave(w, u, "is here and this watch did not pull it, or it "
            "changed since");
        goto out;
    }
    if (u->is_dir) {
        watch_staging(u->name, staged, sizeof(staged));
        switch (owned_check(&o, w->localfd, staged)) {
        case OWNED_NO:
            snprintf(text, sizeof(text), "cannot be pulled: %s is there "
                "and this watch did not make it (remove it)", staged);
            watch_leave(w, u, text);
            goto out;
        case OWNED_GONE:
            if (mkdirat(w->localfd, staged, 0755) != 0) {
                r = -errno;
                break;
            }
            if ((r = owned_identify(w->localfd, staged, OWNED_F_STAGING,
                &id)) != 0 || (r = owned_put(&o, staged, &id, 0, 0)) != 0 ||
                (r = owned_save(&o)) != 0)
                (void)unlinkat(w->localfd, staged, AT_REMOVEDIR);
            break;
        }
    }
    if (r != 0)
        watch_say(w, "error", u, ferry_strerror(r));
    go = r == 0;
out:
    owned_cleanup(&o);
    return r != 0 ? r : go;
}

/* Puts the staged directory in place of the unit's local copy (ours, as
 * watch_commit checked), at once: swapped with the old copy, which then
 * goes. */
static int
watch_place_dir(struct watch *w, const char *staged, const char *name)
{
    if (renameat2(w->localfd, staged, w->localfd, name,
        RENAME_EXCHANGE) == 0)
        return prune_beneath(w->localfd, staged);
    if (errno != ENOENT)
        return -errno;
    return renameat(w->localfd, staged, w->localfd, name) == 0 ? 0 : -errno;
}

/*
 * After a pull of u succeeded: a directory is placed (unless something
 * not ours took its name meanwhile), then what LOCAL/NAME is now is
 * recorded as this watch's. Returns 1 when u is here, 0 when it was left
 * alone, or an error (said).
 */
static int
watch_commit(struct watch *w, struct watch_unit *u)
{
    char staged[PROTO_MAX_PATH + 32];
    struct owned_id id;
    struct owned o;
    int r, here = 0;

    if ((r = watch_record(w, &o, 1)) != 0)
        return r;
    if (u->is_dir) {
        watch_staging(u->name, staged, sizeof(staged));
        if (owned_check(&o, w->localfd, u->name) == OWNED_NO) {
            watch_leave(w, u, "appeared here during its pull");
            goto out;
        }
        if ((r = watch_place_dir(w, staged, u->name)) != 0)
            goto out;
        owned_drop(&o, staged);
    }
    here = 1;
    if ((r = owned_identify(w->localfd, u->name, 0, &id)) == 0 &&
        (r = owned_put(&o, u->name, &id, u->mtime_sec, u->mtime_nsec)) ==
        FERRY_ERR_TOO_LARGE) {
        watch_say(w, "error", u, "not recorded (the record of what this "
            "watch pulled is full): --keep will leave it");
        r = 0;
    }
    if (r == 0)
        r = owned_save(&o);
out:
    if (r != 0)
        watch_say(w, "error", u, ferry_strerror(r));
    owned_cleanup(&o);
    return r != 0 ? r : here;
}

/* Delta for a directory unit */

/*
 * A directory unit is pulled into a fresh staging directory, where no
 * file finds a basis beside it: its files are built from those at the
 * same paths in its own older version here, else in the newest other
 * directory unit here (the last checkpoint's shards). "LOCAL/NAME" to
 * free, or NULL.
 */
static char *
watch_basis_dir(struct watch *w, const struct watch_unit *u)
{
    const struct watch_unit *best = NULL, *v;
    struct stat st;
    size_t i;

    if (!(w->cli->delta_flags & OPEN_F_BASIS_AUTO))
        return NULL;
    for (i = 0; i < w->t.n; i++) {
        v = &w->t.v[i];
        if (!v->is_dir || fstatat(w->localfd, v->name, &st,
            AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (v == u)
            return watch_join(w->local, v->name, 0);
        if (best == NULL || watch_unit_cmp(&v, &best) < 0)
            best = v;
    }
    return best != NULL ? watch_join(w->local, best->name, 0) : NULL;
}

/* One unit, by a pull of its own. Returns its exit status. */
static int
watch_pull(struct watch *w, struct watch_unit *u)
{
    struct run_opts o;
    char *src = watch_join(w->prefix, u->name, u->is_dir);
    char staged[PROTO_MAX_PATH + 32], *dst = NULL;
    char *rp[1], *basis = u->is_dir ? watch_basis_dir(w, u) : NULL;
    const struct watch_unit *last;
    struct stat st;
    int code;

    watch_staging(u->name, staged, sizeof(staged));
    dst = u->is_dir ? watch_join(w->local, staged, 0) :
        watch_join(w->local, "", 0);
    if (src == NULL || dst == NULL) {
        xfree(src);
        xfree(dst);
        xfree(basis);
        return EXIT_DEST;
    }
    rp[0] = src;
    run_opts_of(w->cli, &o);
    o.sources = rp;
    o.nsources = 1;
    o.dest = dst;
    /* A unit is one pull of its own: no volumes, so that every file is
     * checked for a known format cut short before it is committed. */
    o.whole_formats = 1;
    o.pack_threshold = 0;
    o.basis_dir = basis;
    if (!u->is_dir && o.basis == NULL &&
        (w->cli->delta_flags & OPEN_F_BASIS_AUTO) &&
        (last = watch_basis_unit(&w->t, u)) != NULL &&
        fstatat(w->localfd, last->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
        o.basis = last->name;
    code = space_transfer(w->cli, &o);
    watch_catch();
    xfree(src);
    xfree(dst);
    xfree(basis);
    return code;
}

/* Orders entries of a record (indices) newest first by their order, then
 * by name. */
static int
watch_owned_cmp(const void *a, const void *b, void *arg)
{
    const struct owned *o = arg;
    const struct owned_entry *x = &o->v[*(const size_t *)a];
    const struct owned_entry *y = &o->v[*(const size_t *)b];

    if (x->order_sec != y->order_sec)
        return x->order_sec > y->order_sec ? -1 : 1;
    if (x->order_nsec != y->order_nsec)
        return x->order_nsec > y->order_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/*
 * --keep N: of the units this watch pulled into LOCAL (its record) and
 * nobody changed since, those beyond the N newest go. Nothing else in
 * LOCAL is touched, whatever the box lists: a pulled unit that was
 * changed here is the user's now (said, and forgotten by the record),
 * and one that is gone is forgotten.
 */
static void
watch_keep(struct watch *w)
{
    enum { K_OURS, K_FORGET, K_PRUNED };
    struct owned o;
    size_t *idx = NULL, i, n = 0, nk = 0;
    int *state = NULL, r, st;

    if (watch_record(w, &o, 0) != 0)
        return;
    if ((idx = xcalloc(o.n + 1, sizeof(*idx))) == NULL ||
        (state = xcalloc(o.n + 1, sizeof(*state))) == NULL)
        goto out;
    for (i = 0; i < o.n; i++) {
        struct owned_entry *e = &o.v[i];
        struct watch_unit *u, tmp;

        state[i] = K_OURS;
        st = owned_check(&o, w->localfd, e->name);
        if (e->id.flags & OWNED_F_STAGING) {
            /* A pull under way or cut keeps its staging directory. */
            state[i] = st == OWNED_YES ? K_OURS : K_FORGET;
            continue;
        }
        if (st == OWNED_YES) {
            idx[n++] = i;
            continue;
        }
        state[i] = K_FORGET;
        if (st != OWNED_NO)
            continue;
        if ((u = watch_unit_find(&w->t, e->name)) == NULL) {
            memset(&tmp, 0, sizeof(tmp));
            tmp.name = e->name;
            u = &tmp;
        }
        u->left_alone = 0;
        watch_leave(w, u, "changed here since this watch pulled it");
    }
    qsort_r(idx, n, sizeof(*idx), watch_owned_cmp, &o);
    for (nk = (size_t)w->cli->keep; nk < n; nk++) {
        struct owned_entry *e = &o.v[idx[nk]];
        struct watch_unit *u = watch_unit_find(&w->t, e->name), tmp;

        if (u == NULL) {
            memset(&tmp, 0, sizeof(tmp));
            tmp.name = e->name;
            tmp.size = e->id.size;
            u = &tmp;
        }
        if ((r = prune_beneath(w->localfd, e->name)) != 0) {
            watch_say(w, "error", u, ferry_strerror(r));
            continue;
        }
        state[idx[nk]] = K_PRUNED;
        u->pulled = 0;
        u->here = 0;
        watch_say(w, "removed", u, "removed (--keep)");
    }
    /* Last first, so the indices before stay valid. */
    for (i = o.n; i-- > 0;)
        if (state[i] != K_OURS)
            owned_drop(&o, o.v[i].name);
    if ((r = owned_save(&o)) != 0)
        watch_say(w, "error", NULL, ferry_strerror(r));
out:
    xfree(idx);
    xfree(state);
    owned_cleanup(&o);
}

/* What is not there yet (a directory that does not exist, a glob that
 * matches nothing): said once, and again when it changes. */
static void
watch_waiting(struct watch *w, const struct manifest *m)
{
    char text[sizeof(w->waiting)];
    const struct mnotice *mn;

    text[0] = '\0';
    if (manifest_notices(m) > 0) {
        mn = manifest_notice_at(m, 0);
        snprintf(text, sizeof(text), "%s: %s; looking again every %d s",
            w->cli->remote_paths[0], mn->text, w->cli->watch_s);
    }
    if (strcmp(text, w->waiting) == 0)
        return;
    if (text[0] != '\0')
        watch_say(w, "waiting", NULL, text);
    else
        watch_say(w, "watching", NULL, "there now: watching it");
    snprintf(w->waiting, sizeof(w->waiting), "%s", text);
}

/*
 * What the source means, as in a plain pull: DIR/ watches DIR's entries
 * into LOCAL; DIR (no trailing slash) watches them into LOCAL/DIR's
 * name; a glob (in the last component) watches its matches into LOCAL.
 */
static int
watch_source(struct watch *w, const char *src, const char *local)
{
    size_t n = strlen(src), b;
    const char *base;

    while (n > 1 && src[n - 1] == '/')
        n--;
    for (b = n; b > 0 && src[b - 1] != '/'; b--)
        ;
    base = src + b;
    w->local = local;
    if (strpbrk(base, "*?[") != NULL && memchr(base, '/', n - b) == NULL) {
        /* The matches' directory: what the agent expands them in. */
        w->dir = src;
        w->prefix = xstrndup(src, b > 1 ? b - 1 : b);
    } else if (src[strlen(src) - 1] == '/' || (n == 1 && src[0] == '~')) {
        w->dir = src;
        w->prefix = xstrndup(src, strlen(src));
    } else {
        if ((w->listed = xmalloc(n + 2)) != NULL)
            snprintf(w->listed, n + 2, "%.*s/", (int)n, src);
        w->dir = w->listed;
        w->prefix = xstrndup(src, n);
        /* base has no trailing '/' here: src does not end with one. */
        w->local_own = watch_join(local, base, 0);
        w->local = w->local_own;
        if (mkdir(local, 0777) != 0 && errno != EEXIST)
            return -errno;
    }
    return w->dir != NULL && w->prefix != NULL && w->local != NULL ? 0 :
        FERRY_ERR_NOMEM;
}

/* The watch's own summary, as every run ends with one: units pulled
 * (a version each) and given up. */
static void
watch_summary(struct watch *w, int code)
{
    struct output_summary sum;

    memset(&sum, 0, sizeof(sum));
    sum.exit_code = code;
    sum.error = code == EXIT_INTERRUPTED ? "interrupted" : "watch ended";
    output_summary(&w->out, &sum);
}

static void
watch_source_free(struct watch *w)
{
    xfree(w->prefix);
    xfree(w->listed);
    xfree(w->local_own);
    w->prefix = w->listed = w->local_own = NULL;
}

/* One look: list, then pull what is ready. 0, or the exit status that
 * ends the watch. */
static int
watch_once(struct watch *w)
{
    struct watch_unit **tmp;
    struct manifest m;
    uint8_t *states = NULL;
    char text[PROTO_MAX_PATH + 160];
    size_t n, i;
    int code, r, again;

    code = mirror_list(w->cli, w->dir, &m, &states);
    watch_catch();
    if (code != EXIT_OK) {
        xfree(states);
        manifest_cleanup(&m);
        if (code == EXIT_INTERRUPTED || code == EXIT_USAGE)
            return code;
        snprintf(text, sizeof(text), "cannot list %s now (exit %d); "
            "looking again in %d s", w->dir, code, w->cli->watch_s);
        watch_say(w, "unreachable", NULL, text);
        return 0;
    }
    watch_waiting(w, &m);
    /* An agent that cannot judge files lists no states: every unit then
     * waits for its quiet looks. */
    w->t.states = states != NULL && m.n > 0 ? states : NULL;
    r = watch_look(&w->t, &m);
    w->t.states = NULL;
    xfree(states);
    manifest_cleanup(&m);
    if (r == FERRY_ERR_INTERRUPTED)
        return EXIT_INTERRUPTED;
    if (r != 0 || (tmp = xcalloc(w->t.n + 1, sizeof(*tmp))) == NULL)
        return EXIT_DEST;
    for (i = 0; i < w->t.n; i++)
        if (w->t.v[i].seen && watch_unit_incomplete(&w->t.v[i]))
            watch_say(w, "incomplete", &w->t.v[i], "cut short and no "
                "process is writing it: not pulled until it is whole");
    n = watch_ready(&w->t, w->cli->keep, tmp);
    for (i = 0; i < n && !watch_stop; i++) {
        struct watch_unit *u = tmp[i];

        if ((r = watch_claim(w, u)) == 0)
            continue;
        /* A version of it was pulled before: this one replaces it. */
        again = u->here;
        code = r < 0 ? EXIT_DEST : watch_pull(w, u);
        if (code == EXIT_INTERRUPTED)
            break;
        if (code == EXIT_OK && (r = watch_commit(w, u)) == 0)
            continue;
        if (code == EXIT_OK && r > 0) {
            watch_pulled(u);
            w->npulled++;
            xfer_add(&w->x.st.files_sent, 1);
            xfer_add(&w->x.st.files_total, 1);
            xfer_add(&w->x.st.bytes_total, u->size);
            xfer_add(&w->x.st.bytes_payload, u->size);
            if (again)
                watch_say(w, "changed", u, "changed after it was pulled: "
                    "replaced by the new version");
            else
                watch_say(w, "pulled", u, "pulled");
            if (w->cli->keep > 0)
                watch_keep(w);
            continue;
        }
        if (watch_failed(u)) {
            xfer_add(&w->x.st.files_failed, 1);
            xfer_add(&w->x.st.files_total, 1);
            snprintf(text, sizeof(text), "failed %d times in a row, given "
                "up: does it change faster than it can be pulled? Write "
                "checkpoints under a new name and rename them, or use "
                "--ready-marker", WATCH_MAX_FAILURES);
            watch_say(w, "gave_up", u, text);
        }
    }
    xfree(tmp);
    return code == EXIT_INTERRUPTED ? code : 0;
}

int
watch_main(const struct cli *cli)
{
    struct watch w;
    struct timespec nap = { 0, 100000000 };
    uint64_t next;
    int code = 0;

    memset(&w, 0, sizeof(w));
    w.cli = cli;
    w.t.marker = cli->ready_marker;
    /* Looks in a row the same, beyond the first, that --settle takes. */
    w.t.settle = cli->settle_s > 0 ? (unsigned)((cli->settle_s +
        cli->watch_s - 1) / cli->watch_s) : 1;
    w.t.stop = &watch_stop;
    w.out.json = cli->json;
    w.out.quiet = cli->quiet;
    output_init(&w.out, &w.x);
    /* LOCAL as a pull's DEST: its last component made, its missing
     * parents only with --mkpath. */
    if ((code = dest_mkdir(cli->local_paths[0], 0, cli->mkpath ?
        OPEN_F_MKPATH : 0, &w.x)) != 0)
        return output_fatal_early(cli->json, cli->quiet, NULL, code,
            w.x.local_error, EXIT_DEST);
    if ((code = watch_source(&w, cli->remote_paths[0],
        cli->local_paths[0])) != 0 ||
        (mkdir(w.local, 0777) != 0 && errno != EEXIST && (code = -errno)) ||
        (w.localfd = open(w.local, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        if (code == 0)
            code = -errno;
        code = output_fatal_early(cli->json, cli->quiet, w.local != NULL ?
            w.local : cli->local_paths[0], code, ferry_strerror(code),
            EXIT_DEST);
        watch_source_free(&w);
        return code;
    }
    watch_stop = 0;
    watch_catch();
    while (!watch_stop && code == 0) {
        /* Looks begin every watch_s, however long the last one (its
         * listing's login, its pulls) took: a file closed just after a
         * look's listing waits the interval, not the interval and that
         * look too. */
        next = clock_ms() + (uint64_t)cli->watch_s * 1000;
        code = watch_once(&w);
        while (code == 0 && !watch_stop && clock_ms() < next)
            nanosleep(&nap, NULL);
    }
    close(w.localfd);
    watch_table_cleanup(&w.t);
    watch_source_free(&w);
    if (code == 0 || code == EXIT_INTERRUPTED) {
        output_fatal(&w.out, NULL, FERRY_ERR_INTERRUPTED,
            "watch: interrupted");
        code = EXIT_INTERRUPTED;
    }
    watch_summary(&w, code);
    return code;
}
