#include "alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Allocations left before the one that fails; 0: none fails. */
static atomic_ulong alloc_countdown;
static pthread_once_t alloc_env_once = PTHREAD_ONCE_INIT;

/* Arms the countdown from FERRY_FAIL_ALLOC, a decimal number; anything else
 * (unset, empty, a sign, trailing junk, out of range) leaves it off. */
static void
alloc_read_env(void)
{
    const char *s = getenv("FERRY_FAIL_ALLOC");
    unsigned long n;
    char *end;

    if (s == NULL || *s < '0' || *s > '9')
        return;
    errno = 0;
    n = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return;
    atomic_store(&alloc_countdown, n);
}

static int
alloc_should_fail(void)
{
    unsigned long n;

    /* Read lazily so that no constructor or init call is needed; a
     * once-control keeps threads that race to the first allocation from
     * reading it twice. */
    (void)pthread_once(&alloc_env_once, alloc_read_env);
    n = atomic_load(&alloc_countdown);
    while (n != 0) {
        if (atomic_compare_exchange_weak(&alloc_countdown, &n, n - 1))
            return n == 1;
    }
    return 0;
}

void
alloc_fail_at(unsigned long n)
{
    /* The environment is read first, so that it cannot override this call
     * at a later first allocation. */
    (void)pthread_once(&alloc_env_once, alloc_read_env);
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

void *
xgrow(void *v, size_t n, size_t *cap, size_t elem, size_t first)
{
    size_t ncap;

    if (n < *cap)
        return v;
    ncap = *cap ? *cap * 2 : first;
    if (ncap <= *cap || elem == 0 || ncap > SIZE_MAX / elem)
        return NULL;
    if ((v = xrealloc(v, ncap * elem)) != NULL)
        *cap = ncap;
    return v;
}

void *
xroom(void *p, size_t *cap, size_t n)
{
    /* Never NULL on success, even for nothing. */
    if (n == 0)
        n = 1;
    if (p != NULL && n <= *cap)
        return p;
    if ((p = xrealloc(p, n)) != NULL)
        *cap = n;
    return p;
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
