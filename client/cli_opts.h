/*
 * cli_opts.h: every option of ferry's command line, in one table.
 *
 * A row is one option: its long name and short letter, the value it
 * takes, the commands it goes with, its line of help, and the section of
 * docs/ferry.1 whose entries name it. cli_parse and pack_args_parse find
 * options here, help_command prints a command's rows, and the unit tests
 * check that each command's help and the man page list exactly these
 * rows, so an option cannot be added to one and left out of another.
 *
 * Five letters mean one thing to ssh and another to rsync: -p (PORT,
 * --perms), -l (USER, --links), -i (IDENTITY, --itemize-changes), -o
 * (KEY=VALUE, --owner) and -F (FILE, a filter shorthand). Each meaning
 * has its row: CLI_OPTS_ALONE says what the letter means written alone
 * (-p 2222: ssh's), CLI_OPTS_GROUPED what it means among other letters
 * (-rlptgoD: rsync's). So has -h: --help alone, rsync's --human-readable
 * in a group (-avh). Other letters mean the same either way.
 */
#ifndef FERRY_CLIENT_CLI_OPTS_H
#define FERRY_CLIENT_CLI_OPTS_H

#include <stddef.h>

/* The commands an option goes with (cli_opts_row.cmds). */
#define CLI_OPTS_PUSH (1u << 0)
#define CLI_OPTS_PULL (1u << 1)
#define CLI_OPTS_STATUS (1u << 2)
#define CLI_OPTS_CLEAN (1u << 3)
#define CLI_OPTS_PACK (1u << 4)
#define CLI_OPTS_UNPACK (1u << 5)

/* What a row's letter means where (cli_opts_row.where). */
#define CLI_OPTS_ALONE (1u << 0)     /* -p 2222, -p2222, -vp2222 */
#define CLI_OPTS_GROUPED (1u << 1)   /* -rlptgoD */

/* rsync's flags ferry takes without needing them (cli_opts_row.habit),
 * gathered for the one line that says what ferry does instead
 * (help_habits). */
#define CLI_OPTS_HABIT_ARCHIVE (1u << 0)     /* -a */
#define CLI_OPTS_HABIT_RECURSIVE (1u << 1)   /* -r */
#define CLI_OPTS_HABIT_PARTIAL (1u << 2)     /* -P, --partial */
#define CLI_OPTS_HABIT_TIMES (1u << 3)       /* -t */
#define CLI_OPTS_HABIT_PERMS (1u << 4)       /* -p in a group */
#define CLI_OPTS_HABIT_LINKS (1u << 5)       /* -l in a group */
#define CLI_OPTS_HABIT_OWNER (1u << 6)       /* -o in a group */
#define CLI_OPTS_HABIT_GROUP (1u << 7)       /* -g in a group */
#define CLI_OPTS_HABIT_DEVICES (1u << 8)     /* -D in a group */
#define CLI_OPTS_HABIT_ITEMIZE (1u << 9)     /* -i in a group */
#define CLI_OPTS_HABIT_SPARSE (1u << 10)     /* -S */
#define CLI_OPTS_HABIT_HUMAN (1u << 11)      /* -h in a group */
#define CLI_OPTS_HABIT_WHOLE (1u << 12)      /* -W: --delta=never */

/* What a row is, for the parser's switch. */
enum cli_opts_id {
    CLI_O_DRY_RUN = 1, CLI_O_EXCLUDE, CLI_O_INCLUDE, CLI_O_EXCLUDE_FROM,
    CLI_O_DELETE, CLI_O_DELETE_EXCLUDED, CLI_O_MKPATH, CLI_O_WATCH,
    CLI_O_SETTLE, CLI_O_READY_MARKER, CLI_O_KEEP, CLI_O_MARGIN, CLI_O_FORCE,
    CLI_O_BWLIMIT, CLI_O_CHECKSUM,
    CLI_O_COMPRESS, CLI_O_COMPRESS_MODE, CLI_O_DELTA, CLI_O_TENSORS,
    CLI_O_BASIS, CLI_O_ADOPT,
    CLI_O_PACK_THRESHOLD, CLI_O_VOLUME_SIZE, CLI_O_KEEP_VOLUMES, CLI_O_NAME,
    CLI_O_JSON, CLI_O_QUIET, CLI_O_VERBOSE, CLI_O_PROGRESS,
    CLI_O_NO_PROGRESS, CLI_O_BLOCK_SIZE, CLI_O_STREAMS, CLI_O_RETRY_FOR,
    CLI_O_RETRIES, CLI_O_RETRY_WAIT, CLI_O_STALL_TIMEOUT, CLI_O_AGENT,
    CLI_O_NO_BOOTSTRAP, CLI_O_SSH_CMD, CLI_O_SSH_CONFIG, CLI_O_PORT,
    CLI_O_LOGIN, CLI_O_IDENTITY, CLI_O_SSH_OPTION, CLI_O_BOXES_AT_ONCE,
    CLI_O_NO_SWARM,
    CLI_O_HELP,
    /* rsync's, each with its habit bit. */
    CLI_O_HABIT, CLI_O_PARTIAL_PROGRESS, CLI_O_WHOLE_FILE
};

/* The value a row takes (cli_opts_row.arg). */
enum cli_opts_arg {
    CLI_OPTS_FLAG,      /* none */
    CLI_OPTS_VALUE,     /* --opt V, --opt=V, -x V, -xV */
    CLI_OPTS_EQ         /* only --opt=V: --opt alone is another row */
};

struct cli_opts_row {
    const char *name;        /* "--dry-run", or NULL */
    char letter;             /* 'n', or 0 */
    unsigned char where;     /* the letter's: CLI_OPTS_ALONE|GROUPED */
    unsigned char arg;       /* enum cli_opts_arg */
    unsigned char id;        /* enum cli_opts_id */
    unsigned cmds;           /* CLI_OPTS_PUSH|... */
    unsigned habit;          /* CLI_OPTS_HABIT_*, 0 for ferry's own */
    int overview;            /* listed by `ferry --help` too */
    const char *argname;     /* "PATTERN"; "=MODE" prints --opt=MODE */
    const char *help;        /* one sentence, wrapped when printed */
    const char *man;         /* the section of docs/ferry.1 with its
                                entry: "OPTIONS" or "RSYNC FLAGS" */
};

extern const struct cli_opts_row cli_opts_table[];
extern const size_t cli_opts_count;

/*
 * The row of arg as given: "--name", "--name=V", "-x", or "-xV" when x
 * takes a value. grouped: the word came from a group of letters (rsync's
 * meanings). Sets *namelen to the name's length in arg (2 for a letter).
 * Returns NULL for what the table does not have, and for a flag given a
 * value ("--delete=1"; cli_opts_flag_value tells that case).
 */
const struct cli_opts_row *cli_opts_find(const char *arg, int grouped,
    size_t *namelen);

/* The row of a letter alone or in a group, or NULL. */
const struct cli_opts_row *cli_opts_letter(char letter, int grouped);

/* 1 if arg is "--flag=V" for a row that takes no value. */
int cli_opts_flag_value(const char *arg);

/*
 * The value of row o found at argv[*i] with a name namelen long: after
 * '=', joined to a letter, or the next word (then *i moves on to it).
 * Returns 0, or FERRY_ERR_USAGE when there is none.
 */
int cli_opts_value(const struct cli_opts_row *o, int argc, char **argv,
    int *i, size_t namelen, const char **val);

/* The command bit of a command's name ("push": CLI_OPTS_PUSH), 0 for a
 * word that is not one. */
unsigned cli_opts_cmd(const char *name);

/* Writes the commands in cmds as words ("push and pull") into out. */
void cli_opts_cmds_text(unsigned cmds, char *out, size_t outlen);

/*
 * What an unknown long option was probably meant to be: the row for a
 * command in cmd (CLI_OPTS_* bits) whose name is nearest arg's (before
 * any '='), when it is within one or two edits (insert, delete, change,
 * swap of neighbours) and the name is long enough for that to mean a
 * typo. NULL otherwise.
 */
const struct cli_opts_row *cli_opts_near(const char *arg, unsigned cmd);

#endif
