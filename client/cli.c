#include "cli_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/text.h"
#include "../engine/manifest.h"
#include "../engine/volume/volsend.h"
#include "../engine/volume/volset.h"
#include "../engine/volume/volume.h"
#include "../proto/limits.h"
#include "../proto/msg.h"
#include "cli_opts.h"
#include "help.h"

/* Keeps the line that says what is wrong in c->err (main prints it, as
 * JSON too with --json). Returns FERRY_ERR_USAGE. */
int FERRY_PRINTF(2, 3)
cli_fail(struct cli *c, const char *fmt, ...)
{
    va_list ap;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    n = strlen(c->err);
    snprintf(c->err + n, sizeof(c->err) - n, " (see ferry --help)");
    return FERRY_ERR_USAGE;
}

/* 1 if a and b name the same source (see cli_parse). */
static int
cli_same_source(const char *a, const char *b)
{
    for (;;) {
        if (*a != *b)
            return 0;
        if (*a == '\0')
            return 1;
        if (*a == '/') {
            while (a[1] == '/')
                a++;
            while (b[1] == '/')
                b++;
        }
        a++;
        b++;
    }
}

int
cli_dedupe(char **v, int n, int owned)
{
    int i, j, k = 0;

    for (i = 0; i < n; i++) {
        for (j = 0; j < k; j++)
            if (cli_same_source(v[j], v[i]))
                break;
        if (j < k) {
            log_info("%s: given twice, sent once", v[i]);
            if (owned)
                xfree(v[i]);
            continue;
        }
        v[k++] = v[i];
    }
    for (i = k; i < n; i++)
        v[i] = NULL;
    return k;
}

/* Refuses two sources that would land under one name in DEST ("a/x" and
 * "b/x"), before anything is sent (the agent does the same for a pull's
 * globs: session.c). */
static int
cli_top_clash(struct cli *c)
{
    const char *const *v = (const char *const *)(c->cmd == CMD_PUSH ?
        c->local_paths : c->remote_paths);
    size_t n = (size_t)(c->cmd == CMD_PUSH ? c->nlocal : c->nremote);
    char msg[1200];
    int r;

    if (c->cmd != CMD_PUSH && c->cmd != CMD_PULL)
        return 0;
    if ((r = manifest_top_clash(v, n, msg, sizeof(msg))) <= 0)
        return r;
    return cli_fail(c, "%s: %s", c->cmd == CMD_PUSH ? "push" : "pull", msg);
}

/* --keep-volumes stores what `ferry pack` makes: options that shape a
 * transfer's tree or its blocks make no sense with it. */
static int
cli_keep_check(struct cli *c)
{
    const char *bad = c->dry_run ? "--dry-run" : c->delete ? "--delete" :
        (c->delta_flags & ~(uint32_t)(OPEN_F_BASIS_AUTO |
        OPEN_F_TENSORS_NEVER)) != 0 ||
        c->basis != NULL ? "--delta or --basis" :
        c->adopt != NULL ? "--adopt" :
        c->checksum ? "--checksum" : c->compress ? "-z" :
        c->filter.n > 0 ? "--exclude or --include" :
        c->vol_compress == VOL_COMPRESS_NEVER ? "--compress=never" : NULL;

    if (c->set_name != NULL && !c->keep_volumes)
        return cli_fail(c, "--name goes with push --keep-volumes");
    if (c->keep_volumes && bad != NULL)
        return cli_fail(c, "--keep-volumes cannot go with %s: it stores "
            "the volumes ferry pack makes", bad);
    return 0;
}

/* 1 if word is what --compress=MODE takes: auto, never or a number. */
static int
cli_looks_like_level(const char *word)
{
    size_t i;

    if (strcmp(word, "auto") == 0 || strcmp(word, "never") == 0)
        return 1;
    for (i = 0; word[i] != '\0'; i++)
        if (word[i] < '0' || word[i] > '9')
            return 0;
    return i > 0;
}

/* A whole number from lo to hi, or -1. */
static long
cli_number(const char *v, long lo, long hi)
{
    char *end;
    long n = strtol(v, &end, 10);

    return end == v || *end != '\0' || n < lo || n > hi ? -1 : n;
}

/* --compress=MODE: auto, never or a level. */
static int
cli_compress_mode(struct cli *c, const char *v)
{
    long lv = cli_number(v, VOL_LEVEL_MIN, VOL_LEVEL_MAX);

    if (strcmp(v, "auto") == 0) {
        c->vol_compress = VOL_COMPRESS_AUTO;
    } else if (strcmp(v, "never") == 0) {
        c->vol_compress = VOL_COMPRESS_NEVER;
    } else if (lv >= 0) {
        c->vol_compress = VOL_COMPRESS_LEVEL;
        c->vol_level = (uint8_t)lv;
    } else {
        return cli_fail(c, "--compress=%s: want auto, never or a level from "
            "%d to %d", v, VOL_LEVEL_MIN, VOL_LEVEL_MAX);
    }
    return 0;
}

/* --pack-threshold and --volume-size: how small files travel in volumes
 * (engine/volume/volsend.h). */
static int
cli_volume_size(struct cli *c, const struct cli_opts_row *o, const char *v)
{
    uint64_t n;

    if (text_parse_size(v, &n) != 0)
        return cli_fail(c, "%s %s: want a size such as 256K, 2G or 0",
            o->name, v);
    if (o->id == CLI_O_PACK_THRESHOLD) {
        if (n > PROTO_MAX_PACK_THRESHOLD)
            return cli_fail(c, "--pack-threshold %s: at most 16M", v);
        c->pack_threshold = n;
    } else {
        if (n < PROTO_MIN_VOLUME_SIZE || n > PROTO_MAX_VOLUME_SIZE)
            return cli_fail(c, "--volume-size %s: want 64K to 1T", v);
        c->volume_size = n;
    }
    return 0;
}

/* --delta=MODE, and -W (rsync's --whole-file: --delta=never). */
static int
cli_delta(struct cli *c, const char *v)
{
    c->delta_flags &= ~(uint32_t)(OPEN_F_DELTA_ALWAYS | OPEN_F_DELTA_NEVER);
    if (strcmp(v, "always") == 0)
        c->delta_flags |= OPEN_F_DELTA_ALWAYS;
    else if (strcmp(v, "never") == 0)
        c->delta_flags |= OPEN_F_DELTA_NEVER;
    else if (strcmp(v, "auto") != 0)
        return cli_fail(c, "--delta %s: want auto, always or never", v);
    return 0;
}

/* --tensors=MODE. */
static int
cli_tensors(struct cli *c, const char *v)
{
    if (strcmp(v, "never") == 0)
        c->delta_flags |= OPEN_F_TENSORS_NEVER;
    else if (strcmp(v, "auto") == 0)
        c->delta_flags &= ~(uint32_t)OPEN_F_TENSORS_NEVER;
    else
        return cli_fail(c, "--tensors %s: want auto or never", v);
    return 0;
}

/* --basis auto or --basis FILE. */
static int
cli_basis(struct cli *c, const char *v)
{
    c->delta_flags &= ~(uint32_t)OPEN_F_BASIS_AUTO;
    c->basis = NULL;
    if (strcmp(v, "auto") == 0) {
        c->delta_flags |= OPEN_F_BASIS_AUTO;
    } else if (strcmp(v, "none") != 0) {
        /* A file named as a keyword is "./none". */
        c->basis = strncmp(v, "./", 2) == 0 ? v + 2 : v;
        if (fsx_path_check(c->basis, strlen(c->basis)) != 0)
            return cli_fail(c, "--basis %s: want auto, none, or a file's "
                "path relative to the destination", v);
    }
    return 0;
}

/* --adopt DIR: beneath the destination, never outside it (the agent
 * refuses it too; saying so here names the option). */
static int
cli_adopt(struct cli *c, const char *v)
{
    const char *dir = strncmp(v, "./", 2) == 0 ? v + 2 : v;
    size_t n = strlen(dir);
    char *t;

    /* "staging/" is the directory staging. */
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 0 || n > FSX_PATH_MAX || fsx_path_check(dir, n) != 0 ||
        (n >= 6 && strncmp(dir, ".ferry", 6) == 0 &&
        (n == 6 || dir[6] == '/')))
        return cli_fail(c, "--adopt %s: want a directory's path relative "
            "to the destination (not absolute, no '..', not .ferry)", v);
    if ((t = xstrndup(dir, n)) == NULL)
        return FERRY_ERR_NOMEM;
    xfree(c->adopt);
    c->adopt = t;
    return 0;
}

/* --exclude, --include and --exclude-from. */
static int
cli_filter(struct cli *c, const struct cli_opts_row *o, const char *v)
{
    unsigned line;
    int e;

    if (o->id == CLI_O_EXCLUDE_FROM) {
        e = filter_add_file(&c->filter, v, FILTER_EXCLUDE, 0, NULL, &line);
        if (e != 0 && line > 0)
            return cli_fail(c, "--exclude-from %s: line %u: %s", v, line,
                ferry_strerror(e));
        if (e != 0)
            return cli_fail(c, "--exclude-from %s: %s", v, ferry_strerror(e));
        return 0;
    }
    e = filter_add(&c->filter, o->id == CLI_O_EXCLUDE ? FILTER_EXCLUDE :
        FILTER_INCLUDE, v, strlen(v), NULL);
    if (e != 0)
        return cli_fail(c, "%s '%s': %s", o->name, v,
            e == FERRY_ERR_TOO_LARGE ? "too long, or too many patterns" :
            "not a pattern");
    return 0;
}

/* Adds v to an ssh list (-i, -o) of at most CLI_MAX_OPTS. */
static int
cli_ssh_list(struct cli *c, const char **list, int *n, const char *opt,
    const char *v)
{
    if (*n == CLI_MAX_OPTS)
        return cli_fail(c, "too many %s options", opt);
    list[(*n)++] = v;
    return 0;
}

/*
 * Takes the option of row o, given as a (its name nl long) with the value
 * v (NULL for a flag); argv[i + 1] is the word after it. Checks the value
 * with the function its kind has.
 */
static int
cli_apply(struct cli *c, const struct cli_opts_row *o, const char *a,
    size_t nl, const char *v, int argc, char **argv, int i)
{
    long n;
    int secs;

    c->habits |= o->habit;
    switch ((enum cli_opts_id)o->id) {
    case CLI_O_DRY_RUN:
        c->dry_run = 1;
        break;
    case CLI_O_EXCLUDE:
    case CLI_O_INCLUDE:
    case CLI_O_EXCLUDE_FROM:
        return cli_filter(c, o, v);
    case CLI_O_DELETE:
        c->delete = c->delete ? c->delete : 1;
        break;
    case CLI_O_DELETE_EXCLUDED:
        c->delete = 2;
        break;
    case CLI_O_MKPATH:
        c->mkpath = 1;
        break;
    case CLI_O_WATCH:
        if (cli_duration(v, &c->watch_s) != 0 || c->watch_s < 1)
            return cli_fail(c, "--watch %s: want a duration such as 30s or "
                "2m between looks", v);
        break;
    case CLI_O_SETTLE:
        if (cli_duration(v, &c->settle_s) != 0 || c->settle_s < 1)
            return cli_fail(c, "--settle %s: want a duration such as 1m", v);
        break;
    case CLI_O_READY_MARKER:
        c->ready_marker = v;
        if (v[0] == '\0' || strchr(v, '/') != NULL)
            return cli_fail(c, "--ready-marker '%s': want a file name", v);
        break;
    case CLI_O_KEEP:
        if ((n = cli_number(v, 1, 1000000)) < 0)
            return cli_fail(c, "--keep %s: want a number of copies, 1 or "
                "more", v);
        c->keep = (int)n;
        break;
    case CLI_O_MARGIN: {
        char *end;

        /* "20%" as well as "20". */
        n = strtol(v, &end, 10);
        if (end == v || (*end != '\0' && strcmp(end, "%") != 0) || n < 0 ||
            n > 99)
            return cli_fail(c, "--margin %s: want a percentage from 0 to "
                "99", v);
        c->margin = (unsigned)n;
        break;
    }
    case CLI_O_FORCE:
        c->force = 1;
        break;
    case CLI_O_BWLIMIT:
        if (cli_rate(v, &c->bwlimit) != 0)
            return cli_fail(c, "--bwlimit %s: want a rate such as 20M "
                "(bytes per second; a bare number is KiB/s)", v);
        break;
    case CLI_O_CHECKSUM:
        c->checksum = 1;
        break;
    case CLI_O_COMPRESS:
        /* "--compress 3" would send a file named 3 (and -z): the volumes'
         * level goes after '='. */
        if (a[1] == '-' && i + 1 < argc && cli_looks_like_level(argv[i + 1])
            && access(argv[i + 1], F_OK) != 0)
            return cli_fail(c, "--compress takes a level after '=': "
                "--compress=%s (--compress alone is -z)", argv[i + 1]);
        c->compress = 1;
        break;
    case CLI_O_COMPRESS_MODE:
        return cli_compress_mode(c, v);
    case CLI_O_DELTA:
        return cli_delta(c, v);
    case CLI_O_TENSORS:
        return cli_tensors(c, v);
    case CLI_O_BASIS:
        return cli_basis(c, v);
    case CLI_O_ADOPT:
        return cli_adopt(c, v);
    case CLI_O_PACK_THRESHOLD:
    case CLI_O_VOLUME_SIZE:
        return cli_volume_size(c, o, v);
    case CLI_O_KEEP_VOLUMES:
        c->keep_volumes = 1;
        break;
    case CLI_O_NAME:
        c->set_name = v;
        if (volset_name_ok(v) != 0)
            return cli_fail(c, "--name %s: want a plain file name (no '/', "
                "not starting with '.')", v);
        break;
    case CLI_O_JSON:
        c->json = 1;
        break;
    case CLI_O_QUIET:
        c->quiet = 1;
        break;
    case CLI_O_VERBOSE:
        c->verbose++;
        break;
    case CLI_O_PROGRESS:
        c->progress = 1;
        break;
    case CLI_O_NO_PROGRESS:
        c->progress = 0;
        break;
    case CLI_O_BLOCK_SIZE:
        if (cli_block_size(v, &c->block_size) != 0)
            return cli_fail(c, "--block-size %s: want a power of two from "
                "64K to 4M", v);
        break;
    case CLI_O_STREAMS:
        if ((n = cli_number(v, 1, CLI_MAX_STREAMS)) < 0)
            return cli_fail(c, "%.*s %s: want a number from 1 to %d",
                (int)nl, a, v, CLI_MAX_STREAMS);
        c->streams = (int)n;
        break;
    case CLI_O_NO_SWARM:
        c->no_swarm = 1;
        break;
    case CLI_O_BOXES_AT_ONCE:
        if ((n = cli_number(v, 1, CLI_MAX_BOXES)) < 0)
            return cli_fail(c, "%.*s %s: want a number from 1 to %d",
                (int)nl, a, v, CLI_MAX_BOXES);
        c->boxes_at_once = (int)n;
        break;
    case CLI_O_RETRIES:
        if ((n = cli_number(v, 0, 100000)) < 0)
            return cli_fail(c, "--retries %s: want a number", v);
        c->retries = (int)n;
        break;
    case CLI_O_RETRY_FOR:
    case CLI_O_RETRY_WAIT:
        if (cli_duration(v, o->id == CLI_O_RETRY_FOR ? &c->retry_for :
            &c->retry_wait) != 0)
            return cli_fail(c, "%s %s: want a duration such as 90s, 15m or "
                "1h", o->name, v);
        break;
    case CLI_O_STALL_TIMEOUT:
        if (cli_duration(v, &secs) != 0)
            return cli_fail(c, "--stall-timeout %s: want a duration such as "
                "30s or 2m", v);
        c->stall_timeout = (unsigned)secs;
        break;
    case CLI_O_AGENT:
        c->agent_path = v;
        break;
    case CLI_O_NO_BOOTSTRAP:
        c->no_bootstrap = 1;
        break;
    case CLI_O_SSH_CMD:
        c->ssh_cmd = v;
        break;
    case CLI_O_SSH_CONFIG:
        c->ssh_config = v;
        break;
    case CLI_O_PORT:
        c->port = v;
        break;
    case CLI_O_LOGIN:
        c->login = v;
        break;
    case CLI_O_IDENTITY:
        return cli_ssh_list(c, c->identities, &c->nidentities, "-i", v);
    case CLI_O_SSH_OPTION:
        return cli_ssh_list(c, c->ssh_opts, &c->nssh_opts, "-o", v);
    case CLI_O_HELP:
    case CLI_O_HABIT:
        break;
    case CLI_O_PARTIAL_PROGRESS:
        c->progress = 1;
        break;
    case CLI_O_WHOLE_FILE:
        return cli_delta(c, "never");
    }
    return 0;
}

/*
 * Why a word that names no option of cmd is refused: it is another
 * command's, rsync's or scp's (and what ferry does instead), a typo of
 * one of ours, or nothing we know. group: the group of letters it came
 * from, or NULL.
 */
static int
cli_unknown(struct cli *c, const char *a, const char *group,
    const char *cmd)
{
    const struct cli_opts_row *o;
    const char *instead;
    char where[64];
    size_t nl;

    if ((o = cli_opts_find(a, group != NULL, &nl)) != NULL) {
        cli_opts_cmds_text(o->cmds, where, sizeof(where));
        return cli_fail(c, "%.*s cannot go with %s: it goes with %s",
            (int)nl, a, cmd, where);
    }
    if (cli_opts_flag_value(a))
        return cli_fail(c, "option %.*s takes no value", (int)strcspn(a,
            "="), a);
    if ((instead = help_foreign_option(a)) != NULL)
        return cli_fail(c, "option '%s' is rsync's or scp's: %s", a,
            instead);
    if ((o = cli_opts_near(a, cli_opts_cmd(cmd))) != NULL ||
        (o = cli_opts_near(a, ~0u)) != NULL)
        return cli_fail(c, "unknown option '%s': did you mean %s?", a,
            o->name);
    /* -ikey: a group of letters, where ssh's -i with its value was
     * meant. */
    if (group != NULL && (o = cli_opts_letter(group[1], 0)) != NULL &&
        o->arg != CLI_OPTS_FLAG)
        return cli_fail(c, "unknown option '%s' in the group '%s' (for "
            "ssh's -%c, write -%c %s)", a, group, group[1], group[1],
            group + 2);
    return cli_fail(c, "unknown option '%s'", a);
}

int
cli_parse(struct cli *c, int argc, char **argv)
{
    char **words = NULL, **args = NULL;
    const char **from = NULL;
    int nwords = 0, nargs = 0, i, r, options_done = 0;
    unsigned cmd;
    const char *v;
    size_t nl;

    memset(c, 0, sizeof(*c));
    c->progress = -1;
    c->block_size = PROTO_DEFAULT_BLOCK;
    c->retries = CLI_DEFAULT_RETRIES;
    c->retry_for = CLI_DEFAULT_RETRY_FOR;
    c->retry_wait = CLI_DEFAULT_RETRY_WAIT;
    c->stall_timeout = CLI_DEFAULT_STALL;
    c->margin = 20;
    c->pack_threshold = VOLSEND_DEFAULT_THRESHOLD;
    /* Delta from a similar neighbour, as rsync's --fuzzy, by default. */
    c->delta_flags = OPEN_F_BASIS_AUTO;
    c->volume_size = VOLUME_DEFAULT_SIZE;
    cli_command_first(argc, argv);
    /* Known before anything can fail, so that a usage error is JSON too
     * (argv[1] too: it is no command when none was found). */
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            c->json = 1;
    if (argc < 2) {
        help_usage(stderr);
        return FERRY_ERR_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        c->cmd = CMD_VERSION;
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        c->cmd = CMD_HELP;
        /* The topic is the first word that is no option (ferry -v help
         * push). */
        for (i = 2; i < argc && argv[i][0] == '-'; i++)
            ;
        if (i < argc && strcmp(argv[1], "help") == 0) {
            if (help_command(NULL, argv[i]) != 0)
                return cli_fail(c, "help: unknown command '%s'", argv[i]);
            c->help_topic = argv[i];
        }
        return 0;
    }
    cmd = cli_opts_cmd(argv[1]);
    if (cmd == CLI_OPTS_PUSH)
        c->cmd = CMD_PUSH;
    else if (cmd == CLI_OPTS_PULL)
        c->cmd = CMD_PULL;
    else if (cmd == CLI_OPTS_STATUS)
        c->cmd = CMD_STATUS;
    else if (cmd == CLI_OPTS_CLEAN)
        c->cmd = CMD_CLEAN;
    else if (argv[1][0] == '-')
        return cli_fail(c, "no command among the words (push, pull, "
            "status, clean, pack or unpack)");
    else
        return cli_fail(c, "unknown command '%s'", argv[1]);
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            c->help_topic = argv[1];
            c->cmd = CMD_HELP;
            return 0;
        }
    if ((r = cli_expand(c, argc, argv, &args, &from, &nargs)) != 0)
        goto fail;
    if ((words = xcalloc((size_t)nargs + 1, sizeof(*words))) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto fail;
    }
    for (i = 0; i < nargs; i++) {
        const struct cli_opts_row *o;
        const char *a = args[i];

        if (options_done || a[0] != '-' || a[1] == '\0') {
            words[nwords++] = args[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_done = 1;
            continue;
        }
        o = cli_opts_find(a, from[i] != NULL, &nl);
        if (o == NULL || (o->cmds & cmd) == 0) {
            r = cli_unknown(c, a, from[i], argv[1]);
            goto fail;
        }
        v = NULL;
        if (o->arg != CLI_OPTS_FLAG &&
            cli_opts_value(o, nargs, args, &i, nl, &v) != 0) {
            r = cli_fail(c, "option %s needs a value", a);
            goto fail;
        }
        if ((r = cli_apply(c, o, a, nl, v, nargs, args, i)) != 0)
            goto fail;
    }
    xfree(args);
    xfree(from);
    args = NULL;
    from = NULL;
    if ((r = cli_keep_check(c)) != 0)
        goto fail;
    if (c->compress && c->vol_compress == VOL_COMPRESS_NEVER) {
        r = cli_fail(c, "-z compresses blocks, --compress=never nothing: "
            "give one of them");
        goto fail;
    }
    if ((c->ready_marker != NULL || c->keep > 0 || c->settle_s > 0) &&
        c->watch_s == 0) {
        r = cli_fail(c, "--ready-marker, --settle and --keep go with pull "
            "--watch");
        goto fail;
    }
    if (c->watch_s > 0 && (c->cmd != CMD_PULL || nwords != 2 ||
        c->dry_run || c->delete)) {
        r = cli_fail(c, "--watch: write ferry pull --watch TIME "
            "host:DIR LOCALDIR (one source, no --dry-run or --delete)");
        goto fail;
    }
    if (c->cmd == CMD_STATUS || c->cmd == CMD_CLEAN) {
        if (nwords != 1) {
            r = cli_fail(c, "%s needs one destination",
                c->cmd == CMD_STATUS ? "status" : "clean");
            goto fail;
        }
        r = cli_parse_remote(words[0], &c->remote);
        if (r == 0 && c->remote.host != NULL &&
            strchr(c->remote.host, '[') != NULL) {
            r = cli_fail(c, "%s takes one box ('%s' is a range)",
                c->cmd == CMD_STATUS ? "status" : "clean", words[0]);
            goto fail;
        }
        if (r == 0)
            c->has_remote = 1;
        else if (r != FERRY_ERR_USAGE)
            goto fail;
        c->local_paths = words;
        c->nlocal = 1;
        return 0;
    }
    if (nwords < 2) {
        r = cli_fail(c, "%s needs at least one source and a destination",
            c->cmd == CMD_PUSH ? "push" : "pull");
        goto fail;
    }
    if (c->cmd == CMD_PUSH)
        r = cli_words_push(c, words, nwords);
    else
        r = cli_words_pull(c, words, nwords);
    if (r != 0) {
        if (c->local_paths == words)
            words = NULL;
        goto fail;
    }
    words = NULL;
    if (c->nboxes > 0 && c->watch_s > 0) {
        r = cli_fail(c, "--watch pulls from one box");
        goto fail;
    }
    if (c->boxes_at_once > 0 && c->nboxes == 0) {
        r = cli_fail(c, "--boxes-at-once goes with a push or pull of many "
            "boxes (several destinations, several hosts, or a range)");
        goto fail;
    }
    if (c->nremote > (int)PROTO_MAX_OPEN_PATHS) {
        r = cli_fail(c, "too many sources (at most %u)", PROTO_MAX_OPEN_PATHS);
        goto fail;
    }
    if ((r = cli_top_clash(c)) != 0)
        goto fail;
    return 0;
fail:
    xfree(words);
    xfree(args);
    xfree(from);
    cli_cleanup(c);
    return r;
}

void
cli_cleanup(struct cli *c)
{
    int i;

    remote_cleanup(&c->remote);
    cli_boxes_cleanup(c);
    xfree(c->local_paths);
    for (i = 0; i < c->nremote; i++)
        xfree(c->remote_paths[i]);
    xfree(c->remote_paths);
    c->local_paths = c->remote_paths = NULL;
    c->nlocal = c->nremote = 0;
    for (i = 0; i < c->nexpanded; i++)
        xfree(c->expanded[i]);
    c->nexpanded = 0;
    xfree(c->adopt);
    c->adopt = NULL;
    filter_cleanup(&c->filter);
}

int
cli_compress_blocks(const struct cli *c, int long_link)
{
    return c->compress || c->vol_compress == VOL_COMPRESS_LEVEL ||
        (c->vol_compress == VOL_COMPRESS_AUTO && long_link);
}
