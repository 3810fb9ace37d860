/*
 * proto/PROTOCOL.md against the code: its table of capabilities against
 * PROTO_CAP_*, and its table of messages against msg_table.h, row by row
 * (number, name, direction, stream 0 only, capabilities), every message
 * once. Read from the .md itself (make runs the tests from the top of the
 * tree), so that neither can change alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/msg.h"
#include "check.h"

/* The one list of the capability bits' names; a bit added to msg.h and
 * not here fails msg_doc_caps, as PROTOCOL.md names it. */
static const struct {
    const char *name;
    uint64_t bit;
} doc_caps[] = {
#define CAP(n) { #n, PROTO_CAP_##n }
    CAP(SPARSE), CAP(RESUME), CAP(DELTA), CAP(VOLUMES), CAP(STREAMS),
    CAP(ZSTD), CAP(RESTRICTED), CAP(FILTERS), CAP(RETIRE), CAP(READBACK),
    CAP(PROBE), CAP(KEEP), CAP(LIVE), CAP(DELTA_BLOCKS), CAP(DELTA_STOP),
    CAP(STOP), CAP(BUSY), CAP(TENSORS), CAP(SPACE), CAP(IGNORE),
    CAP(DELTA_GO),
    CAP(SINGLE_EARLY), CAP(ADOPT),
#undef CAP
};

#define NCAPS (sizeof(doc_caps) / sizeof(doc_caps[0]))

static FILE *
doc_open(void)
{
    FILE *f = fopen("proto/PROTOCOL.md", "r");

    if (f == NULL)
        check_fail(__FILE__, __LINE__, "proto/PROTOCOL.md: %s (run from "
            "the top of the tree)", strerror(errno));
    return f;
}

/* The bit of a capability's name, or 0. */
static uint64_t
doc_cap(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < NCAPS; i++)
        if (strlen(doc_caps[i].name) == len &&
            memcmp(doc_caps[i].name, name, len) == 0)
            return doc_caps[i].bit;
    return 0;
}

TEST(msg_doc_caps)
{
    char line[4096], name[64];
    uint64_t seen = 0, all = 0, bit;
    int in = 0;
    unsigned num;
    size_t i;
    FILE *f = doc_open();

    for (i = 0; i < NCAPS; i++) {
        CHECK_EQ_U64(all & doc_caps[i].bit, 0);
        all |= doc_caps[i].bit;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "| capability | bit |", 20) == 0) {
            in = 1;
            continue;
        }
        if (!in || strncmp(line, "|---", 4) == 0)
            continue;
        if (sscanf(line, "| %63[A-Z_] | %u |", name, &num) != 2)
            break;
        check_note("PROTOCOL.md: capability %s", name);
        bit = doc_cap(name, strlen(name));
        CHECK(num < 64);
        CHECK_EQ_U64(bit, UINT64_C(1) << num);
        CHECK_EQ_U64(seen & bit, 0);
        seen |= bit;
    }
    fclose(f);
    check_note_clear();
    CHECK(in);
    CHECK_EQ_U64(seen, all);
}

/* The next cell of a row at *p (after a '|'), trimmed, into out. */
static void
doc_cell(const char **p, char *out, size_t max)
{
    const char *s = *p, *e = strchr(s, '|');
    size_t n;

    if (e == NULL)
        check_fail(__FILE__, __LINE__, "a row with too few cells");
    while (s < e && *s == ' ')
        s++;
    n = (size_t)(e - s);
    while (n > 0 && s[n - 1] == ' ')
        n--;
    CHECK(n < max);
    memcpy(out, s, n);
    out[n] = '\0';
    *p = e + 1;
}

/* The capabilities cell: "-", or names joined by " or ". */
static uint64_t
doc_cap_cell(const char *cell)
{
    const char *s = cell, *e;
    uint64_t caps = 0, bit;

    if (strcmp(cell, "-") == 0)
        return 0;
    for (;;) {
        e = strstr(s, " or ");
        bit = doc_cap(s, e != NULL ? (size_t)(e - s) : strlen(s));
        CHECK(bit != 0);
        caps |= bit;
        if (e == NULL)
            return caps;
        s = e + 4;
    }
}

TEST(msg_doc_table)
{
    static const char *const dirs[] = { [MSG_DIR_BOTH] = "both",
        [MSG_DIR_CLIENT] = "client -> agent",
        [MSG_DIR_AGENT] = "agent -> client",
        [MSG_DIR_SENDER] = "sender -> receiver",
        [MSG_DIR_RECEIVER] = "receiver -> sender" };
    char line[4096], name[64], cell[256], *paren;
    unsigned num, seen[MSG_TYPE_MAX + 1] = { 0 };
    const struct msg_info *mi;
    size_t rows = 0, known = 0, t;
    const char *p;
    int used;
    FILE *f = doc_open();

    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "| %u | %63[A-Z_] |%n", &num, name, &used) != 2)
            continue;
        check_note("PROTOCOL.md: type %u", num);
        rows++;
        mi = num <= MSG_TYPE_MAX ? msg_info((uint8_t)num) : NULL;
        CHECK(mi != NULL);
        CHECK_EQ_STR(name, mi->name);
        CHECK_EQ_U64(seen[num]++, 0);
        p = line + used;
        /* The direction, a note in parentheses aside. */
        doc_cell(&p, cell, sizeof(cell));
        if ((paren = strstr(cell, " (")) != NULL)
            *paren = '\0';
        CHECK_EQ_STR(cell, dirs[mi->dir]);
        doc_cell(&p, cell, sizeof(cell));
        CHECK_EQ_STR(cell, mi->stream0 ? "yes" : "no");
        doc_cell(&p, cell, sizeof(cell));
        CHECK_EQ_U64(doc_cap_cell(cell), mi->cap);
    }
    fclose(f);
    check_note_clear();
    for (t = 0; t <= MSG_TYPE_MAX; t++)
        known += msg_type_known((uint8_t)t);
    CHECK_EQ_U64(rows, known);
}
