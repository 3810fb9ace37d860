/*
 * text.h: making untrusted strings safe to print.
 *
 * Names come from the other side of the connection and from users' trees
 * (newlines, escape sequences, invalid UTF-8); error texts come from the
 * agent and from remote shells. Before any of it reaches a terminal it
 * passes through text_escape (or text_escape_fit, or a text_lines filter,
 * which use the same rules); before it reaches a JSON line, through
 * text_json_string.
 *
 * What a terminal would act on is escaped: C0 controls and DEL (0x00-0x1f,
 * 0x7f), C1 controls (U+0080-U+009F, as UTF-8; U+009B is a CSI on many
 * terminals), the line and paragraph separators U+2028/U+2029 and the
 * bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069),
 * which make a name display as another. Bytes that are not valid UTF-8
 * are escaped too, so the escape of any input is valid UTF-8.
 */
#ifndef FERRY_COMMON_TEXT_H
#define FERRY_COMMON_TEXT_H

#include <stddef.h>

#include "buf.h"

/*
 * Copies s into out (of size outlen, always NUL-terminated) with the
 * characters above, backslash and bytes that are not valid UTF-8 written
 * as \n, \t, \\ or \xHH (one \xHH per byte, so the escape names the bytes
 * exactly). An escape that fits (with its NUL) is copied whole; one that
 * does not is cut after whole escapes and ends with "..." (or is "" when
 * outlen < 4). Returns out.
 */
char *text_escape(const char *s, size_t len, char *out, size_t outlen);

/*
 * Like text_escape, and fits the result into cols terminal columns: when
 * the escape is wider, its start and its end are kept with "..." in the
 * middle (a file's name is usually at the end of its path, its place at
 * the start). Columns are counted per character: 2 for East Asian wide
 * ones and emoji, 0 for combining marks, 1 for the rest. Below 4 columns
 * no "..." fits and the start is kept. Returns out.
 */
char *text_escape_fit(const char *s, size_t len, size_t cols, char *out,
    size_t outlen);

/* Terminal columns that text_escape of (s, len) takes, uncut.
 * Exported for the tests; otherwise used only in its file. */
size_t text_escape_width(const char *s, size_t len);

/* Appends s as a JSON string literal (quotes included). Invalid UTF-8
 * bytes become U+FFFD; the characters escaped above become \uXXXX, so a
 * JSON line printed on a terminal is safe too. Fails with the buf's
 * TOO_LARGE or NOMEM, and then leaves b as it was (no half-written
 * string). */
int text_json_string(struct buf *b, const char *s, size_t len) FERRY_WUR;

/* 1 if the len bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates), so that text_json_string gives them back unchanged. */
int text_utf8_valid(const char *s, size_t len);

/* Formats a byte count as "1.23 GiB" into out. Returns out. */
char *text_bytes(double bytes, char *out, size_t outlen);

/*
 * Line filter for text another program writes to our stderr (a child's
 * or a remote command's): bytes are collected into lines, and each line is
 * escaped and handed to emit without its newline (a trailing "\r" is
 * dropped too). Backslashes are left alone here: the text is shown, not
 * parsed back, and the agent's own log lines are escaped already. A line
 * longer than TEXT_LINE_MAX bytes is handed on in pieces.
 *
 *     struct text_lines l = { .emit = show, .ctx = me };
 *     text_lines_feed(&l, data, n);    // as bytes arrive
 *     text_lines_flush(&l);            // at EOF: the unterminated rest
 */
#define TEXT_LINE_MAX 1024

typedef void text_line_fn(void *ctx, const char *line);

struct text_lines {
    text_line_fn *emit;     /* public */
    void *ctx;              /* public */
    char raw[TEXT_LINE_MAX];  /* private */
    size_t len;             /* private */
};

void text_lines_feed(struct text_lines *l, const char *p, size_t n);
void text_lines_flush(struct text_lines *l);

/* A size as users write it: digits, then K, M, G or T (powers of 1024,
 * optionally followed by "iB") or "B". Returns 0 or FERRY_ERR_USAGE. */
int text_parse_size(const char *s, uint64_t *out) FERRY_WUR;

#endif
