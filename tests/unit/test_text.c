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
 * bytes more than the whole escape needs. */
static void
check_truncation(const char *in, size_t len)
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
            CHECK(olen + 1 + 4 > outlen);
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
    check_truncation(LIT("abcdefghij"));
    check_truncation(LIT("a\nb\\c\x01" "d"));
    check_truncation(LIT("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80xyz"));
    check_truncation(LIT("\xff\xfe\xfd"));
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
