/*
 * roles_run.c: the rest of the harness of roles.h: stepping the roles,
 * playing scripts, the fixtures of each role, the destination as text,
 * and two sides pumped against each other.
 */
#include "roles.h"

#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../engine/manifest.h"
#include "../../engine/volume/volrecv.h"
#include "../../engine/volume/volsend.h"
#include "../../proto/frame.h"
#include "../../proto/msg_filter.h"
#include "../../proto/msg_space.h"

/* Stepping. */

static atomic_uint rt_woken;

static void
rt_wake(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&rt_woken, 1);
}

void
rt_waker_set(struct xfer *x)
{
    waker_set(&x->wake, rt_wake, NULL);
}

unsigned
rt_wakes(void)
{
    return atomic_load(&rt_woken);
}

void
rt_wait_wake(unsigned seen)
{
    int i;

    for (i = 0; i < 10000 && atomic_load(&rt_woken) == seen; i++)
        usleep(1000);
    if (atomic_load(&rt_woken) == seen)
        check_fail(__FILE__, __LINE__, "a step waits for a wake that "
            "never comes");
}

/* One step of stream k with input (and the steps a role asks for with
 * more, or once the thread it waits for wakes it: as the conn would).
 * Returns what the step returned. */
static int
rt_step(struct rt *rt, unsigned k, const uint8_t *in, size_t len, int eof)
{
    struct conn_step st;
    struct buf out;
    int r, i, poke = 0;
    unsigned j, seen;

    buf_init(&out, (size_t)1 << 30);
    for (i = 0; i < 100000; i++) {
        seen = rt_wakes();
        memset(&st, 0, sizeof(st));
        st.in = in;
        st.in_len = len;
        st.eof = eof;
        st.out = &out;
        r = rt->step(rt->role[k], &st);
        rt_render(rt, k, buf_ptr(&out), buf_used(&out));
        buf_reset(&out);
        if (rt->c->each_step != NULL)
            rt->c->each_step(rt);
        poke |= st.poke;
        if (r == 0 && !st.done && !st.more && st.wait_wake) {
            /* A scripted scan (.live) wakes it as the script goes on;
             * RT_SCAN_ADD and RT_SCAN_END check that it does. */
            if (rt->c->live && rt_wakes() == seen) {
                rt->waiting = 1;
                break;
            }
            rt_wait_wake(seen);
            rt->wakes++;
            in = NULL;
            len = 0;
            continue;
        }
        if (r != 0 || st.done || !st.more)
            break;
        /* more: stepped again without input */
        in = NULL;
        len = 0;
    }
    buf_cleanup(&out);
    /* As the conns of a group: the others are stepped once. */
    if (r == 0 && poke && !rt->poking) {
        rt->poking = 1;
        for (j = 0; j < RT_MAX_STREAMS; j++)
            if (j != k && rt->role[j] != NULL)
                CHECK_OK(rt_step(rt, j, NULL, 0, 0));
        rt->poking = 0;
    }
    return r;
}

/* Idle steps on every stream until none has anything more to say. */
static void
rt_settle(struct rt *rt, unsigned nstreams)
{
    size_t before;
    unsigned k;
    int round;

    for (round = 0; round < 100; round++) {
        before = rt->out_len;
        for (k = 0; k < nstreams; k++)
            if (rt->role[k] != NULL)
                CHECK_OK(rt_step(rt, k, NULL, 0, 0));
        if (rt->out_len == before)
            return;
    }
    check_fail(__FILE__, __LINE__, "the roles never settle");
}

static unsigned
rt_nstreams(const struct rt_frame *script)
{
    unsigned n = 1;
    size_t i;

    for (i = 0; i < RT_MAX_FRAMES && script[i].type != 0; i++)
        if (script[i].stream + 1u > n)
            n = script[i].stream + 1u;
    CHECK(n <= RT_MAX_STREAMS);
    return n;
}

/* A source file changes: its mtime moves (to a time long past, as the
 * clock may not have moved since it was written). */
static void
rt_touch(struct rt *rt, const char *rel)
{
    struct timespec ts[2] = { { RT_MTIME, 1 }, { RT_MTIME, 1 } };
    char p[CHECK_PATH_MAX];

    rt_path(rt, rel, p);
    CHECK_EQ_INT(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* Makes stream k's role when a script first uses it (sessions that
 * join one opened by stream 0). */
typedef void rt_lazy_fn(struct rt *rt, unsigned k);

/*
 * Plays a script: each element is one step (with its frames) of its
 * stream. Every step but the last must return 0; returns what the last
 * returned.
 */
static int
rt_play(struct rt *rt, const struct rt_frame *script, rt_lazy_fn *lazy)
{
    struct buf in;
    size_t i;
    int r = 0;

    buf_init(&in, (size_t)1 << 30);
    for (i = 0; i < RT_MAX_FRAMES && script[i].type != 0; i++) {
        const struct rt_frame *fr = &script[i];

        size_t j = i;

        if (fr->type == RT_TOUCH) {
            rt_touch(rt, fr->s);
            continue;
        }
        if (fr->type == RT_SCAN_ADD || fr->type == RT_SCAN_END) {
            unsigned seen = rt_wakes();

            if (fr->type == RT_SCAN_ADD)
                CHECK_OK(manifest_add_listed(&rt->live_mf, fr->s,
                    ENTRY_DIR, 0755, 0, RT_MTIME, 0));
            else
                manifest_live_end(&rt->live_mf, fr->code);
            /* A sender that waits for the scan is woken by it. */
            if (rt->waiting)
                CHECK(rt_wakes() != seen);
            rt->waiting = 0;
            continue;
        }
        if (fr->type == RT_LOST) {
            unsigned k;

            CHECK(rt->side != NULL);
            side_stream_end(rt->side, fr->stream);
            rt->role[fr->stream] = NULL;
            rt->snd[fr->stream] = NULL;
            rt->rcv[fr->stream] = NULL;
            /* A poke: the others are stepped once. */
            if (side_stream_lost(rt->side, fr->stream))
                for (k = 0; k < RT_MAX_STREAMS; k++)
                    if (rt->role[k] != NULL)
                        CHECK_OK(rt_step(rt, k, NULL, 0, 0));
            continue;
        }
        if (fr->type == RT_TRUNCATE) {
            char p[CHECK_PATH_MAX];

            rt_path(rt, fr->s, p);
            CHECK_EQ_INT(truncate(p, (off_t)fr->a), 0);
            continue;
        }
        if (rt->role[fr->stream] == NULL && lazy != NULL)
            lazy(rt, fr->stream);
        CHECK(rt->role[fr->stream] != NULL);
        buf_reset(&in);
        /* Elements marked BATCH go in one step with the next. */
        for (;; j++) {
            if (script[j].type != RT_EOF && script[j].type != RT_IDLE)
                rt_encode(rt, &script[j], &in);
            if (!script[j].batch || j + 1 >= RT_MAX_FRAMES)
                break;
        }
        check_note("%s: step %zu", rt->c->name, i);
        r = rt_step(rt, fr->stream, buf_ptr(&in), buf_used(&in),
            script[j].type == RT_EOF);
        i = j;
        if (i + 1 < RT_MAX_FRAMES && script[i + 1].type != 0)
            CHECK_OK(r);
    }
    check_note_clear();
    buf_cleanup(&in);
    return r;
}

int
rt_feed_bytes(struct rt *rt, unsigned k, const uint8_t *p, size_t n)
{
    return rt_step(rt, k, p, n, 0);
}

int
rt_feed_eof(struct rt *rt, unsigned k)
{
    return rt_step(rt, k, NULL, 0, 1);
}

int
rt_feed(struct rt *rt, const struct rt_frame *fr)
{
    struct buf in;
    int r;

    buf_init(&in, (size_t)1 << 30);
    rt_encode(rt, fr, &in);
    r = rt_step(rt, fr->stream, buf_ptr(&in), buf_used(&in), 0);
    buf_cleanup(&in);
    return r;
}

/* The destination as text. */

static int
rt_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
rt_append(char *out, size_t len, const char *fmt, ...) FERRY_PRINTF(3, 4);

static void
rt_append(char *out, size_t len, const char *fmt, ...)
{
    size_t used = strlen(out);
    va_list ap;
    int n;

    if (used > 0 && used + 1 < len)
        out[used++] = ' ';
    va_start(ap, fmt);
    n = vsnprintf(out + used, len - used, fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < len - used);
}

/* A short fingerprint of the file at p. */
static unsigned
rt_fingerprint(const char *p, uint64_t size)
{
    uint8_t *buf = check_alloc(size > 0 ? size : 1);
    unsigned h;
    int fd;

    CHECK((fd = open(p, O_RDONLY)) >= 0);
    CHECK(read(fd, buf, size) == (ssize_t)size);
    close(fd);
    h = (unsigned)hash_name64(buf, size);
    free(buf);
    return h;
}

static void
rt_tree_walk(const struct rt *rt, const char *top, const char *rel,
    int exact, char *out, size_t len)
{
    char p[CHECK_PATH_MAX], sub[CHECK_PATH_MAX], target[CHECK_PATH_MAX];
    char **names = NULL;
    size_t n = 0, i;
    struct dirent *de;
    struct stat st;
    ssize_t tn;
    DIR *dir;

    CHECK(snprintf(p, sizeof(p), "%s%s%s", top, rel[0] ? "/" : "", rel) <
        (int)sizeof(p));
    CHECK((dir = opendir(p)) != NULL);
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        names = realloc(names, (n + 1) * sizeof(*names));
        CHECK(names != NULL && (names[n++] = strdup(de->d_name)) != NULL);
    }
    closedir(dir);
    if (n > 1)
        qsort(names, n, sizeof(*names), rt_name_cmp);
    for (i = 0; i < n; i++) {
        const struct rt_file *f;

        CHECK(snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "",
            names[i]) < (int)sizeof(sub));
        CHECK(snprintf(p, sizeof(p), "%s/%s", top, sub) < (int)sizeof(p));
        CHECK_EQ_INT(lstat(p, &st), 0);
        if (S_ISDIR(st.st_mode) && rel[0] == '\0' &&
            strcmp(names[i], DEST_STATE_DIR) == 0) {
            rt_append(out, len, "%s/", sub);
        } else if (S_ISDIR(st.st_mode)) {
            if (exact)
                rt_append(out, len, "%s/:%o:%lld", sub,
                    (unsigned)(st.st_mode & 07777),
                    (long long)st.st_mtim.tv_sec);
            else
                rt_append(out, len, "%s/", sub);
            rt_tree_walk(rt, top, sub, exact, out, len);
        } else if (S_ISREG(st.st_mode) && exact) {
            rt_append(out, len, "%s=%lld#%08x:%o:%lld.%09ld", sub,
                (long long)st.st_size, rt_fingerprint(p,
                (uint64_t)st.st_size), (unsigned)(st.st_mode & 07777),
                (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        } else if (S_ISREG(st.st_mode)) {
            f = rt_file_at(rt, sub);
            rt_append(out, len, "%s=%lld%s", sub, (long long)st.st_size,
                f != NULL && ((uint64_t)st.st_size != f->size ||
                !rt_same_content(p, f)) ? "!" : "");
        } else if (S_ISLNK(st.st_mode)) {
            CHECK((tn = readlink(p, target, sizeof(target) - 1)) >= 0);
            rt_append(out, len, "%s->%.*s", sub, (int)tn, target);
        } else {
            rt_append(out, len, "%s?", sub);
        }
        free(names[i]);
    }
    free(names);
}

static void
rt_tree_mode(const struct rt *rt, const char *dir, int exact, char *out,
    size_t len)
{
    char p[CHECK_PATH_MAX];
    struct stat st;

    rt_path(rt, dir, p);
    out[0] = '\0';
    if (lstat(p, &st) != 0) {
        snprintf(out, len, "-");
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(out, len, "%s", S_ISREG(st.st_mode) ? "!dir" : "-");
        return;
    }
    rt_tree_walk(rt, p, "", exact, out, len);
}

void
rt_tree(const struct rt *rt, const char *dir, char *out, size_t len)
{
    rt_tree_mode(rt, dir, 0, out, len);
}

void
rt_tree_exact(const struct rt *rt, const char *dir, char *out, size_t len)
{
    rt_tree_mode(rt, dir, 1, out, len);
}

/* The fixtures. */

void
rt_open_receiver(struct rt *rt, unsigned n)
{
    const struct rt_case *c = rt->c;
    char p[CHECK_PATH_MAX], tops[256], *names[8], *save, *t;
    size_t ntops = 0;
    unsigned k;

    rt_path(rt, c->dest != NULL ? c->dest : "dest", p);
    CHECK((rt->side = side_new_recv(p, c->flags, rt_tid, RT_BS, &rt->x)) !=
        NULL);
    rt->d = side_dest(rt->side);
    rt->in = side_incoming(rt->side);
    /* As a pull's client: the sender far away hears of a lost stream. */
    side_set_tell_lost(rt->side);
    if (c->basis_dir != NULL) {
        rt_path(rt, c->basis_dir, p);
        CHECK_OK(dest_set_basis_dir(rt->d, p));
    }
    if (c->adopt != NULL)
        CHECK_OK(dest_set_adopt(rt->d, c->adopt));
    if (c->whole_formats)
        incoming_set_whole_formats(rt->in, 1);
    if (c->kept) {
        rt_path(rt, "kept", p);
        CHECK_OK(keptsig_store_open(p, &rt->ks));
        incoming_set_keptsig(rt->in, rt->ks);
    }
    if (c->tops != NULL) {
        snprintf(tops, sizeof(tops), "%s", c->tops);
        for (t = strtok_r(tops, " ", &save); t != NULL && ntops < 8;
            t = strtok_r(NULL, " ", &save))
            names[ntops++] = t;
        side_set_tops(rt->side, (const char *const *)names, ntops);
    }
    for (k = 0; k < n; k++) {
        CHECK_OK(side_stream(rt->side, k, &rt->step, &rt->role[k]));
        CHECK((rt->rcv[k] = side_receiver(rt->side, k)) == rt->role[k]);
    }
}

void
rt_close(struct rt *rt)
{
    unsigned k;

    /* Joined sessions borrow what stream 0's owns; a client's sessions
     * borrow their senders. */
    for (k = RT_MAX_STREAMS; k-- > 0;) {
        session_free(rt->sess[k]);
        rt->sess[k] = NULL;
        rt->rcv[k] = NULL;
        rt->snd[k] = NULL;
        rt->role[k] = NULL;
    }
    /* The transfer ends as a client's run ends it. */
    if (rt->plan != NULL)
        plan_end(rt->plan);
    side_free(rt->side);
    rt->side = NULL;
    keptsig_store_close(rt->ks);
    rt->ks = NULL;
    manifest_cleanup(&rt->live_mf);
    rt->in = NULL;
    rt->d = NULL;
    rt->plan = NULL;
}

static void
rt_open_sender(struct rt *rt, unsigned n)
{
    char p[CHECK_PATH_MAX];
    struct manifest mf;
    unsigned k;

    struct volsend_opts o = { rt->c->pack, rt->c->volume_size, 0, 0, 0,
        rt->c->volume_files };
    /* Rows that pack nothing run without a packer. */
    const struct volsend_opts *vo = rt->c->pack > 0 || rt->c->packer_off ?
        &o : NULL;

    rt_path(rt, rt->c->src != NULL ? rt->c->src : "src", p);
    manifest_init(&mf);
    if (rt->c->live) {
        manifest_live_begin(&rt->live_mf);
        CHECK_OK(manifest_scan(&rt->live_mf, p));
        CHECK((rt->side = side_new_send(&rt->live_mf, 1, RT_BS,
            rt->c->flags, vo, &rt->x)) != NULL);
    } else {
        CHECK_OK(manifest_scan(&mf, p));
        manifest_set_hash_hint(&mf, rt->c->hint, rt);
        CHECK((rt->side = side_new_send(&mf, 0, RT_BS, rt->c->flags, vo,
            &rt->x)) != NULL);
    }
    manifest_cleanup(&mf);
    rt->plan = side_plan(rt->side);
    for (k = 0; k < n; k++) {
        CHECK_OK(side_stream(rt->side, k, &rt->step, &rt->role[k]));
        CHECK((rt->snd[k] = side_sender(rt->side, k)) == rt->role[k]);
    }
}

/* The first step of every stream, which has no input: a role may speak
 * first. */
static void
rt_start(struct rt *rt, unsigned n)
{
    unsigned k;

    for (k = 0; k < n; k++)
        if (rt->role[k] != NULL)
            CHECK_OK(rt_step(rt, k, NULL, 0, 0));
}

/* What every case checks after its script, before the roles go. */
static void
rt_expect(struct rt *rt, int r, unsigned n)
{
    const struct rt_case *c = rt->c;
    const char *want = c->out != NULL ? c->out : "";

    check_note("%s", c->name);
    CHECK_EQ_ERR(r, c->err);
    if (r == 0)
        rt_settle(rt, n);
    CHECK_EQ_STR(rt->out, want);
}

/* ... and once they are gone. */
static void
rt_expect_after(struct rt *rt)
{
    const struct rt_case *c = rt->c;
    char tree[RT_TEXT_MAX];
    const char *dest = c->dest != NULL ? c->dest : "dest";
    const char *want = c->tree != NULL ? c->tree : "-";
    char top[64];

    snprintf(top, sizeof(top), "%.*s", (int)strcspn(dest, "/"), dest);
    rt_tree(rt, top, tree, sizeof(tree));
    CHECK_EQ_STR(tree, want);
    if (c->check != NULL)
        c->check(rt);
    check_note_clear();
    rt_finish(rt);
}

/* A case's scratch root (with the sender's source for source), set up
 * as the row says. */
static struct rt *
rt_begin(const struct rt_case *c, int source)
{
    struct rt *rt = check_alloc(sizeof(*rt));

    rt_init(rt, c);
    if (source)
        rt_make_source(rt);
    if (c->setup != NULL)
        c->setup(rt);
    return rt;
}

/* The rest of a case once its roles exist: the script, what it must
 * give, the end. */
static void
rt_conclude(struct rt *rt, unsigned n, rt_lazy_fn *lazy)
{
    int r;

    rt_start(rt, n);
    r = rt_play(rt, rt->c->script, lazy);
    rt_expect(rt, r, n);
    rt_close(rt);
    rt_expect_after(rt);
    free(rt);
}

void
rt_receiver_case(const struct rt_case *c)
{
    struct rt *rt = rt_begin(c, 0);
    unsigned n;

    if (c->before[0].type != 0) {
        n = rt_nstreams(c->before);
        rt_open_receiver(rt, n);
        rt_start(rt, n);
        CHECK_OK(rt_play(rt, c->before, NULL));
        rt_close(rt);
        rt->out_len = 0;
        rt->out[0] = '\0';
        if (c->between != NULL)
            c->between(rt);
    }
    n = rt_nstreams(c->script);
    rt_open_receiver(rt, n);
    rt_conclude(rt, n, NULL);
}

void
rt_sender_case(const struct rt_case *c)
{
    struct rt *rt = rt_begin(c, 1);
    unsigned n = rt_nstreams(c->script);

    rt_open_sender(rt, n);
    rt_conclude(rt, n, NULL);
}

/* The OPEN of a client's push into paths[0]. */
static void
rt_push_open(struct session_open *o, const char *const *paths,
    uint32_t flags)
{
    memset(o, 0, sizeof(*o));
    o->op = OPEN_PUSH;
    o->flags = flags;
    o->block_size = RT_BS;
    memcpy(o->transfer_id, rt_tid, sizeof(o->transfer_id));
    memcpy(o->transfer_key, rt_tkey, sizeof(o->transfer_key));
    o->paths = paths;
    o->npaths = 1;
}

/* A session of a further stream: one that joins the transfer stream 0
 * opened, or with unjoined one that opened nothing. */
static void
rt_lazy_session(struct rt *rt, unsigned k)
{
    rt->sess[k] = rt->c->unjoined ? session_agent_new(&rt->x, &rt->spol) :
        session_agent_join(rt->sess[0]);
    CHECK(rt->sess[k] != NULL);
    rt->role[k] = rt->sess[k];
    CHECK_OK(rt_step(rt, k, NULL, 0, 0));
}

void
rt_session_case(const struct rt_case *c)
{
    struct rt *rt = rt_begin(c, 1);
    const char *paths[2] = { "dest", c->adopt };
    struct session_open o;
    unsigned n = rt_nstreams(c->script), k;

    if (c->client) {
        /* A push: the client's sessions run senders (with the row's
         * flags; --adopt's DIR after the destination). */
        rt_open_sender(rt, n);
        rt_push_open(&o, paths, c->flags);
        o.npaths = c->adopt != NULL ? 2 : 1;
        for (k = 0; k < n; k++) {
            o.stream = (uint16_t)k;
            CHECK((rt->sess[k] = session_client_new(&o, sender_step,
                rt->snd[k], &rt->x)) != NULL);
            rt->role[k] = rt->sess[k];
        }
    } else {
        CHECK((rt->sess[0] = session_agent_new(&rt->x, &rt->spol)) != NULL);
        rt->role[0] = rt->sess[0];
    }
    rt->step = session_step;
    rt_conclude(rt, n, rt_lazy_session);
}

/* Torture. */

/* After a run armed with alloc_fail_at(n): 1 if the run made fewer than n
 * allocations (the failure never came). Disarms. */
static int
rt_unused(unsigned long n)
{
    unsigned long i;
    int unused = 0;
    void *p;

    for (i = 0; i < n && !unused; i++) {
        p = xmalloc(1);
        unused = p == NULL;
        xfree(p);
    }
    alloc_fail_at(0);
    return unused;
}

void
rt_torture(const struct rt_case *c, int sender)
{
    struct rt *rt = check_alloc(sizeof(*rt));
    struct buf frames[RT_MAX_FRAMES];
    unsigned long n;
    size_t i, len;
    int unused = 0;

    for (n = 1; !unused; n++) {
        check_note("%s: allocation %lu", c->name, n);
        rt_init(rt, c);
        if (sender) {
            rt_make_source(rt);
            rt_open_sender(rt, 1);
        } else {
            rt_open_receiver(rt, 1);
            if (c->before[0].type != 0) {
                CHECK_OK(rt_play(rt, c->before, NULL));
                rt_close(rt);
                rt_open_receiver(rt, 1);
            }
        }
        for (len = 0; len < RT_MAX_FRAMES && c->script[len].type != 0;
            len++) {
            buf_init(&frames[len], (size_t)1 << 30);
            rt_encode(rt, &c->script[len], &frames[len]);
        }
        alloc_fail_at(n);
        i = 0;
        if (!sender || rt_step(rt, 0, NULL, 0, 0) == 0)
            for (; i < len; i++)
                if (rt_step(rt, 0, buf_ptr(&frames[i]), buf_used(&frames[i]),
                    0) != 0)
                    break;
        unused = rt_unused(n);
        CHECK(!unused || i == len);
        rt_close(rt);
        rt_finish(rt);
        for (i = 0; i < len; i++)
            buf_cleanup(&frames[i]);
    }
    check_note_clear();
    free(rt);
}

/* Two sides pumped against each other. */

/* Counts the frames of out by type (and the BLOCKs in *blocks). */
static void
rt_count(const struct buf *out, uint64_t *sent, uint64_t *blocks)
{
    const uint8_t *p = buf_ptr(out);
    size_t off = 0, n = buf_used(out), used;
    struct frame f;

    while (off < n) {
        CHECK_OK(frame_parse(p + off, n - off, &f, &used));
        CHECK(msg_type_known(f.type));
        sent[f.type]++;
        if (f.type == MSG_BLOCK || f.type == MSG_VOL_DATA)
            (*blocks)++;
        off += used;
    }
}

/* Stream k of side s is lost: each side's role is told so (EOF). */
static void
rt_lose(struct session *ss, struct buf *in)
{
    struct conn_step st;
    struct buf out;

    buf_init(&out, (size_t)1 << 30);
    memset(&st, 0, sizeof(st));
    st.eof = 1;
    st.out = &out;
    CHECK_OK(session_step(ss, &st));
    CHECK(st.done);
    buf_cleanup(&out);
    buf_reset(in);
}

int
rt_push(struct rt *rt, struct rt_pump *p)
{
    struct session *ss[2][RT_MAX_STREAMS];
    struct sender *snd[RT_MAX_STREAMS];
    struct buf in[2][RT_MAX_STREAMS], out;
    int done[2][RT_MAX_STREAMS];
    const char *paths[1] = { "~/dest" };
    struct session_open o;
    struct conn_step st;
    char src[CHECK_PATH_MAX];
    struct manifest mf;
    struct plan *plan;
    uint64_t blocks = 0, acks = 0, before, step[MSG_TYPE_MAX + 1];
    unsigned n = p->nstreams, k, s, t, seen;
    int r = 0, round, progress = 1;

    CHECK(n >= 1 && n <= RT_MAX_STREAMS && p->lose_stream < n);
    memset(ss, 0, sizeof(ss));
    memset(snd, 0, sizeof(snd));
    memset(done, 0, sizeof(done));
    memset(p->sent, 0, sizeof(p->sent));
    memset(p->most, 0, sizeof(p->most));
    memset(p->blocks, 0, sizeof(p->blocks));
    memset(&p->xc, 0, sizeof(p->xc));
    memset(&p->xa, 0, sizeof(p->xa));
    rt_waker_set(&p->xc);
    rt_waker_set(&p->xa);
    rt_path(rt, "src", src);
    manifest_init(&mf);
    CHECK_OK(manifest_scan(&mf, src));
    CHECK((plan = plan_new(&mf, RT_BS, p->flags, &p->xc)) != NULL);
    manifest_cleanup(&mf);
    if (p->pack > 0) {
        struct volsend_opts vo = { p->pack, p->volume_size, 0, 0, 0, 0 };
        struct volsend *vs = volsend_new(plan, &vo, &p->xc);

        CHECK(vs != NULL);
        plan_set_packer(plan, vs);
    }
    rt_push_open(&o, paths, p->flags);
    for (k = 0; k < n; k++) {
        o.stream = (uint16_t)k;
        CHECK((snd[k] = sender_new(plan, k, &p->xc)) != NULL);
        CHECK((ss[0][k] = session_client_new(&o, sender_step, snd[k],
            &p->xc)) != NULL);
        buf_init(&in[0][k], (size_t)1 << 30);
        buf_init(&in[1][k], (size_t)1 << 30);
    }
    CHECK((ss[1][0] = session_agent_new(&p->xa, &rt->spol)) != NULL);
    buf_init(&out, (size_t)1 << 30);
    for (round = 0; r == 0 && progress && round < 100000; round++) {
        progress = 0;
        for (s = 0; s < 2 && r == 0; s++) {
            for (k = 0; k < n && r == 0; k++) {
                /* A further stream reaches the agent once stream 0 has
                 * opened the transfer. */
                if (done[s][k] || (ss[s][k] == NULL &&
                    (ss[s][k] = session_agent_join(ss[1][0])) == NULL))
                    continue;
                memset(&st, 0, sizeof(st));
                st.in = buf_ptr(&in[s][k]);
                st.in_len = buf_used(&in[s][k]);
                st.out = &out;
                seen = rt_wakes();
                r = session_step(ss[s][k], &st);
                buf_consume(&in[s][k], st.in_len);
                before = blocks;
                memset(step, 0, sizeof(step));
                rt_count(&out, step, s == 0 ? &blocks : &acks);
                for (t = 0; t <= MSG_TYPE_MAX; t++) {
                    p->sent[s][t] += step[t];
                    if (step[t] > p->most[s][t])
                        p->most[s][t] = step[t];
                }
                p->blocks[k] += blocks - before;
                if (s == 0)
                    p->vol_files[k] += step[MSG_VOL_FILE];
                CHECK_OK(buf_put(&in[!s][k], buf_ptr(&out), buf_used(&out)));
                if (st.in_len > 0 || buf_used(&out) > 0 || st.more) {
                    progress = 1;
                } else if (!st.done && st.wait_wake) {
                    /* Waiting for what volumes write behind, on their
                     * thread: woken by it, as the conn would be (the
                     * round was taken for the end of the run). */
                    rt_wait_wake(seen);
                    progress = 1;
                }
                buf_reset(&out);
                done[s][k] = st.done;
            }
        }
        if (p->lose_stream > 0 && !done[0][p->lose_stream] &&
            blocks >= p->lose_after) {
            for (s = 0; s < 2; s++) {
                k = p->lose_stream;
                if (ss[s][k] != NULL)
                    rt_lose(ss[s][k], &in[s][k]);
                done[s][k] = 1;
                buf_reset(&in[!s][k]);
            }
        }
        if ((done[0][0] && done[1][0]) ||
            (p->cut_blocks > 0 && blocks >= p->cut_blocks))
            break;
    }
    if (r == 0 && !(done[0][0] && done[1][0]) &&
        !(p->cut_blocks > 0 && blocks >= p->cut_blocks))
        check_fail(__FILE__, __LINE__, "the sides stopped halfway");
    for (s = 0; s < 2; s++) {
        /* Joined sessions borrow what stream 0's owns. */
        for (k = n; k-- > 0;) {
            session_free(ss[s][k]);
            buf_cleanup(&in[s][k]);
        }
    }
    for (k = 0; k < n; k++)
        sender_free(snd[k]);
    plan_free(plan);
    buf_cleanup(&out);
    return r;
}
