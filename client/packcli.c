/*
 * packcli.c: the command line and output of pack and unpack (pack.h).
 */
#include "pack.h"

#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/text.h"
#include "../engine/volset.h"
#include "../engine/volume.h"
#include "cli.h"

volatile int pack_interrupted;


/* One line on stderr for a usage error of pack or unpack. */
static int FERRY_PRINTF(1, 2)
pack_fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ferry: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see ferry --help)\n");
    return FERRY_ERR_USAGE;
}

static void
pack_on_signal(int sig)
{
    (void)sig;
    pack_interrupted = 1;
}

void
pack_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = pack_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The value of "--opt V" or "--opt=V". */
static const char *
pack_value(int argc, char **argv, int *i, const char *opt)
{
    size_t n = strlen(opt);

    if (strncmp(argv[*i], opt, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0' || *i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

int
pack_args_parse(struct pack_args *a, int argc, char **argv)
{
    int i, done = 0;
    const char *v;

    memset(a, 0, sizeof(*a));
    a->volume_size = VOLUME_DEFAULT_SIZE;
    if ((a->words = xcalloc((size_t)argc, sizeof(*a->words))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 2; i < argc; i++) {
        const char *s = argv[i];

        if (done || s[0] != '-' || s[1] == '\0') {
            a->words[a->nwords++] = argv[i];
        } else if (strcmp(s, "--") == 0) {
            done = 1;
        } else if (strcmp(s, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(s, "-q") == 0 || strcmp(s, "--quiet") == 0) {
            a->quiet = 1;
        } else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0) {
            a->verbose++;
        } else if (strcmp(s, "-vv") == 0) {
            a->verbose += 2;
        } else if ((v = pack_value(argc, argv, &i, "--name")) != NULL) {
            if (volset_name_ok(v) != 0)
                goto bad_name;
            a->name = v;
        } else if ((v = pack_value(argc, argv, &i, "--volume-size")) !=
            NULL) {
            if (text_parse_size(v, &a->volume_size) != 0 ||
                a->volume_size < VOLUME_MIN_SIZE) {
                pack_args_cleanup(a);
                return pack_fail("--volume-size %s: want a size of "
                    "at least 64K, such as 500M or 2G", v);
            }
        } else {
            pack_args_cleanup(a);
            return pack_fail("%s: unknown option '%s' (or it "
                "needs a value)", argv[1], s);
        }
    }
    return 0;
bad_name:
    pack_args_cleanup(a);
    return pack_fail("--name %s: want a plain file name (no '/', "
        "not starting with '.')", v);
}

void
pack_args_cleanup(struct pack_args *a)
{
    xfree(a->words);
    a->words = NULL;
    a->nwords = 0;
}

void
pack_output_init(struct output *o, struct xfer *x,
    const struct pack_args *a)
{
    memset(x, 0, sizeof(*x));
    memset(o, 0, sizeof(*o));
    o->json = a->json;
    o->quiet = a->quiet;
    o->verbose = a->verbose;
    output_init(o, x);
}

void
pack_volume_event(struct output *o, const char *action, const char *file,
    uint32_t index, uint64_t bytes, uint64_t members, const char *sha256)
{
    char size[32], esc[512];
    struct buf b;
    int r;

    if (o->json) {
        buf_init(&b, 1 << 16);
        r = output_json_begin(&b, "volume");
        if (r == 0)
            r = output_json_str(&b, "action", action);
        if (r == 0)
            r = output_json_str(&b, "path", file);
        if (r == 0)
            r = output_json_num(&b, "index", index);
        if (r == 0)
            r = output_json_num(&b, "bytes", bytes);
        if (r == 0)
            r = output_json_num(&b, "members", members);
        if (r == 0 && sha256 != NULL)
            r = output_json_str(&b, "sha256", sha256);
        output_json_end(o, &b, r);
    } else if (o->verbose >= 1 && !o->quiet) {
        output_note(o, "%s %s (%s, %" PRIu64 " members)", action,
            text_escape(file, strlen(file), esc, sizeof(esc)),
            text_bytes((double)bytes, size, sizeof(size)), members);
    }
}

void
pack_summary(struct output *o, const struct pack_summary *s)
{
    char a[32], c[32], tmp[64];
    struct buf b;
    int r, n;

    if (o->json) {
        buf_init(&b, 1 << 16);
        r = output_json_begin(&b, "summary");
        if (r == 0)
            r = buf_put(&b, s->exit_code == 0 ? ",\"ok\":true" :
                ",\"ok\":false", s->exit_code == 0 ? 10 : 11);
        if (r == 0)
            r = output_json_num(&b, "exit_code", (uint64_t)s->exit_code);
        if (r == 0)
            r = output_json_num(&b, "volumes", s->volumes);
        if (r == 0)
            r = output_json_num(&b, "files", s->files);
        if (r == 0)
            r = output_json_num(&b, "bytes", s->bytes);
        if (r == 0)
            r = output_json_num(&b, "bytes_compressed", s->compressed);
        if (r == 0 && s->where != NULL)
            r = output_json_num(&b, "volumes_sent", s->sent);
        if (r == 0 && s->where != NULL)
            r = output_json_num(&b, "volumes_kept", s->kept);
        if (r == 0 && s->where != NULL)
            r = output_json_num(&b, "bytes_sent", s->bytes_sent);
        if (r == 0) {
            n = snprintf(tmp, sizeof(tmp), ",\"elapsed_s\":%.3f",
                s->elapsed);
            r = buf_put(&b, tmp, (size_t)n);
        }
        if (r == 0 && s->error != NULL)
            r = output_json_str(&b, "error", s->error);
        output_json_end(o, &b, r);
        return;
    }
    if (o->quiet || s->error != NULL)
        return;
    if (s->where != NULL) {
        output_note(o, "stored %" PRIu64 " file%s (%s) as %" PRIu32
            " volume%s (%s) in %s: %" PRIu32 " sent (%s), %" PRIu32
            " already there, in %.1f s", s->files, s->files == 1 ? "" : "s",
            text_bytes((double)s->bytes, a, sizeof(a)), s->volumes,
            s->volumes == 1 ? "" : "s",
            text_bytes((double)s->compressed, c, sizeof(c)), s->where,
            s->sent, text_bytes((double)s->bytes_sent, tmp, sizeof(tmp)),
            s->kept, s->elapsed);
        return;
    }
    output_note(o, "%s %" PRIu64 " file%s (%s) %s %" PRIu32 " volume%s "
        "(%s) in %.1f s", s->verb, s->files, s->files == 1 ? "" : "s",
        text_bytes((double)s->bytes, a, sizeof(a)),
        strcmp(s->verb, "packed") == 0 ? "into" : "from", s->volumes,
        s->volumes == 1 ? "" : "s",
        text_bytes((double)s->compressed, c, sizeof(c)), s->elapsed);
}
