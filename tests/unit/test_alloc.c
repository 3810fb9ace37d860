/*
 * Tests for common/alloc.c: allocation failure injection, by alloc_fail_at
 * and by FERRY_FAIL_ALLOC in the environment (curl's torture mode), which
 * lets any ferry binary run with its Nth allocation failing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/alloc.h"
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
 * Run by alloc_fail_env in a fresh process (this test binary again, with
 * -n) whose environment sets FERRY_FAIL_ALLOC and FERRY_TEST_ALLOC_EXPECT,
 * the bit mask alloc_pattern must return. Run on its own, as part of the
 * suite, it has nothing to check.
 */
TEST(alloc_env_probe)
{
    const char *want = getenv("FERRY_TEST_ALLOC_EXPECT");

    if (want == NULL)
        return;
    CHECK_EQ_INT(alloc_pattern(), strtoul(want, NULL, 0));
    /* Only the first allocations count: later ones all succeed. */
    CHECK_EQ_INT(alloc_pattern(), 0);
}

/* Runs alloc_env_probe in a new process with FERRY_FAIL_ALLOC=value
 * (unset if NULL) and checks that exactly the allocations in the mask
 * expect failed. */
static void
run_probe(const char *value, unsigned expect)
{
    char mask[16];
    int status, devnull;
    pid_t pid;

    check_note("FERRY_FAIL_ALLOC=%s", value != NULL ? value : "(unset)");
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
        if ((devnull = open("/dev/null", O_WRONLY)) >= 0)
            dup2(devnull, STDOUT_FILENO);
        execl("/proc/self/exe", "test-unit", "-n", "alloc_env_probe",
            (char *)NULL);
        _exit(127);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    check_note_clear();
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
