/*
 * check.h: assertions for the unit tests.
 *
 * A failed check prints file:line, the expression and the values it
 * compared, then ends the test process (each case runs in a child of its
 * own, see main.c), so a check never returns on failure. The macros expand
 * to one function call each: every argument is evaluated exactly once.
 *
 *     TEST(rd_u8_short)
 *     {
 *         struct rd r;
 *         uint8_t v = 7;
 *
 *         rd_init(&r, "", 0);
 *         CHECK_EQ_ERR(rd_u8(&r, &v), FERRY_ERR_SHORT);
 *         CHECK_EQ_INT(v, 0);
 *     }
 *
 * Loops that try many inputs name the one being tried with check_note, so
 * that a failure says which mutation broke.
 */
#ifndef FERRY_TESTS_UNIT_CHECK_H
#define FERRY_TESTS_UNIT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"
#include "list.h"

/* Defines a test case. The name must also be listed in list.h: TEST_ID_x
 * only exists for listed cases, so a forgotten entry fails to compile
 * instead of silently never running. */
#define TEST(name)                                                           \
    _Static_assert(TEST_ID_##name >= 0, #name);                              \
    void test_##name(void)

#define CHECK(cond)                                                          \
    check_true(__FILE__, __LINE__, #cond, (cond) != 0)
#define CHECK_EQ_INT(a, b)                                                   \
    check_eq_int(__FILE__, __LINE__, #a, #b, (intmax_t)(a), (intmax_t)(b))
#define CHECK_EQ_U64(a, b)                                                   \
    check_eq_u64(__FILE__, __LINE__, #a, #b, (uintmax_t)(a), (uintmax_t)(b))
/* Compares result codes and prints them by name (ferry_errname). */
#define CHECK_EQ_ERR(a, b)                                                   \
    check_eq_err(__FILE__, __LINE__, #a, #b, (a), (b))
#define CHECK_OK(expr) CHECK_EQ_ERR(expr, 0)
/* Any error will do, but not success. */
#define CHECK_FAILS(expr)                                                    \
    check_fails(__FILE__, __LINE__, #expr, (expr))
#define CHECK_EQ_MEM(a, b, n)                                                \
    check_eq_mem(__FILE__, __LINE__, #a, #b, (a), (b), (n))
#define CHECK_EQ_STR(a, b)                                                   \
    check_eq_str(__FILE__, __LINE__, #a, #b, (a), (b))

/* A string literal as the two arguments (bytes, length), its NUL left out
 * but any embedded NUL kept: LIT("a\0b") is 3 bytes. */
#define LIT(s) s, sizeof(s) - 1

/* Prints "file:line: " and the message (plus the current note), then ends
 * the test with exit status 1. */
void check_fail(const char *file, int line, const char *fmt, ...)
    FERRY_PRINTF(3, 4) __attribute__((noreturn));

/* Sets the note that failures print after their message ("seed 2, byte
 * 14 bit 3"); check_note_clear removes it. */
void check_note(const char *fmt, ...) FERRY_PRINTF(1, 2);
void check_note_clear(void);

/* The functions behind the macros. */
void check_true(const char *file, int line, const char *expr, int ok);
void check_eq_int(const char *file, int line, const char *ea, const char *eb,
    intmax_t a, intmax_t b);
void check_eq_u64(const char *file, int line, const char *ea, const char *eb,
    uintmax_t a, uintmax_t b);
void check_eq_err(const char *file, int line, const char *ea, const char *eb,
    int a, int b);
void check_fails(const char *file, int line, const char *expr, int r);
void check_eq_mem(const char *file, int line, const char *ea, const char *eb,
    const void *a, const void *b, size_t n);
void check_eq_str(const char *file, int line, const char *ea, const char *eb,
    const char *a, const char *b);

/*
 * malloc that fails the test instead of returning NULL. Plain malloc, not
 * xmalloc: memory the test itself needs must not use up an allocation
 * failure injected (alloc_fail_at) for the code under test. Free with free.
 */
void *check_alloc(size_t n);
/* A heap copy of exactly n bytes (malloc(0) for none), so that
 * AddressSanitizer reports any read past the end. Free with free. */
uint8_t *check_dup(const void *p, size_t n);

/* The next of a sequence of pseudo-random numbers (xorshift64) from
 * *state (never 0): the same sequence on every run. */
uint64_t check_rand(uint64_t *state);

/*
 * Scratch directories for tests that touch the file system: check_tmpdir
 * makes a new empty directory under $TMPDIR (or /tmp) and writes its path
 * into out; check_rmtree removes a path and everything beneath it without
 * following symlinks. A case that fails halfway leaves its directory
 * behind, for a look.
 */
#define CHECK_PATH_MAX 4096
void check_tmpdir(char out[CHECK_PATH_MAX]);
void check_rmtree(const char *path);
/* Writes n bytes (a pattern seeded by seed; NULL data) to the file at path,
 * created or truncated. */
void check_write_file(const char *path, const void *data, size_t n,
    unsigned seed);

#endif
