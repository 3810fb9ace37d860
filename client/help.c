#include "help.h"

#include <string.h>

#include "cli_opts.h"

/* Where a row's help starts, and the widest line. */
#define HELP_COL 24
#define HELP_WIDTH 79

static const char help_usage_head[] =
"usage: ferry push [options] SRC... [user@]host:DEST...\n"
"       ferry pull [options] [user@]host:SRC... DEST\n"
"       ferry status [options] [[user@]host:]DEST   unfinished transfers\n"
"       ferry clean [options] [[user@]host:]DEST    remove them\n"
"       ferry pack [--volume-size SIZE] [--name NAME] SRC... OUTDIR\n"
"       ferry unpack [--name NAME] OUTDIR DEST   volumes: see README\n"
"       ferry help [COMMAND], ferry COMMAND --help, ferry --version\n"
"\n"
"Remote locations are [user@]host:PATH (SSH) or local:PATH (an agent on\n"
"this machine). \"dir\" copies the directory, \"dir/\" its contents.\n"
"Many boxes: host1:PATH host2:PATH, or a range: 'box[1-8]:PATH'.\n"
"\n"
"options of push and pull (ferry help push: all of them):\n";

static const char help_push[] =
"usage: ferry push [options] SRC... [user@]host:DEST...\n"
"\n"
"Copies local files and directories to DEST on the remote host (or to\n"
"local:PATH). \"dir\" copies the directory, \"dir/\" its contents; files\n"
"that are up to date (same size and mtime) are skipped, unfinished ones\n"
"resume. Always recursive; keeps permission bits and mtimes.\n"
"\n"
"Every remote word at the end is a destination: push to many boxes with\n"
"box1:/ws box2:/ws, or a range, 'box[1-8]:/ws' ('node[01-16]:/ws' keeps\n"
"the zeros; at most 256 boxes). Each box gets its own transfer, at most\n"
"--boxes-at-once (8) at a time; a box that fails is named and the others\n"
"finish (exit 10).\n";

static const char help_pull[] =
"usage: ferry pull [options] [user@]host:SRC... DEST\n"
"\n"
"Copies remote files and directories into the local DEST. A source may\n"
"be a glob (box:'ckpt/step-*.pt'): the agent expands it; quote it so\n"
"that your own shell does not. Sources on several hosts, or a range\n"
"('box[1-8]:ckpt'), pull each host into DEST/HOST/.\n";

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
"rsync's flags, taken with one line that says what ferry does. A word of\n"
"letters only is a group of rsync's flags (-avzP, -rlptgoD: there -p is\n"
"--perms, -l --links); -j and -e take the rest or the next word (-avj4).\n"
"Alone, -p PORT, -l USER, -i IDENTITY, -o KEY=VALUE and -F FILE are ssh's\n"
"(-p 2222; joined to a value that is not all letters too: -p2222).\n";

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
    { "--stats", "ferry always ends with a summary (--json for all "
        "fields)" },
    { "--info", "use --progress, -v or --json" },
    { "--rsh", "use -e/--ssh-cmd CMD" },
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
    { "-g", "not supported: files belong to the remote user (in a group "
        "of letters such as -rlptgoD it is taken)" },
    { "--devices", "not supported: device files, sockets and FIFOs are "
        "skipped" },
    { "--specials", "not supported: device files, sockets and FIFOs are "
        "skipped" },
    { "-D", "not supported: device files, sockets and FIFOs are skipped "
        "(in a group of letters such as -rlptgoD it is taken)" },
    /* Alone, -F is ssh's config file: this is -F in a group. */
    { "-F", "in a group of letters, -F is rsync's filter shorthand "
        "(.rsync-filter files): ferry reads a .ferryignore; for ssh's "
        "config file, write -F FILE alone" },
    { "--timeout", "use --stall-timeout TIME: a connection that moves no "
        "data that long is replaced" },
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

#define H_A CLI_OPTS_HABIT_ARCHIVE
#define H_R CLI_OPTS_HABIT_RECURSIVE
#define H_L CLI_OPTS_HABIT_LINKS
#define H_P CLI_OPTS_HABIT_PERMS
#define H_T CLI_OPTS_HABIT_TIMES

/* The habits' names, in the order rsync's -rlptgoD has them. */
static const struct {
    unsigned bit;
    const char *name;
} help_habit_names[] = {
    { H_A, "-a" }, { H_R, "-r" }, { H_L, "-l" }, { H_P, "-p" }, { H_T, "-t" },
    { CLI_OPTS_HABIT_GROUP, "-g" }, { CLI_OPTS_HABIT_OWNER, "-o" },
    { CLI_OPTS_HABIT_DEVICES, "-D" }, { CLI_OPTS_HABIT_SPARSE, "-S" },
    { CLI_OPTS_HABIT_HUMAN, "-h" }, { CLI_OPTS_HABIT_ITEMIZE, "-i" },
    { CLI_OPTS_HABIT_PARTIAL, "-P/--partial" },
    { CLI_OPTS_HABIT_WHOLE, "-W" },
};

/* What ferry always does, for each habit that asks for it: "copies ..."
 * or, with keeps set, what it keeps. */
static const struct {
    unsigned bit;
    int keeps;
    const char *what;
} help_habit_does[] = {
    { H_R, 0, "copies recursively" },
    { H_L, 1, "symlinks as links" },
    { H_P, 1, "permission bits" },
    { H_T, 1, "mtimes" },
    { CLI_OPTS_HABIT_SPARSE, 1, "sparse files sparse" },
    { CLI_OPTS_HABIT_HUMAN, 0, "prints human-readable sizes" },
    { CLI_OPTS_HABIT_PARTIAL, 0, "resumes" },
};

/* What ferry does instead, for the habits it does not do. */
static const struct {
    unsigned bits;
    const char *what;
} help_habit_instead[] = {
    { CLI_OPTS_HABIT_OWNER | CLI_OPTS_HABIT_GROUP,
        "files belong to the remote user" },
    { CLI_OPTS_HABIT_DEVICES, "device files, sockets and FIFOs are "
        "skipped" },
    { CLI_OPTS_HABIT_ITEMIZE, "-v lists files" },
    { CLI_OPTS_HABIT_WHOLE, "taken as --delta=never: files are sent "
        "whole" },
};

#define HELP_N(a) (sizeof(a) / sizeof((a)[0]))
#define HELP_LINE 320

/* Appends item, the k-th of n, to the list in line (HELP_LINE bytes):
 * "a", "a and b", "a, b and c", or with oxford "a, b, and c". */
static void
help_item(char *line, size_t k, size_t n, int oxford, const char *item)
{
    size_t len = strlen(line);

    snprintf(line + len, HELP_LINE - len, "%s%s", k == 0 ? "" :
        k + 1 < n ? ", " : oxford && n > 2 ? ", and " : " and ", item);
}

void
help_habits(FILE *f, unsigned habits)
{
    /* -a is -rlpt to ferry; its -goD are not worth a word there. */
    unsigned does = habits | ((habits & H_A) ? H_R | H_L | H_P | H_T : 0);
    char keeps[HELP_LINE] = "keeps ", verbs[HELP_LINE] = "";
    size_t i, k, n, nk = 0, nv = 0;

    for (i = 0; i < HELP_N(help_habit_does); i++) {
        if ((does & help_habit_does[i].bit) == 0)
            continue;
        nk += help_habit_does[i].keeps;
        nv += !help_habit_does[i].keeps;
    }
    nv += nk > 0;
    for (i = 0, k = 0, n = 0; i < HELP_N(help_habit_does); i++) {
        if ((does & help_habit_does[i].bit) == 0)
            continue;
        if (help_habit_does[i].keeps)
            help_item(keeps, k++, nk, 0, help_habit_does[i].what);
        /* The kept things, neighbours in the table, go in as one. */
        if (!help_habit_does[i].keeps || k == nk)
            help_item(verbs, n++, nv, 1, help_habit_does[i].keeps ? keeps :
                help_habit_does[i].what);
    }
    fprintf(f, "ferry: ");
    for (i = 0, k = 0; i < HELP_N(help_habit_names); i++)
        if (habits & help_habit_names[i].bit)
            fprintf(f, "%s%s", k++ ? ", " : "", help_habit_names[i].name);
    fputc(':', f);
    k = 0;
    if (nv > 0)
        fprintf(f, " no need, ferry always %s", verbs), k++;
    for (i = 0; i < HELP_N(help_habit_instead); i++)
        if (habits & help_habit_instead[i].bits)
            fprintf(f, "%s %s", k++ ? ";" : "", help_habit_instead[i].what);
    if (habits & (H_L | H_P | CLI_OPTS_HABIT_OWNER | CLI_OPTS_HABIT_ITEMIZE))
        fprintf(f, " (alone, -p PORT, -l USER, -i KEY and -o KEY=VALUE "
            "are ssh's)");
    if (habits & CLI_OPTS_HABIT_PARTIAL)
        fprintf(f, " (for scp's -P PORT, write -p PORT)");
    fputc('\n', f);
}
