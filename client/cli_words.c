/*
 * cli_words.c: the words of a push or pull that are not options: which
 * are sources and which the destination, on one box or on many.
 *
 * A push's sources are local, so every remote word at the end of the line
 * is a destination (ferry push data/ box1:/ws box2:/ws), and a remote
 * word before the last local one is a mistake (a pull meant). A pull's
 * sources are remote and its destination local: sources on several
 * hosts pull each host into DEST/HOST/. A range in a host (box[1-8]:/ws)
 * names several boxes at once; with one, a push or a pull is "to many"
 * even when the range holds one box, so that a script's layout does not
 * change with the size of its fleet.
 */
#include "cli_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "../engine/manifest.h"
#include "../proto/limits.h"

/* The digits of one number of a range: at most 9, so that none
 * overflows, and the width a leading 0 asks for. */
static int
cli_range_number(const char *p, size_t len, long *v, int *width)
{
    size_t i;

    if (len == 0 || len > 9)
        return -1;
    for (i = 0; i < len; i++)
        if (p[i] < '0' || p[i] > '9')
            return -1;
    *v = strtol(p, NULL, 10);
    *width = len > 1 && p[0] == '0' ? (int)len : 0;
    return 0;
}

/* Appends prefix, n (at least width digits) and suffix to out. */
static int
cli_range_put(char **out, int *n, const char *word, size_t pre, long v,
    int width, const char *suffix)
{
    size_t len = pre + 16 + strlen(suffix);
    char *w;

    if ((w = xmalloc(len)) == NULL)
        return FERRY_ERR_NOMEM;
    snprintf(w, len, "%.*s%0*ld%s", (int)pre, word, width, v, suffix);
    out[(*n)++] = w;
    return 0;
}

int
cli_range_expand(const char *word, int max, char ***out, int *n,
    char *err, size_t errlen)
{
    const char *colon, *at, *host, *lb, *rb, *p, *item, *dash;
    char **v = NULL;
    long lo, hi, k, count = 0;
    int wlo, whi, r = 0, nv = 0, pass;

    *out = NULL;
    *n = 0;
    colon = strchr(word, ':');
    if (strncmp(word, "local:", 6) == 0 || colon == NULL)
        goto one;
    at = memchr(word, '@', (size_t)(colon - word));
    host = at != NULL ? at + 1 : word;
    if (host[0] == '[' || (lb = memchr(host, '[',
        (size_t)(colon - host))) == NULL)
        goto one;
    /* The host ends at the first ':' after the range's ']'. */
    if ((rb = strchr(lb, ']')) == NULL || (colon = strchr(rb, ':')) ==
        NULL) {
        snprintf(err, errlen, "%s: a '[' in the host without its ']' "
            "(a range is box[1-8]:PATH)", word);
        return FERRY_ERR_USAGE;
    }
    if (memchr(rb, '[', (size_t)(colon - rb)) != NULL) {
        snprintf(err, errlen, "%s: one range per host", word);
        return FERRY_ERR_USAGE;
    }
    /* Two passes over the items: the first checks and counts, so that
     * nothing is built for a word that is refused. */
    for (pass = 0; pass < 2; pass++) {
        for (item = lb + 1;; item = p + 1) {
            for (p = item; p < rb && *p != ','; p++)
                ;
            dash = memchr(item, '-', (size_t)(p - item));
            if (cli_range_number(item, (size_t)((dash != NULL ? dash : p) -
                item), &lo, &wlo) != 0 || (dash != NULL &&
                cli_range_number(dash + 1, (size_t)(p - dash - 1), &hi,
                &whi) != 0)) {
                snprintf(err, errlen, "%s: '%.*s' is not a range of "
                    "numbers (write box[1-8]:PATH, node[01-16]:PATH or "
                    "gpu[1,3,5-6]:PATH)", word, (int)(rb - lb + 1), lb);
                r = FERRY_ERR_USAGE;
                goto out;
            }
            if (dash == NULL)
                hi = lo;
            if (hi < lo) {
                snprintf(err, errlen, "%s: the range %ld-%ld runs "
                    "backwards", word, lo, hi);
                r = FERRY_ERR_USAGE;
                goto out;
            }
            if (pass == 0) {
                count += hi - lo + 1;
                if (count > max) {
                    snprintf(err, errlen, "%s: too many boxes (at most "
                        "%d in one command)", word, CLI_MAX_BOXES);
                    r = FERRY_ERR_USAGE;
                    goto out;
                }
                if (p == rb)
                    break;
                continue;
            }
            for (k = lo; k <= hi; k++)
                if ((r = cli_range_put(v, &nv, word, (size_t)(lb - word),
                    k, wlo, rb + 1)) != 0)
                    goto out;
            if (p == rb)
                break;
        }
        if (pass == 0 && (v = xcalloc((size_t)count + 1,
            sizeof(*v))) == NULL) {
            r = FERRY_ERR_NOMEM;
            goto out;
        }
    }
    *out = v;
    *n = nv;
    return 0;
one:
    if ((v = xcalloc(2, sizeof(*v))) == NULL ||
        (v[0] = xstrdup(word)) == NULL) {
        xfree(v);
        return FERRY_ERR_NOMEM;
    }
    *out = v;
    *n = 1;
    return 0;
out:
    while (nv > 0)
        xfree(v[--nv]);
    xfree(v);
    return r;
}

/* 1 if a and b are one login on one host (a pull's sources). */
static int
cli_same_host(const struct remote *a, const struct remote *b)
{
    if (a->local || b->local)
        return a->local == b->local;
    return strcmp(a->host, b->host) == 0;
}

/* 1 if a and b are the same user@host:path (a push's destinations). */
static int
cli_same_dest(const struct remote *a, const struct remote *b)
{
    if (!cli_same_host(a, b) || strcmp(a->path, b->path) != 0)
        return 0;
    if (a->user == NULL || b->user == NULL)
        return a->user == b->user;
    return strcmp(a->user, b->user) == 0;
}

/* Adds box rm (taken) to c->boxes. */
static int
cli_box_add(struct cli *c, struct remote *rm)
{
    struct cli_box *b;

    if (c->boxes == NULL && (c->boxes = xcalloc(CLI_MAX_BOXES,
        sizeof(*c->boxes))) == NULL)
        return FERRY_ERR_NOMEM;
    if (c->nboxes >= CLI_MAX_BOXES)
        return cli_fail(c, "too many boxes (at most %d in one command)",
            CLI_MAX_BOXES);
    b = &c->boxes[c->nboxes++];
    b->remote = *rm;
    memset(rm, 0, sizeof(*rm));
    return 0;
}

/* Names each box for the output: its host when no other box has it, else
 * host:PATH (a push to two paths of one box). */
static int
cli_box_labels(struct cli *c)
{
    int i, j, shared;
    size_t len;

    for (i = 0; i < c->nboxes; i++) {
        struct remote *rm = &c->boxes[i].remote;
        const char *host = rm->local ? "local" : rm->host;

        for (shared = 0, j = 0; j < c->nboxes; j++)
            if (j != i && cli_same_host(rm, &c->boxes[j].remote))
                shared = 1;
        len = strlen(host) + strlen(rm->path) + 2;
        if ((c->boxes[i].label = xmalloc(len)) == NULL)
            return FERRY_ERR_NOMEM;
        if (shared && c->cmd == CMD_PUSH)
            snprintf(c->boxes[i].label, len, "%s:%s", host, rm->path);
        else
            snprintf(c->boxes[i].label, len, "%s", host);
    }
    return 0;
}

/* The words of words[0..n) expanded into remotes, each given to fn. */
typedef int cli_word_fn(struct cli *c, const char *word, struct remote *rm);

static int
cli_words_each(struct cli *c, char **words, int n, int *ranged,
    cli_word_fn *fn)
{
    char **v = NULL, err[400];
    struct remote rm;
    int i, k, nv = 0, r = 0, total = 0;

    memset(&rm, 0, sizeof(rm));
    for (i = 0; i < n && r == 0; i++) {
        if ((r = cli_range_expand(words[i], CLI_MAX_BOXES - total, &v, &nv,
            err, sizeof(err))) != 0) {
            if (r == FERRY_ERR_USAGE)
                r = cli_fail(c, "%s", err);
            break;
        }
        if (nv > 1 || strcmp(v[0], words[i]) != 0)
            *ranged = 1;
        total += nv;
        for (k = 0; k < nv && r == 0; k++) {
            if ((r = cli_parse_remote(v[k], &rm)) != 0) {
                if (r == FERRY_ERR_USAGE)
                    r = cli_fail(c, "'%s' is not remote (write host:PATH "
                        "or local:PATH)", v[k]);
                break;
            }
            r = fn(c, v[k], &rm);
            remote_cleanup(&rm);
        }
        for (k = 0; k < nv; k++)
            xfree(v[k]);
        xfree(v);
    }
    return r;
}

static int
cli_push_dest(struct cli *c, const char *word, struct remote *rm)
{
    int i;

    for (i = 0; i < c->nboxes; i++)
        if (cli_same_dest(&c->boxes[i].remote, rm)) {
            log_info("%s: given twice, sent once", word);
            return 0;
        }
    return cli_box_add(c, rm);
}

int
cli_words_push(struct cli *c, char **words, int nwords)
{
    struct remote rm;
    int i, first, r, ranged = 0, single = 0;

    /* Every remote word at the end is a destination. */
    for (first = nwords; first > 0; first--) {
        if (cli_parse_remote(words[first - 1], &rm) != 0)
            break;
        remote_cleanup(&rm);
    }
    if (first == nwords)
        return cli_fail(c, "push: destination '%s' is not remote "
            "(write host:PATH or local:PATH)", words[nwords - 1]);
    if (first == 0)
        return cli_fail(c, "push: source '%s' is remote; use ferry pull "
            "to copy from a remote host", words[0]);
    for (i = 0; i < first; i++) {
        if (cli_parse_remote(words[i], &rm) == 0) {
            remote_cleanup(&rm);
            return cli_fail(c, "push: source '%s' is remote; use ferry "
                "pull to copy from a remote host (the destinations are "
                "the remote words after the last local one)", words[i]);
        }
    }
    if (first == nwords - 1) {
        char **v, err[400];
        int nv, k;

        if ((r = cli_range_expand(words[first], CLI_MAX_BOXES, &v, &nv,
            err, sizeof(err))) != 0)
            return r == FERRY_ERR_USAGE ? cli_fail(c, "%s", err) : r;
        single = nv == 1 && strcmp(v[0], words[first]) == 0;
        for (k = 0; k < nv; k++)
            xfree(v[k]);
        xfree(v);
    }
    if (single) {
        /* One box: as it always was. */
        if ((r = cli_parse_remote(words[first], &c->remote)) != 0)
            return r;
    } else if ((r = cli_words_each(c, words + first, nwords - first,
        &ranged, cli_push_dest)) != 0 || (r = cli_box_labels(c)) != 0)
        return r;
    c->local_paths = words;
    c->nlocal = cli_dedupe(words, first, 0);
    return 0;
}

static int
cli_pull_source(struct cli *c, const char *word, struct remote *rm)
{
    struct cli_box *b = NULL;
    const char *path = rm->path;
    int i, r;

    for (i = 0; i < c->nboxes; i++)
        if (cli_same_host(&c->boxes[i].remote, rm))
            b = &c->boxes[i];
    if (b != NULL && !rm->local && (rm->user == NULL ?
        b->remote.user != NULL : b->remote.user == NULL ||
        strcmp(rm->user, b->remote.user) != 0))
        return cli_fail(c, "pull: %s is named with two logins ('%s')",
            rm->host, word);
    if (b == NULL) {
        if (!rm->local && (strcmp(rm->host, ".") == 0 ||
            strcmp(rm->host, "..") == 0))
            return cli_fail(c, "pull: '%s': no host to name a directory "
                "after", word);
        if ((r = cli_box_add(c, rm)) != 0)
            return r;
        b = &c->boxes[c->nboxes - 1];
        if ((b->paths = xcalloc(PROTO_MAX_OPEN_PATHS + 1,
            sizeof(char *))) == NULL)
            return FERRY_ERR_NOMEM;
        path = b->remote.path;
    }
    if (b->npaths >= (int)PROTO_MAX_OPEN_PATHS)
        return cli_fail(c, "too many sources (at most %u)",
            PROTO_MAX_OPEN_PATHS);
    if ((b->paths[b->npaths++] = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

int
cli_words_pull(struct cli *c, char **words, int nwords)
{
    struct remote rm;
    char msg[1200];
    int i, r, ranged = 0;

    if (cli_parse_remote(words[nwords - 1], &rm) == 0) {
        remote_cleanup(&rm);
        return cli_fail(c, "pull: destination '%s' must be local",
            words[nwords - 1]);
    }
    if ((r = cli_words_each(c, words, nwords - 1, &ranged,
        cli_pull_source)) != 0)
        return r;
    words[0] = words[nwords - 1];
    c->local_paths = words;
    c->nlocal = 1;
    if (c->nboxes == 1 && !ranged) {
        /* One host: as it always was (DEST itself). */
        struct cli_box *b = &c->boxes[0];

        c->remote = b->remote;
        c->remote_paths = b->paths;
        c->nremote = cli_dedupe(b->paths, b->npaths, 1);
        xfree(c->boxes);
        c->boxes = NULL;
        c->nboxes = 0;
        return 0;
    }
    for (i = 0; i < c->nboxes; i++) {
        struct cli_box *b = &c->boxes[i];

        b->npaths = cli_dedupe(b->paths, b->npaths, 1);
        if ((r = manifest_top_clash((const char *const *)b->paths,
            (size_t)b->npaths, msg, sizeof(msg))) < 0)
            return r;
        if (r > 0)
            return cli_fail(c, "pull: %s", msg);
    }
    return cli_box_labels(c);
}

void
cli_boxes_cleanup(struct cli *c)
{
    int i, k;

    for (i = 0; i < c->nboxes; i++) {
        remote_cleanup(&c->boxes[i].remote);
        xfree(c->boxes[i].label);
        for (k = 0; k < c->boxes[i].npaths; k++)
            xfree(c->boxes[i].paths[k]);
        xfree(c->boxes[i].paths);
    }
    xfree(c->boxes);
    c->boxes = NULL;
    c->nboxes = 0;
}
