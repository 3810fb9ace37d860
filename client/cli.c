#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/text.h"
#include "../engine/volsend.h"
#include "../engine/volset.h"
#include "../engine/volume.h"
#include "../proto/limits.h"
#include "../proto/msg.h"
#include "help.h"

void
cli_usage(FILE *f)
{
    fprintf(f,
"usage: ferry push [options] SRC... [user@]host:DEST\n"
"       ferry pull [options] [user@]host:SRC... DEST\n"
"       ferry status [options] [[user@]host:]DEST   unfinished transfers\n"
"       ferry clean [options] [[user@]host:]DEST    remove them\n"
"       ferry pack [--volume-size SIZE] [--name NAME] SRC... OUTDIR\n"
"       ferry unpack [--name NAME] OUTDIR DEST   volumes: see README\n"
"       ferry help [COMMAND], ferry COMMAND --help, ferry --version\n"
"\n"
"Remote locations are [user@]host:PATH (SSH) or local:PATH (an agent on\n"
"this machine). \"dir\" copies the directory, \"dir/\" its contents.\n"
"\n"
"options (ferry help push: all of them):\n"
"  -n, --dry-run         show what would be sent and deleted; change nothing\n"
"      --exclude PAT, --include PAT, --exclude-from FILE   leave out what\n"
"                        matches (first match decides; .ferryignore too)\n"
"      --bwlimit RATE    at most RATE bytes/s over all streams (20M, 500K)\n"
"      --margin PCT      refuse what would leave less than PCT%% of the\n"
"                        destination's file system free (20); --force\n"
"                        skips the check (and sends while it scans)\n"
"      --delete          remove from DEST what the sources do not have\n"
"                        (--delete-excluded: excluded files too)\n"
"      --watch TIME      pull: keep pulling checkpoints as they appear in\n"
"                        host:DIR (--ready-marker NAME, --keep N)\n"
"  -c, --checksum        skip files by content hash, not size and mtime\n"
"  -z, --compress        compress blocks that shrink (zstd), on any link\n"
"      --delta=MODE      send only what changed in files the destination\n"
"                        has another version of: auto (default: files of\n"
"                        1 MiB and more), always, never\n"
"      --basis auto      build a file new to the destination from the most\n"
"                        similar file beside it (same extension, closest\n"
"                        size and name), e.g. step-2000.pt from step-1000.pt\n"
"      --basis FILE      ... from FILE (relative to the destination)\n"
"      --basis none      no basis for new files (auto is the default; ./none)\n"
"      --compress=auto|never|LEVEL  zstd on the wire: volumes at a level\n"
"                        that adapts to the link, and blocks on a long\n"
"                        link (default); or nothing; or a fixed level\n"
"      --pack-threshold SIZE  files smaller than this travel packed in\n"
"                        volumes (default 8M; 0: never)\n"
"      --volume-size SIZE  largest volume (64K..1T; default 2G)\n"
"      --keep-volumes    push: store the volumes ferry pack would make in\n"
"                        DEST, not unpacked (--name NAME; resumes)\n"
"      --json            print NDJSON events on stdout\n"
"  -q, --quiet           no progress and no summary\n"
"  -v, --verbose         more diagnostics (repeat for more)\n"
"      --progress        always show progress; --no-progress never\n"
"      --block-size N    block size (64K..4M, power of two; default 1M)\n"
"      --agent PATH      ferry-agent on the remote side\n"
"      --no-bootstrap    do not upload an agent to the remote host\n"
"      --retry-for TIME  after a lost connection, keep reconnecting for\n"
"                        this long without progress (default 15m; 0: never)\n"
"      --retries N       ... and at most N times in a row (default: no limit)\n"
"      --retry-wait TIME longest pause between reconnects (default 30s)\n"
"  -j, --streams N       connections in parallel (default: add them while\n"
"                        the rate still rises, up to 8)\n"
"      --stall-timeout TIME  a connection that moves no data this long while\n"
"                        the others do is replaced, and with no data moving\n"
"                        at all for twice that ferry reconnects (default\n"
"                        30s; 0: never)\n"
"  -e, --ssh-cmd CMD     use this OpenSSH command as the transport\n"
"  -F FILE               ssh config file (default ~/.ssh/config)\n"
"  -p PORT, -l USER, -i IDENTITY, -o Key=Value   as for ssh\n");
}

/* Keeps the line that says what is wrong in c->err (main prints it, as
 * JSON too with --json). Returns FERRY_ERR_USAGE. */
static int FERRY_PRINTF(2, 3)
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

/* Drops later copies of a source from v (n entries); frees them when
 * owned. Returns the new count. */
static int
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

/* Takes the value of an option given as "-x V", "-xV", "--opt V" or
 * "--opt=V". */
static int
cli_value(struct cli *c, int argc, char **argv, int *i, const char *arg,
    size_t namelen, const char **val)
{
    if (arg[namelen] == '=' && arg[1] == '-') {
        *val = arg + namelen + 1;
        return 0;
    }
    if (arg[namelen] != '\0' && arg[1] != '-') {
        *val = arg + namelen;
        return 0;
    }
    if (*i + 1 >= argc)
        return cli_fail(c, "option %s needs a value", arg);
    *val = argv[++*i];
    return 0;
}

static int
cli_opt(const char *arg, const char *shrt, const char *lng, size_t *namelen)
{
    size_t n;

    if (shrt != NULL && strncmp(arg, shrt, 2) == 0) {
        *namelen = 2;
        return 1;
    }
    if (lng != NULL) {
        n = strlen(lng);
        if (strncmp(arg, lng, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
            *namelen = n;
            return 1;
        }
    }
    return 0;
}

/* Flags that take no value, which may be grouped as in rsync: -avzP. */
#define CLI_GROUP_FLAGS "arPvzcqnh"
/* Flags that take a value: in a group, the rest of it (or the next word)
 * is the value. */
#define CLI_VALUE_FLAGS "jeFplio"

/*
 * Splits groups of short flags ("-avzP" into "-a" "-v" "-z" "-P", "-avj4"
 * into "-a" "-v" "-j4") into args (argc entries at most, after the
 * command). A word is a group when its first letter is one of
 * CLI_GROUP_FLAGS; other letters become flags of their own, so an
 * unknown one is named alone. Words after "--" stay as they are.
 */
static int
cli_expand(struct cli *c, int argc, char **argv, char ***out, int *outc)
{
    char **args, *buf, *p;
    int i, n = 0, done = 0;
    size_t j, len, total = 0;

    for (i = 2; i < argc; i++)
        total += strlen(argv[i]);
    if ((args = xcalloc(total + (size_t)argc + 1, sizeof(*args))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 2; i < argc; i++) {
        const char *a = argv[i];

        len = strlen(a);
        if (done || a[0] != '-' || a[1] == '-' || len <= 2 ||
            strchr(CLI_GROUP_FLAGS, a[1]) == NULL) {
            done |= strcmp(a, "--") == 0;
            args[n++] = argv[i];
            continue;
        }
        if (c->nexpanded == CLI_MAX_OPTS) {
            xfree(args);
            return cli_fail(c, "too many groups of flags");
        }
        /* Each letter becomes "-x\0"; a value rides with its flag. */
        if ((buf = xmalloc(3 * len + 1)) == NULL) {
            xfree(args);
            return FERRY_ERR_NOMEM;
        }
        c->expanded[c->nexpanded++] = buf;
        for (j = 1, p = buf; j < len; j++) {
            args[n++] = p;
            *p++ = '-';
            if (strchr(CLI_VALUE_FLAGS, a[j]) != NULL) {
                memcpy(p, a + j, len - j + 1);
                break;
            }
            *p++ = a[j];
            *p++ = '\0';
        }
    }
    *out = args;
    *outc = n;
    return 0;
}

/* --keep-volumes stores what `ferry pack` makes: options that shape a
 * transfer's tree or its blocks make no sense with it. */
static int
cli_keep_check(struct cli *c)
{
    const char *bad = c->cmd != CMD_PUSH ? "pull" : c->dry_run ?
        "--dry-run" : c->delete ? "--delete" : c->watch_s > 0 ? "--watch" :
        (c->delta_flags & ~(uint32_t)OPEN_F_BASIS_AUTO) != 0 ||
        c->basis != NULL ? "--delta or --basis" :
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

/* Options every push and pull takes that other commands do not. */
static int
cli_transfer_opt(struct cli *c, int argc, char **argv, int *i, int *r)
{
    const char *a = argv[*i], *v;
    unsigned line;
    size_t nl;
    int e;

    *r = 0;
    if (strcmp(a, "-n") == 0 || strcmp(a, "--dry-run") == 0) {
        c->dry_run = 1;
    } else if (cli_opt(a, NULL, "--bwlimit", &nl)) {
        if ((*r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
            return 1;
        if (cli_rate(v, &c->bwlimit) != 0)
            *r = cli_fail(c, "--bwlimit %s: want a rate such as 20M (bytes "
                "per second; a bare number is KiB/s)", v);
    } else if (strcmp(a, "--force") == 0) {
        c->force = 1;
    } else if (strcmp(a, "--keep-volumes") == 0) {
        c->keep_volumes = 1;
    } else if (cli_opt(a, NULL, "--name", &nl)) {
        if ((*r = cli_value(c, argc, argv, i, a, nl, &c->set_name)) != 0)
            return 1;
        if (volset_name_ok(c->set_name) != 0)
            *r = cli_fail(c, "--name %s: want a plain file name (no '/', "
                "not starting with '.')", c->set_name);
    } else if (cli_opt(a, NULL, "--watch", &nl)) {
        if ((*r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
            return 1;
        if (cli_duration(v, &c->watch_s) != 0 || c->watch_s < 1)
            *r = cli_fail(c, "--watch %s: want a duration such as 30s or "
                "2m between looks", v);
    } else if (cli_opt(a, NULL, "--ready-marker", &nl)) {
        if ((*r = cli_value(c, argc, argv, i, a, nl, &c->ready_marker)) != 0)
            return 1;
        if (c->ready_marker[0] == '\0' || strchr(c->ready_marker, '/'))
            *r = cli_fail(c, "--ready-marker '%s': want a file name",
                c->ready_marker);
    } else if (cli_opt(a, NULL, "--keep", &nl)) {
        char *end;
        long n;

        if ((*r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
            return 1;
        n = strtol(v, &end, 10);
        if (end == v || *end != '\0' || n < 1 || n > 1000000)
            *r = cli_fail(c, "--keep %s: want a number of copies, 1 or "
                "more", v);
        c->keep = (int)n;
    } else if (cli_opt(a, NULL, "--margin", &nl)) {
        char *end;
        long n;

        if ((*r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
            return 1;
        n = strtol(v, &end, 10);
        if (end == v || (*end != '\0' && strcmp(end, "%") != 0) || n < 0 ||
            n > 99)
            *r = cli_fail(c, "--margin %s: want a percentage from 0 to 99",
                v);
        c->margin = (unsigned)n;
    } else if (strcmp(a, "--delete") == 0) {
        c->delete = c->delete ? c->delete : 1;
    } else if (strcmp(a, "--delete-excluded") == 0) {
        c->delete = 2;
    } else if (cli_opt(a, NULL, "--exclude", &nl) ||
        cli_opt(a, NULL, "--include", &nl)) {
        if ((*r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
            return 1;
        e = filter_add(&c->filter, a[2] == 'e' ? FILTER_EXCLUDE :
            FILTER_INCLUDE, v, strlen(v), NULL);
        if (e != 0)
            *r = cli_fail(c, "%.*s '%s': %s", (int)nl, a, v,
                e == FERRY_ERR_TOO_LARGE ? "too long, or too many patterns"
                : "not a pattern");
    } else if (cli_opt(a, NULL, "--exclude-from", &nl)) {
        if ((*r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
            return 1;
        e = filter_add_file(&c->filter, v, FILTER_EXCLUDE, 0, NULL, &line);
        if (e != 0 && line > 0)
            *r = cli_fail(c, "--exclude-from %s: line %u: %s", v, line,
                ferry_strerror(e));
        else if (e != 0)
            *r = cli_fail(c, "--exclude-from %s: %s", v, ferry_strerror(e));
    } else {
        return 0;
    }
    return 1;
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

/* --compress=MODE, --pack-threshold and --volume-size: how small files
 * travel in volumes (engine/volsend.h). */
static int
cli_volume_opt(struct cli *c, int argc, char **argv, int *i, const char *a)
{
    const char *v;
    uint64_t n;
    size_t nl;
    char *end;
    long lv;
    int r;

    if (strncmp(a, "--compress=", 11) == 0) {
        v = a + 11;
        lv = strtol(v, &end, 10);
        if (strcmp(v, "auto") == 0) {
            c->vol_compress = VOL_COMPRESS_AUTO;
        } else if (strcmp(v, "never") == 0) {
            c->vol_compress = VOL_COMPRESS_NEVER;
        } else if (end != v && *end == '\0' && lv >= VOL_LEVEL_MIN &&
            lv <= VOL_LEVEL_MAX) {
            c->vol_compress = VOL_COMPRESS_LEVEL;
            c->vol_level = (uint8_t)lv;
        } else {
            return cli_fail(c, "%s: want auto, never or a level from %d to "
                "%d", a, VOL_LEVEL_MIN, VOL_LEVEL_MAX);
        }
        return 0;
    }
    nl = strcspn(a, "=");
    if ((r = cli_value(c, argc, argv, i, a, nl, &v)) != 0)
        return r;
    if (text_parse_size(v, &n) != 0)
        return cli_fail(c, "%.*s %s: want a size such as 256K, 2G or 0",
            (int)nl, a, v);
    if (a[2] == 'p') {
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

int
cli_parse(struct cli *c, int argc, char **argv)
{
    char **words = NULL, **args = NULL;
    int nwords = 0, nargs = 0, i, r, options_done = 0;
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
    c->delta_flags = OPEN_F_BASIS_AUTO;
    c->pack_threshold = VOLSEND_DEFAULT_THRESHOLD;
    c->volume_size = VOLUME_DEFAULT_SIZE;
    /* Known before anything can fail, so that a usage error is JSON too. */
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            c->json = 1;
    if (argc < 2) {
        cli_usage(stderr);
        return FERRY_ERR_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        c->cmd = CMD_VERSION;
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        c->cmd = CMD_HELP;
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            if (help_command(NULL, argv[2]) != 0)
                return cli_fail(c, "help: unknown command '%s'", argv[2]);
            c->help_topic = argv[2];
        }
        return 0;
    }
    if (strcmp(argv[1], "push") == 0)
        c->cmd = CMD_PUSH;
    else if (strcmp(argv[1], "pull") == 0)
        c->cmd = CMD_PULL;
    else if (strcmp(argv[1], "status") == 0)
        c->cmd = CMD_STATUS;
    else if (strcmp(argv[1], "clean") == 0)
        c->cmd = CMD_CLEAN;
    else
        return cli_fail(c, "unknown command '%s'", argv[1]);
    for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            c->help_topic = argv[1];
            c->cmd = CMD_HELP;
            return 0;
        }
    if ((r = cli_expand(c, argc, argv, &args, &nargs)) != 0)
        goto fail;
    if ((words = xcalloc((size_t)nargs + 1, sizeof(*words))) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto fail;
    }
    argc = nargs;
    argv = args;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *instead;

        if (options_done || a[0] != '-' || a[1] == '\0') {
            words[nwords++] = argv[i];
            continue;
        }
        if ((c->cmd == CMD_PUSH || c->cmd == CMD_PULL) &&
            cli_transfer_opt(c, argc, argv, &i, &r)) {
            if (r != 0)
                goto fail;
        } else if (strcmp(a, "-a") == 0 || strcmp(a, "--archive") == 0) {
            c->habits |= HELP_HABIT_ARCHIVE;
        } else if (strcmp(a, "-r") == 0 || strcmp(a, "--recursive") == 0) {
            c->habits |= HELP_HABIT_RECURSIVE;
        } else if (strcmp(a, "--partial") == 0) {
            c->habits |= HELP_HABIT_PARTIAL;
        } else if (strcmp(a, "-P") == 0) {
            /* rsync's --partial --progress. */
            c->habits |= HELP_HABIT_PARTIAL;
            c->progress = 1;
        } else if (strcmp(a, "-h") == 0) {
            /* In a group (-avh), rsync's --human-readable: always so. */
        } else if (strcmp(a, "--") == 0) {
            options_done = 1;
        } else if (strcmp(a, "-c") == 0 || strcmp(a, "--checksum") == 0) {
            c->checksum = 1;
        } else if (strcmp(a, "-z") == 0 || strcmp(a, "--compress") == 0) {
            /* "--compress 3" would send a file named 3 (and -z): the
             * volumes' level goes after '='. */
            if (a[1] == '-' && i + 1 < argc &&
                cli_looks_like_level(argv[i + 1]) &&
                access(argv[i + 1], F_OK) != 0) {
                r = cli_fail(c, "--compress takes a level after '=': "
                    "--compress=%s (--compress alone is -z)", argv[i + 1]);
                goto fail;
            }
            c->compress = 1;
        } else if (strncmp(a, "--compress=", 11) == 0 ||
            cli_opt(a, NULL, "--pack-threshold", &nl) ||
            cli_opt(a, NULL, "--volume-size", &nl)) {
            if ((r = cli_volume_opt(c, argc, argv, &i, a)) != 0)
                goto fail;
        } else if (strcmp(a, "--json") == 0) {
            c->json = 1;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            c->verbose++;
        } else if (strcmp(a, "-vv") == 0) {
            c->verbose += 2;
        } else if (strcmp(a, "--progress") == 0) {
            c->progress = 1;
        } else if (strcmp(a, "--no-progress") == 0) {
            c->progress = 0;
        } else if (strcmp(a, "--no-bootstrap") == 0) {
            c->no_bootstrap = 1;
        } else if (cli_opt(a, NULL, "--delta", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            c->delta_flags &= ~(uint32_t)(OPEN_F_DELTA_ALWAYS |
                OPEN_F_DELTA_NEVER);
            if (strcmp(v, "always") == 0) {
                c->delta_flags |= OPEN_F_DELTA_ALWAYS;
            } else if (strcmp(v, "never") == 0) {
                c->delta_flags |= OPEN_F_DELTA_NEVER;
            } else if (strcmp(v, "auto") != 0) {
                r = cli_fail(c, "--delta %s: want auto, always or never", v);
                goto fail;
            }
        } else if (cli_opt(a, NULL, "--basis", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            c->delta_flags &= ~(uint32_t)OPEN_F_BASIS_AUTO;
            c->basis = NULL;
            if (strcmp(v, "auto") == 0) {
                c->delta_flags |= OPEN_F_BASIS_AUTO;
            } else if (strcmp(v, "none") != 0) {
                /* A file named as a keyword is "./none". */
                c->basis = strncmp(v, "./", 2) == 0 ? v + 2 : v;
                if (fsx_path_check(c->basis, strlen(c->basis)) != 0) {
                    r = cli_fail(c, "--basis %s: want auto, none, or a "
                        "file's path relative to the destination", v);
                    goto fail;
                }
            }
        } else if (cli_opt(a, NULL, "--block-size", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            if (cli_block_size(v, &c->block_size) != 0) {
                r = cli_fail(c, "--block-size %s: want a power of two from "
                    "64K to 4M", v);
                goto fail;
            }
        } else if (cli_opt(a, NULL, "--retries", &nl)) {
            char *end;
            long n;

            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            n = strtol(v, &end, 10);
            if (end == v || *end != '\0' || n < 0 || n > 100000) {
                r = cli_fail(c, "--retries %s: want a number", v);
                goto fail;
            }
            c->retries = (int)n;
        } else if (cli_opt(a, NULL, "--retry-for", &nl) ||
            cli_opt(a, NULL, "--retry-wait", &nl)) {
            int *dst = strncmp(a, "--retry-for", nl) == 0 ?
                &c->retry_for : &c->retry_wait;

            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            if (cli_duration(v, dst) != 0) {
                r = cli_fail(c, "%.*s %s: want a duration such as 90s, "
                    "15m or 1h", (int)nl, a, v);
                goto fail;
            }
        } else if (cli_opt(a, "-j", "--streams", &nl)) {
            char *end;
            long n;

            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            n = strtol(v, &end, 10);
            if (end == v || *end != '\0' || n < 1 || n > CLI_MAX_STREAMS) {
                r = cli_fail(c, "%.*s %s: want a number from 1 to %d",
                    (int)nl, a, v, CLI_MAX_STREAMS);
                goto fail;
            }
            c->streams = (int)n;
        } else if (cli_opt(a, NULL, "--stall-timeout", &nl)) {
            int secs;

            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            if (cli_duration(v, &secs) != 0) {
                r = cli_fail(c, "--stall-timeout %s: want a duration such "
                    "as 30s or 2m", v);
                goto fail;
            }
            c->stall_timeout = (unsigned)secs;
        } else if (cli_opt(a, NULL, "--agent", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &c->agent_path)) != 0)
                goto fail;
        } else if (cli_opt(a, "-e", "--ssh-cmd", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &c->ssh_cmd)) != 0)
                goto fail;
        } else if (cli_opt(a, "-F", NULL, &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &c->ssh_config)) != 0)
                goto fail;
        } else if (cli_opt(a, "-p", "--port", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &c->port)) != 0)
                goto fail;
        } else if (cli_opt(a, "-l", "--login", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &c->login)) != 0)
                goto fail;
        } else if (cli_opt(a, "-i", "--identity", &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            if (c->nidentities == CLI_MAX_OPTS) {
                r = cli_fail(c, "too many %s options", "-i");
                goto fail;
            }
            c->identities[c->nidentities++] = v;
        } else if (cli_opt(a, "-o", NULL, &nl)) {
            if ((r = cli_value(c, argc, argv, &i, a, nl, &v)) != 0)
                goto fail;
            if (c->nssh_opts == CLI_MAX_OPTS) {
                r = cli_fail(c, "too many %s options", "-o");
                goto fail;
            }
            c->ssh_opts[c->nssh_opts++] = v;
        } else if ((instead = help_foreign_option(a)) != NULL) {
            r = cli_fail(c, "option '%s' is rsync's or scp's: %s", a,
                instead);
            goto fail;
        } else {
            r = cli_fail(c, "unknown option '%s'", a);
            goto fail;
        }
    }
    xfree(args);
    args = NULL;
    if (c->cmd != CMD_PUSH && c->cmd != CMD_PULL && c->habits != 0)
        c->habits = 0;
    if ((r = cli_keep_check(c)) != 0)
        goto fail;
    if (c->compress && c->vol_compress == VOL_COMPRESS_NEVER) {
        r = cli_fail(c, "-z compresses blocks, --compress=never nothing: "
            "give one of them");
        goto fail;
    }
    if ((c->ready_marker != NULL || c->keep > 0) && c->watch_s == 0) {
        r = cli_fail(c, "--ready-marker and --keep go with pull --watch");
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
    if (c->cmd == CMD_PUSH) {
        struct remote rm;

        for (i = 0; i < nwords - 1; i++) {
            if (cli_parse_remote(words[i], &rm) == 0) {
                remote_cleanup(&rm);
                r = cli_fail(c, "push: source '%s' is remote; use ferry pull "
                    "to copy from a remote host", words[i]);
                goto fail;
            }
        }
        if ((r = cli_parse_remote(words[nwords - 1], &c->remote)) != 0) {
            if (r == FERRY_ERR_USAGE)
                r = cli_fail(c, "push: destination '%s' is not remote "
                    "(write host:PATH or local:PATH)", words[nwords - 1]);
            goto fail;
        }
        c->local_paths = words;
        c->nlocal = cli_dedupe(words, nwords - 1, 0);
        words = NULL;
    } else {
        struct remote rm;

        if (cli_parse_remote(words[nwords - 1], &rm) == 0) {
            remote_cleanup(&rm);
            r = cli_fail(c, "pull: destination '%s' must be local",
                words[nwords - 1]);
            goto fail;
        }
        if ((c->remote_paths = xcalloc((size_t)nwords,
            sizeof(char *))) == NULL) {
            r = FERRY_ERR_NOMEM;
            goto fail;
        }
        for (i = 0; i < nwords - 1; i++) {
            if ((r = cli_parse_remote(words[i], &rm)) != 0) {
                if (r == FERRY_ERR_USAGE)
                    r = cli_fail(c, "pull: source '%s' is not remote "
                        "(write host:PATH or local:PATH)", words[i]);
                goto fail;
            }
            if (i == 0) {
                c->remote = rm;
                c->remote_paths[c->nremote++] = xstrdup(rm.path);
            } else {
                int same = rm.local == c->remote.local &&
                    (rm.local || (strcmp(rm.host, c->remote.host) == 0 &&
                    ((rm.user == NULL && c->remote.user == NULL) ||
                    (rm.user != NULL && c->remote.user != NULL &&
                    strcmp(rm.user, c->remote.user) == 0))));

                c->remote_paths[c->nremote++] = xstrdup(rm.path);
                remote_cleanup(&rm);
                if (!same) {
                    r = cli_fail(c, "pull: all sources must be on one host "
                        "('%s' is not)", words[i]);
                    goto fail;
                }
            }
            if (c->remote_paths[c->nremote - 1] == NULL) {
                r = FERRY_ERR_NOMEM;
                goto fail;
            }
        }
        c->nremote = cli_dedupe(c->remote_paths, c->nremote, 1);
        words[0] = words[nwords - 1];
        c->local_paths = words;
        c->nlocal = 1;
        words = NULL;
    }
    if (c->nremote > (int)PROTO_MAX_OPEN_PATHS) {
        r = cli_fail(c, "too many sources (at most %u)", PROTO_MAX_OPEN_PATHS);
        goto fail;
    }
    return 0;
fail:
    xfree(words);
    xfree(args);
    cli_cleanup(c);
    return r;
}

void
cli_cleanup(struct cli *c)
{
    int i;

    remote_cleanup(&c->remote);
    xfree(c->local_paths);
    for (i = 0; i < c->nremote; i++)
        xfree(c->remote_paths[i]);
    xfree(c->remote_paths);
    c->local_paths = c->remote_paths = NULL;
    c->nlocal = c->nremote = 0;
    for (i = 0; i < c->nexpanded; i++)
        xfree(c->expanded[i]);
    c->nexpanded = 0;
    filter_cleanup(&c->filter);
}

int
cli_compress_blocks(const struct cli *c, int long_link)
{
    return c->compress || c->vol_compress == VOL_COMPRESS_LEVEL ||
        (c->vol_compress == VOL_COMPRESS_AUTO && long_link);
}
