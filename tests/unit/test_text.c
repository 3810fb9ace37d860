/* Tests for common/text.c: names from the other side reach a terminal or
 * a JSON line only escaped. */
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/buf.h"
#include "../../common/text.h"
#include "check.h"

/* The bytes of U+FFFD, which replaces invalid UTF-8 in JSON. */
#define FFFD "\xef\xbf\xbd"

static const struct {
    const char *in;
    size_t len;
    const char *want;
} text_cases[] = {
    { LIT("plain name.txt"), "plain name.txt" },
    { LIT("a\nb"), "a\\nb" },
    { LIT("tab\there"), "tab\\there" },
    { LIT("back\\slash"), "back\\\\slash" },
    { LIT("\x01\x1b[31mred"), "\\x01\\x1b[31mred" },
    { LIT("del\x7f"), "del\\x7f" },
    { LIT("nul\0x"), "nul\\x00x" },
    { LIT("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
    { LIT("\xff"), "\\xff" },
    { LIT("\x80"), "\\x80" },
    { LIT("\xc3" "a"), "\\xc3a" },
    /* Overlong forms, a surrogate, past U+10FFFF, cut short. */
    { LIT("\xc0\xaf"), "\\xc0\\xaf" },
    { LIT("\xe0\x80\xaf"), "\\xe0\\x80\\xaf" },
    { LIT("\xed\xa0\x80"), "\\xed\\xa0\\x80" },
    { LIT("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80" },
    { LIT("\xe2\x82"), "\\xe2\\x82" },
    /* C1 controls (U+0080..U+009F): U+009B is a CSI on many terminals,
     * U+0085 a newline. Escaped as the bytes that encode them. */
    { LIT("a\xc2\x9b" "31mred"), "a\\xc2\\x9b31mred" },
    { LIT("\xc2\x80\xc2\x85\xc2\x9f"),
      "\\xc2\\x80\\xc2\\x85\\xc2\\x9f" },
    /* Just past them: a no-break space and a Latin letter are text. */
    { LIT("\xc2\xa0\xc2\xbf"), "\xc2\xa0\xc2\xbf" },
    /* Separators and bidi overrides make a name display as another. */
    { LIT("x\xe2\x80\xa8y"), "x\\xe2\\x80\\xa8y" },
    { LIT("evil\xe2\x80\xaetxt.exe"), "evil\\xe2\\x80\\xaetxt.exe" },
    { LIT("\xe2\x81\xa6"), "\\xe2\\x81\\xa6" },
    { LIT("\xe2\x80\xa7\xe2\x81\xaa"), "\xe2\x80\xa7\xe2\x81\xaa" },
    /* Every C0 control and DEL. */
    { LIT("\x07\x08\r\x0b\x0c\x1b\x7f"),
      "\\x07\\x08\\x0d\\x0b\\x0c\\x1b\\x7f" },
};

TEST(text_escape)
{
    char out[256];
    size_t i;

    for (i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
        check_note("case %zu", i);
        CHECK(text_escape(text_cases[i].in, text_cases[i].len, out,
            sizeof(out)) == out);
        CHECK_EQ_STR(out, text_cases[i].want);
    }
}

/* 1 if s is the escape of some prefix of (in, len): a truncation never
 * cuts an escape or a UTF-8 sequence in half. */
static int
escape_of_prefix(const char *in, size_t len, const char *s)
{
    char full[256];
    size_t k;

    for (k = 0; k <= len; k++) {
        text_escape(in, k, full, sizeof(full));
        if (strcmp(full, s) == 0)
            return 1;
    }
    return 0;
}

/* Checks text_escape of (in, len) into every buffer size up to a few
 * bytes more than the whole escape needs. maxesc is the longest escape of
 * one character in it: 4 (\xHH), or 8 and 12 for C1 controls and other
 * characters escaped byte by byte. */
static void
check_truncation(const char *in, size_t len, size_t maxesc)
{
    char full[256], out[300];
    size_t outlen, flen, olen;

    text_escape(in, len, full, sizeof(full));
    flen = strlen(full);
    for (outlen = 0; outlen <= flen + 5; outlen++) {
        check_note("%zu byte buffer for \"%s\"", outlen, full);
        memset(out, 'Z', sizeof(out));
        text_escape(in, len, out, outlen);
        /* Nothing is written past outlen. */
        CHECK(out[outlen] == 'Z');
        if (outlen == 0)
            continue;
        olen = strlen(out);
        CHECK(olen < outlen);
        if (outlen > flen) {
            /* The whole escape and its NUL fit: no cut. */
            CHECK_EQ_STR(out, full);
        } else if (outlen < 4) {
            CHECK_EQ_STR(out, "");
        } else {
            /* Cut: what is left is whole, followed by "...", and as long
             * as the room allows (one more escape would not fit). */
            CHECK(olen >= 3);
            CHECK_EQ_STR(out + olen - 3, "...");
            CHECK(olen + 1 + maxesc > outlen);
            out[olen - 3] = '\0';
            CHECK(escape_of_prefix(in, len, out));
        }
    }
    check_note_clear();
}

TEST(text_escape_truncation)
{
    char out[8];

    /* Text that fits exactly is copied whole, without room for "...". */
    CHECK_EQ_STR(text_escape(LIT("abc"), out, 4), "abc");
    CHECK_EQ_STR(text_escape(LIT("abcd"), out, 4), "...");
    CHECK_EQ_STR(text_escape(LIT("ab"), out, 3), "ab");
    CHECK_EQ_STR(text_escape(LIT("abc"), out, 3), "");
    CHECK_EQ_STR(text_escape(LIT("a\n"), out, 4), "a\\n");
    CHECK_EQ_STR(text_escape(LIT("abcdefgh"), out, 8), "abcd...");
    CHECK_EQ_STR(text_escape(LIT("ab\x01zz"), out, 8), "ab...");
    CHECK_EQ_STR(text_escape(LIT(""), out, 1), "");
    check_truncation(LIT("abcdefghij"), 4);
    check_truncation(LIT("a\nb\\c\x01" "d"), 4);
    check_truncation(LIT("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80xyz"), 4);
    check_truncation(LIT("\xff\xfe\xfd"), 4);
    check_truncation(LIT("a\xc2\x9b\xc2\xa0" "b\xe2\x80\xae"), 12);
}

TEST(text_escape_width)
{
    CHECK_EQ_U64(text_escape_width(LIT("")), 0);
    CHECK_EQ_U64(text_escape_width(LIT("abc")), 3);
    CHECK_EQ_U64(text_escape_width(LIT("a\nb\\")), 6);
    CHECK_EQ_U64(text_escape_width(LIT("\x1b\xff")), 8);
    CHECK_EQ_U64(text_escape_width(LIT("\xc2\x9b")), 8);
    /* Wide, combining and plain characters beyond ASCII. */
    CHECK_EQ_U64(text_escape_width(LIT("\xe6\x97\xa5\xe6\x9c\xac")), 4);
    CHECK_EQ_U64(text_escape_width(LIT("e\xcc\x81")), 1);
    CHECK_EQ_U64(text_escape_width(LIT("\xc3\xa9\xf0\x9f\x98\x80")), 3);
}

/* The terminal columns of an escape made of ASCII (tests only). */
static size_t
ascii_cols(const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0'; i++)
        CHECK((unsigned char)s[i] < 0x80);
    return i;
}

/* 1 if s is the escape of some suffix of (in, len). */
static int
escape_of_suffix(const char *in, size_t len, const char *s)
{
    char full[256];
    size_t k;

    for (k = 0; k <= len; k++) {
        text_escape(in + k, len - k, full, sizeof(full));
        if (strcmp(full, s) == 0)
            return 1;
    }
    return 0;
}

/* Fits (in, len), whose escape is ASCII, into every width up to a few
 * columns more than it needs. maxesc: its widest escape of one character
 * (as for check_truncation). */
static void
check_fit(const char *in, size_t len, size_t maxesc)
{
    char full[256], out[256], *dots;
    size_t cols, flen, olen;

    text_escape(in, len, full, sizeof(full));
    flen = strlen(full);
    CHECK_EQ_U64(text_escape_width(in, len), flen);
    for (cols = 0; cols <= flen + 3; cols++) {
        check_note("%zu columns for \"%s\"", cols, full);
        text_escape_fit(in, len, cols, out, sizeof(out));
        olen = ascii_cols(out);
        CHECK(olen <= cols);
        if (cols >= flen) {
            CHECK_EQ_STR(out, full);
            continue;
        }
        if (cols < 4) {
            /* No room for "...": the start, whole escapes only. */
            CHECK(escape_of_prefix(in, len, out));
            continue;
        }
        /* The start and the end, each whole escapes, around "...", short
         * of the width by less than the widest escape, and the start
         * about half: it may stop short of its half by as much, and the
         * end takes those columns. */
        CHECK((dots = strstr(out, "...")) != NULL);
        CHECK(olen + maxesc > cols);
        CHECK(escape_of_suffix(in, len, dots + 3));
        *dots = '\0';
        CHECK(escape_of_prefix(in, len, out));
        CHECK(strlen(out) + 2 * (maxesc - 1) >= strlen(dots + 3));
    }
    check_note_clear();
}

TEST(text_escape_fit)
{
    /* 日本語のファイル名.pt: wide characters, 2 columns each. */
    static const char wide[] = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
        "\xe3\x81\xae\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3\x83\xab"
        "\xe5\x90\x8d.pt";
    char out[64];

    CHECK_EQ_STR(text_escape_fit(LIT("ckpt/step-1000.pt"), 40, out,
        sizeof(out)), "ckpt/step-1000.pt");
    CHECK_EQ_STR(text_escape_fit(LIT("abcdefghij"), 7, out, sizeof(out)),
        "ab...ij");
    CHECK_EQ_STR(text_escape_fit(LIT("abcdefghij"), 8, out, sizeof(out)),
        "abc...ij");
    CHECK_EQ_STR(text_escape_fit(LIT("abcdefghij"), 3, out, sizeof(out)),
        "abc");
    CHECK_EQ_STR(text_escape_fit(LIT("abcdefghij"), 0, out, sizeof(out)),
        "");
    /* Escapes are never split, nor C1 controls let through. */
    CHECK_EQ_STR(text_escape_fit(LIT("a\x1b[2Jzzzzzzzz\xc2\x9bq"), 12, out,
        sizeof(out)), "a\\x1b...q");
    /* Wide characters count twice; the result is at most 11 columns:
     * "日本" (4) "..." (3) "名.pt" (5) is 12, so the end loses one. */
    CHECK_EQ_STR(text_escape_fit(wide, strlen(wide), 11, out, sizeof(out)),
        "\xe6\x97\xa5\xe6\x9c\xac...\x2ept");
    CHECK_EQ_STR(text_escape_fit(wide, strlen(wide), 12, out, sizeof(out)),
        "\xe6\x97\xa5\xe6\x9c\xac...\xe5\x90\x8d.pt");
    /* A buffer too small for the bytes still gets whole escapes. */
    CHECK_EQ_STR(text_escape_fit(LIT("abcdefghij"), 7, out, 5), "a...");
    check_fit(LIT("abcdefghijklmnop"), 1);
    check_fit(LIT("dir/\x1b]0;x\x07/name\n.pt"), 4);
    check_fit(LIT("\xff\xfe\\\xc2\x9b\xc2\x80xyz"), 8);
}

/* Appends the JSON literal of (s, len) to a fresh buf and compares. */
static void
check_json(const char *s, size_t len, const char *want)
{
    struct buf b;

    buf_init(&b, 1 << 16);
    CHECK_OK(text_json_string(&b, s, len));
    CHECK_EQ_U64(buf_used(&b), strlen(want));
    CHECK_EQ_MEM(buf_ptr(&b), want, strlen(want));
    buf_cleanup(&b);
}

/* Appends (s, len) after "keep" in bufs of every max that is too small,
 * and with allocation failures: each failure leaves "keep" alone. */
static void
check_json_rollback(const char *s, size_t len)
{
    size_t max, whole, i;
    struct buf b;

    buf_init(&b, 1 << 16);
    CHECK_OK(text_json_string(&b, s, len));
    whole = buf_used(&b);
    buf_cleanup(&b);
    for (max = 4; max < 4 + whole; max++) {
        check_note("max %zu", max);
        buf_init(&b, max);
        CHECK_OK(buf_put(&b, "keep", 4));
        CHECK_EQ_ERR(text_json_string(&b, s, len), FERRY_ERR_TOO_LARGE);
        CHECK_EQ_U64(buf_used(&b), 4);
        CHECK_EQ_MEM(buf_ptr(&b), "keep", 4);
        buf_cleanup(&b);
    }
    /* The first allocation after "keep" is the growth past 256 bytes. */
    for (i = 0; i < 2; i++) {
        char big[300];

        check_note("allocation failure %zu", i);
        memset(big, 'x', sizeof(big));
        buf_init(&b, 1 << 16);
        CHECK_OK(buf_put(&b, "keep", 4));
        if (i == 1)
            CHECK_OK(buf_put(&b, big, 200));
        alloc_fail_at(1);
        CHECK_EQ_ERR(text_json_string(&b, big, sizeof(big)),
            FERRY_ERR_NOMEM);
        alloc_fail_at(0);
        CHECK_EQ_U64(buf_used(&b), i == 0 ? 4 : 204);
        CHECK_EQ_MEM(buf_ptr(&b), "keep", 4);
        buf_cleanup(&b);
    }
    check_note_clear();
}

TEST(text_json_string)
{
    struct buf b;

    check_json(LIT(""), "\"\"");
    check_json(LIT("plain"), "\"plain\"");
    check_json(LIT("q\"b\\s/"), "\"q\\\"b\\\\s/\"");
    check_json(LIT("\n\x01\x1f\x7f\0"),
        "\"\\u000a\\u0001\\u001f\\u007f\\u0000\"");
    check_json(LIT("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    /* Each invalid byte becomes one U+FFFD. */
    check_json(LIT("\xff\xfe"), "\"" FFFD FFFD "\"");
    check_json(LIT("a\xe2\x82"), "\"a" FFFD FFFD "\"");
    check_json(LIT("\xed\xa0\x80"), "\"" FFFD FFFD FFFD "\"");
    check_json(LIT("\xc0\xaf!"), "\"" FFFD FFFD "!\"");
    check_json(LIT("\xf4\x90\x80\x80"), "\"" FFFD FFFD FFFD FFFD "\"");
    /* The buf's limit holds, and a failure takes back what it wrote: at
     * every limit short of the whole literal, b keeps only its "keep". */
    buf_init(&b, 5);
    CHECK_EQ_ERR(text_json_string(&b, LIT("abcdef")), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);
    check_json_rollback(LIT("abc\n\xff\xc3\xa9\"z"));
    /* C1 controls, separators and bidi overrides as \u escapes. */
    check_json(LIT("\xc2\x9b\xc2\x80\xc2\xa0"), "\"\\u009b\\u0080\xc2\xa0\"");
    check_json(LIT("\xe2\x80\xa8\xe2\x80\xae\xe2\x81\xa9"),
        "\"\\u2028\\u202e\\u2069\"");
}

/* Collects what a text_lines filter hands on, one line per "|". */
static void
lines_collect(void *ctx, const char *line)
{
    char *all = ctx;

    strcat(all, line);
    strcat(all, "|");
}

TEST(text_lines)
{
    static char all[8 * TEXT_LINE_MAX];
    struct text_lines l;
    char big[TEXT_LINE_MAX + 10];
    size_t i;

    memset(&l, 0, sizeof(l));
    l.emit = lines_collect;
    l.ctx = all;
    all[0] = '\0';
    /* Lines arrive in pieces; CRLF ends a line like LF. */
    text_lines_feed(&l, LIT("sh: 1: exec: /x: not f"));
    CHECK_EQ_STR(all, "");
    text_lines_feed(&l, LIT("ound\r\nsecond\n\nthi"));
    CHECK_EQ_STR(all, "sh: 1: exec: /x: not found|second||");
    text_lines_flush(&l);
    CHECK_EQ_STR(all, "sh: 1: exec: /x: not found|second||thi|");
    text_lines_flush(&l);
    CHECK_EQ_STR(all, "sh: 1: exec: /x: not found|second||thi|");
    /* Controls escaped, backslashes kept as they are (the agent's log
     * lines are escaped already). */
    all[0] = '\0';
    text_lines_feed(&l, LIT("\x1b]0;pwn\x07 \xc2\x9b \\x1b \r\xff\n"));
    CHECK_EQ_STR(all, "\\x1b]0;pwn\\x07 \\xc2\\x9b \\x1b \\x0d\\xff|");
    /* A line longer than the buffer goes on in pieces. */
    all[0] = '\0';
    memset(big, 'x', sizeof(big));
    big[sizeof(big) - 1] = '\n';
    text_lines_feed(&l, big, sizeof(big));
    CHECK_EQ_U64(strlen(all), sizeof(big) - 1 + 2);
    CHECK(all[TEXT_LINE_MAX] == '|');
    for (i = 0; i < TEXT_LINE_MAX; i++)
        CHECK(all[i] == 'x');
}

TEST(text_bytes)
{
    static const struct {
        double bytes;
        const char *want;
    } cases[] = {
        { 0, "0 B" },
        { 1023, "1023 B" },
        { 1024, "1.00 KiB" },
        { 10 * 1024, "10.0 KiB" },
        { 100 * 1024, "100 KiB" },
        { 1.5 * 1024 * 1024, "1.50 MiB" },
        { 3.0 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, "3072 PiB" },
    };
    char out[32];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("case %zu", i);
        CHECK_EQ_STR(text_bytes(cases[i].bytes, out, sizeof(out)),
            cases[i].want);
    }
}

/* Sizes as users write them, and what is refused. */
TEST(text_parse_size)
{
    static const struct {
        const char *s;
        uint64_t want;
    } ok[] = {
        { "0", 0 }, { "1048576", 1048576 }, { "64K", 65536 },
        { "2G", UINT64_C(2) << 30 }, { "500MiB", UINT64_C(500) << 20 },
        { "1T", UINT64_C(1) << 40 }, { "7B", 7 }, { "1KB", 1024 },
    };
    static const char *const bad[] = { "", "K", "-1", "1X", "1KiBB", "1 K",
        "99999999999999999999", "9223372036854775807K" };
    uint64_t v;
    size_t i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        check_note("%s", ok[i].s);
        CHECK_OK(text_parse_size(ok[i].s, &v));
        CHECK_EQ_U64(v, ok[i].want);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("%s", bad[i]);
        CHECK_EQ_ERR(text_parse_size(bad[i], &v), FERRY_ERR_USAGE);
    }
    check_note_clear();
}
