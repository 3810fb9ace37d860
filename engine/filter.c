#include "filter.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"

void
filter_init(struct filter *f)
{
    memset(f, 0, sizeof(*f));
}

void
filter_cleanup(struct filter *f)
{
    size_t i;

    for (i = 0; i < f->n; i++) {
        xfree(f->v[i].pattern);
        xfree(f->v[i].text);
        xfree(f->v[i].scope);
    }
    xfree(f->v);
    memset(f, 0, sizeof(*f));
}

/* An anchored pattern in a gitignore file: one with a '/' before its
 * last character (gitignore anchors those to the file's directory). */
static int
filter_add_rule(struct filter *f, int action, const char *pattern,
    size_t len, const char *scope, int gitignore)
{
    struct filter_rule *r;
    size_t start = 0, end = len;

    if (action != FILTER_EXCLUDE && action != FILTER_INCLUDE)
        return FERRY_ERR_FORMAT;
    if (len > FILTER_MAX_PATTERN)
        return FERRY_ERR_TOO_LARGE;
    if (len == 0 || memchr(pattern, '\0', len) != NULL)
        return FERRY_ERR_FORMAT;
    if (f->n >= FILTER_MAX_RULES)
        return FERRY_ERR_TOO_LARGE;
    if ((r = xgrow(f->v, f->n, &f->cap, sizeof(*f->v), 16)) == NULL)
        return FERRY_ERR_NOMEM;
    f->v = r;
    r = &f->v[f->n];
    memset(r, 0, sizeof(*r));
    if (pattern[0] == '/') {
        r->anchored = 1;
        start = 1;
    }
    if (end > start && pattern[end - 1] == '/') {
        r->dir_only = 1;
        end--;
    }
    if (end <= start)
        return FERRY_ERR_FORMAT;
    r->action = (uint8_t)action;
    r->has_slash = memchr(pattern + start, '/', end - start) != NULL;
    if (gitignore && r->has_slash)
        r->anchored = 1;
    r->pattern = xstrndup(pattern + start, end - start);
    r->text = xstrndup(pattern, len);
    r->scope = scope != NULL && scope[0] != '\0' ? xstrdup(scope) : NULL;
    if (r->pattern == NULL || r->text == NULL ||
        (scope != NULL && scope[0] != '\0' && r->scope == NULL)) {
        xfree(r->pattern);
        xfree(r->text);
        xfree(r->scope);
        return FERRY_ERR_NOMEM;
    }
    f->n++;
    return 0;
}

int
filter_add(struct filter *f, int action, const char *pattern, size_t len,
    const char *scope)
{
    return filter_add_rule(f, action, pattern, len, scope, 0);
}

int
filter_copy(struct filter *dst, const struct filter *src)
{
    size_t i;
    int r;

    filter_init(dst);
    for (i = 0; i < src->n; i++) {
        const struct filter_rule *s = &src->v[i];

        if ((r = filter_add_rule(dst, s->action, s->text, strlen(s->text),
            s->scope, 0)) != 0) {
            filter_cleanup(dst);
            return r;
        }
        /* An ignore file's own anchoring is not in its text. */
        dst->v[dst->n - 1].anchored = s->anchored;
    }
    return 0;
}

/* Reads a whole file of at most FILTER_MAX_FILE bytes (NUL-terminated). */
static int
filter_read(const char *path, char **out, size_t *outlen)
{
    struct stat st;
    size_t got = 0;
    ssize_t n;
    char *p;
    int fd, r = 0;

    *out = NULL;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        r = -errno;
    } else if (!S_ISREG(st.st_mode)) {
        r = -EINVAL;
    } else if ((p = xmalloc(FILTER_MAX_FILE + 1)) == NULL) {
        r = FERRY_ERR_NOMEM;
    } else {
        /* Read one byte past the limit to tell "too large" from "at". */
        while (got <= FILTER_MAX_FILE) {
            n = read(fd, p + got, FILTER_MAX_FILE + 1 - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                r = -errno;
                break;
            }
            if (n == 0)
                break;
            got += (size_t)n;
        }
        if (r == 0 && got > FILTER_MAX_FILE)
            r = FERRY_ERR_TOO_LARGE;
        if (r != 0) {
            xfree(p);
        } else {
            p[got] = '\0';
            *out = p;
            *outlen = got;
        }
    }
    close(fd);
    return r;
}

/* One line of a file: its action and pattern (in place), or 0 in *len
 * for a line that holds no rule. */
static void
filter_line(char *s, size_t *len, int *action, int gitignore)
{
    size_t n = *len;

    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (gitignore) {
        /* Trailing spaces are not part of the pattern unless escaped. */
        while (n > 0 && s[n - 1] == ' ' && !(n > 1 && s[n - 2] == '\\'))
            n--;
        if (n == 0 || s[0] == '#') {
            *len = 0;
            return;
        }
        *action = FILTER_EXCLUDE;
        if (s[0] == '!') {
            *action = FILTER_INCLUDE;
            memmove(s, s + 1, --n);
        } else if (s[0] == '\\' && n > 1 && (s[1] == '#' || s[1] == '!')) {
            memmove(s, s + 1, --n);
        }
    } else {
        if (n == 0 || s[0] == '#' || s[0] == ';') {
            *len = 0;
            return;
        }
        if (n > 2 && (s[0] == '+' || s[0] == '-') && s[1] == ' ') {
            *action = s[0] == '+' ? FILTER_INCLUDE : FILTER_EXCLUDE;
            memmove(s, s + 2, n -= 2);
        }
    }
    *len = n;
}

int
filter_add_file(struct filter *f, const char *path, int action,
    int gitignore, const char *scope, unsigned *line)
{
    char *text = NULL, *p, *nl;
    size_t len = 0, nlines = 0, i, before = f->n;
    int r;

    *line = 0;
    if ((r = filter_read(path, &text, &len)) != 0)
        return r;
    for (p = text; r == 0 && p < text + len; p = nl + 1) {
        int act = action;
        size_t n;

        if ((nl = memchr(p, '\n', (size_t)(text + len - p))) == NULL)
            nl = text + len;
        n = (size_t)(nl - p);
        nlines++;
        filter_line(p, &n, &act, gitignore);
        if (n > 0 && (r = filter_add_rule(f, act, p, n, scope,
            gitignore)) != 0)
            *line = (unsigned)nlines;
    }
    xfree(text);
    if (r != 0) {
        while (f->n > before) {
            f->n--;
            xfree(f->v[f->n].pattern);
            xfree(f->v[f->n].text);
            xfree(f->v[f->n].scope);
        }
        return r;
    }
    /* gitignore: the last matching line wins; our first match does. */
    for (i = 0; gitignore && i < (f->n - before) / 2; i++) {
        struct filter_rule t = f->v[before + i];

        f->v[before + i] = f->v[f->n - 1 - i];
        f->v[f->n - 1 - i] = t;
    }
    return 0;
}

/* Matches one character c against the set at *pp (just past '['):
 * 1 or 0, and *pp past the closing ']'. -1 if the set is not closed
 * (then '[' is an ordinary character). */
static int
filter_glob_set(const char **pp, char c)
{
    const char *p = *pp;
    int neg = 0, hit = 0;

    if (*p == '!' || *p == '^') {
        neg = 1;
        p++;
    }
    /* A ']' first is a member. */
    if (*p == ']') {
        hit = c == ']';
        p++;
    }
    while (*p != '\0' && *p != ']') {
        char lo = *p, hi = *p;

        if (lo == '\\' && p[1] != '\0')
            lo = hi = *++p;
        if (p[1] == '-' && p[2] != '\0' && p[2] != ']') {
            hi = p[2];
            if (hi == '\\' && p[3] != '\0') {
                hi = p[3];
                p++;
            }
            p += 2;
        }
        if ((unsigned char)c >= (unsigned char)lo &&
            (unsigned char)c <= (unsigned char)hi)
            hit = 1;
        p++;
    }
    if (*p != ']')
        return -1;
    *pp = p + 1;
    return c != '/' && hit != neg;
}

static int
filter_glob_rec(const char *p, const char *s, unsigned *steps)
{
    const char *rest;
    int m;

    for (;;) {
        if (++*steps > FILTER_MAX_STEPS)
            return 0;
        switch (*p) {
        case '\0':
            return *s == '\0';
        case '*':
            if (p[1] == '*') {
                for (rest = p; *rest == '*'; rest++)
                    ;
                /* "**" + "/" may stand for no directory at all. */
                if (*rest == '/' && filter_glob_rec(rest + 1, s, steps))
                    return 1;
                for (;;) {
                    if (filter_glob_rec(rest, s, steps))
                        return 1;
                    if (*s == '\0' || *steps > FILTER_MAX_STEPS)
                        return 0;
                    s++;
                }
            }
            for (;;) {
                if (filter_glob_rec(p + 1, s, steps))
                    return 1;
                if (*s == '\0' || *s == '/' || *steps > FILTER_MAX_STEPS)
                    return 0;
                s++;
            }
        case '?':
            if (*s == '\0' || *s == '/')
                return 0;
            p++;
            s++;
            break;
        case '[':
            rest = p + 1;
            if (*s != '\0' && (m = filter_glob_set(&rest, *s)) >= 0) {
                if (m == 0)
                    return 0;
                p = rest;
                s++;
                break;
            }
            if (*s != '[')
                return 0;
            p++;
            s++;
            break;
        case '\\':
            if (p[1] != '\0')
                p++;
            /* FALLTHROUGH */
        default:
            if (*p != *s)
                return 0;
            p++;
            s++;
            break;
        }
    }
}

int
filter_glob_match(const char *pattern, const char *s)
{
    unsigned steps = 0;

    return filter_glob_rec(pattern, s, &steps);
}

static int
filter_rule_matches(const struct filter_rule *r, const char *path)
{
    const char *p;

    if (r->anchored)
        return filter_glob_match(r->pattern, path);
    if (!r->has_slash) {
        p = strrchr(path, '/');
        return filter_glob_match(r->pattern, p != NULL ? p + 1 : path);
    }
    /* The path, or any trailing part of it that starts at a component. */
    for (p = path; p != NULL; p = strchr(p, '/'), p = p ? p + 1 : NULL)
        if (filter_glob_match(r->pattern, p))
            return 1;
    return 0;
}

int
filter_excluded(const struct filter *f, const char *rel, int is_dir)
{
    size_t i, sl;

    for (i = 0; f != NULL && i < f->n; i++) {
        const struct filter_rule *r = &f->v[i];
        const char *path = rel;

        if (r->dir_only && !is_dir)
            continue;
        if (r->scope != NULL) {
            sl = strlen(r->scope);
            if (strncmp(rel, r->scope, sl) != 0 || rel[sl] != '/')
                continue;
            path = rel + sl + 1;
        }
        if (filter_rule_matches(r, path))
            return r->action == FILTER_EXCLUDE;
    }
    return 0;
}
