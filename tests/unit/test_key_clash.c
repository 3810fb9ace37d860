/*
 * Staging keys that clash, with honest roles on both ends. The key of a
 * path is a hash keyed with the destination's secret salt, so nobody can
 * pick two names that share one; but 64 bits can still meet by chance,
 * and the receiver must then give the second file a name of its own
 * rather than write both into DEST/.ferry/part/<key>.part. Here every
 * path gets the same key: partial_key is wrapped (the unit binary links
 * with -Wl,--wrap=partial_key), which forces what a search for a real
 * collision could not.
 *
 * Small files, and files of PARTIAL_JOURNAL_MIN and more, which are
 * journaled and resumable (once, two of these swapped contents or
 * stalled); over one stream and several; and a push cut halfway and
 * resumed, whose kept partial another path now claims by key. Each time
 * the destination must be the source, byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/partial.h"
#include "roles.h"

void __real_partial_key(const uint8_t salt[16], const char *path,
    char key[PARTIAL_KEY_LEN + 1]);
void __wrap_partial_key(const uint8_t salt[16], const char *path,
    char key[PARTIAL_KEY_LEN + 1]);

static int clash_on;
static unsigned clash_calls;

void
__wrap_partial_key(const uint8_t salt[16], const char *path,
    char key[PARTIAL_KEY_LEN + 1])
{
    if (!clash_on) {
        __real_partial_key(salt, path, key);
        return;
    }
    clash_calls++;
    memset(key, 'c', PARTIAL_KEY_LEN);
    key[PARTIAL_KEY_LEN] = '\0';
}

/* Sizes: two small files and two big ones, the big ones journaled and
 * with a short last block. */
#define CLASH_BIG (PARTIAL_JOURNAL_MIN + 3 * RT_BS + 777)
#define CLASH_BLOCKS (2 * (CLASH_BIG / RT_BS + 1))

static void
clash_source(struct rt *rt)
{
    rt_make_source(rt);
    rt_write(rt, "src/small1", 1000);
    rt_write(rt, "src/small2", 3 * RT_BS + 5);
    rt_write(rt, "src/big1", CLASH_BIG);
    rt_write(rt, "src/big2", CLASH_BIG);
}

/* dest/src is src, byte for byte, modes and mtimes. */
static void
clash_same(struct rt *rt)
{
    char *a = check_alloc(RT_TEXT_MAX * 4), *b = check_alloc(RT_TEXT_MAX * 4);

    rt_tree_exact(rt, "src", a, RT_TEXT_MAX * 4);
    rt_tree_exact(rt, "dest/src", b, RT_TEXT_MAX * 4);
    CHECK_EQ_STR(b, a);
    free(a);
    free(b);
}

static void
clash_push(unsigned nstreams, uint64_t cut_blocks)
{
    static const struct rt_case c = { .name = "key_clash" };
    struct rt *rt = check_alloc(sizeof(*rt));
    struct rt_pump *p = check_alloc(sizeof(*p));
    uint64_t files = 7;  /* a, d/b, e, small1, small2, big1, big2 */

    rt_init(rt, &c);
    clash_source(rt);
    memset(p, 0, sizeof(*p));
    p->nstreams = nstreams;
    clash_on = 1;
    if (cut_blocks > 0) {
        p->cut_blocks = cut_blocks;
        CHECK_OK(rt_push(rt, p));
        p->cut_blocks = 0;
    }
    CHECK_OK(rt_push(rt, p));
    clash_on = 0;
    /* Every file staged went through the clashing key. */
    CHECK(clash_calls >= files);
    clash_same(rt);
    CHECK_EQ_U64(xfer_get(&p->xa.st.files_failed), 0);
    if (cut_blocks == 0)
        CHECK_EQ_U64(xfer_get(&p->xa.st.files_sent), files);
    rt_finish(rt);
    free(p);
    free(rt);
}

TEST(key_clash_one_stream)
{
    clash_push(1, 0);
}

TEST(key_clash_streams)
{
    clash_push(3, 0);
}

/* Cut while both big files are under way: the next run finds one kept
 * partial under the clashing key, and whichever path asks for the key
 * first must not take the other's blocks. */
TEST(key_clash_resume)
{
    clash_push(2, CLASH_BLOCKS / 2);
}
