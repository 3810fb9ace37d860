/* Tests for engine/pathset.c: the set of paths a run remembers across its
 * connections. */
#include <stdio.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../engine/pathset.h"
#include "check.h"

TEST(pathset_add_has)
{
    struct pathset s;

    memset(&s, 0, sizeof(s));
    /* An empty set (never allocated) holds nothing. */
    CHECK(!pathset_has(&s, "a"));
    CHECK(!pathset_has(&s, ""));
    CHECK_EQ_INT(pathset_add(&s, "a"), 1);
    CHECK(pathset_has(&s, "a"));
    CHECK(!pathset_has(&s, "b"));
    CHECK(!pathset_has(&s, "a/"));
    CHECK(!pathset_has(&s, "A"));
    CHECK_EQ_INT(pathset_add(&s, "dir/b"), 1);
    CHECK_EQ_INT(pathset_add(&s, ""), 1);
    CHECK(pathset_has(&s, ""));
    CHECK(pathset_has(&s, "dir/b"));
    CHECK_EQ_U64(s.len, 3);
    pathset_free(&s);
    CHECK(s.v == NULL);
    CHECK_EQ_U64(s.len, 0);
    CHECK(!pathset_has(&s, "a"));
    /* Free twice and reuse after free. */
    pathset_free(&s);
    CHECK_EQ_INT(pathset_add(&s, "a"), 1);
    CHECK(pathset_has(&s, "a"));
    pathset_free(&s);
}

TEST(pathset_duplicates)
{
    struct pathset s;
    int i;

    memset(&s, 0, sizeof(s));
    CHECK_EQ_INT(pathset_add(&s, "x/y"), 1);
    for (i = 0; i < 100; i++)
        CHECK_EQ_INT(pathset_add(&s, "x/y"), 0);
    CHECK_EQ_U64(s.len, 1);
    CHECK(pathset_has(&s, "x/y"));
    pathset_free(&s);
}

/* Past several growths, every path added is there, and none of a second,
 * disjoint set of names is (with 64-bit keys a collision among these
 * would be a bug, not bad luck). */
TEST(pathset_growth)
{
    enum { N = 50000 };
    struct pathset s;
    char path[64];
    int i;

    memset(&s, 0, sizeof(s));
    for (i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "dir%d/file-%d.dat", i % 97, i);
        check_note("%s", path);
        CHECK_EQ_INT(pathset_add(&s, path), 1);
    }
    CHECK_EQ_U64(s.len, N);
    /* Open addressing stays at most half full. */
    CHECK(s.cap >= 2 * s.len);
    for (i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "dir%d/file-%d.dat", i % 97, i);
        check_note("%s", path);
        CHECK(pathset_has(&s, path));
        CHECK_EQ_INT(pathset_add(&s, path), 0);
        snprintf(path, sizeof(path), "dir%d/file-%d.dat", i % 97 + 1, i);
        CHECK(!pathset_has(&s, path));
    }
    check_note_clear();
    CHECK_EQ_U64(s.len, N);
    pathset_free(&s);
}

/* Out of memory costs accuracy only: the add reports 0 and the set is
 * as it was. */
TEST(pathset_nomem)
{
    struct pathset s;
    char path[32];
    int i;

    memset(&s, 0, sizeof(s));
    alloc_fail_at(1);
    CHECK_EQ_INT(pathset_add(&s, "a"), 0);
    alloc_fail_at(0);
    CHECK(!pathset_has(&s, "a"));
    CHECK_EQ_U64(s.len, 0);
    /* Fill to the next growth and fail it. */
    CHECK_EQ_INT(pathset_add(&s, "a"), 1);
    for (i = 1; (s.len + 1) * 2 <= s.cap; i++) {
        snprintf(path, sizeof(path), "p%d", i);
        CHECK_EQ_INT(pathset_add(&s, path), 1);
    }
    alloc_fail_at(1);
    CHECK_EQ_INT(pathset_add(&s, "one-more"), 0);
    alloc_fail_at(0);
    CHECK(!pathset_has(&s, "one-more"));
    CHECK(pathset_has(&s, "a"));
    CHECK(pathset_has(&s, "p1"));
    CHECK_EQ_INT(pathset_add(&s, "one-more"), 1);
    CHECK(pathset_has(&s, "one-more"));
    pathset_free(&s);
}
