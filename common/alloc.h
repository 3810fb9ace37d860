/*
 * alloc.h: the one place memory is allocated.
 *
 * Every allocation in ferry goes through these so that the Nth allocation
 * can be made to fail (curl's torture mode): the unit tests call
 * alloc_fail_at to prove that out-of-memory paths clean up, and any binary
 * run with FERRY_FAIL_ALLOC=N in the environment fails its Nth allocation
 * (counting from 1 at process start; 0 or a value that is not a plain
 * decimal number turns this off). The variable is read once, at the first
 * allocation.
 */
#ifndef FERRY_COMMON_ALLOC_H
#define FERRY_COMMON_ALLOC_H

#include <stddef.h>

/* malloc/calloc/realloc that return NULL on failure (or on injected
 * failure). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* Copies len bytes and adds a NUL. Returns NULL on failure. */
char *xstrndup(const char *s, size_t len);
char *xstrdup(const char *s);
void xfree(void *p);

/*
 * Makes room for element n of an array v of *cap elements of elem bytes:
 * when n == *cap, doubles *cap (starting at first) and reallocates.
 * Returns the array, moved or not, or NULL when memory or the size runs
 * out, leaving v and *cap as they were:
 *
 *     if ((nv = xgrow(s->v, s->n, &s->cap, sizeof(*s->v), 16)) == NULL)
 *         return FERRY_ERR_NOMEM;
 *     s->v = nv;
 */
void *xgrow(void *v, size_t n, size_t *cap, size_t elem, size_t first);

/* Makes a work buffer p of *cap bytes hold n: reallocates to exactly n
 * (at least 1) when it is smaller. Returns the buffer, moved or not, or
 * NULL when memory runs out, leaving p and *cap as they were. */
void *xroom(void *p, size_t *cap, size_t n);

/* Makes allocation number n (counting from 1 after this call) fail; 0 turns
 * injection off. Overrides FERRY_FAIL_ALLOC. Used by tests only. */
void alloc_fail_at(unsigned long n);

#endif
