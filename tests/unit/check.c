#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Each case runs in its own process, so one note per process is enough. */
static char check_note_text[256];

void
check_note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(check_note_text, sizeof(check_note_text), fmt, ap);
    va_end(ap);
}

void
check_note_clear(void)
{
    check_note_text[0] = '\0';
}

void
check_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (check_note_text[0] != '\0')
        fprintf(stderr, " [%s]", check_note_text);
    fputc('\n', stderr);
    fflush(NULL);
    /* _exit, not exit: the case stopped halfway, and LeakSanitizer would
     * only add noise about what it had not freed yet. */
    _exit(1);
}

void
check_true(const char *file, int line, const char *expr, int ok)
{
    if (!ok)
        check_fail(file, line, "CHECK(%s) failed", expr);
}

void
check_eq_int(const char *file, int line, const char *ea, const char *eb,
    intmax_t a, intmax_t b)
{
    if (a != b)
        check_fail(file, line, "%s == %s: %jd != %jd", ea, eb, a, b);
}

void
check_eq_u64(const char *file, int line, const char *ea, const char *eb,
    uintmax_t a, uintmax_t b)
{
    if (a != b)
        check_fail(file, line, "%s == %s: %ju (%#jx) != %ju (%#jx)", ea, eb,
            a, a, b, b);
}

void
check_eq_err(const char *file, int line, const char *ea, const char *eb,
    int a, int b)
{
    if (a != b)
        check_fail(file, line, "%s == %s: got %d (%s), want %d (%s)", ea, eb,
            a, ferry_errname(a), b, ferry_errname(b));
}

void
check_fails(const char *file, int line, const char *expr, int r)
{
    if (r == 0)
        check_fail(file, line, "%s succeeded, want an error", expr);
}

void
check_eq_mem(const char *file, int line, const char *ea, const char *eb,
    const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    size_t i;

    if (n == 0 || memcmp(a, b, n) == 0)
        return;
    for (i = 0; x[i] == y[i]; i++)
        continue;
    check_fail(file, line, "%s == %s (%zu bytes): first difference at %zu: "
        "%#04x != %#04x", ea, eb, n, i, x[i], y[i]);
}

void
check_eq_str(const char *file, int line, const char *ea, const char *eb,
    const char *a, const char *b)
{
    if (strcmp(a, b) != 0)
        check_fail(file, line, "%s == %s: \"%s\" != \"%s\"", ea, eb, a, b);
}

void *
check_alloc(size_t n)
{
    void *p = malloc(n);

    if (p == NULL)
        check_fail(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return p;
}

uint8_t *
check_dup(const void *p, size_t n)
{
    uint8_t *d = malloc(n);

    if (d == NULL && n > 0)
        check_fail(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    if (n > 0)
        memcpy(d, p, n);
    return d;
}

uint64_t
check_rand(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

void
check_tmpdir(char out[CHECK_PATH_MAX])
{
    const char *tmp = getenv("TMPDIR");

    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    if (snprintf(out, CHECK_PATH_MAX, "%s/ferry-unit-XXXXXX", tmp) >=
        CHECK_PATH_MAX)
        check_fail(__FILE__, __LINE__, "TMPDIR too long");
    if (mkdtemp(out) == NULL)
        check_fail(__FILE__, __LINE__, "mkdtemp %s: %s", out,
            strerror(errno));
}

static int
check_rm_one(const char *path, const struct stat *st, int flag,
    struct FTW *f)
{
    (void)st;
    (void)f;
    if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0)
        check_fail(__FILE__, __LINE__, "removing %s: %s", path,
            strerror(errno));
    return 0;
}

void
check_rmtree(const char *path)
{
    struct stat st;

    if (lstat(path, &st) != 0 && errno == ENOENT)
        return;
    if (nftw(path, check_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        check_fail(__FILE__, __LINE__, "nftw %s: %s", path,
            strerror(errno));
}

void
check_write_file(const char *path, const void *data, size_t n,
    unsigned seed)
{
    uint8_t chunk[4096];
    size_t off = 0, k, len;
    int fd;

    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
        0644)) < 0)
        check_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
    while (off < n) {
        len = n - off < sizeof(chunk) ? n - off : sizeof(chunk);
        if (data == NULL)
            for (k = 0; k < len; k++)
                chunk[k] = (uint8_t)((off + k) * 131 + seed +
                    ((off + k) >> 11));
        else
            memcpy(chunk, (const uint8_t *)data + off, len);
        if (write(fd, chunk, len) != (ssize_t)len)
            check_fail(__FILE__, __LINE__, "write %s: %s", path,
                strerror(errno));
        off += len;
    }
    close(fd);
}
