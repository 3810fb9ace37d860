#include "help.h"

#include <string.h>

#include "cli_opts.h"

/* Where a row's help starts, and the widest line. */
#define HELP_COL 24
#define HELP_WIDTH 79

static const char help_usage_head[] =
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
"options of push and pull (ferry help push: all of them):\n";

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
"that your own shell does not.\n";

static const char help_transfer_tail[] =
"\n"
"See `man ferry` for patterns and exit statuses.\n";

static const char help_status[] =
"usage: ferry status [options] [[user@]host:]DEST\n"
"       ferry clean [options] [[user@]host:]DEST\n"
"\n"
"status lists the unfinished files kept under DEST for resuming (size,\n"
"done, age); clean removes them. DEST is remote (host:PATH, local:PATH)\n"
"or a local directory (pulls).\n";

static const char help_pack[] =
"usage: ferry pack [--volume-size SIZE] [--name NAME] SRC... OUTDIR\n"
"       ferry unpack [--name NAME] OUTDIR DEST\n"
"\n"
"pack writes split archives that stock tools read: NAME.00001.tar.zst...\n"
"(each a pax tar compressed with zstd, at most --volume-size, default 2G),\n"
"NAME.manifest and SHA256SUMS. unpack checks and reads them into DEST.\n";

static const char help_rsync_head[] =
"\n"
"rsync's flags, taken: ferry always does what they ask (one line says so).\n"
"Flags combine as in rsync (-avzP); one that takes a value ends its group\n"
"(-avj4).\n";

/* Prints text from column col (the line holds col characters already),
 * wrapped at HELP_WIDTH with the lines after it at HELP_COL. */
static void
help_wrap(FILE *f, const char *text, size_t col)
{
    const char *p = text;
    size_t n;

    while (*p != '\0') {
        n = strcspn(p, " ");
        if (col > HELP_COL && col + 1 + n > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL || p != text) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)n, p);
        col += n;
        p += n;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

/* One row: "  -n, --dry-run" or "      --exclude PATTERN", then its help
 * from HELP_COL (or two columns after a wider name). */
static void
help_row(FILE *f, const struct cli_opts_row *o)
{
    char left[64];
    const char *arg = o->argname != NULL ? o->argname : "";
    const char *sep = arg[0] == '\0' || arg[0] == '=' ? "" : " ";
    int n;

    if (o->letter != 0 && o->name != NULL)
        n = snprintf(left, sizeof(left), "  -%c, %s%s%s", o->letter,
            o->name, sep, arg);
    else if (o->letter != 0)
        n = snprintf(left, sizeof(left), "  -%c%s%s", o->letter, sep, arg);
    else
        n = snprintf(left, sizeof(left), "      %s%s%s", o->name, sep, arg);
    if (n < 0)
        return;
    if ((size_t)n + 1 > HELP_COL) {
        fprintf(f, "%s ", left);
        help_wrap(f, o->help, (size_t)n + 1);
    } else {
        fprintf(f, "%-*s", HELP_COL, left);
        help_wrap(f, o->help, HELP_COL);
    }
}

/* The rows of cmd (CLI_OPTS_*) documented in the man page's section man,
 * or only those in the overview (overview 1). */
static void
help_rows(FILE *f, unsigned cmd, const char *man, int overview)
{
    size_t i;

    for (i = 0; i < cli_opts_count; i++) {
        const struct cli_opts_row *o = &cli_opts_table[i];

        if ((o->cmds & cmd) != 0 && strcmp(o->man, man) == 0 &&
            (!overview || o->overview))
            help_row(f, o);
    }
}

void
help_usage(FILE *f)
{
    fputs(help_usage_head, f);
    help_rows(f, CLI_OPTS_PUSH | CLI_OPTS_PULL, "OPTIONS", 1);
}

int
help_command(FILE *f, const char *cmd)
{
    unsigned bit = cli_opts_cmd(cmd);
    const char *head;

    if (bit == 0)
        return -1;
    if (f == NULL)
        return 0;
    head = bit == CLI_OPTS_PUSH ? help_push : bit == CLI_OPTS_PULL ?
        help_pull : (bit & (CLI_OPTS_STATUS | CLI_OPTS_CLEAN)) != 0 ?
        help_status : help_pack;
    fputs(head, f);
    fputs("\noptions:\n", f);
    help_rows(f, bit, "OPTIONS", 0);
    if ((bit & (CLI_OPTS_PUSH | CLI_OPTS_PULL)) != 0) {
        fputs(help_rsync_head, f);
        help_rows(f, bit, "RSYNC FLAGS", 0);
        fputs(help_transfer_tail, f);
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
        habits & CLI_OPTS_HABIT_ARCHIVE ? "-a" : "",
        (habits & CLI_OPTS_HABIT_ARCHIVE) &&
        (habits & ~CLI_OPTS_HABIT_ARCHIVE) ? ", " : "",
        habits & CLI_OPTS_HABIT_RECURSIVE ? "-r" : "",
        (habits & CLI_OPTS_HABIT_RECURSIVE) &&
        (habits & CLI_OPTS_HABIT_PARTIAL) ? ", " : "",
        habits & CLI_OPTS_HABIT_PARTIAL ? "-P/--partial" : "",
        habits & CLI_OPTS_HABIT_PARTIAL ?
        " (for scp's -P PORT, write -p PORT)"
        : "");
}
