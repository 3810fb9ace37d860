#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_ulong alloc_countdown;

static int
alloc_should_fail(void)
{
    unsigned long n = atomic_load(&alloc_countdown);

    while (n != 0) {
        if (atomic_compare_exchange_weak(&alloc_countdown, &n, n - 1))
            return n == 1;
    }
    return 0;
}

void
alloc_fail_at(unsigned long n)
{
    atomic_store(&alloc_countdown, n);
}

void *
xmalloc(size_t n)
{
    if (alloc_should_fail())
        return NULL;
    return malloc(n == 0 ? 1 : n);
}

void *
xcalloc(size_t n, size_t size)
{
    if (alloc_should_fail())
        return NULL;
    return calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
}

void *
xrealloc(void *p, size_t n)
{
    if (alloc_should_fail())
        return NULL;
    return realloc(p, n == 0 ? 1 : n);
}

char *
xstrndup(const char *s, size_t len)
{
    char *d = xmalloc(len + 1);

    if (d == NULL)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *
xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

void
xfree(void *p)
{
    free(p);
}
