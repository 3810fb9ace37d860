/*
 * filter.h: which entries of a source tree a transfer leaves out
 * (--exclude, --include, --exclude-from, .ferryignore).
 *
 * A filter is an ordered list of rules, each "exclude" or "include" and a
 * pattern. An entry is checked against the rules in order and the first
 * rule that matches decides, as in rsync; an entry no rule matches is
 * included. An excluded directory is not walked, so nothing beneath it can
 * be included again.
 *
 * Patterns are matched against the entry's path as it travels (relative
 * to the transfer's root: "data/a/b.pt" for the source "data", "a/b.pt"
 * for "data/"):
 *
 *     *       any run of characters except '/'
 *     **      any run of characters, '/' included; followed by a '/',
 *             it also matches no directory at all (a, then b, match both
 *             "a/b" and "a/x/y/b" when joined by two stars and a '/')
 *     ?       one character except '/'
 *     [abc] [a-z] [!a]   one character of a set
 *     \x      x itself
 *     /pat    anchored: matched against the whole path
 *     pat/    matches directories only
 *     pat     without '/': matched against the last component; with a
 *             '/' inside: against the path or any trailing part of it
 *             that starts at a component
 *
 * A rule may have a scope, a top-level name: it then applies only to
 * entries beneath that name, matched against the path below it. The
 * rules of a .ferryignore in a source directory are scoped to that
 * source, so the ignore file of one source does not filter another.
 */
#ifndef FERRY_ENGINE_FILTER_H
#define FERRY_ENGINE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

enum filter_action { FILTER_EXCLUDE = 1, FILTER_INCLUDE = 2 };

/* Rules in one filter, and bytes of one pattern (the protocol's limits,
 * proto/msg_filter.h, are the same numbers). */
#define FILTER_MAX_RULES 4096u
#define FILTER_MAX_PATTERN 1024u
/* Bytes of one ignore or --exclude-from file. */
#define FILTER_MAX_FILE (1u << 20)
/* Matching steps one check may take: a pattern of many stars could
 * otherwise take time exponential in its length. A check over the
 * budget counts as no match. */
#define FILTER_MAX_STEPS 100000u

/* The name of the ignore file read at the root of a source directory. */
#define FILTER_IGNORE_FILE ".ferryignore"

struct filter_rule {
    uint8_t action;        /* read-only: enum filter_action */
    uint8_t anchored;      /* read-only: pattern began with '/' */
    uint8_t dir_only;      /* read-only: pattern ended with '/' */
    uint8_t has_slash;     /* read-only: a '/' inside the pattern */
    char *pattern;         /* read-only: without the leading and trailing
                              '/' */
    char *text;            /* read-only: the pattern as given */
    char *scope;           /* read-only: NULL, or a top-level name */
};

struct filter {
    struct filter_rule *v;  /* read-only */
    size_t n;               /* read-only */
    size_t cap;             /* private */
};

void filter_init(struct filter *f);
void filter_cleanup(struct filter *f);

/*
 * Appends a rule: action, the pattern as written (len bytes; a leading
 * '/' anchors it, a trailing '/' makes it match directories only) and an
 * optional scope (NULL for none; copied). Fails with FERRY_ERR_FORMAT for
 * an empty pattern, one with a NUL or over FILTER_MAX_PATTERN
 * (FERRY_ERR_TOO_LARGE), and past FILTER_MAX_RULES (FERRY_ERR_TOO_LARGE).
 */
int filter_add(struct filter *f, int action, const char *pattern,
    size_t len, const char *scope) FERRY_WUR;

/* dst (not initialized) becomes a copy of src's rules: a scan adds its
 * ignore files' rules to the copy, not to rules others read. */
int filter_copy(struct filter *dst, const struct filter *src) FERRY_WUR;

/*
 * Reads rules from a file, one pattern per line: --exclude-from (action
 * is that of every line; "+ pat" and "- pat" lines say their own, as in
 * rsync) or, with gitignore set, a .ferryignore in gitignore syntax
 * ('#' comments, "!pat" includes, later lines win: they are added in
 * reverse so that the first match is the last line). Blank lines are
 * skipped. Fails with -errno if the file cannot be read,
 * FERRY_ERR_TOO_LARGE past FILTER_MAX_FILE, or the error of a bad line;
 * *line is then its number (0 if none).
 */
int filter_add_file(struct filter *f, const char *path, int action,
    int gitignore, const char *scope, unsigned *line) FERRY_WUR;

/*
 * 1 if the entry at rel (a transfer path, '/'-separated) is left out,
 * 0 if it is sent. is_dir: the entry is a directory.
 */
int filter_excluded(const struct filter *f, const char *rel, int is_dir);

/*
 * Matches a glob (the syntax above, without the anchor rules) against a
 * whole string: 1 on a match, 0 otherwise or when over FILTER_MAX_STEPS.
 * Exported for the tests; otherwise used only in its file.
 */
int filter_glob_match(const char *pattern, const char *s);

#endif
