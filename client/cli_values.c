/*
 * cli_values.c: the values the command line names: locations
 * ([user@]host:PATH, local:PATH), block sizes, durations and rates.
 */
#include "cli.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../proto/limits.h"

void
remote_cleanup(struct remote *r)
{
    xfree(r->user);
    xfree(r->host);
    xfree(r->path);
    memset(r, 0, sizeof(*r));
}

int
cli_parse_remote(const char *word, struct remote *out)
{
    const char *colon, *slash, *at, *host, *hend;

    memset(out, 0, sizeof(*out));
    if (strncmp(word, "local:", 6) == 0) {
        out->local = 1;
        out->path = xstrdup(word[6] ? word + 6 : ".");
        return out->path == NULL ? FERRY_ERR_NOMEM : 0;
    }
    at = NULL;
    host = word;
    /* user@ ends at the last '@' before the host part. */
    colon = strchr(word, ':');
    slash = strchr(word, '/');
    if (colon == NULL || (slash != NULL && slash < colon))
        return FERRY_ERR_USAGE;
    at = memchr(word, '@', (size_t)(colon - word));
    if (at != NULL)
        host = at + 1;
    if (host[0] == '[') {
        hend = strchr(host, ']');
        if (hend == NULL || hend[1] != ':')
            return FERRY_ERR_USAGE;
        colon = hend + 1;
        out->host = xstrndup(host + 1, (size_t)(hend - host - 1));
    } else {
        colon = strchr(host, ':');
        if (colon == NULL)
            return FERRY_ERR_USAGE;
        out->host = xstrndup(host, (size_t)(colon - host));
    }
    if (at != NULL)
        out->user = xstrndup(word, (size_t)(at - word));
    out->path = xstrdup(colon[1] ? colon + 1 : ".");
    if (out->host == NULL || out->path == NULL ||
        (at != NULL && out->user == NULL)) {
        remote_cleanup(out);
        return FERRY_ERR_NOMEM;
    }
    if (out->host[0] == '\0' || out->host[0] == '-') {
        remote_cleanup(out);
        return FERRY_ERR_USAGE;
    }
    return 0;
}

int
cli_block_size(const char *s, uint32_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    if (end == s)
        return FERRY_ERR_USAGE;
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end != '\0' || v < PROTO_MIN_BLOCK || v > PROTO_MAX_BLOCK ||
        (v & (v - 1)) != 0)
        return FERRY_ERR_USAGE;
    *out = (uint32_t)v;
    return 0;
}

int
cli_duration(const char *s, int *out)
{
    unsigned long long total = 0, v;
    const char *p = s;
    char *end;

    *out = 0;
    if (*p == '\0')
        return FERRY_ERR_USAGE;
    while (*p != '\0') {
        if (*p < '0' || *p > '9')
            return FERRY_ERR_USAGE;
        v = strtoull(p, &end, 10);
        if (v > 366ULL * 86400)
            return FERRY_ERR_USAGE;
        switch (*end) {
        case 'd':
            v *= 86400;
            end++;
            break;
        case 'h':
            v *= 3600;
            end++;
            break;
        case 'm':
            v *= 60;
            end++;
            break;
        case 's':
            end++;
            break;
        case '\0':
            /* A bare number is seconds, and only alone or last. */
            break;
        default:
            return FERRY_ERR_USAGE;
        }
        total += v;
        if (total > 366ULL * 86400)
            return FERRY_ERR_USAGE;
        p = end;
    }
    *out = (int)total;
    return 0;
}

int
cli_rate(const char *s, uint64_t *out)
{
    double v, mul = 1024;
    char *end;

    *out = 0;
    if (*s < '0' || *s > '9')
        return FERRY_ERR_USAGE;
    v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K':
        end++;
        break;
    case 'm': case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'g': case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'b': case 'B':
        /* A bare B: bytes. */
        mul = 1;
        break;
    default:
        break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    v *= mul;
    if (*end != '\0' || !(v >= 1) || v > 1099511627776.0)
        return FERRY_ERR_USAGE;
    *out = (uint64_t)v;
    return 0;
}
