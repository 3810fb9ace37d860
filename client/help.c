#include "help.h"

#include <string.h>

static const char help_push[] =
"usage: ferry push [options] SRC... [user@]host:DEST\n"
"\n"
"Copies local files and directories to DEST on the remote host (or to\n"
"local:PATH). \"dir\" copies the directory, \"dir/\" its contents; files\n"
"that are up to date (same size and mtime) are skipped, unfinished ones\n"
"resume. Always recursive; keeps permission bits and mtimes.\n";

static const char help_pull[] =
"usage: ferry pull [options] [user@]host:SRC... DEST\n"
"\n"
"Copies remote files and directories into the local DEST. A source may\n"
"be a glob (box:'ckpt/step-*.pt'): the agent expands it; quote it so\n"
"that your own shell does not.\n"
"\n"
"      --watch TIME      keep pulling the checkpoints that appear or change\n"
"                        in host:DIR until Ctrl-C, looking every TIME;\n"
"                        each once complete (the same two looks in a row),\n"
"                        newest first; a directory appears all at once\n"
"      --ready-marker NAME  complete when DIR/E/NAME (a directory) or\n"
"                        E + NAME (a file: step-1.pt.done) is there\n"
"      --keep N          keep only the N newest here (after the new one\n"
"                        arrived whole); removes only what the watch\n"
"                        pulled itself, unchanged since (recorded in\n"
"                        LOCAL/.ferry), never an entry of yours that\n"
"                        the box lists by name\n";

static const char help_transfer_opts[] =
"\n"
"options:\n"
"  -n, --dry-run         list what would be sent and deleted (-v: and\n"
"                        what is up to date); change nothing at all\n"
"      --exclude PATTERN leave out what PATTERN matches (repeatable)\n"
"      --include PATTERN keep what PATTERN matches, even if a later\n"
"                        --exclude matches it (the first match decides)\n"
"      --exclude-from FILE  patterns from FILE, one a line (\"+ PAT\"\n"
"                        includes); a .ferryignore at a source's root is\n"
"                        read too (gitignore syntax)\n"
"      --delete          make DEST a mirror: after a transfer that\n"
"                        succeeded, remove what the sources do not have\n"
"                        in the directories they send (dir/: all of DEST;\n"
"                        dir: DEST/dir; excluded files are kept)\n"
"      --delete-excluded ... and remove excluded files too\n"
"      --margin PCT      refuse a transfer that would leave less than PCT%\n"
"                        of the destination's file system free (20)\n"
"      --force           transfer even so\n"
"      --bwlimit RATE    at most RATE bytes per second over all streams\n"
"                        (20M, 500K; a bare number is KiB/s, as rsync)\n"
"  -c, --checksum        skip files by content hash, not size and mtime\n"
"  -z, --compress        compress blocks that shrink (zstd), on any link\n"
"      --compress=auto|never|LEVEL  zstd on the wire: volumes at a level\n"
"                        that adapts to the link, and blocks on a long\n"
"                        link (default); or nothing; or a fixed level\n"
"      --json            print NDJSON events on stdout\n"
"  -q, --quiet           no progress and no summary\n"
"  -v, --verbose         list files as they go (-vv: debug logs)\n"
"      --progress        always show progress; --no-progress never\n"
"      --block-size N    block size (64K..4M, power of two; default 1M)\n"
"  -j, --streams N       connections in parallel (default: chosen)\n"
"      --retry-for TIME  keep reconnecting this long without progress\n"
"                        (default 15m; 0: never)\n"
"      --retries N       ... and at most N times in a row\n"
"      --retry-wait TIME longest pause between reconnects (default 30s)\n"
"      --stall-timeout TIME  replace a connection that moves nothing this\n"
"                        long (default 30s; 0: never)\n"
"      --agent PATH      ferry-agent on the remote side\n"
"      --no-bootstrap    do not upload an agent to the remote host\n"
"  -e, --ssh-cmd CMD     use this OpenSSH command as the transport\n"
"  -F FILE, -p PORT, -l USER, -i IDENTITY, -o Key=Value   as for ssh\n"
"\n"
"From rsync, -a, -r, -P, --partial and combined flags (-avzP) are taken:\n"
"ferry always does what they ask. See `man ferry` for patterns and exit\n"
"statuses.\n";

static const char help_status[] =
"usage: ferry status [options] [[user@]host:]DEST\n"
"       ferry clean [options] [[user@]host:]DEST\n"
"\n"
"status lists the unfinished files kept under DEST for resuming (size,\n"
"done, age); clean removes them. DEST is remote (host:PATH, local:PATH)\n"
"or a local directory (pulls). Options: --json, -q, and the ssh options\n"
"of push.\n";

static const char help_pack[] =
"usage: ferry pack [--volume-size SIZE] [--name NAME] SRC... OUTDIR\n"
"       ferry unpack [--name NAME] OUTDIR DEST\n"
"\n"
"pack writes split archives that stock tools read: NAME.00001.tar.zst...\n"
"(each a pax tar compressed with zstd, at most --volume-size, default 2G),\n"
"NAME.manifest and SHA256SUMS. unpack checks and reads them into DEST.\n"
"Options: -v, -q, --json.\n";

int
help_command(FILE *f, const char *cmd)
{
    static const char *const known[] = { "push", "pull", "status", "clean",
        "pack", "unpack" };
    size_t i;

    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(cmd, known[i]) == 0)
            break;
    if (i == sizeof(known) / sizeof(known[0]))
        return -1;
    if (f == NULL)
        return 0;
    if (strcmp(cmd, "push") == 0 || strcmp(cmd, "pull") == 0) {
        fputs(cmd[1] == 'u' && cmd[2] == 's' ? help_push : help_pull, f);
        fputs(help_transfer_opts, f);
    } else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "clean") == 0) {
        fputs(help_status, f);
    } else if (strcmp(cmd, "pack") == 0 || strcmp(cmd, "unpack") == 0) {
        fputs(help_pack, f);
    } else {
        return -1;
    }
    return 0;
}

/* rsync's and scp's options that ferry does not take, and what it does
 * instead. Matched on the name before any '='. */
static const struct {
    const char *name;
    const char *instead;
} help_foreign[] = {
    { "--append", "ferry always resumes, from the blocks it verified" },
    { "--append-verify", "ferry always resumes, from the blocks it "
        "verified" },
    { "--partial-dir", "ferry keeps unfinished files in DEST/.ferry and "
        "resumes them by itself" },
    { "--inplace", "ferry never writes in place: files are staged and "
        "renamed when complete" },
    { "--whole-file", "ferry sends whole files (-W is what it does)" },
    { "-W", "ferry sends whole files (-W is what it does)" },
    { "--sparse", "ferry always keeps sparse files sparse" },
    { "-S", "ferry always keeps sparse files sparse" },
    { "--times", "ferry always keeps mtimes" },
    { "-t", "ferry always keeps mtimes" },
    { "--perms", "ferry always keeps permission bits" },
    { "--links", "ferry always copies symlinks as links" },
    { "--mkpath", "ferry always makes missing destination directories" },
    { "--human-readable", "ferry always prints sizes that way" },
    { "--stats", "ferry always ends with a summary (--json for all "
        "fields)" },
    { "--info", "use --progress, -v or --json" },
    { "--rsh", "use -e/--ssh-cmd CMD" },
    { "--port", "use -p PORT" },
    { "--update", "not supported: ferry sends what differs in size or "
        "mtime (or content, with -c)" },
    { "-u", "not supported: ferry sends what differs in size or mtime "
        "(or content, with -c)" },
    { "--ignore-existing", "not supported: ferry sends what differs in "
        "size or mtime (or content, with -c)" },
    { "--size-only", "not supported: ferry compares size and mtime (or "
        "content, with -c)" },
    { "--hard-links", "not supported yet: each name is copied as a file "
        "of its own" },
    { "-H", "not supported yet: each name is copied as a file of its own" },
    { "--copy-links", "not supported: symlinks are copied as links" },
    { "-L", "not supported: symlinks are copied as links" },
    { "--owner", "not supported: files belong to the remote user" },
    { "--group", "not supported: files belong to the remote user" },
    { "--acls", "not supported: ACLs are not copied" },
    { "--xattrs", "not supported: extended attributes are not copied" },
    { "--remove-source-files", "not supported: ferry never removes "
        "sources" },
    { "--delete-before", "use --delete (ferry deletes after the transfer "
        "succeeded)" },
    { "--delete-during", "use --delete (ferry deletes after the transfer "
        "succeeded)" },
    { "--delete-after", "use --delete (ferry deletes after the transfer "
        "succeeded)" },
    { "--filter", "use --exclude, --include and --exclude-from" },
    { "--files-from", "name the sources on the command line" },
    { "--cvs-exclude", "use --exclude-from or a .ferryignore" },
    { "-C", "use -z (zstd, for slow links)" },
    { "-3", "not supported: copy with a pull, then a push" },
    { "-T", "ferry checks every name the remote side sends anyway" },
    { "-O", "ferry speaks its own protocol, neither scp nor sftp" },
};

const char *
help_foreign_option(const char *arg)
{
    size_t i, n = strcspn(arg, "=");

    for (i = 0; i < sizeof(help_foreign) / sizeof(help_foreign[0]); i++)
        if (strlen(help_foreign[i].name) == n &&
            strncmp(help_foreign[i].name, arg, n) == 0)
            return help_foreign[i].instead;
    return NULL;
}

void
help_habits(FILE *f, unsigned habits)
{
    fprintf(f, "ferry: %s%s%s%s%s: no need, ferry always copies "
        "recursively, keeps permission bits and mtimes, and resumes%s\n",
        habits & HELP_HABIT_ARCHIVE ? "-a" : "",
        (habits & HELP_HABIT_ARCHIVE) && (habits & ~HELP_HABIT_ARCHIVE) ?
        ", " : "",
        habits & HELP_HABIT_RECURSIVE ? "-r" : "",
        (habits & HELP_HABIT_RECURSIVE) && (habits & HELP_HABIT_PARTIAL) ?
        ", " : "",
        habits & HELP_HABIT_PARTIAL ? "-P/--partial" : "",
        habits & HELP_HABIT_PARTIAL ? " (for scp's -P PORT, write -p PORT)"
        : "");
}
