/*
 * manifest_top.c: the sources as the command line names them
 * (manifest.h): the top-level name each gives, and two sources that
 * would give one name.
 */
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/fsx.h"

int
manifest_source(const char *src, char **local, int *contents)
{
    size_t len = strlen(src);
    char *p;

    *local = NULL;
    *contents = len > 1 && src[len - 1] == '/';
    if ((p = xstrdup(src)) == NULL)
        return FERRY_ERR_NOMEM;
    while (len > 1 && p[len - 1] == '/')
        p[--len] = '\0';
    /* "dir/." means the same as "dir/". */
    if (len >= 2 && strcmp(p + len - 2, "/.") == 0) {
        p[len -= 2] = '\0';
        *contents = 1;
    }
    /* ".", ".." and "x/..": no name to give the top entry. */
    if (strcmp(p, ".") == 0 || strcmp(p, "..") == 0 ||
        (len >= 3 && strcmp(p + len - 3, "/..") == 0))
        *contents = 1;
    *local = p;
    return 0;
}

int
manifest_top_name(const char *src, char **name)
{
    char *local, *dir;
    int r, contents;

    *name = NULL;
    if ((r = manifest_source(src, &local, &contents)) != 0)
        return r;
    if (!contents && (r = fsx_split(local, &dir, name)) == 0)
        xfree(dir);
    xfree(local);
    return r;
}

struct top_named {
    char *name;
    char *path;    /* what the source reads, written one way */
    size_t i;
};

/* p with runs of '/' made one, "." components and a trailing '/' gone,
 * in place: "./a" and "a" are one source, not two of one name. */
static void
manifest_top_path_clean(char *p)
{
    const char *r = p;
    char *w = p;
    int start = 1;

    while (*r != '\0') {
        if (*r == '/') {
            if (w == p ? r == p : w[-1] != '/')
                *w++ = '/';
            r++;
            start = 1;
        } else if (start && r[0] == '.' && (r[1] == '/' || r[1] == '\0')) {
            r++;
        } else {
            start = 0;
            *w++ = *r++;
        }
    }
    if (w > p + 1 && w[-1] == '/')
        w--;
    *w = '\0';
}

static int
manifest_top_named_cmp(const void *a, const void *b)
{
    const struct top_named *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    if (c == 0)
        c = strcmp(x->path, y->path);
    return c != 0 ? c : x->i < y->i ? -1 : x->i > y->i;
}

int
manifest_top_clash(const char *const *srcs, size_t n, char *msg,
    size_t msglen)
{
    struct top_named *v;
    size_t i, k = 0, a = 0, b = 0, lo, hi;
    const char *name = NULL;
    char *dir;
    int r = 0, contents;

    msg[0] = '\0';
    if ((v = xcalloc(n + 1, sizeof(*v))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < n && r == 0; i++) {
        if ((r = manifest_source(srcs[i], &v[k].path, &contents)) != 0)
            break;
        if (contents) {
            xfree(v[k].path);
            v[k].path = NULL;
            continue;
        }
        if ((r = fsx_split(v[k].path, &dir, &v[k].name)) != 0)
            break;
        xfree(dir);
        manifest_top_path_clean(v[k].path);
        v[k++].i = i;
    }
    if (r == 0 && k > 1)
        qsort(v, k, sizeof(*v), manifest_top_named_cmp);
    /* One name from two different paths: of such pairs, the one whose
     * later source comes first on the command line. */
    for (i = 1; r == 0 && i < k; i++) {
        if (strcmp(v[i - 1].name, v[i].name) != 0 ||
            strcmp(v[i - 1].path, v[i].path) == 0)
            continue;
        lo = v[i - 1].i < v[i].i ? v[i - 1].i : v[i].i;
        hi = v[i - 1].i < v[i].i ? v[i].i : v[i - 1].i;
        if (name == NULL || hi < b) {
            a = lo;
            b = hi;
            name = v[i].name;
        }
    }
    if (name != NULL)
        snprintf(msg, msglen, "'%.400s' and '%.400s' would both be %.255s "
            "in the destination: rename one, or send their parents",
            srcs[a], srcs[b], name);
    for (i = 0; i <= k && i <= n; i++) {
        xfree(v[i].name);
        xfree(v[i].path);
    }
    xfree(v);
    return r != 0 ? r : name != NULL;
}
