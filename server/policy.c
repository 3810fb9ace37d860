#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/landlock.h>
#include <sys/prctl.h>
#endif

#include "../common/alloc.h"
#include "../proto/msg.h"

int
policy_restrict(struct policy *p, const char *root, char *msg,
    size_t msglen)
{
    char canon[PATH_MAX];
    struct stat st;

    if (realpath(root, canon) == NULL || stat(canon, &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
        snprintf(msg, msglen, "--restrict %s: %s", root,
            errno != 0 ? strerror(errno) : "not a directory");
        return FERRY_ERR_USAGE;
    }
    if ((p->root = xstrdup(canon)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

void
policy_cleanup(struct policy *p)
{
    xfree(p->root);
    p->root = NULL;
}

int
policy_scope(const struct policy *p, char *out, size_t n)
{
    int k;

    if (p->root == NULL)
        k = snprintf(out, n, "any");
    else
        k = snprintf(out, n, "%s:%s", p->read_only ? "ro" :
            p->write_only ? "wo" : "rw", p->root);
    return k < 0 || (size_t)k >= n ? FERRY_ERR_TOO_LARGE : k;
}

/* "~" and "~/..." mean the agent's home, as with scp. */
static int
policy_home(const struct policy *pol, const char *path, size_t len,
    char **out)
{
    size_t hl;
    char *p;

    if (pol->home != NULL && len >= 1 && path[0] == '~' &&
        (len == 1 || path[1] == '/')) {
        hl = strlen(pol->home);
        if ((p = xmalloc(hl + len)) == NULL)
            return FERRY_ERR_NOMEM;
        memcpy(p, pol->home, hl);
        memcpy(p + hl, path + 1, len - 1);
        p[hl + len - 1] = '\0';
    } else if ((p = xstrndup(path, len)) == NULL) {
        return FERRY_ERR_NOMEM;
    }
    *out = p;
    return 0;
}

static int FERRY_PRINTF(4, 5)
policy_refuse(int code, char *msg, size_t msglen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    return code;
}

/*
 * The path beneath ROOT that path names, as components joined by '/'
 * (no ".", "..", or empty ones), in rel (of relcap bytes); "" for ROOT.
 */
static int
policy_beneath(const struct policy *pol, const char *path, size_t len,
    char *rel, size_t relcap)
{
    size_t rl = strlen(pol->root), i = 0, o = 0, start, n;

    if (len >= 1 && path[0] == '~' && (len == 1 || path[1] == '/'))
        i = 1;  /* "~" is ROOT */
    else if (len >= 1 && path[0] == '/') {
        /* Absolute: ROOT itself or beneath it, component-wise. */
        if (len < rl || memcmp(path, pol->root, rl) != 0 ||
            (len > rl && path[rl] != '/' && rl > 1))
            return FERRY_ERR_BAD_PATH;
        i = rl;
    }
    while (i < len) {
        while (i < len && path[i] == '/')
            i++;
        start = i;
        while (i < len && path[i] != '/')
            i++;
        n = i - start;
        if (n == 0 || (n == 1 && path[start] == '.'))
            continue;
        if (n == 2 && path[start] == '.' && path[start + 1] == '.')
            return FERRY_ERR_BAD_PATH;
        if (o + n + 2 > relcap)
            return FERRY_ERR_TOO_LARGE;
        if (o > 0)
            rel[o++] = '/';
        memcpy(rel + o, path + start, n);
        o += n;
    }
    rel[o] = '\0';
    return 0;
}

/* Walks rel beneath ROOT without following links: every component that
 * exists is a directory (the last may be a file); a missing one ends the
 * walk (a push makes the rest). */
static int
policy_walk(const struct policy *pol, const char *rel)
{
    char name[NAME_MAX + 1];
    const char *p = rel, *slash;
    struct stat st;
    int dfd, next, r = 0;

    if ((dfd = open(pol->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -errno;
    while (*p != '\0') {
        slash = strchr(p, '/');
        size_t n = slash != NULL ? (size_t)(slash - p) : strlen(p);

        if (n > NAME_MAX) {
            r = -ENAMETOOLONG;
            break;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            r = errno == ENOENT ? 0 : -errno;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            r = FERRY_ERR_BAD_PATH;
            break;
        }
        if (slash == NULL)
            break;
        if (!S_ISDIR(st.st_mode)) {
            r = -ENOTDIR;
            break;
        }
        next = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
            O_CLOEXEC);
        close(dfd);
        if ((dfd = next) < 0)
            return -errno;
        p = slash + 1;
    }
    close(dfd);
    return r;
}

int
policy_resolve(void *ctx, uint8_t op, const char *path, size_t len,
    char **out, char *msg, size_t msglen)
{
    const struct policy *pol = ctx;
    char rel[PATH_MAX];
    size_t rl;
    int r, writes = op == OPEN_PUSH || op == OPEN_CLEAN ||
        op == OPEN_DELETE || op == OPEN_KEEP;

    *out = NULL;
    if (pol->root == NULL)
        return policy_home(pol, path, len, out);
    if (pol->read_only && writes)
        return policy_refuse(-EACCES, msg, msglen, "this agent only "
            "serves reads (--read-only): no push, clean or delete");
    if (pol->write_only && op == OPEN_PULL)
        return policy_refuse(-EACCES, msg, msglen, "this agent only "
            "takes writes (--write-only): no pull");
    if ((r = policy_beneath(pol, path, len, rel, sizeof(rel))) != 0)
        return policy_refuse(-EACCES, msg, msglen, "%.*s: outside the directory "
            "this agent serves (%s)", (int)(len > 512 ? 512 : len), path,
            pol->root);
    if ((r = policy_walk(pol, rel)) != 0)
        return policy_refuse(r == FERRY_ERR_BAD_PATH ? -EACCES : r, msg,
            msglen, "%.*s: %s",
            (int)(len > 512 ? 512 : len), path, r == FERRY_ERR_BAD_PATH ?
            "goes through a symlink, which this agent does not follow" :
            ferry_strerror(r));
    rl = strlen(pol->root);
    if ((*out = xmalloc(rl + 1 + strlen(rel) + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    snprintf(*out, rl + 1 + strlen(rel) + 1, "%s%s%s", pol->root,
        rel[0] != '\0' && strcmp(pol->root, "/") != 0 ? "/" : "", rel);
    return 0;
}

int
policy_confine(const struct policy *p)
{
#if defined(__linux__) && defined(LANDLOCK_ACCESS_FS_REFER)
    struct landlock_ruleset_attr ra;
    struct landlock_path_beneath_attr pb;
    uint64_t all;
    long abi;
    int rfd, r = 0;

    if (p->root == NULL)
        return 0;
    abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
        LANDLOCK_CREATE_RULESET_VERSION);
    /* ABI 1 forbids every rename across directories: the commit of a
     * staged file is one. */
    if (abi < 2)
        return 0;
    all = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
        LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
        LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
        LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
        LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
        LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
        LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER;
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
    if (abi >= 3)
        all |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
    memset(&ra, 0, sizeof(ra));
    ra.handled_access_fs = all;
    if ((rfd = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra),
        0)) < 0)
        return 0;
    memset(&pb, 0, sizeof(pb));
    pb.allowed_access = all & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE;
    if ((pb.parent_fd = open(p->root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        r = -errno;
    else if (syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH,
        &pb, 0) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_landlock_restrict_self, rfd, 0) != 0)
        r = -errno;
    else
        r = 1;
    if (pb.parent_fd >= 0)
        close(pb.parent_fd);
    close(rfd);
    return r;
#else
    (void)p;
    return 0;
#endif
}
