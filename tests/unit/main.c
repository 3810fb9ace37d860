/*
 * main.c: the unit test runner (after libuv's test/runner.c).
 *
 * Every case in list.h runs in a child process of its own with an alarm,
 * so a crash, a sanitizer abort or a hang fails that case alone and cannot
 * take the others with it. The child ends with exit(0), not _exit, so that
 * LeakSanitizer checks each passing case for leaks.
 *
 *     test-unit              run every case
 *     test-unit NAME...      run the named cases; a NAME that is no case
 *                            selects every case starting with "NAME_"
 *     test-unit -l           list the cases
 *     test-unit -v ...       also print a PASS line per case
 *     test-unit -n NAME...   run in this process, for a debugger
 *     test-unit -x ...       stop at the first case that fails (make mutate)
 *
 * The output stays short: a line per group of cases (the name up to the
 * first '_', which is the module), FAIL lines, and the total. The timeout
 * (30 s) can be raised with FERRY_TEST_TIMEOUT=seconds for slow runs.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "list.h"

#define TEST_TIMEOUT 30

struct test_case {
    const char *name;
    void (*fn)(void);
};

static const struct test_case test_cases[] = {
#define TEST_ENTRY(name) { #name, test_##name },
    TEST_LIST(TEST_ENTRY)
#undef TEST_ENTRY
};

#define TEST_NCASES (sizeof(test_cases) / sizeof(test_cases[0]))

struct run_opts {
    int verbose;
    int no_fork;
    int first_fail;
    unsigned timeout;
};

/* Tallies for the group being run and for the whole run. */
struct run_tally {
    const char *group;
    size_t group_len;
    unsigned group_pass, group_fail;
    unsigned pass, fail;
};

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Length of the group prefix of a case name: up to the first '_'. */
static size_t
group_len(const char *name)
{
    const char *u = strchr(name, '_');

    return u == NULL ? strlen(name) : (size_t)(u - name);
}

static void
tally_flush(struct run_tally *t)
{
    if (t->group == NULL)
        return;
    if (t->group_fail == 0)
        printf("%.*s: %u passed\n", (int)t->group_len, t->group,
            t->group_pass);
    else
        printf("%.*s: %u passed, %u failed\n", (int)t->group_len, t->group,
            t->group_pass, t->group_fail);
    t->group = NULL;
}

/* Describes how a child ended in out; returns 1 if the case passed. */
static int
describe_status(int status, unsigned timeout, char *out, size_t outlen)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    if (WIFEXITED(status))
        snprintf(out, outlen, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        snprintf(out, outlen, "timed out after %u s", timeout);
    else if (WIFSIGNALED(status))
        snprintf(out, outlen, "killed by signal %d (%s)", WTERMSIG(status),
            strsignal(WTERMSIG(status)));
    else
        snprintf(out, outlen, "wait status %#x", (unsigned)status);
    return 0;
}

/* Runs one case in a child; returns 1 if it passed, with why it failed in
 * why otherwise. */
static int
run_forked(const struct test_case *tc, unsigned timeout, char *why,
    size_t whylen)
{
    pid_t pid, w;
    int status;

    /* Anything still buffered would be printed again by the child. */
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        return 0;
    }
    if (pid == 0) {
        alarm(timeout);
        tc->fn();
        exit(0);
    }
    do
        w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    if (w < 0) {
        snprintf(why, whylen, "waitpid: %s", strerror(errno));
        return 0;
    }
    return describe_status(status, timeout, why, whylen);
}

static void
run_case(const struct test_case *tc, const struct run_opts *o,
    struct run_tally *t)
{
    size_t glen = group_len(tc->name);
    char why[128] = "";
    double start = now_ms();
    int ok;

    if (t->group == NULL || glen != t->group_len ||
        strncmp(tc->name, t->group, glen) != 0) {
        tally_flush(t);
        t->group = tc->name;
        t->group_len = glen;
        t->group_pass = t->group_fail = 0;
    }
    if (o->no_fork) {
        /* A failed check exits from inside fn. */
        tc->fn();
        ok = 1;
    } else {
        ok = run_forked(tc, o->timeout, why, sizeof(why));
    }
    if (ok) {
        t->pass++;
        t->group_pass++;
        if (o->verbose)
            printf("PASS %s (%.0f ms)\n", tc->name, now_ms() - start);
    } else {
        t->fail++;
        t->group_fail++;
        printf("FAIL %s: %s\n", tc->name, why);
    }
}

/* 1 if the command-line word sel picks the case name. */
static int
selects(const char *sel, const char *name)
{
    size_t n = strlen(sel);
    size_t i;

    for (i = 0; i < TEST_NCASES; i++)
        if (strcmp(sel, test_cases[i].name) == 0)
            return strcmp(sel, name) == 0;
    return strncmp(sel, name, n) == 0 && name[n] == '_';
}

static int
selects_any(char **sel, int nsel, const char *name)
{
    int i;

    for (i = 0; i < nsel; i++)
        if (selects(sel[i], name))
            return 1;
    return 0;
}

static int
usage(void)
{
    fprintf(stderr, "usage: test-unit [-v] [-n] [-x] [NAME...] | -l\n");
    return 2;
}

int
main(int argc, char **argv)
{
    struct run_opts o = { 0, 0, 0, TEST_TIMEOUT };
    struct run_tally t;
    char scratch[CHECK_PATH_MAX];
    const char *env = getenv("FERRY_TEST_TIMEOUT");
    size_t i;
    int c, j;

    /* Line buffered even into a pipe, so that our lines and the
     * children's messages on stderr come out in order. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&t, 0, sizeof(t));
    if (env != NULL && atoi(env) > 0)
        o.timeout = (unsigned)atoi(env);
    while ((c = getopt(argc, argv, "lnvx")) != -1) {
        switch (c) {
        case 'l':
            for (i = 0; i < TEST_NCASES; i++)
                printf("%s\n", test_cases[i].name);
            return 0;
        case 'n':
            o.no_fork = 1;
            break;
        case 'v':
            o.verbose = 1;
            break;
        case 'x':
            o.first_fail = 1;
            break;
        default:
            return usage();
        }
    }
    for (j = optind; j < argc; j++) {
        for (i = 0; i < TEST_NCASES; i++)
            if (selects(argv[j], test_cases[i].name))
                break;
        if (i == TEST_NCASES) {
            fprintf(stderr, "test-unit: no case named %s (-l lists them)\n",
                argv[j]);
            return 2;
        }
    }
    /* The cases' scratch directories (check_tmpdir) go into one of the
     * run's own, removed at the end when every case passed, kept and
     * named for a look when one failed: cases that leave theirs behind
     * leave nothing in the real TMPDIR. */
    check_tmpdir(scratch);
    if (setenv("TMPDIR", scratch, 1) != 0) {
        perror("test-unit: setenv");
        return 2;
    }
    for (i = 0; i < TEST_NCASES && !(o.first_fail && t.fail > 0); i++)
        if (optind == argc ||
            selects_any(argv + optind, argc - optind, test_cases[i].name))
            run_case(&test_cases[i], &o, &t);
    tally_flush(&t);
    if (t.fail == 0)
        check_rmtree(scratch);
    else
        printf("unit: the cases' files are kept in %s\n", scratch);
    printf("unit: %u passed, %u failed\n", t.pass, t.fail);
    return t.fail == 0 ? 0 : 1;
}
