/* swarm_line.c: ferry-swarm's command lines, bounded (swarm_line.h). */
#include "swarm_line.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static int
refuse(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -1;
}

/* A decimal number of 1 to 19 digits, no sign, at most max. */
static int
number(const char *s, size_t n, int64_t max, int64_t *out)
{
    int64_t v = 0;
    size_t i;

    if (n == 0 || n > 19)
        return -1;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (max - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* ADDR:PORT: numeric IPv4, or IPv6 in brackets; the port in minport..
 * 65535. Names are not resolved: the helper is told addresses only. */
static int
endpoint(const char *s, size_t n, int minport, struct swarm_line *l)
{
    const char *colon, *a = s;
    size_t alen;
    unsigned char bin[16];
    int64_t port;

    if ((colon = memrchr(s, ':', n)) == NULL)
        return -1;
    alen = (size_t)(colon - s);
    if (alen >= 2 && s[0] == '[' && s[alen - 1] == ']') {
        a = s + 1;
        alen -= 2;
    } else if (memchr(s, ':', alen) != NULL) {
        return -1; /* IPv6 without brackets */
    }
    if (alen == 0 || alen >= sizeof(l->ip))
        return -1;
    memcpy(l->ip, a, alen);
    l->ip[alen] = '\0';
    if (inet_pton(a == s ? AF_INET : AF_INET6, l->ip, bin) != 1)
        return -1;
    if (number(colon + 1, n - alen - (size_t)(a != s ? 3 : 1), 65535,
        &port) != 0 || port < minport)
        return -1;
    l->port = (int)port;
    return 0;
}

/* A bare numeric address, IPv4 or IPv6 (no port, so no brackets). */
static int
address(const char *s, size_t n, struct swarm_line *l)
{
    unsigned char bin[16];

    if (n == 0 || n >= sizeof(l->ip))
        return -1;
    memcpy(l->ip, s, n);
    l->ip[n] = '\0';
    if (inet_pton(AF_INET, l->ip, bin) != 1 &&
        inet_pton(AF_INET6, l->ip, bin) != 1)
        return -1;
    return 0;
}

/* The rest of the line as a path: not empty, no control character. */
static int
path_arg(const char *s, size_t n, struct swarm_line *l)
{
    size_t i;

    if (n == 0 || n >= sizeof(l->arg))
        return -1;
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return -1;
    memcpy(l->arg, s, n);
    l->arg[n] = '\0';
    l->arg_len = n;
    return 0;
}

/* Cuts the next word off [*s, *s + *n), up to a space or the end. */
static int
word(const char **s, size_t *n, const char **w, size_t *wn)
{
    const char *sp = memchr(*s, ' ', *n);
    size_t k = sp ? (size_t)(sp - *s) : *n;

    if (k == 0)
        return -1;
    *w = *s;
    *wn = k;
    *s += sp ? k + 1 : k;
    *n -= sp ? k + 1 : k;
    if (sp && *n == 0)
        return -1; /* a trailing space */
    return 0;
}

int
swarm_line_parse(const char *s, size_t n, struct swarm_line *l, char *err,
    size_t errlen)
{
    static const struct {
        const char *name;
        enum swarm_cmd cmd;
    } cmds[] = {
        { "torrent", SWARM_TORRENT }, { "cert", SWARM_CERT },
        { "key", SWARM_KEY }, { "save", SWARM_SAVE },
        { "listen", SWARM_LISTEN }, { "start", SWARM_START },
        { "peer", SWARM_PEER }, { "piece", SWARM_PIECE },
        { "stop", SWARM_STOP }, { "limit", SWARM_LIMIT },
        { "allow", SWARM_ALLOW }, { "put", SWARM_PUT },
        { "link", SWARM_LINK }, { "part", SWARM_PART },
        { "from", SWARM_FROM },
    };
    const char *w;
    size_t wn, i;

    memset(l, 0, sizeof(*l));
    if (n >= SWARM_MAX_LINE)
        return refuse(err, errlen, "line too long");
    if (memchr(s, '\0', n) != NULL)
        return refuse(err, errlen, "NUL in line");
    if (word(&s, &n, &w, &wn) != 0)
        return refuse(err, errlen, "empty line or stray space");
    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strlen(cmds[i].name) == wn && memcmp(cmds[i].name, w, wn) == 0)
            break;
    if (i == sizeof(cmds) / sizeof(cmds[0]))
        return refuse(err, errlen, "unknown command");
    l->cmd = cmds[i].cmd;
    switch (l->cmd) {
    case SWARM_TORRENT:
    case SWARM_CERT:
    case SWARM_KEY:
    case SWARM_SAVE:
        if (path_arg(s, n, l) != 0)
            return refuse(err, errlen, "bad path");
        return 0;
    case SWARM_LISTEN:
    case SWARM_PEER:
        if (endpoint(s, n, l->cmd == SWARM_PEER ? 1 : 0, l) != 0)
            return refuse(err, errlen, "bad address:port");
        return 0;
    case SWARM_ALLOW:
        if (address(s, n, l) != 0)
            return refuse(err, errlen, "bad address");
        return 0;
    case SWARM_START:
    case SWARM_STOP:
        if (n != 0)
            return refuse(err, errlen, "trailing words");
        return 0;
    case SWARM_LIMIT:
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, SWARM_MAX_RATE, &l->up) != 0 ||
            word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, SWARM_MAX_RATE, &l->down) != 0 || n != 0)
            return refuse(err, errlen, "bad rate");
        return 0;
    case SWARM_PIECE:
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, INT32_MAX, &l->piece) != 0)
            return refuse(err, errlen, "bad piece index");
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, SWARM_MAX_OFFSET, &l->offset) != 0)
            return refuse(err, errlen, "bad offset");
        if (path_arg(s, n, l) != 0)
            return refuse(err, errlen, "bad path");
        return 0;
    case SWARM_LINK:
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, INT32_MAX, &l->piece) != 0)
            return refuse(err, errlen, "bad link index");
        if (path_arg(s, n, l) != 0)
            return refuse(err, errlen, "bad path");
        return 0;
    case SWARM_PART:
    case SWARM_FROM:
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, INT32_MAX, &l->piece) != 0)
            return refuse(err, errlen, "bad bundle index");
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, SWARM_MAX_OFFSET, &l->offset) != 0)
            return refuse(err, errlen, "bad offset");
        /* Empty files are not shared, so no part is empty. */
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, SWARM_MAX_OFFSET, &l->len) != 0 || l->len == 0)
            return refuse(err, errlen, "bad part length");
        if (path_arg(s, n, l) != 0)
            return refuse(err, errlen, "bad path");
        return 0;
    case SWARM_PUT:
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, INT32_MAX, &l->piece) != 0)
            return refuse(err, errlen, "bad put index");
        if (word(&s, &n, &w, &wn) != 0 ||
            number(w, wn, SWARM_MAX_PUT, &l->len) != 0)
            return refuse(err, errlen, "bad put length");
        /* No piece is empty, and a put of nothing would frame nothing. */
        if (l->len == 0)
            return refuse(err, errlen, "empty put");
        if (n != 0)
            return refuse(err, errlen, "trailing words");
        return 0;
    }
    return refuse(err, errlen, "unknown command");
}

int
swarm_path_ok(const char *p)
{
    const char *e;
    size_t n;

    if (*p == '\0' || *p == '/')
        return 0;
    for (;;) {
        e = strchr(p, '/');
        n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (e == NULL)
            return 1;
        p = e + 1;
    }
}

/* A line whose first word is "put": its payload follows it, so if it is
 * refused, where the next line starts is unknown. */
static int
put_header(const char *s, size_t n)
{
    return n >= 3 && memcmp(s, "put", 3) == 0 && (n == 3 || s[3] == ' ');
}

void
swarm_reader_init(struct swarm_reader *r)
{
    r->len = 0;
    r->skipping = 0;
    r->unframed = 0;
    r->payload = 0;
}

size_t
swarm_reader_room(const struct swarm_reader *r)
{
    /* Once unframed, nothing more means anything. */
    return r->unframed ? 0 : sizeof(r->in) - r->len;
}

void
swarm_reader_push(struct swarm_reader *r, const void *p, size_t n)
{
    if (n > swarm_reader_room(r))
        n = swarm_reader_room(r);
    memcpy(r->in + r->len, p, n);
    r->len += n;
}

int
swarm_reader_next(struct swarm_reader *r, struct swarm_line *l, char *err,
    size_t errlen)
{
    const char *nl;
    size_t n;
    int rc;

    if (r->unframed) {
        refuse(err, errlen, "input unframed by a refused put");
        return SWARM_UNFRAMED;
    }
    /* A put's payload is not lines: its newlines must not end one. */
    if (r->payload > 0)
        return 0;
    nl = memchr(r->in, '\n', r->len);
    if (nl == NULL) {
        /* No end in sight within a line's length: drop what is held and
         * refuse the line once its end comes. The line starts at in[0]
         * until skipping begins, so whether it was a put is known now. */
        if (r->len >= SWARM_MAX_LINE) {
            if (!r->skipping)
                r->skipping = put_header(r->in, r->len) ? 2 : 1;
            r->len = 0;
        }
        return 0;
    }
    n = (size_t)(nl - r->in);
    if (r->skipping) {
        rc = r->skipping == 2 ? SWARM_UNFRAMED : -1;
        r->skipping = 0;
        refuse(err, errlen, "line too long");
    } else if (swarm_line_parse(r->in, n, l, err, errlen) == 0) {
        rc = 1;
        if (l->cmd == SWARM_PUT)
            r->payload = (size_t)l->len;
    } else {
        rc = put_header(r->in, n) ? SWARM_UNFRAMED : -1;
    }
    memmove(r->in, r->in + n + 1, r->len - n - 1);
    r->len -= n + 1;
    if (rc == SWARM_UNFRAMED) {
        /* Whatever follows may be payload or lines: drop it all. */
        r->unframed = 1;
        r->len = 0;
    }
    return rc;
}

size_t
swarm_reader_payload(const struct swarm_reader *r)
{
    return r->payload;
}

size_t
swarm_reader_take(struct swarm_reader *r, void *dst, size_t max)
{
    size_t k = r->payload;

    if (k > r->len)
        k = r->len;
    if (k > max)
        k = max;
    if (k == 0)
        return 0;
    memcpy(dst, r->in, k);
    memmove(r->in, r->in + k, r->len - k);
    r->len -= k;
    r->payload -= k;
    return k;
}

int
swarm_reader_idle(const struct swarm_reader *r)
{
    if (r->unframed)
        return 1;
    if (r->payload > 0)
        return r->len == 0;
    return memchr(r->in, '\n', r->len) == NULL;
}
