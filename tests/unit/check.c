#include "check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
