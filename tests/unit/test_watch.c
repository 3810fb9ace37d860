/*
 * pull --watch's units across looks (client/watch_list.c): when a unit is
 * ready (stable over two looks, or its marker there), newest first, how
 * many --keep lets through, and giving up after failures.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../../client/watch.h"
#include "../../common/alloc.h"
#include "../../engine/manifest.h"
#include "../../proto/msg.h"
#include "check.h"

/* A listing of DIR: "name size mtime" files, "name/" directories. */
static void
listing(struct manifest *m, const char *const *rows)
{
    manifest_init(m);
    for (; *rows != NULL; rows++) {
        char name[256];
        unsigned long long size;
        long long mt;
        size_t n;

        CHECK_EQ_INT(sscanf(*rows, "%255s %llu %lld", name, &size, &mt), 3);
        n = strlen(name);
        if (name[n - 1] == '/') {
            name[n - 1] = '\0';
            CHECK_OK(manifest_add_listed(m, name, ENTRY_DIR, 0755, 0, mt,
                0));
        } else {
            CHECK_OK(manifest_add_listed(m, name, ENTRY_FILE, 0644, size,
                mt, 0));
        }
    }
}

static void
look(struct watch_table *t, const char *const *rows)
{
    struct manifest m;

    listing(&m, rows);
    CHECK_OK(watch_look(t, &m));
    manifest_cleanup(&m);
}

/* The names ready now, space-separated, in order. */
static void
ready(struct watch_table *t, int keep, const char *want)
{
    struct watch_unit *out[16];
    char got[256] = "";
    size_t n, i;

    CHECK(t->n <= 16);
    n = watch_ready(t, keep, out);
    for (i = 0; i < n; i++) {
        if (i > 0)
            strcat(got, " ");
        strcat(got, out[i]->name);
    }
    CHECK_EQ_STR(got, want);
}

static struct watch_unit *
unit(struct watch_table *t, const char *name)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, name) == 0)
            return &t->v[i];
    CHECK(0);
    return NULL;
}

TEST(watch_stable_twice)
{
    struct watch_table t;
    const char *v1[] = { "a.pt 100 10", "b.pt 50 20", NULL };
    const char *v2[] = { "a.pt 100 10", "b.pt 80 21", NULL };
    const char *v3[] = { "a.pt 100 10", "b.pt 80 21", "c.pt 1 30", NULL };

    memset(&t, 0, sizeof(t));
    look(&t, v1);
    ready(&t, 0, "");             /* seen once: nothing is stable yet */
    look(&t, v2);
    ready(&t, 0, "a.pt");         /* b.pt grew */
    watch_pulled(unit(&t, "a.pt"));
    ready(&t, 0, "");
    look(&t, v3);
    ready(&t, 0, "b.pt");         /* newest first; c.pt is new */
    look(&t, v3);
    ready(&t, 0, "c.pt b.pt");
    /* --keep 1: only the newest could be wanted. */
    ready(&t, 1, "c.pt");
    watch_table_cleanup(&t);
}

/* A changed version is pulled again; a unit that is gone is not. */
TEST(watch_changed_and_gone)
{
    struct watch_table t;
    const char *v1[] = { "last.pt 100 10", "old.pt 5 1", NULL };
    const char *v2[] = { "last.pt 100 11", NULL };

    memset(&t, 0, sizeof(t));
    look(&t, v1);
    look(&t, v1);
    ready(&t, 0, "last.pt old.pt");
    watch_pulled(unit(&t, "last.pt"));
    watch_pulled(unit(&t, "old.pt"));
    look(&t, v2);
    ready(&t, 0, "");
    look(&t, v2);
    ready(&t, 0, "last.pt");
    watch_table_cleanup(&t);
}

/* A directory is one unit, its entries within; with a marker it is
 * ready when DIR/E/NAME is there, and a file when E + NAME is. */
TEST(watch_markers)
{
    struct watch_table t;
    const char *v1[] = { "ck-1/ 0 5", "ck-1/shard0 10 5", "ck-1/shard1 10 6",
        "m.pt 7 3", NULL };
    const char *v2[] = { "ck-1/ 0 5", "ck-1/shard0 10 5", "ck-1/shard1 10 6",
        "ck-1/.done 0 7", "m.pt 7 3", NULL };
    const char *v3[] = { "ck-1/ 0 5", "ck-1/shard0 10 5", "ck-1/shard1 10 6",
        "ck-1/.done 0 7", "m.pt 7 3", "m.pt.done 0 8", NULL };

    memset(&t, 0, sizeof(t));
    t.marker = ".done";
    look(&t, v1);
    look(&t, v1);
    ready(&t, 0, "");             /* stable, but no marker */
    CHECK_EQ_INT(unit(&t, "ck-1")->is_dir, 1);
    CHECK_EQ_U64(unit(&t, "ck-1")->size, 20);
    CHECK_EQ_U64(unit(&t, "ck-1")->count, 2);
    look(&t, v2);
    ready(&t, 0, "ck-1");         /* at once: the marker says so */
    look(&t, v3);
    /* the marker of m.pt is never a unit to pull */
    ready(&t, 0, "ck-1 m.pt");
    CHECK_EQ_INT(unit(&t, "m.pt.done")->is_marker, 1);
    watch_table_cleanup(&t);
}

/* Failures: tried again once stable again, given up after the limit. */
TEST(watch_gives_up)
{
    struct watch_table t;
    const char *v1[] = { "x.pt 100 10", NULL };
    int i;

    memset(&t, 0, sizeof(t));
    look(&t, v1);
    for (i = 1; i <= WATCH_MAX_FAILURES; i++) {
        look(&t, v1);
        ready(&t, 0, "x.pt");
        CHECK_EQ_INT(watch_failed(unit(&t, "x.pt")),
            i == WATCH_MAX_FAILURES);
        ready(&t, 0, "");         /* not until the next look */
    }
    look(&t, v1);
    ready(&t, 0, "");             /* given up */
    watch_table_cleanup(&t);
}

/* A file unit's basis is the newest file here of its extension and a
 * size within a factor of two, whatever the names: across a minute a
 * timestamp shares more with an older name than with the last one. */
TEST(watch_basis_newest)
{
    struct watch_table t;
    const char *v1[] = { "ckpt-0915-00.pt 1000 10", "ckpt-0915-20.pt 1000 20",
        "ckpt-0915-40.pt 1000 30", "big.pt 9000 35", "other.bin 1000 36",
        "mark.pt.done 0 37", "sub/ 0 38", "sub/x.pt 1000 38", NULL };
    const char *v2[] = { "ckpt-0915-00.pt 1000 10", "ckpt-0915-20.pt 1000 20",
        "ckpt-0915-40.pt 1000 30", "big.pt 9000 35", "other.bin 1000 36",
        "mark.pt.done 0 37", "sub/ 0 38", "sub/x.pt 1000 38",
        "ckpt-0916-00.pt 1000 40", NULL };
    struct watch_unit *u;
    size_t i;

    memset(&t, 0, sizeof(t));
    t.marker = ".done";
    look(&t, v1);
    u = unit(&t, "ckpt-0915-40.pt");
    CHECK(watch_basis_unit(&t, u) == NULL);   /* nothing pulled yet */
    for (i = 0; i < t.n; i++)
        watch_pulled(&t.v[i]);
    look(&t, v2);
    u = unit(&t, "ckpt-0916-00.pt");
    CHECK_EQ_STR(watch_basis_unit(&t, u)->name, "ckpt-0915-40.pt");
    /* one removed by --keep is no basis */
    unit(&t, "ckpt-0915-40.pt")->here = 0;
    CHECK_EQ_STR(watch_basis_unit(&t, u)->name, "ckpt-0915-20.pt");
    CHECK(watch_basis_unit(&t, unit(&t, "sub")) == NULL);
    watch_table_cleanup(&t);
}

/* A listing of n top-level names in a scrambled order (i * a prime, mod
 * n): files f<k>.pt and their markers f<k>.pt.done. */
static void
many(struct manifest *m, size_t n)
{
    char name[32];
    size_t i, k;

    manifest_init(m);
    for (i = 0; i < n; i++) {
        k = i * 7919 % n;
        snprintf(name, sizeof(name), k % 2 ? "f%06zu.pt.done" :
            "f%06zu.pt", k / 2);
        CHECK_OK(manifest_add_listed(m, name, ENTRY_FILE, 0644,
            k % 2 ? 0 : 100, 1000 + (int64_t)(k / 2), 0));
    }
}

/* Names compared per entry of a look: the sort's log2 n of the largest
 * listing (MANIFEST_MAX_ENTRIES) and then some; a search through the
 * units found for each entry costs thousands at 2,000 names. */
#define WATCH_COMPARES_PER_NAME 64

/* A look costs n log n comparisons of names, whatever their order: at
 * 2,000 names as at 200,000, the first look and the next. */
TEST(watch_look_n_log_n)
{
    static const size_t sizes[] = { 2000, 200000 };
    struct watch_unit **out;
    struct watch_table t;
    struct manifest m;
    uint64_t before;
    size_t s, n, i, k;

    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        n = sizes[s];
        check_note("%zu names", n);
        memset(&t, 0, sizeof(t));
        t.marker = ".done";
        many(&m, n);
        CHECK_OK(watch_look(&t, &m));
        CHECK_EQ_U64(t.n, n);
        CHECK(t.compares <= (uint64_t)WATCH_COMPARES_PER_NAME * n);
        before = t.compares;
        CHECK_OK(watch_look(&t, &m));
        CHECK_EQ_U64(t.n, n);
        CHECK(t.compares - before <= (uint64_t)WATCH_COMPARES_PER_NAME * n);
        manifest_cleanup(&m);
        /* Every file has its marker: all ready, newest first. */
        out = xcalloc(t.n, sizeof(*out));
        CHECK(out != NULL);
        k = watch_ready(&t, 0, out);
        CHECK_EQ_U64(k, n / 2);
        for (i = 0; i < k; i++) {
            CHECK_EQ_INT(out[i]->is_marker, 0);
            CHECK_EQ_INT(out[i]->mtime_sec, 1000 + (int64_t)(n / 2 - 1 - i));
        }
        xfree(out);
        watch_table_cleanup(&t);
    }
}

/* A signal during a look ends it (the watch then ends), the table as it
 * was. */
TEST(watch_look_stops)
{
    volatile sig_atomic_t stop = 0;
    struct watch_table t;
    struct manifest m;
    const char *v1[] = { "a.pt 100 10", "b.pt 50 20", NULL };
    const char *v2[] = { "a.pt 100 10", "b.pt 50 20", "c.pt 1 30", NULL };

    memset(&t, 0, sizeof(t));
    t.stop = &stop;
    look(&t, v1);
    stop = 1;
    listing(&m, v2);
    CHECK_EQ_ERR(watch_look(&t, &m), FERRY_ERR_INTERRUPTED);
    CHECK_EQ_U64(t.n, 2);
    ready(&t, 0, "");
    stop = 0;
    CHECK_OK(watch_look(&t, &m));
    manifest_cleanup(&m);
    CHECK_EQ_U64(t.n, 3);
    ready(&t, 0, "b.pt a.pt");
    watch_table_cleanup(&t);
}

/* A unit gone from the listing is forgotten unless a copy of it is here
 * (--keep counts it) or it was given up: looks at other names each time
 * do not grow the table. */
TEST(watch_forgets_gone)
{
    struct watch_table t;
    const char *v1[] = { "a.pt 1 10", "b.pt 1 11", "c.pt 1 12", NULL };
    const char *v2[] = { "d.pt 1 13", NULL };
    const char *v3[] = { "e.pt 1 14", NULL };
    int i;

    memset(&t, 0, sizeof(t));
    look(&t, v1);
    look(&t, v1);
    watch_pulled(unit(&t, "a.pt"));
    for (i = 0; i < WATCH_MAX_FAILURES; i++)
        watch_failed(unit(&t, "b.pt"));
    look(&t, v2);
    CHECK_EQ_U64(t.n, 3);
    CHECK_EQ_INT(unit(&t, "a.pt")->seen, 0);
    CHECK_EQ_INT(unit(&t, "b.pt")->given_up, 1);
    look(&t, v3);
    CHECK_EQ_U64(t.n, 3);
    CHECK_EQ_STR(t.v[2].name, "e.pt");
    look(&t, v1);
    ready(&t, 0, "");             /* a.pt as it was: already here */
    look(&t, v1);
    ready(&t, 0, "c.pt");         /* c.pt is new again; b.pt given up */
    watch_table_cleanup(&t);
}

/* A look whose listing carries the agent's states: "name size mtime
 * STATES" with B busy, I idle, T torn, W whole (or - for none). */
static void
look_states(struct watch_table *t, const char *const *rows)
{
    const char *plain[32];
    uint8_t st[32];
    struct manifest m;
    size_t n;

    for (n = 0; rows[n] != NULL; n++) {
        const char *p = strrchr(rows[n], ' ') + 1;
        static char copy[32][128];

        CHECK(n < 32);
        snprintf(copy[n], sizeof(copy[n]), "%.*s",
            (int)(p - 1 - rows[n]), rows[n]);
        plain[n] = copy[n];
        st[n] = 0;
        for (; *p != '\0'; p++)
            st[n] |= *p == 'B' ? ENTRY_S_BUSY : *p == 'I' ? ENTRY_S_IDLE :
                *p == 'T' ? ENTRY_S_TORN : *p == 'W' ? ENTRY_S_WHOLE : 0;
    }
    plain[n] = NULL;
    listing(&m, plain);
    t->states = st;
    CHECK_OK(watch_look(t, &m));
    t->states = NULL;
    manifest_cleanup(&m);
}

/* What the agent saw decides: a writer holding a file or a known format
 * cut short is never ready, however long it looks the same; no writer
 * or a whole known format is ready at the first look; an unknown file
 * the agent could not ask about waits for its quiet looks; temporary
 * names are never units. A torn file with no writer is said once. */
TEST(watch_readiness)
{
    static const char *const a[] = { "busy.pt 10 5 B", "torn.pt 10 5 IT",
        "idle.bin 10 5 I", "whole.pt 10 5 W", "nfs.bin 10 5 -",
        "x.pt.tmp 10 9 I", ".hidden 10 9 I", "tmp-ckpt 10 9 I", NULL };
    struct watch_table t;

    memset(&t, 0, sizeof(t));
    look_states(&t, a);
    ready(&t, 0, "idle.bin whole.pt");
    CHECK_EQ_INT(watch_unit_incomplete(unit(&t, "torn.pt")), 0);
    look_states(&t, a);
    ready(&t, 0, "idle.bin nfs.bin whole.pt");
    /* Seen cut short twice, no writer: said once. */
    CHECK_EQ_INT(watch_unit_incomplete(unit(&t, "torn.pt")), 1);
    CHECK_EQ_INT(watch_unit_incomplete(unit(&t, "torn.pt")), 0);
    CHECK_EQ_INT(watch_unit_incomplete(unit(&t, "busy.pt")), 0);
    look_states(&t, a);
    look_states(&t, a);
    ready(&t, 0, "idle.bin nfs.bin whole.pt");
    watch_table_cleanup(&t);
    /* --settle: three looks the same beyond the first. */
    memset(&t, 0, sizeof(t));
    t.settle = 3;
    look_states(&t, a);
    look_states(&t, a);
    look_states(&t, a);
    ready(&t, 0, "idle.bin whole.pt");
    look_states(&t, a);
    ready(&t, 0, "idle.bin nfs.bin whole.pt");
    watch_table_cleanup(&t);
}

/* A directory is complete when its framework's own marker says so:
 * torch.distributed.checkpoint's .metadata, a safetensors index beside
 * sharded files, DeepSpeed's `latest` written after global_stepN. A
 * directory holding a busy or torn file is never ready. */
TEST(watch_framework_markers)
{
    static const char *const a[] = { "dcp/ 0 5 -", "dcp/__0_0.distcp 9 5 I",
        "hf/ 0 5 -", "hf/model-00001-of-00002.safetensors 9 5 IW",
        "global_step2/ 0 7 -", "global_step2/mp_rank_00.pt 9 7 IW",
        "latest 12 6 I", "busy/ 0 5 -", "busy/a.bin 9 5 B", NULL };
    static const char *const b[] = { "dcp/ 0 5 -", "dcp/__0_0.distcp 9 5 I",
        "dcp/.metadata 9 5 I", "hf/ 0 5 -",
        "hf/model-00001-of-00002.safetensors 9 5 IW",
        "hf/model.safetensors.index.json 9 5 I",
        "global_step2/ 0 7 -", "global_step2/mp_rank_00.pt 9 7 IW",
        "latest 12 8 I", "busy/ 0 5 -", "busy/a.bin 9 5 B", NULL };
    struct watch_table t;

    memset(&t, 0, sizeof(t));
    look_states(&t, a);
    look_states(&t, a);
    ready(&t, 0, "latest");
    look_states(&t, b);
    ready(&t, 0, "latest global_step2 dcp hf");
    watch_table_cleanup(&t);
}
