/*
 * Replays the fuzz corpus (tests/fuzz/corpus/<target>/) through the fuzz
 * targets' own code, so every seed and every crash ever found is checked
 * on each unit run, under ASan too, without clang. The directory is taken
 * relative to the working directory (make runs the tests from the top of
 * the tree); FERRY_FUZZ_CORPUS overrides it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "../fuzz/fuzz_common.h"
#include "../fuzz/fuzz_seed.h"
#include "check.h"

static const char *
corpus_dir(void)
{
    const char *d = getenv("FERRY_FUZZ_CORPUS");
    struct stat st;

    if (d == NULL)
        d = "tests/fuzz/corpus";
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
        check_fail(__FILE__, __LINE__, "no corpus at %s: run from the top "
            "of the tree or set FERRY_FUZZ_CORPUS", d);
    return d;
}

TEST(corpus_replay)
{
    const struct fuzz_target *const tables[] = { fuzz_targets,
        fuzz_client_targets };
    const struct fuzz_target *t;
    const char *dir = corpus_dir();
    char path[4096];
    size_t count, i;

    for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        for (t = tables[i]; t->name != NULL; t++) {
            snprintf(path, sizeof(path), "%s/%s", dir, t->name);
            check_note("%s", path);
            count = 0;
            CHECK_OK(fuzz_replay(path, t->fn, &count));
            CHECK(count > 0);
        }
    }
}

/* Compares the corpus file dir/sub/name with the n bytes at want. */
static void
check_seed_file(const char *dir, const char *sub, const char *name,
    const uint8_t *want, size_t n)
{
    char path[4096];
    uint8_t *got;
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
    check_note("%s", path);
    if ((f = fopen(path, "rb")) == NULL)
        check_fail(__FILE__, __LINE__, "%s is missing: run make fuzz-corpus",
            path);
    got = check_alloc(n + 1);
    len = fread(got, 1, n + 1, f);
    fclose(f);
    if (len != n || memcmp(got, want, n) != 0)
        check_fail(__FILE__, __LINE__, "%s is stale: run make fuzz-corpus",
            path);
    free(got);
}

/*
 * The checked-in seeds are what the encoders write today. After a change
 * to the wire format they would still run, but fuzz a format that no
 * longer exists.
 */
TEST(corpus_seeds_current)
{
    const char *dir = corpus_dir();
    const struct fuzz_seeds *t;
    char name[FUZZ_SEED_NAME_MAX];
    struct buf b;
    uint8_t type;
    size_t i;

    for (type = 1; type <= MSG_TYPE_MAX; type++) {
        if (!msg_type_known(type))
            continue;
        for (i = 0; i < fuzz_seed_count(type); i++) {
            fuzz_seed_name(type, i, name);
            buf_init(&b, PROTO_FRAME_HEADER + PROTO_MAX_FRAME);
            CHECK_OK(fuzz_seed(type, i, &b));
            check_seed_file(dir, "frame", name, buf_ptr(&b), buf_used(&b));
            /* A msg input is the frame without its length field. */
            check_seed_file(dir, "msg", name, buf_ptr(&b) + 4,
                buf_used(&b) - 4);
            buf_cleanup(&b);
        }
    }
    for (t = fuzz_input_seeds; t->target != NULL; t++) {
        for (i = 0; i < t->count(); i++) {
            t->name(i, name);
            buf_init(&b, FUZZ_SEED_MAX);
            CHECK_OK(t->seed(i, &b));
            check_seed_file(dir, t->target, name, buf_ptr(&b),
                buf_used(&b));
            buf_cleanup(&b);
        }
    }
}
