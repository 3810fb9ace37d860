/*
 * cli.h: the command line of ferry.
 *
 *     ferry push [options] SRC... DEST     DEST is remote
 *     ferry pull [options] SRC... DEST     every SRC is remote
 *     ferry status|clean [options] DEST    unfinished transfers in DEST
 *
 * A remote location is local:PATH (a ferry-agent child on this machine)
 * or [user@]host:PATH (SSH). As with rsync and scp, a word whose first ':'
 * comes after a '/' is a local path.
 */
#ifndef FERRY_CLIENT_CLI_H
#define FERRY_CLIENT_CLI_H

#include <stdint.h>

#include <stdio.h>

#include "../common/err.h"
#include "../engine/filter.h"
#include "../engine/manifest.h"

enum cli_cmd { CMD_PUSH = 1, CMD_PULL, CMD_STATUS, CMD_CLEAN, CMD_VERSION,
    CMD_HELP };

struct remote {
    int local;         /* local: transport */
    char *user;        /* NULL if not given */
    char *host;        /* NULL for local */
    char *path;        /* never NULL; "." when empty */
};

#define CLI_MAX_OPTS 64

/* Boxes a push or pull may name at once (ranges expanded). */
#define CLI_MAX_BOXES 256
/* Boxes moved at once by default (--boxes-at-once). */
#define CLI_BOXES_AT_ONCE 8

/* One box of a push to many or a pull from many (cli.boxes). */
struct cli_box {
    struct remote remote;
    char *label;       /* how output names it: the host, or host:PATH
                          when two boxes of a push share a host; a
                          pull's DEST/LABEL */
    char **paths;      /* pull: this host's sources (owned) */
    int npaths;
};

struct cli {
    enum cli_cmd cmd;
    struct remote remote;     /* the remote side (one box) */
    struct cli_box *boxes;    /* many boxes: set when a push names
                                 several destinations or a range, or a
                                 pull several hosts or a range; remote
                                 is then unset (boxes.h runs them) */
    int nboxes;
    int boxes_at_once;        /* --boxes-at-once N; 0: the default */
    int no_swarm;             /* --no-swarm: many boxes, no sharing */
    /* A box's transfer after a swarm: the hashes its pass made
     * (manifest_set_hash_hint), NULL for none. */
    manifest_hash_hint_fn *hash_hint;
    void *hash_hint_ctx;
    int has_remote;           /* status/clean on a remote destination */
    char **local_paths;       /* push: sources; pull and status/clean:
                                 [0] = destination */
    int nlocal;
    char **remote_paths;      /* pull: sources on the remote host */
    int nremote;
    int checksum;
    int compress;
    uint32_t delta_flags;     /* --delta: OPEN_F_DELTA_*, 0 for auto;
                                 --basis auto: OPEN_F_BASIS_AUTO */
    const char *basis;        /* --basis FILE */
    char *adopt;              /* --adopt DIR (push; owned, trimmed) */
    int adopt_keep;           /* ... linked, the staged name kept (a
                                 swarm's box: OPEN_F_ADOPT_KEEP) */
    int json;
    int quiet;
    int verbose;
    int progress;             /* -1 auto (TTY), 0 off, 1 on */
    uint32_t block_size;
    const char *agent_path;   /* --agent */
    const char *ssh_cmd;      /* --ssh-cmd */
    const char *ssh_config;   /* -F */
    const char *port;         /* -p */
    const char *login;        /* -l */
    const char *identities[CLI_MAX_OPTS];  /* -i */
    int nidentities;
    const char *ssh_opts[CLI_MAX_OPTS];    /* -o Key=Value */
    int nssh_opts;
    int no_bootstrap;
    int retries;              /* --retries: reconnects in a row without
                                 progress; -1 no limit, 0 never */
    int retry_for;            /* --retry-for: seconds without progress
                                 before giving up; 0 never retry */
    int retry_wait;           /* --retry-wait: longest pause, seconds */
    int streams;              /* -j/--streams: 0 chooses by itself */
    unsigned stall_timeout;   /* --stall-timeout: seconds; 0 none */
    int dry_run;              /* -n/--dry-run */
    uint64_t bwlimit;         /* --bwlimit: bytes per second; 0 none */
    unsigned margin;          /* --margin: percent kept free */
    int force;                /* --force: no space check */
    int delete;               /* --delete: 1; --delete-excluded: 2 */
    int mkpath;               /* --mkpath: DEST's missing parents are
                                 made (OPEN_F_MKPATH) */
    struct filter filter;     /* --exclude, --include, --exclude-from */
    unsigned habits;          /* rsync flags taken (CLI_OPTS_HABIT_*) */
    const char *help_topic;   /* CMD_HELP: a command, or NULL */
    char *expanded[CLI_MAX_OPTS];  /* private: split flag groups */
    int nexpanded;
    uint64_t pack_threshold;  /* --pack-threshold: smaller files travel
                                 in volumes; 0 none */
    uint64_t volume_size;     /* --volume-size (transfers and pack) */
    uint8_t vol_compress;     /* --compress=auto|never|LEVEL (volumes):
                                 enum vol_compress */
    uint8_t vol_level;
    int watch_s;              /* pull --watch: seconds between looks */
    int settle_s;             /* --settle: quiet time of a file nothing
                                 else judges; 0: one look */
    const char *ready_marker; /* --ready-marker NAME */
    int keep;                 /* --keep N: local copies kept; 0 all */
    int whole_formats;        /* private: a watch's pull commits no file
                                 of a known format cut short */
    const char *basis_dir;    /* private: a watch's pull of a directory
                                 unit: the last unit here, whose files
                                 are bases (dest_set_basis_dir) */
    int keep_volumes;         /* push --keep-volumes */
    const char *set_name;     /* --name: the set's (keep_volumes) */
    char err[512];            /* why cli_parse failed, for the user */
};

#define CLI_DEFAULT_RETRIES (-1)
#define CLI_DEFAULT_RETRY_FOR (15 * 60)
#define CLI_DEFAULT_RETRY_WAIT 30
#define CLI_DEFAULT_STALL 30
/* -j at most: streams a transfer may have (proto/limits.h). */
#define CLI_MAX_STREAMS 16

/*
 * Parses argv with the table of cli_opts.h: each command takes the rows
 * that name it, before or after it (cli_command_first, which reorders
 * argv). `ferry help CMD` and `ferry CMD --help` give CMD_HELP with
 * help_topic set. A word of letters only is a group, where each letter
 * has rsync's meaning (-avzP; -rlptgoD: -p is --perms, -l --links) and -j
 * and -e take the rest or the next word (-avj4); written alone, -p, -l,
 * -i, -o and -F are ssh's (-p 2222, -p2222, and -vp2222: a word with a
 * character that is not a letter is flags up to the first that takes a
 * value). Returns 0, or FERRY_ERR_USAGE
 * with one line in c->err that says what is wrong (without "ferry: "),
 * or prints the usage when there are no arguments at all (c->err is then
 * ""). c->json is set even on failure when --json was given, so that the
 * error can be reported as JSON. Strings borrow from argv or are owned by
 * cli (free with cli_cleanup).
 *
 * The same source given twice (after runs of '/' are made one: "a//b" is
 * "a/b") is kept once. "a" and "a/" stay two sources: under the
 * trailing-slash rule they name different things.
 */
int cli_parse(struct cli *c, int argc, char **argv) FERRY_WUR;
void cli_cleanup(struct cli *c);

/*
 * Options may come before the command, as ssh's do (ferry -F cfg push
 * ...): moves the command word to argv[1] and the options before it after
 * it, in their order (argv's pointers are reordered, never its strings).
 * They are then the command's options like any other. Returns the index
 * the command had (1 when it was first, or when none comes before "--", a
 * help or version option, or the end).
 */
int cli_command_first(int argc, char **argv);

/* A --block-size value: a power of two within the protocol's limits,
 * with an optional K or M. */
int cli_block_size(const char *s, uint32_t *out) FERRY_WUR;
/* Splits "host:path", "user@host:path", "user@[v6]:path" or "local:path".
 * Returns 0 when the word names a remote location, FERRY_ERR_USAGE when it
 * is a local path. */
int cli_parse_remote(const char *word, struct remote *out) FERRY_WUR;

/*
 * Expands the range in a remote word's host, as pdsh and Slurm write
 * them: "box[1-3]:p" is box1:p, box2:p, box3:p; "node[01-16]:p" keeps the
 * width of a first number that starts with 0 (node01 ... node16); items
 * go with commas ("gpu[1,3,5-6]:p"). A host that starts with '[' is an
 * address ("[::1]:p"), and a word without '[' in its host is itself.
 * One range per host, numbers of at most 9 digits. Returns 0 and *out
 * (an array of *n words, each and the array freed with xfree), or
 * FERRY_ERR_USAGE with one line in err naming the word: a range that
 * runs backwards, that is not numbers, or that would make more than max
 * words.
 * Exported for the tests; otherwise used only in its file.
 */
int cli_range_expand(const char *word, int max, char ***out, int *n,
    char *err, size_t errlen) FERRY_WUR;
void remote_cleanup(struct remote *r);

/*
 * Whether the sender compresses blocks (OPEN_F_COMPRESS): with -z, with a
 * level the user fixed, and with auto on a long link (the first SSH login
 * took ATTEMPT_LONG_CONNECT_MS or more), where the link binds. On a short
 * one (loopback, a LAN) the cores do, and on one not timed (the ssh
 * program carries every stream) nothing says which: there auto sends
 * blocks raw, as rsync does without -z. A block is sent compressed only
 * when it shrinks, and a file whose first blocks do not (checkpoints,
 * media) is sent raw after them, so data that does not compress costs a
 * few blocks' worth of zstd's time per file.
 */
int cli_compress_blocks(const struct cli *c, int long_link);

/* Parses a duration: seconds, or numbers with units s, m, h, d in a row
 * ("90s", "15m", "1h30m"; "0" is zero). Returns 0 and the seconds in
 * *out, or FERRY_ERR_USAGE (also past a year). */
int cli_duration(const char *s, int *out) FERRY_WUR;

/* Parses a rate as rsync's --bwlimit does: a number of KiB per second,
 * or with a suffix K, M or G (powers of 1024; "20M", "1.5M"; KB, MB, GB
 * too), or B for bytes ("65536B"). Returns 0
 * and bytes per second in *out, or FERRY_ERR_USAGE (0, or past 1 TiB/s). */
int cli_rate(const char *s, uint64_t *out) FERRY_WUR;

#endif
