/*
 * Tests for common/alloc.c: allocation failure injection, by alloc_fail_at
 * and by FERRY_FAIL_ALLOC in the environment (curl's torture mode), which
 * lets any ferry binary run with its Nth allocation failing.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/arena.h"
#include "check.h"

/* Makes 5 allocations of each kind in turn and returns a bit mask of the
 * ones that failed (bit 0: the first). */
static unsigned
alloc_pattern(void)
{
    unsigned failed = 0, i;
    void *p;

    for (i = 0; i < 5; i++) {
        switch (i % 4) {
        case 0:
            p = xmalloc(8);
            break;
        case 1:
            p = xcalloc(2, 4);
            break;
        case 2:
            p = xrealloc(NULL, 8);
            break;
        default:
            p = xstrdup("ferry");
            break;
        }
        if (p == NULL)
            failed |= 1u << i;
        xfree(p);
    }
    return failed;
}

TEST(alloc_fail_at)
{
    alloc_fail_at(3);
    CHECK_EQ_INT(alloc_pattern(), 1u << 2);
    /* One failure, then back to normal. */
    CHECK_EQ_INT(alloc_pattern(), 0);
    alloc_fail_at(1);
    CHECK_EQ_INT(alloc_pattern(), 1u << 0);
    alloc_fail_at(5);
    alloc_fail_at(0);
    CHECK_EQ_INT(alloc_pattern(), 0);
}

/*
 * Runs alloc_env_probe in a new process (this test binary again, with -n)
 * with FERRY_FAIL_ALLOC=value (unset if NULL) and FERRY_TEST_ALLOC_EXPECT
 * set to the bit mask of allocations expected to fail. Returns its exit
 * status (0: exactly those failed), or -1 if it did not exit. quiet: its
 * stderr to /dev/null, for a probe expected to fail.
 */
static int
probe_status(const char *value, unsigned expect, int quiet)
{
    char mask[16];
    int status, devnull;
    pid_t pid;

    snprintf(mask, sizeof(mask), "%u", expect);
    fflush(NULL);
    CHECK((pid = fork()) >= 0);
    if (pid == 0) {
        if (value != NULL)
            setenv("FERRY_FAIL_ALLOC", value, 1);
        else
            unsetenv("FERRY_FAIL_ALLOC");
        setenv("FERRY_TEST_ALLOC_EXPECT", mask, 1);
        /* The runner's summary lines are noise here; failures go to
         * stderr. */
        if ((devnull = open("/dev/null", O_WRONLY)) >= 0) {
            dup2(devnull, STDOUT_FILENO);
            if (quiet)
                dup2(devnull, STDERR_FILENO);
        }
        execl("/proc/self/exe", "test-unit", "-n", "alloc_env_probe",
            (char *)NULL);
        _exit(127);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
run_probe(const char *value, unsigned expect)
{
    check_note("FERRY_FAIL_ALLOC=%s", value != NULL ? value : "(unset)");
    CHECK_EQ_INT(probe_status(value, expect, 0), 0);
    check_note_clear();
}

/*
 * In a process started by probe_status (FERRY_TEST_ALLOC_EXPECT set):
 * checks that the allocations that fail are the expected ones. Run as
 * part of the suite, it starts such processes itself: one that must pass,
 * and one with a wrong expectation that must fail, so that the probe is
 * known to catch a mismatch.
 */
TEST(alloc_env_probe)
{
    const char *want = getenv("FERRY_TEST_ALLOC_EXPECT");

    if (want != NULL) {
        CHECK_EQ_INT(alloc_pattern(), strtoul(want, NULL, 0));
        /* Only the first allocations count: later ones all succeed. */
        CHECK_EQ_INT(alloc_pattern(), 0);
        return;
    }
    run_probe("2", 1u << 1);
    CHECK_EQ_INT(probe_status("2", 0, 1), 1);
    CHECK_EQ_INT(probe_status(NULL, 1u << 1, 1), 1);
}

TEST(alloc_fail_env)
{
    run_probe(NULL, 0);
    run_probe("1", 1u << 0);
    run_probe("4", 1u << 3);
    run_probe("0", 0);
    /* Anything but a plain decimal number leaves injection off. */
    run_probe("", 0);
    run_probe("x", 0);
    run_probe("2x", 0);
    run_probe("-1", 0);
    run_probe(" 2", 0);
    run_probe("99999999999999999999999", 0);
}

/* xgrow doubles only when full, keeps the array on failure, and refuses
 * a size that would overflow instead of allocating too little. */
TEST(alloc_grow)
{
    size_t cap = 0, n;
    int *v = NULL, *nv;

    for (n = 0; n < 40; n++) {
        CHECK((nv = xgrow(v, n, &cap, sizeof(*v), 4)) != NULL);
        v = nv;
        v[n] = (int)n;
        CHECK(cap > n);
    }
    CHECK_EQ_INT(cap, 64);
    CHECK(xgrow(v, 10, &cap, sizeof(*v), 4) == v);
    CHECK_EQ_INT(cap, 64);
    alloc_fail_at(1);
    CHECK(xgrow(v, 64, &cap, sizeof(*v), 4) == NULL);
    alloc_fail_at(0);
    CHECK_EQ_INT(cap, 64);
    CHECK_EQ_INT(v[39], 39);
    cap = SIZE_MAX / 2 + 1;
    CHECK(xgrow(v, cap, &cap, 1, 4) == NULL);
    CHECK(cap == SIZE_MAX / 2 + 1);
    cap = 64;
    CHECK(xgrow(v, 64, &cap, SIZE_MAX / 64, 4) == NULL);
    CHECK_EQ_INT(cap, 64);
    xfree(v);
}

/* An arena's strings stay where they were put while chunks fill, a long
 * one gets a chunk of its own without spoiling the one being filled, and
 * a failed allocation leaves what it held. */
TEST(arena_strings)
{
    static char big[ARENA_CHUNK + 100];
    char *first, *p, name[32];
    struct arena a;
    size_t i;

    arena_init(&a);
    CHECK(arena_alloc(&a, 0) == NULL);
    /* A long string first: the next small one opens a chunk of its own. */
    memset(big, 'b', sizeof(big) - 1);
    CHECK((p = arena_strndup(&a, big, sizeof(big) - 1)) != NULL);
    CHECK_EQ_U64(strlen(p), sizeof(big) - 1);
    CHECK((first = arena_strndup(&a, "f-0", 3)) != NULL);
    for (i = 1; i < 20000; i++) {
        snprintf(name, sizeof(name), "f-%zu", i);
        CHECK(arena_strndup(&a, name, strlen(name)) != NULL);
        if (i == 9000) {
            /* Between small ones, a long one elsewhere. */
            CHECK((p = arena_strndup(&a, big, ARENA_CHUNK / 2)) != NULL);
            CHECK_EQ_U64(strlen(p), ARENA_CHUNK / 2);
        }
    }
    CHECK_EQ_STR(first, "f-0");
    CHECK_EQ_STR(p + ARENA_CHUNK / 2, "");
    CHECK(a.bytes > 20000 * 4);
    /* Out of memory: NULL, and what was there stays. */
    alloc_fail_at(1);
    CHECK(arena_alloc(&a, ARENA_CHUNK) == NULL);
    alloc_fail_at(0);
    CHECK_EQ_STR(first, "f-0");
    arena_cleanup(&a);
    CHECK(a.chunks == NULL);
    arena_cleanup(&a);
}
