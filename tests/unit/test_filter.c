/*
 * Filters (engine/filter.c): the glob, rsync's first-match order, the
 * anchors, scopes, ignore files and every limit; FILTERS
 * (proto/msg_filter.c): round trip, every truncation and bit flip, and
 * its limits; SPACE (proto/msg_space.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../engine/filter.h"
#include "../../proto/frame.h"
#include "../../proto/msg_filter.h"
#include "../../proto/msg_space.h"
#include "check.h"

TEST(filter_glob)
{
    static const struct {
        const char *pat, *s;
        int match;
    } v[] = {
        { "a", "a", 1 }, { "a", "b", 0 }, { "a", "ab", 0 },
        { "*.pt", "step-1.pt", 1 }, { "*.pt", "d/x.pt", 0 },
        { "*", "", 1 }, { "*", "a/b", 0 },
        { "?", "a", 1 }, { "?", "/", 0 }, { "?", "", 0 },
        { "a/**", "a/b/c", 1 }, { "a/**", "a", 0 }, { "**", "x/y/z", 1 },
        { "a/**/b", "a/b", 1 }, { "a/**/b", "a/x/y/b", 1 },
        { "a/**/b", "a/xb", 0 }, { "**/c", "c", 1 }, { "**/c", "a/b/c", 1 },
        { "[ab]x", "bx", 1 }, { "[ab]x", "cx", 0 }, { "[!ab]x", "cx", 1 },
        { "[a-c]", "b", 1 }, { "[a-c]", "d", 0 }, { "[]]", "]", 1 },
        { "[a", "[a", 1 }, { "[/]", "/", 0 },
        { "\\*", "*", 1 }, { "\\*", "a", 0 }, { "a\\", "a\\", 1 },
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        check_note("%s ~ %s", v[i].pat, v[i].s);
        CHECK_EQ_INT(filter_glob_match(v[i].pat, v[i].s), v[i].match);
    }
}

/* A pattern of many stars against a long name that almost matches:
 * without the step budget this takes longer than the test's time limit;
 * with it, it is no match, at once. */
TEST(filter_glob_budget)
{
    char pat[64], s[4096];
    size_t i;

    for (i = 0; i + 2 < 40; i += 2) {
        pat[i] = '*';
        pat[i + 1] = 'a';
    }
    strcpy(pat + i, "**b");
    memset(s, 'a', sizeof(s) - 1);
    s[sizeof(s) - 1] = '\0';
    CHECK_EQ_INT(filter_glob_match(pat, s), 0);
}

struct filter_case {
    const char *rules;   /* "-pat +pat ..." in order, space-separated */
    const char *path;
    int is_dir, excluded;
};

static void
filter_build(struct filter *f, const char *rules)
{
    char buf[256], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", rules);
    filter_init(f);
    for (tok = strtok_r(buf, " ", &save); tok != NULL;
        tok = strtok_r(NULL, " ", &save))
        CHECK_OK(filter_add(f, tok[0] == '-' ? FILTER_EXCLUDE :
            FILTER_INCLUDE, tok + 1, strlen(tok + 1), NULL));
}

TEST(filter_rules)
{
    static const struct filter_case v[] = {
        /* Without '/': the last component, at any depth. */
        { "-__pycache__", "__pycache__", 1, 1 },
        { "-__pycache__", "a/b/__pycache__", 1, 1 },
        { "-*.pyc", "a/x.pyc", 0, 1 },
        { "-*.pyc", "a/x.py", 0, 0 },
        /* Anchored: the whole path only. */
        { "-/build", "build", 1, 1 },
        { "-/build", "src/build", 1, 0 },
        { "-/data/tmp", "data/tmp", 1, 1 },
        /* A '/' inside, not anchored: any trailing part. */
        { "-data/tmp", "x/data/tmp", 1, 1 },
        { "-data/tmp", "x/mydata/tmp", 1, 0 },
        /* Directories only. */
        { "-logs/", "logs", 1, 1 },
        { "-logs/", "logs", 0, 0 },
        /* First match decides (rsync), whichever comes next. */
        { "+keep.pt -*.pt", "keep.pt", 0, 0 },
        { "-*.pt +keep.pt", "keep.pt", 0, 1 },
        { "+*/ -*", "dir", 1, 0 },
        { "+*/ -*", "file", 0, 1 },
        { "-/ckpt/**/opt.pt", "ckpt/opt.pt", 0, 1 },
        { "-/ckpt/**/opt.pt", "ckpt/s1/s2/opt.pt", 0, 1 },
        { "-/ckpt/**/opt.pt", "other/opt.pt", 0, 0 },
        { "", "anything", 0, 0 },
    };
    struct filter f;
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        check_note("rules '%s', path %s", v[i].rules, v[i].path);
        filter_build(&f, v[i].rules);
        CHECK_EQ_INT(filter_excluded(&f, v[i].path, v[i].is_dir),
            v[i].excluded);
        filter_cleanup(&f);
    }
    CHECK_EQ_INT(filter_excluded(NULL, "a", 0), 0);
}

TEST(filter_scope)
{
    struct filter f;

    filter_init(&f);
    CHECK_OK(filter_add(&f, FILTER_EXCLUDE, LIT("/x"), "data"));
    CHECK_EQ_INT(filter_excluded(&f, "data/x", 0), 1);
    CHECK_EQ_INT(filter_excluded(&f, "x", 0), 0);
    CHECK_EQ_INT(filter_excluded(&f, "other/x", 0), 0);
    CHECK_EQ_INT(filter_excluded(&f, "datax/x", 0), 0);
    /* The scope's own top entry is not beneath it. */
    CHECK_OK(filter_add(&f, FILTER_EXCLUDE, LIT("data"), "data"));
    CHECK_EQ_INT(filter_excluded(&f, "data", 1), 0);
    filter_cleanup(&f);
}

TEST(filter_limits)
{
    char big[FILTER_MAX_PATTERN + 2];
    struct filter f;
    unsigned i;

    filter_init(&f);
    memset(big, 'a', sizeof(big));
    CHECK_EQ_ERR(filter_add(&f, FILTER_EXCLUDE, big, FILTER_MAX_PATTERN + 1,
        NULL), FERRY_ERR_TOO_LARGE);
    CHECK_OK(filter_add(&f, FILTER_EXCLUDE, big, FILTER_MAX_PATTERN, NULL));
    CHECK_EQ_ERR(filter_add(&f, FILTER_EXCLUDE, "", 0, NULL),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(filter_add(&f, FILTER_EXCLUDE, LIT("/"), NULL),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(filter_add(&f, FILTER_EXCLUDE, LIT("a\0b"), NULL),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(filter_add(&f, 3, LIT("a"), NULL), FERRY_ERR_FORMAT);
    for (i = 1; i < FILTER_MAX_RULES; i++)
        CHECK_OK(filter_add(&f, FILTER_INCLUDE, LIT("x"), NULL));
    CHECK_EQ_U64(f.n, FILTER_MAX_RULES);
    CHECK_EQ_ERR(filter_add(&f, FILTER_INCLUDE, LIT("x"), NULL),
        FERRY_ERR_TOO_LARGE);
    filter_cleanup(&f);
}

TEST(filter_ignore_file)
{
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 16];
    static const char text[] =
        "# comment\n"
        "*.log\n"
        "\n"
        "!keep.log\n"
        "/build/\n"
        "sub/tmp\n"
        "\\#literal\n"
        "trail   \n";
    struct filter f;
    unsigned line = 7;

    check_tmpdir(dir);
    snprintf(p, sizeof(p), "%s/.ferryignore", dir);
    check_write_file(p, text, sizeof(text) - 1, 0);
    filter_init(&f);
    CHECK_OK(filter_add_file(&f, p, FILTER_EXCLUDE, 1, NULL, &line));
    CHECK_EQ_INT(line, 0);
    CHECK_EQ_U64(f.n, 6);
    /* The later line wins, as in git. */
    CHECK_EQ_INT(filter_excluded(&f, "a.log", 0), 1);
    CHECK_EQ_INT(filter_excluded(&f, "d/keep.log", 0), 0);
    CHECK_EQ_INT(filter_excluded(&f, "build", 1), 1);
    CHECK_EQ_INT(filter_excluded(&f, "x/build", 1), 0);
    /* A '/' inside anchors it to the file's directory. */
    CHECK_EQ_INT(filter_excluded(&f, "sub/tmp", 1), 1);
    CHECK_EQ_INT(filter_excluded(&f, "x/sub/tmp", 1), 0);
    CHECK_EQ_INT(filter_excluded(&f, "#literal", 0), 1);
    CHECK_EQ_INT(filter_excluded(&f, "trail", 0), 1);
    /* A copy (a scan's) keeps the file's anchoring, and what is added
     * to it stays there. */
    {
        struct filter g;

        CHECK_OK(filter_copy(&g, &f));
        CHECK_EQ_U64(g.n, 6);
        CHECK_EQ_INT(filter_excluded(&g, "sub/tmp", 1), 1);
        CHECK_EQ_INT(filter_excluded(&g, "x/sub/tmp", 1), 0);
        CHECK_EQ_INT(filter_excluded(&g, "d/keep.log", 0), 0);
        CHECK_OK(filter_add(&g, FILTER_EXCLUDE, LIT("more"), NULL));
        CHECK_EQ_U64(f.n, 6);
        CHECK_EQ_INT(filter_excluded(&f, "more", 0), 0);
        filter_cleanup(&g);
    }
    filter_cleanup(&f);
}

TEST(filter_exclude_from)
{
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 16];
    static const char text[] = "; rsync comment\n+ keep.pt\n- *.pt\ntmp\n";
    static const char bad[] = "a\n\nb\n/\n";
    struct filter f;
    unsigned line;
    char *huge;

    check_tmpdir(dir);
    snprintf(p, sizeof(p), "%s/list", dir);
    check_write_file(p, text, sizeof(text) - 1, 0);
    filter_init(&f);
    CHECK_OK(filter_add_file(&f, p, FILTER_EXCLUDE, 0, NULL, &line));
    CHECK_EQ_U64(f.n, 3);
    CHECK_EQ_INT(filter_excluded(&f, "keep.pt", 0), 0);
    CHECK_EQ_INT(filter_excluded(&f, "x.pt", 0), 1);
    CHECK_EQ_INT(filter_excluded(&f, "a/tmp", 1), 1);
    /* A bad line: its number, and none of the file's rules kept. */
    check_write_file(p, bad, sizeof(bad) - 1, 0);
    CHECK_EQ_ERR(filter_add_file(&f, p, FILTER_EXCLUDE, 0, NULL, &line),
        FERRY_ERR_FORMAT);
    CHECK_EQ_INT(line, 4);
    CHECK_EQ_U64(f.n, 3);
    /* Over the size limit. */
    huge = check_alloc(FILTER_MAX_FILE + 1);
    memset(huge, '\n', FILTER_MAX_FILE + 1);
    check_write_file(p, huge, FILTER_MAX_FILE + 1, 0);
    CHECK_EQ_ERR(filter_add_file(&f, p, FILTER_EXCLUDE, 0, NULL, &line),
        FERRY_ERR_TOO_LARGE);
    check_write_file(p, huge, FILTER_MAX_FILE, 0);
    CHECK_OK(filter_add_file(&f, p, FILTER_EXCLUDE, 0, NULL, &line));
    free(huge);
    snprintf(p, sizeof(p), "%s/missing", dir);
    CHECK_FAILS(filter_add_file(&f, p, FILTER_EXCLUDE, 0, NULL, &line));
    /* Not a regular file. */
    CHECK_FAILS(filter_add_file(&f, dir, FILTER_EXCLUDE, 0, NULL, &line));
    filter_cleanup(&f);
}

static void
filters_frame(struct buf *b, size_t n, const char *pat)
{
    const char **pats = check_alloc((n ? n : 1) * sizeof(*pats));
    uint8_t *acts = check_alloc(n ? n : 1);
    size_t i;

    for (i = 0; i < n; i++) {
        pats[i] = pat;
        acts[i] = (uint8_t)(1 + i % 2);
    }
    buf_init(b, 1 << 24);
    CHECK_OK(msg_filters_encode(b, acts, pats, n));
    free(pats);
    free(acts);
}

TEST(msg_filters_roundtrip)
{
    struct msg_filters m;
    struct msg_str s;
    struct buf b;
    struct frame f;
    size_t used, pos = 0;
    uint8_t act;

    filters_frame(&b, 3, "/ckpt/*.pt");
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_EQ_INT(f.type, MSG_FILTERS);
    CHECK_OK(msg_filters_decode(f.payload, f.len, &m));
    CHECK_EQ_INT(m.nrules, 3);
    CHECK_OK(msg_filters_rule(&m, &pos, &act, &s));
    CHECK_EQ_INT(act, 1);
    CHECK_EQ_MEM(s.p, "/ckpt/*.pt", s.len);
    CHECK_OK(msg_filters_rule(&m, &pos, &act, &s));
    CHECK_EQ_INT(act, 2);
    CHECK_OK(msg_filters_rule(&m, &pos, &act, &s));
    CHECK_EQ_ERR(msg_filters_rule(&m, &pos, &act, &s), FERRY_ERR_SHORT);
    buf_cleanup(&b);
    /* No rules at all is fine: the agent still reads ignore files. */
    filters_frame(&b, 0, "x");
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_OK(msg_filters_decode(f.payload, f.len, &m));
    CHECK_EQ_INT(m.nrules, 0);
    buf_cleanup(&b);
}

/* Every truncation and every bit flip: an error or a valid message,
 * never a crash (ASan) or a read past the end. */
TEST(msg_filters_mutate)
{
    struct msg_filters m;
    struct msg_str s;
    struct buf b;
    struct frame f;
    size_t used, i, pos;
    uint8_t *p, act;
    int bit, r;

    filters_frame(&b, 2, "a*");
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    for (i = 0; i < f.len; i++) {
        p = check_alloc(i ? i : 1);
        memcpy(p, f.payload, i);
        check_note("truncated at %zu", i);
        CHECK_FAILS(msg_filters_decode(p, i, &m));
        free(p);
    }
    p = check_alloc(f.len);
    for (i = 0; i < f.len; i++)
        for (bit = 0; bit < 8; bit++) {
            memcpy(p, f.payload, f.len);
            p[i] ^= (uint8_t)(1u << bit);
            check_note("byte %zu bit %d", i, bit);
            if ((r = msg_filters_decode(p, f.len, &m)) != 0)
                continue;
            pos = 0;
            while (msg_filters_rule(&m, &pos, &act, &s) == 0)
                CHECK(act == 1 || act == 2);
        }
    free(p);
    buf_cleanup(&b);
}

TEST(msg_filters_limits)
{
    uint8_t raw[16];
    struct msg_filters m;
    struct buf b;
    char big[PROTO_MAX_FILTER_PATTERN + 2];
    const char *pats[1] = { big };
    uint8_t act = 1;

    /* Too many rules: TOO_LARGE before anything else is read. */
    raw[0] = (uint8_t)((PROTO_MAX_FILTERS + 1) >> 8);
    raw[1] = (uint8_t)((PROTO_MAX_FILTERS + 1) & 0xff);
    CHECK_EQ_ERR(msg_filters_decode(raw, 2, &m), FERRY_ERR_TOO_LARGE);
    /* A pattern over the limit, on the wire and to the encoder. */
    raw[0] = 0;
    raw[1] = 1;
    raw[2] = 1;
    raw[3] = (uint8_t)((PROTO_MAX_FILTER_PATTERN + 1) >> 8);
    raw[4] = (uint8_t)((PROTO_MAX_FILTER_PATTERN + 1) & 0xff);
    CHECK_EQ_ERR(msg_filters_decode(raw, 5, &m), FERRY_ERR_TOO_LARGE);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    buf_init(&b, 1 << 20);
    CHECK_EQ_ERR(msg_filters_encode(&b, &act, pats, 1), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(msg_filters_encode(&b, &act, pats, PROTO_MAX_FILTERS + 1),
        FERRY_ERR_TOO_LARGE);
    /* Rules each within bounds whose sum is not: one more than fits in
     * PROTO_MAX_FILTER_BYTES. The encoder refuses what the decoder
     * would, and takes one rule fewer. */
    {
        size_t k, most = PROTO_MAX_FILTER_BYTES /
            (3 + PROTO_MAX_FILTER_PATTERN);
        const char **many = check_alloc((most + 1) * sizeof(*many));
        uint8_t *acts = check_alloc(most + 1);
        struct frame f;
        size_t used;

        big[PROTO_MAX_FILTER_PATTERN] = '\0';
        for (k = 0; k <= most; k++) {
            many[k] = big;
            acts[k] = 1;
        }
        CHECK_EQ_ERR(msg_filters_encode(&b, acts, many, most + 1),
            FERRY_ERR_TOO_LARGE);
        CHECK_EQ_U64(buf_used(&b), 0);
        CHECK_OK(msg_filters_encode(&b, acts, many, most));
        CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
        CHECK_OK(msg_filters_decode(f.payload, f.len, &m));
        CHECK_EQ_U64(m.nrules, most);
        free(acts);
        free(many);
    }
    buf_cleanup(&b);
    /* A bad action, an empty pattern, a NUL. */
    memcpy(raw, "\0\1\3\0\1a", 6);
    CHECK_EQ_ERR(msg_filters_decode(raw, 6, &m), FERRY_ERR_FORMAT);
    memcpy(raw, "\0\1\1\0\0", 5);
    CHECK_EQ_ERR(msg_filters_decode(raw, 5, &m), FERRY_ERR_FORMAT);
    memcpy(raw, "\0\1\1\0\1\0", 6);
    CHECK_EQ_ERR(msg_filters_decode(raw, 6, &m), FERRY_ERR_FORMAT);
    /* Bytes after the last rule. */
    memcpy(raw, "\0\1\1\0\1a!", 7);
    CHECK_EQ_ERR(msg_filters_decode(raw, 7, &m), FERRY_ERR_TRAILING);
}

TEST(msg_space_codec)
{
    struct msg_space in = { 5, 10, 7 }, out;
    struct buf b;
    struct frame f;
    size_t used, i;
    uint8_t *p;

    buf_init(&b, 1 << 10);
    CHECK_OK(msg_space_encode(&b, &in));
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_EQ_INT(f.type, MSG_SPACE);
    CHECK_OK(msg_space_decode(f.payload, f.len, &out));
    CHECK_EQ_U64(out.avail, 5);
    CHECK_EQ_U64(out.size, 10);
    CHECK_EQ_U64(out.offered, 7);
    for (i = 0; i < f.len; i++) {
        check_note("truncated at %zu", i);
        CHECK_FAILS(msg_space_decode(f.payload, i, &out));
    }
    p = check_alloc(f.len + 1);
    memcpy(p, f.payload, f.len);
    p[f.len] = 0;
    CHECK_EQ_ERR(msg_space_decode(p, f.len + 1, &out), FERRY_ERR_TRAILING);
    /* More free than the file system holds. */
    p[7] = 11;
    CHECK_EQ_ERR(msg_space_decode(p, f.len, &out), FERRY_ERR_FORMAT);
    CHECK_EQ_U64(out.avail, 0);
    free(p);
    buf_cleanup(&b);
}
