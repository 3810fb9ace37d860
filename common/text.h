/*
 * text.h: making untrusted strings safe to print.
 *
 * Names come from the other side of the connection and from users' trees
 * (newlines, escape sequences, invalid UTF-8). Before they reach a terminal
 * or a JSON line they pass through one of these.
 */
#ifndef FERRY_COMMON_TEXT_H
#define FERRY_COMMON_TEXT_H

#include <stddef.h>

#include "buf.h"

/*
 * Copies s into out (of size outlen, always NUL-terminated) with control
 * characters, backslash and bytes that are not valid UTF-8 written as
 * \n, \\, \xHH. An escape that fits (with its NUL) is copied whole;
 * one that does not is cut after whole escapes and ends with "..." (or is
 * "" when outlen < 4). Returns out.
 */
char *text_escape(const char *s, size_t len, char *out, size_t outlen);

/* Appends s as a JSON string literal (quotes included). Invalid UTF-8 bytes
 * become U+FFFD. Fails with the buf's TOO_LARGE or NOMEM, and then leaves
 * b as it was (no half-written string). */
int text_json_string(struct buf *b, const char *s, size_t len) FERRY_WUR;

/* 1 if the len bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates), so that text_json_string gives them back unchanged. */
int text_utf8_valid(const char *s, size_t len);

/* Formats a byte count as "1.23 GiB" into out. Returns out. */
char *text_bytes(double bytes, char *out, size_t outlen);

#endif
