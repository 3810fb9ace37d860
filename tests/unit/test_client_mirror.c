/*
 * The comparison behind --dry-run, --delete and the space check
 * (client/mirror.c, mirror_diff), on trees listed in memory: what is
 * sent, what is up to date, what a mirror deletes, and what it keeps
 * (entries beside the sources, and those the filters exclude unless
 * --delete-excluded).
 */
#include <string.h>

#include "../../client/mirror.h"
#include "../../common/alloc.h"
#include "../../common/arena.h"
#include "../../engine/filter.h"
#include "../../engine/manifest.h"
#include "../../proto/msg.h"
#include "check.h"

static void
add(struct manifest *m, const char *rel, int dir, uint64_t size,
    int64_t mtime)
{
    CHECK_OK(manifest_add_listed(m, rel, dir ? ENTRY_DIR : ENTRY_FILE,
        dir ? 0755 : 0644, size, mtime, 0));
}

/* The sources: a (as there), b (changed), dir/c (new). The destination:
 * a, b older, old and gone/x (not in the sources), keep.log. */
static void
trees(struct manifest *src, struct manifest *dst)
{
    manifest_init(src);
    manifest_init(dst);
    add(src, "a", 0, 10, 100);
    add(src, "b", 0, 20, 200);
    add(src, "dir", 1, 0, 0);
    add(src, "dir/c", 0, 5, 300);
    add(dst, "a", 0, 10, 100);
    add(dst, "b", 0, 20, 150);
    add(dst, "gone", 1, 0, 0);
    add(dst, "gone/x", 0, 3, 0);
    add(dst, "keep.log", 0, 4, 0);
    add(dst, "old", 0, 7, 0);
}

/* Compares with del_mode; the paths to delete joined by ' '. */
static struct mirror_counts
diff(struct cli *c, int contents, int del_mode, char *dels, size_t n)
{
    struct manifest src, dst;
    struct mirror_counts k;
    struct run_opts o;
    struct arena store;
    const char **del = NULL;
    size_t nd = 0, i;

    trees(&src, &dst);
    src.contents = contents;
    arena_init(&store);
    run_opts_of(c, &o);
    CHECK_OK(mirror_diff(c, &o, del_mode, &src, &dst, &store, &k, &del,
        &nd));
    dels[0] = '\0';
    for (i = 0; i < nd; i++)
        snprintf(dels + strlen(dels), n - strlen(dels), "%s%s",
            i ? " " : "", del[i]);
    xfree(del);
    arena_cleanup(&store);
    manifest_cleanup(&src);
    manifest_cleanup(&dst);
    return k;
}

TEST(client_mirror_diff)
{
    struct mirror_counts k;
    struct cli c;
    char dels[256];

    memset(&c, 0, sizeof(c));
    c.cmd = CMD_PUSH;
    filter_init(&c.filter);
    CHECK_OK(filter_add(&c.filter, FILTER_EXCLUDE, LIT("*.log"), NULL));

    /* No --delete: b and dir/c to send, a up to date, nothing removed. */
    k = diff(&c, 1, 0, dels, sizeof(dels));
    CHECK_EQ_U64(k.nsend, 2);
    CHECK_EQ_U64(k.bsend, 25);
    CHECK_EQ_U64(k.nskip, 1);
    CHECK_EQ_U64(k.bskip, 10);
    CHECK_EQ_U64(k.ndel, 0);
    CHECK_EQ_STR(dels, "");

    /* --delete of "src/" (its contents): gone (with gone/x) and old go,
     * the excluded keep.log stays. */
    k = diff(&c, 1, 1, dels, sizeof(dels));
    CHECK_EQ_STR(dels, "gone old");
    CHECK_EQ_U64(k.ndel, 2);
    CHECK_EQ_U64(k.bdel, 10);
    CHECK_EQ_U64(k.nsend, 2);

    /* --delete-excluded: keep.log too. */
    k = diff(&c, 1, 2, dels, sizeof(dels));
    CHECK_EQ_STR(dels, "gone keep.log old");
    CHECK_EQ_U64(k.ndel, 3);

    /* "src" (the directory itself, into the destination): what lies
     * beside it there is not the mirror's. */
    k = diff(&c, 0, 1, dels, sizeof(dels));
    CHECK_EQ_STR(dels, "");
    CHECK_EQ_U64(k.ndel, 0);
    filter_cleanup(&c.filter);
}
