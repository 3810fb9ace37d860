/*
 * The restricted agent's confinement (server/policy.c): what paths mean
 * beneath ROOT, what is refused, and Landlock behind the path checks.
 *
 * The Landlock case is built so that only the kernel can pass it: a path
 * passes the check, then a directory on it is swapped for a symlink out
 * of ROOT (the race the check alone cannot close), and the confined
 * process must still be unable to read or write outside ROOT. Without
 * the ruleset the open goes through and the case fails. A kernel without
 * Landlock (ABI 2) is named on stderr, and the case then asserts what the
 * path checks alone give.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/landlock.h>
#endif

#include "../../proto/msg.h"
#include "../../server/policy.h"
#include "check.h"

struct pol_env {
    char tmp[CHECK_PATH_MAX];
    char root[CHECK_PATH_MAX];     /* tmp/root, canonical */
    char outside[CHECK_PATH_MAX];  /* tmp/outside */
    struct policy pol;
};

static void
pol_path(char out[CHECK_PATH_MAX], const char *a, const char *b)
{
    if (snprintf(out, CHECK_PATH_MAX, "%s/%s", a, b) >= CHECK_PATH_MAX)
        check_fail(__FILE__, __LINE__, "path too long");
}

/* ROOT with a directory d holding f, a file, and esc -> outside;
 * outside holds f and secret. */
static void
pol_env_init(struct pol_env *e)
{
    char p[CHECK_PATH_MAX], msg[256];

    memset(e, 0, sizeof(*e));
    check_tmpdir(p);
    /* The policy keeps ROOT canonical (/tmp may be a link); so do the
     * expected answers. */
    if (realpath(p, e->tmp) == NULL)
        check_fail(__FILE__, __LINE__, "realpath %s", p);
    pol_path(e->root, e->tmp, "root");
    pol_path(e->outside, e->tmp, "outside");
    CHECK(mkdir(e->root, 0700) == 0 && mkdir(e->outside, 0700) == 0);
    pol_path(p, e->root, "d");
    CHECK(mkdir(p, 0700) == 0);
    pol_path(p, e->root, "d/f");
    check_write_file(p, "inside", 6, 0);
    pol_path(p, e->root, "file");
    check_write_file(p, "x", 1, 0);
    pol_path(p, e->root, "esc");
    CHECK(symlink(e->outside, p) == 0);
    pol_path(p, e->outside, "f");
    check_write_file(p, "secret", 6, 0);
    pol_path(p, e->outside, "secret");
    check_write_file(p, "secret", 6, 0);
    CHECK_OK(policy_restrict(&e->pol, e->root, msg, sizeof(msg)));
    CHECK_EQ_STR(e->pol.root, e->root);
}

static void
pol_env_cleanup(struct pol_env *e)
{
    policy_cleanup(&e->pol);
    check_rmtree(e->tmp);
}

/* Resolves path for op: its answer (NULL when refused) and the code. */
static int
pol_resolve(struct pol_env *e, uint8_t op, const char *path, char **out)
{
    char msg[1024];
    int r;

    msg[0] = '\0';
    check_note("%s (op %u)", path, op);
    r = policy_resolve(&e->pol, op, path, strlen(path), out, msg,
        sizeof(msg));
    if (r != 0) {
        CHECK(*out == NULL);
        CHECK(msg[0] != '\0');  /* the client is told why */
    }
    return r;
}

/* path resolves to ROOT/want ("" for ROOT itself). */
static void
pol_ok(struct pol_env *e, uint8_t op, const char *path, const char *want)
{
    char full[CHECK_PATH_MAX], *out = NULL;

    if (want[0] == '\0')
        snprintf(full, sizeof(full), "%s", e->root);
    else
        pol_path(full, e->root, want);
    CHECK_OK(pol_resolve(e, op, path, &out));
    CHECK_EQ_STR(out, full);
    free(out);
}

static void
pol_refused(struct pol_env *e, uint8_t op, const char *path, int want)
{
    char *out = (char *)1;

    CHECK_EQ_ERR(pol_resolve(e, op, path, &out), want);
}

TEST(policy_restricted_paths)
{
    struct pol_env e;
    char p[CHECK_PATH_MAX], msg[256];
    struct policy bad;
    char *longp;

    pol_env_init(&e);
    /* Relative paths and "~" are relative to ROOT. */
    pol_ok(&e, OPEN_PUSH, "up", "up");
    pol_ok(&e, OPEN_PUSH, "./d//f/", "d/f");
    pol_ok(&e, OPEN_PULL, "d/f", "d/f");
    pol_ok(&e, OPEN_PUSH, "~", "");
    pol_ok(&e, OPEN_PUSH, "~/up", "up");
    pol_ok(&e, OPEN_PUSH, "", "");
    pol_ok(&e, OPEN_PUSH, "~user", "~user");  /* a name, not a home */
    /* A push may name directories that do not exist yet. */
    pol_ok(&e, OPEN_PUSH, "new/deeper/x", "new/deeper/x");
    /* Absolute: ROOT itself or beneath it. */
    pol_ok(&e, OPEN_PULL, e.root, "");
    pol_path(p, e.root, "d/f");
    pol_ok(&e, OPEN_PULL, p, "d/f");
    /* Outside: "..", other absolute paths, a sibling sharing ROOT's
     * name as a prefix. */
    pol_refused(&e, OPEN_PULL, "/etc/passwd", -EACCES);
    pol_refused(&e, OPEN_PULL, e.outside, -EACCES);
    pol_refused(&e, OPEN_PULL, "..", -EACCES);
    pol_refused(&e, OPEN_PUSH, "../outside/x", -EACCES);
    pol_refused(&e, OPEN_PUSH, "d/../../outside", -EACCES);
    pol_refused(&e, OPEN_PUSH, "d/..", -EACCES);
    pol_refused(&e, OPEN_PUSH, "~/../outside", -EACCES);
    pol_path(p, e.tmp, "rootx/y");  /* ROOT is tmp/root */
    pol_refused(&e, OPEN_PULL, p, -EACCES);
    pol_path(p, e.root, "../outside/secret");
    pol_refused(&e, OPEN_PULL, p, -EACCES);
    /* A symlink at any component, first, last or on the way. */
    pol_refused(&e, OPEN_PULL, "esc", -EACCES);
    pol_refused(&e, OPEN_PULL, "esc/secret", -EACCES);
    pol_refused(&e, OPEN_PUSH, "esc/new", -EACCES);
    pol_refused(&e, OPEN_KEEP, "esc/sets", -EACCES);
    pol_refused(&e, OPEN_CLEAN, "esc", -EACCES);
    /* A file on the way is no directory. */
    pol_refused(&e, OPEN_PUSH, "file/x", -ENOTDIR);
    /* Too long to hold beneath ROOT. */
    longp = check_alloc(2 * CHECK_PATH_MAX);
    memset(longp, 'a', 2 * CHECK_PATH_MAX - 1);
    for (size_t i = 100; i < 2 * CHECK_PATH_MAX - 1; i += 101)
        longp[i] = '/';
    longp[2 * CHECK_PATH_MAX - 1] = '\0';
    pol_refused(&e, OPEN_PUSH, longp, -EACCES);
    free(longp);
    /* A name over NAME_MAX on the way. */
    longp = check_alloc(400);
    memset(longp, 'n', 300);
    strcpy(longp + 300, "/x");
    pol_refused(&e, OPEN_PUSH, longp, -ENAMETOOLONG);
    free(longp);
    check_note_clear();

    /* --read-only: pulls and listing only. */
    e.pol.read_only = 1;
    pol_ok(&e, OPEN_PULL, "d/f", "d/f");
    pol_ok(&e, OPEN_STATUS, "d", "d");
    pol_refused(&e, OPEN_PUSH, "up", -EACCES);
    pol_refused(&e, OPEN_CLEAN, "d", -EACCES);
    pol_refused(&e, OPEN_KEEP, "sets", -EACCES);
    e.pol.read_only = 0;
    /* --write-only: no pulls. */
    e.pol.write_only = 1;
    pol_refused(&e, OPEN_PULL, "d/f", -EACCES);
    pol_ok(&e, OPEN_PUSH, "up", "up");
    pol_ok(&e, OPEN_CLEAN, "d", "d");
    pol_ok(&e, OPEN_KEEP, "d", "d");
    e.pol.write_only = 0;

    /* ROOT must be an existing directory. */
    memset(&bad, 0, sizeof(bad));
    pol_path(p, e.root, "file");
    CHECK_EQ_ERR(policy_restrict(&bad, p, msg, sizeof(msg)),
        FERRY_ERR_USAGE);
    CHECK(bad.root == NULL);
    pol_path(p, e.root, "missing");
    CHECK_EQ_ERR(policy_restrict(&bad, p, msg, sizeof(msg)),
        FERRY_ERR_USAGE);
    CHECK(bad.root == NULL);
    pol_env_cleanup(&e);
}

/* What the confined child found, sent back to the parent. */
struct pol_seen {
    int confine;       /* policy_confine's result */
    int resolve;       /* policy_resolve of d/f before the swap */
    int swapped;       /* the swap worked (inside ROOT: allowed) */
    int read_swapped;  /* errno of opening the resolved path, or 0 */
    int read_out;      /* errno of opening outside/secret, or 0 */
    int write_out;     /* errno of creating outside/new, or 0 */
    int read_in;       /* errno of opening ROOT/d.old/f, or 0 */
    int write_in;      /* errno of creating ROOT/new, or 0 */
};

static int
pol_try_open(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC, 0600);

    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

/* In a child: confine, pass the check, swap, then try. Ends with _exit
 * (no LeakSanitizer pass, which would need /proc outside ROOT). */
static void
pol_child(struct pol_env *e, int wfd)
{
    struct pol_seen s;
    char d[CHECK_PATH_MAX], old[CHECK_PATH_MAX], p[CHECK_PATH_MAX];
    char msg[256], *resolved = NULL;

    memset(&s, 0, sizeof(s));
    s.confine = policy_confine(&e->pol);
    s.resolve = policy_resolve(&e->pol, OPEN_PULL, "d/f", 3, &resolved,
        msg, sizeof(msg));
    pol_path(d, e->root, "d");
    pol_path(old, e->root, "d.old");
    s.swapped = rename(d, old) == 0 && symlink(e->outside, d) == 0;
    s.read_swapped = resolved != NULL ? pol_try_open(resolved, O_RDONLY) :
        -1;
    pol_path(p, e->outside, "secret");
    s.read_out = pol_try_open(p, O_RDONLY);
    pol_path(p, e->outside, "new");
    s.write_out = pol_try_open(p, O_WRONLY | O_CREAT | O_EXCL);
    pol_path(p, e->root, "d.old/f");
    s.read_in = pol_try_open(p, O_RDONLY);
    pol_path(p, e->root, "new");
    s.write_in = pol_try_open(p, O_WRONLY | O_CREAT | O_EXCL);
    if (write(wfd, &s, sizeof(s)) != (ssize_t)sizeof(s))
        _exit(3);
    _exit(0);
}

/* The Landlock ABI of this kernel, asked apart from policy.c: < 0 when
 * it has none. */
static long
pol_landlock_abi(void)
{
#if defined(__linux__) && defined(SYS_landlock_create_ruleset)
    return syscall(SYS_landlock_create_ruleset, NULL, 0,
        LANDLOCK_CREATE_RULESET_VERSION);
#else
    return -1;
#endif
}

TEST(policy_landlock)
{
    struct pol_env e;
    struct pol_seen s;
    char p[CHECK_PATH_MAX];
    long abi = pol_landlock_abi();
    int fds[2], status;
    pid_t pid;

    pol_env_init(&e);
    CHECK(pipe(fds) == 0);
    if ((pid = fork()) == 0) {
        close(fds[0]);
        pol_child(&e, fds[1]);
    }
    CHECK(pid > 0);
    close(fds[1]);
    memset(&s, 0, sizeof(s));
    CHECK_EQ_INT(read(fds[0], &s, sizeof(s)), sizeof(s));
    close(fds[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* The race itself: the path passed the check, then a directory on it
     * became a link out of ROOT. */
    CHECK_OK(s.resolve);
    CHECK(s.swapped);
    /* The check, asked again, refuses the swapped path: only the open
     * between the two could go through. */
    pol_refused(&e, OPEN_PULL, "d/f", -EACCES);
    pol_refused(&e, OPEN_PULL, e.outside, -EACCES);
    check_note_clear();
    /* Inside ROOT, everything still works under the ruleset. */
    CHECK_EQ_INT(s.read_in, 0);
    CHECK_EQ_INT(s.write_in, 0);
    if (abi >= 2) {
        CHECK_EQ_INT(s.confine, 1);
        CHECK_EQ_INT(s.read_swapped, EACCES);
        CHECK_EQ_INT(s.read_out, EACCES);
        CHECK_EQ_INT(s.write_out, EACCES);
        pol_path(p, e.outside, "new");
        CHECK(access(p, F_OK) != 0);
    } else {
        fprintf(stderr, "policy_landlock: this kernel has no Landlock ABI 2 "
            "(landlock_create_ruleset says %ld): the agent is confined by "
            "its path checks alone, and this race goes through\n", abi);
        CHECK_EQ_INT(s.confine, 0);
        CHECK_EQ_INT(s.read_swapped, 0);
    }
    pol_env_cleanup(&e);
}

/* The scope two agents compare before one hands a connection to the
 * other: what it says, and a scope that does not fit is an error, never
 * a cut string that could equal another agent's. */
TEST(policy_scope_fits)
{
    struct policy p;
    char out[16];

    memset(&p, 0, sizeof(p));
    CHECK_EQ_INT(policy_scope(&p, out, sizeof(out)), 3);
    CHECK_EQ_STR(out, "any");
    p.root = (char *)"/data/run";
    p.read_only = 1;
    CHECK_EQ_INT(policy_scope(&p, out, sizeof(out)), 12);
    CHECK_EQ_STR(out, "ro:/data/run");
    p.root = (char *)"/data/run-long";
    CHECK_EQ_ERR(policy_scope(&p, out, sizeof(out)), FERRY_ERR_TOO_LARGE);
    p.root = (char *)"/data/run-lo";   /* 15 bytes and the NUL: fits */
    CHECK_EQ_INT(policy_scope(&p, out, sizeof(out)), 15);
}
