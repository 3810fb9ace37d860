/*
 * pull --watch's units across looks (client/watchlist.c): when a unit is
 * ready (stable over two looks, or its marker there), newest first, how
 * many --keep lets through, and giving up after failures.
 */
#include <string.h>

#include "../../client/watch.h"
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
