/*
 * cli_opts.c: the table of ferry's options (cli_opts.h) and how a word of
 * the command line finds its row.
 */
#include "cli_opts.h"

#include <stdio.h>
#include <string.h>

#include "../common/err.h"

#define XFER (CLI_OPTS_PUSH | CLI_OPTS_PULL)
#define STATE (CLI_OPTS_STATUS | CLI_OPTS_CLEAN)
#define ALL (XFER | STATE | CLI_OPTS_PACK | CLI_OPTS_UNPACK)
#define BOTH (CLI_OPTS_ALONE | CLI_OPTS_GROUPED)
#define ALONE CLI_OPTS_ALONE
#define GROUPED CLI_OPTS_GROUPED
#define FLAG CLI_OPTS_FLAG
#define VALUE CLI_OPTS_VALUE
#define OPT "OPTIONS"
#define RSYNC "RSYNC FLAGS"

/* In the order help prints them. */
const struct cli_opts_row cli_opts_table[] = {
    { "--dry-run", 'n', BOTH, FLAG, CLI_O_DRY_RUN, XFER, 0, 1, NULL,
        "list what would be sent and deleted, with sizes (-v: and what is "
        "up to date); change nothing on either side", OPT },
    { "--exclude", 0, 0, VALUE, CLI_O_EXCLUDE, XFER, 0, 1, "PATTERN",
        "leave out what PATTERN matches (repeatable)", OPT },
    { "--include", 0, 0, VALUE, CLI_O_INCLUDE, XFER, 0, 1, "PATTERN",
        "keep what PATTERN matches, even if a later --exclude matches it "
        "(the first match decides)", OPT },
    { "--exclude-from", 0, 0, VALUE, CLI_O_EXCLUDE_FROM, XFER, 0, 1, "FILE",
        "patterns from FILE, one a line (\"+ PAT\" includes); a .ferryignore "
        "at a source's root is read too (gitignore syntax)", OPT },
    { "--delete", 0, 0, FLAG, CLI_O_DELETE, XFER, 0, 1, NULL,
        "make DEST a mirror: after a transfer that succeeded, remove what "
        "the sources do not have in the directories they send (dir/: all "
        "of DEST; dir: DEST/dir; excluded files are kept)", OPT },
    { "--delete-excluded", 0, 0, FLAG, CLI_O_DELETE_EXCLUDED, XFER, 0, 0,
        NULL, "as --delete, and remove excluded files too", OPT },
    { "--mkpath", 0, 0, FLAG, CLI_O_MKPATH, XFER, 0, 0, NULL,
        "make DEST's missing parent directories too (without it, as "
        "rsync: DEST's last component is made, a missing parent is an "
        "error)", OPT },
    { "--watch", 0, 0, VALUE, CLI_O_WATCH, CLI_OPTS_PULL, 0, 1, "TIME",
        "keep pulling the checkpoints that appear or change in host:DIR "
        "(or a glob's matches) until Ctrl-C, looking every TIME; each once "
        "its writer is done (no process has it open for writing, a known "
        "format is whole, else the same two looks in a row), newest "
        "first; a directory appears all at once",
        OPT },
    { "--settle", 0, 0, VALUE, CLI_O_SETTLE, CLI_OPTS_PULL, 0, 0, "TIME",
        "with --watch: how long a file nothing else can judge (no writer "
        "check, no known format: NFS) must look the same before it is "
        "pulled (default: one look, TIME of --watch)", OPT },
    { "--ready-marker", 0, 0, VALUE, CLI_O_READY_MARKER, CLI_OPTS_PULL, 0, 0,
        "NAME", "with --watch: complete when DIR/E/NAME (a directory) or "
        "E + NAME (a file: step-1.pt.done) is there", OPT },
    { "--keep", 0, 0, VALUE, CLI_O_KEEP, CLI_OPTS_PULL, 0, 0, "N",
        "with --watch: keep only the N newest of the units the source "
        "selects (every entry of DIR/, or a glob's matches) here, after "
        "the new one arrived whole; removes only what the watch pulled "
        "itself, unchanged since (recorded in LOCAL/.ferry), never an "
        "entry of yours the box lists by name", OPT },
    { "--margin", 0, 0, VALUE, CLI_O_MARGIN, XFER, 0, 1, "PCT",
        "refuse a transfer that would leave less than PCT% of the "
        "destination's file system free (default 20)", OPT },
    { "--force", 0, 0, FLAG, CLI_O_FORCE, XFER, 0, 0, NULL,
        "transfer even so, without the check (and send while the scan goes "
        "on)", OPT },
    { "--bwlimit", 0, 0, VALUE, CLI_O_BWLIMIT, XFER, 0, 1, "RATE",
        "at most RATE bytes per second over all streams (20M, 500K; a bare "
        "number is KiB/s, as rsync)", OPT },
    { "--checksum", 'c', BOTH, FLAG, CLI_O_CHECKSUM, XFER, 0, 1, NULL,
        "skip files by content hash, not size and mtime", OPT },
    { "--compress", 'z', BOTH, FLAG, CLI_O_COMPRESS, XFER, 0, 1, NULL,
        "compress blocks that shrink (zstd), on any link", OPT },
    { "--compress", 0, 0, CLI_OPTS_EQ, CLI_O_COMPRESS_MODE, XFER, 0, 0,
        "=auto|never|LEVEL", "zstd on the wire: volumes at a level that "
        "adapts to the link, and blocks on a long link (auto, the default); "
        "or nothing; or a fixed level, 1 to 19", OPT },
    { "--delta", 0, 0, VALUE, CLI_O_DELTA, XFER, 0, 1, "=MODE",
        "send only what changed in files the destination has another "
        "version of: auto (the default: files of 1 MiB and more), always, "
        "never", OPT },
    { "--tensors", 0, 0, VALUE, CLI_O_TENSORS, XFER, 0, 1, "=MODE",
        "send a checkpoint (safetensors, torch.save, .npy) the destination "
        "has an older version of as its tensors' differences from it: auto "
        "(the default), never", OPT },
    { "--basis", 0, 0, VALUE, CLI_O_BASIS, XFER, 0, 1, "auto|none|FILE",
        "build a file new to the destination from a file there: auto (the "
        "default), the most similar one beside it (same extension, closest "
        "size and name: step-2000.pt from step-1000.pt); none, send new "
        "files whole; or FILE, relative to the destination (./none for a "
        "file named none)", OPT },
    { "--adopt", 0, 0, VALUE, CLI_O_ADOPT, CLI_OPTS_PUSH, 0, 0, "DIR",
        "take a file the destination lacks from DIR (relative to the "
        "destination, laid out as it) when its content hash matches the "
        "source's, moving it into place instead of sending it", OPT },
    { "--pack-threshold", 0, 0, VALUE, CLI_O_PACK_THRESHOLD, XFER, 0, 0,
        "SIZE", "files smaller than this travel packed in volumes (default "
        "8M, at most 16M; 0: never)", OPT },
    { "--volume-size", 0, 0, VALUE, CLI_O_VOLUME_SIZE,
        XFER | CLI_OPTS_PACK, 0, 0, "SIZE",
        "largest volume (64K to 1T; default 2G)", OPT },
    { "--keep-volumes", 0, 0, FLAG, CLI_O_KEEP_VOLUMES, CLI_OPTS_PUSH, 0, 0,
        NULL, "store in DEST the volumes ferry pack would make, not the "
        "files (resumes; see --name)", OPT },
    { "--name", 0, 0, VALUE, CLI_O_NAME,
        CLI_OPTS_PUSH | CLI_OPTS_PACK | CLI_OPTS_UNPACK, 0, 0, "NAME",
        "the volume set's name (pack and push --keep-volumes: default the "
        "source's; unpack: needed when OUTDIR holds several)", OPT },
    { "--json", 0, 0, FLAG, CLI_O_JSON, ALL, 0, 1, NULL,
        "print NDJSON events on stdout", OPT },
    { "--quiet", 'q', BOTH, FLAG, CLI_O_QUIET, ALL, 0, 1, NULL,
        "no progress and no summary", OPT },
    { "--verbose", 'v', BOTH, FLAG, CLI_O_VERBOSE, ALL, 0, 1, NULL,
        "list files as they go (-vv: debug logs)", OPT },
    { "--progress", 0, 0, FLAG, CLI_O_PROGRESS, XFER, 0, 0, NULL,
        "always show progress", OPT },
    { "--no-progress", 0, 0, FLAG, CLI_O_NO_PROGRESS, XFER, 0, 0, NULL,
        "never show progress (default: shown on a terminal)", OPT },
    { "--block-size", 0, 0, VALUE, CLI_O_BLOCK_SIZE, XFER, 0, 0, "N",
        "block size (64K to 4M, a power of two; default 1M)", OPT },
    { "--streams", 'j', BOTH, VALUE, CLI_O_STREAMS, XFER, 0, 1, "N",
        "connections in parallel (default: what a long link's round trip "
        "needs, up to 16; else added while the rate still rises)", OPT },
    { "--boxes-at-once", 0, 0, VALUE, CLI_O_BOXES_AT_ONCE, XFER, 0, 0, "N",
        "with many boxes (host1:PATH host2:PATH, box[1-8]:PATH), how many "
        "move at once, each on its own connections (default 8)", OPT },
    { "--no-swarm", 0, 0, FLAG, CLI_O_NO_SWARM, CLI_OPTS_PUSH, 0, 0, NULL,
        "with many boxes, send each box everything over this uplink; by "
        "default each piece crosses it once and the boxes share the rest "
        "(docs/SWARM.md)", OPT },
    { "--retry-for", 0, 0, VALUE, CLI_O_RETRY_FOR, XFER | STATE, 0, 0,
        "TIME", "after a lost connection, keep reconnecting this long "
        "without progress (default 15m; 0: never)", OPT },
    { "--retries", 0, 0, VALUE, CLI_O_RETRIES, XFER | STATE, 0, 0, "N",
        "and at most N times in a row (default: no limit)", OPT },
    { "--retry-wait", 0, 0, VALUE, CLI_O_RETRY_WAIT, XFER | STATE, 0, 0,
        "TIME", "longest pause between reconnects (default 30s)", OPT },
    { "--stall-timeout", 0, 0, VALUE, CLI_O_STALL_TIMEOUT, XFER | STATE, 0,
        0, "TIME", "replace a connection that moves no data this long while "
        "the others do; with none moving any for twice that, reconnect, "
        "or for this long when only the first has work left (a push's "
        "others have nothing to send) (default 30s; 0: never)", OPT },
    { "--agent", 0, 0, VALUE, CLI_O_AGENT, XFER | STATE, 0, 0, "PATH",
        "ferry-agent on the remote side", OPT },
    { "--no-bootstrap", 0, 0, FLAG, CLI_O_NO_BOOTSTRAP, XFER | STATE, 0, 0,
        NULL, "do not upload an agent to the remote host", OPT },
    { "--ssh-cmd", 'e', BOTH, VALUE, CLI_O_SSH_CMD, XFER | STATE, 0, 1,
        "CMD", "use this OpenSSH command as the transport", OPT },
    { NULL, 'F', ALONE, VALUE, CLI_O_SSH_CONFIG, XFER | STATE, 0, 1, "FILE",
        "ssh config file (default ~/.ssh/config)", OPT },
    { "--port", 'p', ALONE, VALUE, CLI_O_PORT, XFER | STATE, 0, 1, "PORT",
        "ssh port", OPT },
    { "--login", 'l', ALONE, VALUE, CLI_O_LOGIN, XFER | STATE, 0, 1, "USER",
        "ssh user", OPT },
    { "--identity", 'i', ALONE, VALUE, CLI_O_IDENTITY, XFER | STATE, 0, 1,
        "IDENTITY", "ssh private key file (repeatable)", OPT },
    { NULL, 'o', ALONE, VALUE, CLI_O_SSH_OPTION, XFER | STATE, 0, 1,
        "KEY=VALUE", "an ssh_config option (repeatable)", OPT },
    { "--help", 'h', ALONE, FLAG, CLI_O_HELP, ALL, 0, 0, NULL,
        "this help", OPT },

    /* rsync's flags that ask for what ferry always does. */
    { "--archive", 'a', BOTH, FLAG, CLI_O_HABIT, XFER,
        CLI_OPTS_HABIT_ARCHIVE, 0, NULL,
        "always so: recursive, symlinks, permission bits, mtimes", RSYNC },
    { "--recursive", 'r', BOTH, FLAG, CLI_O_HABIT, XFER,
        CLI_OPTS_HABIT_RECURSIVE, 0, NULL, "always so", RSYNC },
    { NULL, 'P', BOTH, FLAG, CLI_O_PARTIAL_PROGRESS, XFER,
        CLI_OPTS_HABIT_PARTIAL, 0, NULL, "--partial --progress", RSYNC },
    { "--partial", 0, 0, FLAG, CLI_O_HABIT, XFER, CLI_OPTS_HABIT_PARTIAL, 0,
        NULL, "always so: unfinished files resume", RSYNC },
    { "--times", 't', BOTH, FLAG, CLI_O_HABIT, XFER, CLI_OPTS_HABIT_TIMES,
        0, NULL, "always so: mtimes are kept", RSYNC },
    { "--perms", 'p', GROUPED, FLAG, CLI_O_HABIT, XFER,
        CLI_OPTS_HABIT_PERMS, 0, NULL,
        "in a group (-rlptgoD), or --perms: permission bits are always "
        "kept", RSYNC },
    { "--links", 'l', GROUPED, FLAG, CLI_O_HABIT, XFER,
        CLI_OPTS_HABIT_LINKS, 0, NULL,
        "in a group, or --links: symlinks are always copied as links",
        RSYNC },
    { NULL, 'o', GROUPED, FLAG, CLI_O_HABIT, XFER, CLI_OPTS_HABIT_OWNER, 0,
        NULL, "in a group: rsync's --owner; files belong to the remote user",
        RSYNC },
    { NULL, 'g', GROUPED, FLAG, CLI_O_HABIT, XFER, CLI_OPTS_HABIT_GROUP, 0,
        NULL, "in a group: rsync's --group; files belong to the remote user",
        RSYNC },
    { NULL, 'D', GROUPED, FLAG, CLI_O_HABIT, XFER, CLI_OPTS_HABIT_DEVICES,
        0, NULL, "in a group: rsync's --devices --specials; device files, "
        "sockets and FIFOs are skipped", RSYNC },
    { "--itemize-changes", 'i', GROUPED, FLAG, CLI_O_HABIT, XFER,
        CLI_OPTS_HABIT_ITEMIZE, 0, NULL,
        "in a group, or --itemize-changes: -v lists files", RSYNC },
    { "--sparse", 'S', BOTH, FLAG, CLI_O_HABIT, XFER, CLI_OPTS_HABIT_SPARSE,
        0, NULL, "always so: holes stay holes", RSYNC },
    { "--human-readable", 'h', GROUPED, FLAG, CLI_O_HABIT, XFER,
        CLI_OPTS_HABIT_HUMAN, 0, NULL,
        "in a group (-avh), or --human-readable: always so", RSYNC },
    { "--whole-file", 'W', BOTH, FLAG, CLI_O_WHOLE_FILE, XFER,
        CLI_OPTS_HABIT_WHOLE, 0, NULL, "--delta=never", RSYNC },
};

const size_t cli_opts_count = sizeof(cli_opts_table) /
    sizeof(cli_opts_table[0]);

const struct cli_opts_row *
cli_opts_letter(char letter, int grouped)
{
    unsigned where = grouped ? CLI_OPTS_GROUPED : CLI_OPTS_ALONE;
    size_t i;

    for (i = 0; i < cli_opts_count; i++)
        if (cli_opts_table[i].letter == letter &&
            (cli_opts_table[i].where & where) != 0)
            return &cli_opts_table[i];
    return NULL;
}

/* The row named name (n bytes): the one that takes a value when it was
 * given one (has_value), else the other; NULL if neither. */
static const struct cli_opts_row *
cli_opts_named(const char *name, size_t n, int has_value)
{
    const struct cli_opts_row *o;
    size_t i;

    for (i = 0; i < cli_opts_count; i++) {
        o = &cli_opts_table[i];
        if (o->name == NULL || strlen(o->name) != n ||
            memcmp(o->name, name, n) != 0)
            continue;
        if (has_value ? o->arg != CLI_OPTS_FLAG : o->arg != CLI_OPTS_EQ)
            return o;
    }
    return NULL;
}

const struct cli_opts_row *
cli_opts_find(const char *arg, int grouped, size_t *namelen)
{
    const struct cli_opts_row *o;
    size_t n;

    *namelen = 0;
    if (arg[0] != '-' || arg[1] == '\0')
        return NULL;
    if (arg[1] == '-') {
        n = strcspn(arg, "=");
        if ((o = cli_opts_named(arg, n, arg[n] == '=')) != NULL)
            *namelen = n;
        return o;
    }
    o = cli_opts_letter(arg[1], grouped);
    /* "-nX" is no option: only a letter with a value has more after it. */
    if (o == NULL || (arg[2] != '\0' && o->arg == CLI_OPTS_FLAG))
        return NULL;
    *namelen = 2;
    return o;
}

int
cli_opts_flag_value(const char *arg)
{
    size_t n = strcspn(arg, "=");

    return arg[0] == '-' && arg[1] == '-' && arg[n] == '=' &&
        cli_opts_named(arg, n, 0) != NULL;
}

int
cli_opts_value(const struct cli_opts_row *o, int argc, char **argv, int *i,
    size_t namelen, const char **val)
{
    const char *arg = argv[*i];

    *val = NULL;
    if (arg[namelen] == '=' && arg[1] == '-') {
        *val = arg + namelen + 1;
        return 0;
    }
    if (arg[namelen] != '\0' && arg[1] != '-') {
        *val = arg + namelen;
        return 0;
    }
    if (o->arg == CLI_OPTS_EQ || *i + 1 >= argc)
        return FERRY_ERR_USAGE;
    *val = argv[++*i];
    return 0;
}

static const struct {
    const char *name;
    unsigned bit;
} cli_opts_cmds[] = {
    { "push", CLI_OPTS_PUSH }, { "pull", CLI_OPTS_PULL },
    { "status", CLI_OPTS_STATUS }, { "clean", CLI_OPTS_CLEAN },
    { "pack", CLI_OPTS_PACK }, { "unpack", CLI_OPTS_UNPACK },
};

#define CLI_OPTS_NCMDS (sizeof(cli_opts_cmds) / sizeof(cli_opts_cmds[0]))

unsigned
cli_opts_cmd(const char *name)
{
    size_t i;

    for (i = 0; i < CLI_OPTS_NCMDS; i++)
        if (strcmp(name, cli_opts_cmds[i].name) == 0)
            return cli_opts_cmds[i].bit;
    return 0;
}

void
cli_opts_cmds_text(unsigned cmds, char *out, size_t outlen)
{
    size_t i, n = 0, k = 0, len = 0;
    int w;

    for (i = 0; i < CLI_OPTS_NCMDS; i++)
        n += (cmds & cli_opts_cmds[i].bit) != 0;
    out[0] = '\0';
    for (i = 0; i < CLI_OPTS_NCMDS && len < outlen; i++) {
        if ((cmds & cli_opts_cmds[i].bit) == 0)
            continue;
        k++;
        w = snprintf(out + len, outlen - len, "%s%s",
            k == 1 ? "" : k == n ? " and " : ", ", cli_opts_cmds[i].name);
        if (w < 0)
            return;
        len += (size_t)w;
    }
}

/* Edits from a to b (insert, delete, change, swap of two neighbours);
 * stops counting past 3. */
static unsigned
cli_opts_edits(const char *a, size_t la, const char *b, size_t lb)
{
    unsigned d[32][32];
    size_t i, j;

    if (la >= 32 || lb >= 32)
        return 3;
    for (i = 0; i <= la; i++)
        d[i][0] = (unsigned)i;
    for (j = 0; j <= lb; j++)
        d[0][j] = (unsigned)j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            unsigned v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb] < 3 ? d[la][lb] : 3;
}

const struct cli_opts_row *
cli_opts_near(const char *arg, unsigned cmd)
{
    const struct cli_opts_row *best = NULL;
    unsigned d, least = 3;
    size_t i, n = strcspn(arg, "=");

    if (arg[0] != '-' || arg[1] != '-')
        return NULL;
    for (i = 0; i < cli_opts_count; i++) {
        const struct cli_opts_row *o = &cli_opts_table[i];

        if (o->name == NULL || (o->cmds & cmd) == 0)
            continue;
        d = cli_opts_edits(arg + 2, n - 2, o->name + 2, strlen(o->name) - 2);
        /* Two edits to a short name ("--del" from "--delta") are a
         * different word more often than a typo. */
        if (d < least && (d <= 1 || n - 2 >= 6)) {
            least = d;
            best = o;
        }
    }
    return best;
}
