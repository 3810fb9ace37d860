/*
 * pack_cli.c: the command line and output of pack and unpack (pack.h).
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
#include "../engine/volume/volset.h"
#include "../engine/volume/volume.h"
#include "cli.h"
#include "cli_opts.h"
#include "exitcode.h"

volatile int pack_interrupted;


/* A usage error of pack or unpack, kept in a->err for pack_usage. */
static int FERRY_PRINTF(2, 3)
pack_fail(struct pack_args *a, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(a->err, sizeof(a->err), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(a->err))
        snprintf(a->err + n, sizeof(a->err) - (size_t)n,
            " (see ferry --help)");
    return FERRY_ERR_USAGE;
}

int
pack_usage(struct pack_args *a)
{
    struct pack_summary s;
    struct output o;
    struct xfer x;

    pack_output_init(&o, &x, a);
    output_fatal(&o, NULL, FERRY_ERR_USAGE, a->err);
    memset(&s, 0, sizeof(s));
    s.exit_code = EXIT_USAGE;
    s.error = a->err;
    pack_summary(&o, &s);
    pthread_mutex_destroy(&o.lock);
    pack_args_cleanup(a);
    return EXIT_USAGE;
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

/* Takes one option of pack or unpack (the row o of the table) at
 * argv[*i], its name nl long. */
static int
pack_opt(struct pack_args *a, const struct cli_opts_row *o, int argc,
    char **argv, int *i, size_t nl)
{
    const char *s = argv[*i], *v = NULL;

    if (o->arg != CLI_OPTS_FLAG &&
        cli_opts_value(o, argc, argv, i, nl, &v) != 0)
        return pack_fail(a, "option %s needs a value", s);
    switch (o->id) {
    case CLI_O_JSON:
        a->json = 1;
        break;
    case CLI_O_QUIET:
        a->quiet = 1;
        break;
    case CLI_O_VERBOSE:
        a->verbose++;
        break;
    case CLI_O_NAME:
        if (volset_name_ok(v) != 0)
            return pack_fail(a, "--name %s: want a plain file name (no '/', "
                "not starting with '.')", v);
        a->name = v;
        break;
    case CLI_O_VOLUME_SIZE:
        if (text_parse_size(v, &a->volume_size) != 0 ||
            a->volume_size < VOLUME_MIN_SIZE ||
            a->volume_size > VOLUME_MAX_SIZE)
            return pack_fail(a, "--volume-size %s: want 64K to 1T (a volume "
                "travels as it is to a box: push --keep-volumes), such as "
                "500M or 2G", v);
        break;
    default:
        /* --help: main answers it before the parse. */
        break;
    }
    return 0;
}

int
pack_args_parse(struct pack_args *a, int argc, char **argv)
{
    const struct cli_opts_row *o;
    unsigned cmd = cli_opts_cmd(argv[1]);
    char where[64];
    int i, r, done = 0;
    size_t nl;

    memset(a, 0, sizeof(*a));
    a->volume_size = VOLUME_DEFAULT_SIZE;
    /* Known before anything can fail, so that a usage error is JSON too. */
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            a->json = 1;
    if ((a->words = xcalloc((size_t)argc, sizeof(*a->words))) == NULL) {
        snprintf(a->err, sizeof(a->err), "%s",
            ferry_strerror(FERRY_ERR_NOMEM));
        return FERRY_ERR_NOMEM;
    }
    for (i = 2; i < argc; i++) {
        const char *s = argv[i];

        if (done || s[0] != '-' || s[1] == '\0') {
            a->words[a->nwords++] = argv[i];
            continue;
        }
        if (strcmp(s, "--") == 0) {
            done = 1;
            continue;
        }
        if (strcmp(s, "-vv") == 0) {
            a->verbose += 2;
            continue;
        }
        o = cli_opts_find(s, 0, &nl);
        if (o != NULL && (o->cmds & cmd) != 0) {
            if ((r = pack_opt(a, o, argc, argv, &i, nl)) == 0)
                continue;
        } else if (o != NULL) {
            cli_opts_cmds_text(o->cmds, where, sizeof(where));
            r = pack_fail(a, "%.*s cannot go with %s: it goes with %s",
                (int)nl, s, argv[1], where);
        } else if ((o = cli_opts_near(s, cmd)) != NULL) {
            r = pack_fail(a, "%s: unknown option '%s': did you mean %s?",
                argv[1], s, o->name);
        } else {
            r = pack_fail(a, "%s: unknown option '%s'", argv[1], s);
        }
        pack_args_cleanup(a);
        return r;
    }
    return 0;
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
            r = output_json_raw(&b, "ok", s->exit_code == 0 ? "true" :
                "false");
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
        if (r == 0)
            r = output_json_command(&b);
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
