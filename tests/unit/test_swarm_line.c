/* Tests for swarm/swarm_line.c: the lines ferry-swarm takes from the
 * agent, and the refusal of every other. */
#include <stdio.h>
#include <string.h>

#include "../../swarm/swarm_line.h"
#include "check.h"

static int
parse(const char *s, struct swarm_line *l)
{
    char err[128];

    return swarm_line_parse(s, strlen(s), l, err, sizeof(err));
}

TEST(swarm_line_good)
{
    struct swarm_line l;

    CHECK_OK(parse("torrent /tmp/a b.torrent", &l));
    CHECK_EQ_INT(l.cmd, SWARM_TORRENT);
    CHECK_EQ_STR(l.arg, "/tmp/a b.torrent");
    CHECK_OK(parse("listen 127.0.0.2:0", &l));
    CHECK_EQ_INT(l.cmd, SWARM_LISTEN);
    CHECK_EQ_STR(l.ip, "127.0.0.2");
    CHECK_EQ_INT(l.port, 0);
    CHECK_OK(parse("peer [fd00::1]:7001", &l));
    CHECK_EQ_STR(l.ip, "fd00::1");
    CHECK_EQ_INT(l.port, 7001);
    CHECK_OK(parse("piece 2147483647 4611686018427387904 /d/f", &l));
    CHECK_EQ_INT(l.cmd, SWARM_PIECE);
    CHECK_EQ_U64(l.piece, 2147483647);
    CHECK_EQ_U64(l.offset, 1ULL << 62);
    CHECK_EQ_STR(l.arg, "/d/f");
    CHECK_OK(parse("limit 0 400000", &l));
    CHECK_EQ_U64(l.down, 400000);
    CHECK_OK(parse("allow 10.0.0.7", &l));
    CHECK_EQ_INT(l.cmd, SWARM_ALLOW);
    CHECK_EQ_STR(l.ip, "10.0.0.7");
    CHECK_OK(parse("allow fd00::2", &l));
    CHECK_OK(parse("link 3 /ws/a b", &l));
    CHECK_EQ_INT(l.cmd, SWARM_LINK);
    CHECK_EQ_U64(l.piece, 3);
    CHECK_EQ_STR(l.arg, "/ws/a b");
    CHECK_OK(parse("part 7 65536 4095 files/d/a b", &l));
    CHECK_EQ_INT(l.cmd, SWARM_PART);
    CHECK_EQ_U64(l.piece, 7);
    CHECK_EQ_U64(l.offset, 65536);
    CHECK_EQ_U64(l.len, 4095);
    CHECK_EQ_STR(l.arg, "files/d/a b");
    CHECK_OK(parse("from 0 0 4611686018427387904 /ws/x", &l));
    CHECK_EQ_INT(l.cmd, SWARM_FROM);
    CHECK_EQ_U64(l.len, 1ULL << 62);
    CHECK_OK(parse("start", &l));
    CHECK_OK(parse("stop", &l));
    CHECK_EQ_INT(l.cmd, SWARM_STOP);
}

TEST(swarm_line_refused)
{
    static const char *const bad[] = {
        "", " start", "start ", "start now", "Start", "bogus",
        "torrent", "torrent ", "torrent a\tb",
        "listen 127.0.0.1", "listen 127.0.0.1:65536", "listen host:1",
        "listen ::1:7", "listen [127.0.0.1]:7", "listen 127.0.0.1:-1",
        "listen 127.0.0.1:+1", "peer 127.0.0.1:0", "peer []:1",
        "piece", "piece 1", "piece 1 0", "piece 1 0 ", "piece -1 0 /f",
        "piece 2147483648 0 /f", "piece 1 4611686018427387905 /f",
        "piece 1 99999999999999999999 /f", "piece x 0 /f",
        "limit 1", "limit 1 2 3", "limit 2147483648 0",
        "allow", "allow 10.0.0.7:1", "allow [fd00::2]", "allow host",
        "link", "link 1", "link -1 /x", "link x /y",
        "part", "part 1 0 1", "part 1 0 0 f", "part -1 0 1 f",
        "part 1 -1 1 f", "part 1 0 4611686018427387905 f",
        "part 2147483648 0 1 f", "part 1 0 1 a\tb", "part 1 0 1 ",
        "from 1 0 0 /x", "from 1 x 1 /x", "from 1 0 1",
    };
    struct swarm_line l;
    char err[128];
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("%s", bad[i]);
        CHECK_EQ_INT(parse(bad[i], &l), -1);
    }
    check_note_clear();
    CHECK_EQ_INT(swarm_line_parse("start\0", 6, &l, err, sizeof(err)), -1);
    CHECK_EQ_STR(err, "NUL in line");
}

TEST(swarm_line_paths)
{
    CHECK(swarm_path_ok("data/a/b"));
    CHECK(swarm_path_ok("a..b/.c"));
    CHECK(!swarm_path_ok(""));
    CHECK(!swarm_path_ok("/etc/passwd"));
    CHECK(!swarm_path_ok("data/../x"));
    CHECK(!swarm_path_ok("data//x"));
    CHECK(!swarm_path_ok("data/."));
    CHECK(!swarm_path_ok("data/"));
}

/* Lines split across reads, several in one read, and an over-long line
 * dropped as it comes and refused once. */
TEST(swarm_line_reader)
{
    static struct swarm_reader rd;
    static char junk[3 * SWARM_MAX_LINE];
    struct swarm_line l;
    char err[128];

    swarm_reader_init(&rd);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    swarm_reader_push(&rd, LIT("sta"));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    CHECK(swarm_reader_idle(&rd));
    swarm_reader_push(&rd, LIT("rt\nstop\nbo"));
    CHECK(!swarm_reader_idle(&rd));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
    CHECK_EQ_INT(l.cmd, SWARM_START);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
    CHECK_EQ_INT(l.cmd, SWARM_STOP);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    swarm_reader_push(&rd, LIT("gus\n"));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), -1);
    CHECK_EQ_STR(err, "unknown command");

    memset(junk, 'x', sizeof(junk));
    swarm_reader_push(&rd, junk, sizeof(junk));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    swarm_reader_push(&rd, junk, sizeof(junk));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    swarm_reader_push(&rd, LIT("xx\nstop\n"));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), -1);
    CHECK_EQ_STR(err, "line too long");
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
    CHECK_EQ_INT(l.cmd, SWARM_STOP);
    CHECK(swarm_reader_idle(&rd));
    /* What does not fit is not taken. */
    CHECK_EQ_U64(swarm_reader_room(&rd), SWARM_READER_CAP);
}

/* put INDEX LEN: the parser's checks, each row refused for its own
 * reason (the index past the torrent's count is the helper's). */
TEST(swarm_line_put)
{
    static const struct {
        const char *line, *why;
    } bad[] = {
        { "put", "bad put index" },              /* no index */
        { "put x 5", "bad put index" },          /* not a number */
        { "put -1 5", "bad put index" },
        { "put 2147483648 5", "bad put index" }, /* past an int */
        { "put 1", "bad put length" },           /* no LEN */
        { "put 1 5 ", "bad put length" },
        { "put 1 5x", "bad put length" },
        { "put 1 +5", "bad put length" },
        { "put 1 16777217", "bad put length" },  /* over 16 MiB */
        { "put 1 99999999999999999999", "bad put length" },
        { "put 1 0", "empty put" },
        { "put 1 5 6", "trailing words" },
    };
    struct swarm_line l;
    char err[128];
    size_t i;

    CHECK_OK(parse("put 0 1", &l));
    CHECK_EQ_INT(l.cmd, SWARM_PUT);
    CHECK_EQ_U64(l.piece, 0);
    CHECK_EQ_U64(l.len, 1);
    CHECK_OK(parse("put 2147483647 16777216", &l));
    CHECK_EQ_U64(l.piece, 2147483647);
    CHECK_EQ_U64(l.len, SWARM_MAX_PUT);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("%s", bad[i].line);
        CHECK_EQ_INT(swarm_line_parse(bad[i].line, strlen(bad[i].line), &l,
            err, sizeof(err)), -1);
        CHECK_EQ_STR(err, bad[i].why);
    }
    check_note_clear();
}

/* What a reader gave: lines as "cmd" words, payload bytes as they are. */
struct got {
    char log[256];
    char payload[64];
    size_t paid;
    int lines, refused;
};

/* Drains the reader, taking payload bytes at most 5 at a time so that a
 * payload comes out in several takes as well as several pushes. */
static void
drain(struct swarm_reader *rd, struct got *g)
{
    struct swarm_line l;
    char err[128];
    size_t k;
    int r;

    for (;;) {
        if (swarm_reader_payload(rd) > 0) {
            if (swarm_reader_idle(rd))
                return;
            k = swarm_reader_take(rd, g->payload + g->paid,
                sizeof(g->payload) - g->paid < 5 ?
                sizeof(g->payload) - g->paid : 5);
            if (k == 0)
                return;
            g->paid += k;
            continue;
        }
        r = swarm_reader_next(rd, &l, err, sizeof(err));
        if (r == 0)
            return;
        if (r < 0) {
            g->refused++;
            snprintf(g->log + strlen(g->log), sizeof(g->log) - strlen(g->log),
                "%s[%s] ", r == SWARM_UNFRAMED ? "UNFRAMED" : "error", err);
            if (r == SWARM_UNFRAMED)
                return;
            continue;
        }
        g->lines++;
        snprintf(g->log + strlen(g->log), sizeof(g->log) - strlen(g->log),
            "%d:%lld:%lld ", (int)l.cmd, (long long)l.piece, (long long)l.len);
    }
}

/* A put's payload, holding newlines, a NUL and what looks like lines,
 * then ordinary lines: cut into two reads at every byte, and fed a byte
 * at a time; the payload comes out whole and the lines after it too. */
TEST(swarm_line_put_reader)
{
    static const char msg[] =
        "put 7 13\n" "a\nb\0stop\nput\n" "limit 1 2\nstop\n";
    static const char payload[] = "a\nb\0stop\nput\n";
    static struct swarm_reader rd;
    char want[64];
    struct got g;
    size_t cut, i;

    snprintf(want, sizeof(want), "%d:7:13 %d:0:0 %d:0:0 ", SWARM_PUT,
        SWARM_LIMIT, SWARM_STOP);
    for (cut = 0; cut <= sizeof(msg) - 1; cut++) {
        check_note("cut at %zu", cut);
        memset(&g, 0, sizeof(g));
        swarm_reader_init(&rd);
        swarm_reader_push(&rd, msg, cut);
        drain(&rd, &g);
        swarm_reader_push(&rd, msg + cut, sizeof(msg) - 1 - cut);
        drain(&rd, &g);
        CHECK_EQ_STR(g.log, want);
        CHECK_EQ_U64(g.paid, 13);
        CHECK_EQ_MEM(g.payload, payload, 13);
        CHECK(swarm_reader_idle(&rd));
        CHECK_EQ_U64(swarm_reader_payload(&rd), 0);
    }
    check_note_clear();
    memset(&g, 0, sizeof(g));
    swarm_reader_init(&rd);
    for (i = 0; i < sizeof(msg) - 1; i++) {
        swarm_reader_push(&rd, msg + i, 1);
        drain(&rd, &g);
    }
    CHECK_EQ_STR(g.log, want);
    CHECK_EQ_MEM(g.payload, payload, 13);

    /* Whole in one read: no line is had while payload is owed, however
     * many newlines are held. */
    swarm_reader_init(&rd);
    swarm_reader_push(&rd, msg, sizeof(msg) - 1);
    {
        struct swarm_line l;
        char err[128], buf[64];

        CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
        CHECK_EQ_INT(l.cmd, SWARM_PUT);
        CHECK_EQ_U64(swarm_reader_payload(&rd), 13);
        CHECK(!swarm_reader_idle(&rd));
        CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
        /* take gives no more than asked, and never goes past the
         * payload, whatever room is offered. */
        CHECK_EQ_U64(swarm_reader_take(&rd, buf, 5), 5);
        CHECK_EQ_U64(swarm_reader_payload(&rd), 8);
        CHECK_EQ_U64(swarm_reader_take(&rd, buf + 5, sizeof(buf) - 5), 8);
        CHECK_EQ_MEM(buf, payload, 13);
        CHECK_EQ_U64(swarm_reader_take(&rd, buf, sizeof(buf)), 0);
        CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
        CHECK_EQ_INT(l.cmd, SWARM_LIMIT);
    }
}

/* A payload of a whole 16 MiB piece goes through a reader that never
 * holds more than SWARM_READER_CAP, taken as the reader fills. */
TEST(swarm_line_put_big)
{
    static struct swarm_reader rd;
    static char chunk[SWARM_READER_CAP + 1000], out[SWARM_READER_CAP];
    struct swarm_line l;
    char err[128];
    size_t sent = 0, got = 0, k, i;
    uint32_t sum_in = 0, sum_out = 0;
    int r;

    for (i = 0; i < sizeof(chunk); i++)
        chunk[i] = (char)(i * 7 + i / 251);
    swarm_reader_init(&rd);
    swarm_reader_push(&rd, LIT("put 3 16777216\n"));
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
    while (got < SWARM_MAX_PUT) {
        k = swarm_reader_room(&rd);
        if (k > SWARM_MAX_PUT - sent)
            k = SWARM_MAX_PUT - sent;
        if (k > sizeof(chunk))
            k = sizeof(chunk);
        swarm_reader_push(&rd, chunk, k);
        for (i = 0; i < k; i++)
            sum_in = sum_in * 31 + (unsigned char)chunk[i];
        sent += k;
        k = swarm_reader_take(&rd, out, sizeof(out));
        CHECK(k > 0);
        for (i = 0; i < k; i++)
            sum_out = sum_out * 31 + (unsigned char)out[i];
        got += k;
    }
    CHECK_EQ_U64(got, SWARM_MAX_PUT);
    CHECK_EQ_U64(sum_in, sum_out);
    CHECK_EQ_U64(swarm_reader_payload(&rd), 0);
    swarm_reader_push(&rd, LIT("stop\n"));
    r = swarm_reader_next(&rd, &l, err, sizeof(err));
    CHECK_EQ_INT(r, 1);
    CHECK_EQ_INT(l.cmd, SWARM_STOP);
}

/* A put header refused leaves the reader unframed: what follows is never
 * read as lines. Other lines refused, even ones that start like put,
 * are refused alone. */
TEST(swarm_line_put_unframed)
{
/* Input of a row, its NULs counted. */
#define ROW(s, u) { s, sizeof(s) - 1, u }
    static const struct {
        const char *in;
        size_t n;
        int unframed;
    } rows[] = {
        ROW("put 1 0\nstop\n", 1),
        ROW("put x 5\nstop\n", 1),
        ROW("put 1\nstop\n", 1),
        ROW("put\nstop\n", 1),
        ROW("put 1 5\0\nstop\n", 1),
        ROW("putx 1 5\nstop\n", 0),
        ROW("puts\nstop\n", 0),
        ROW("bogus\nstop\n", 0),
    };
#undef ROW
    static struct swarm_reader rd;
    static char longput[SWARM_MAX_LINE + 100];
    struct swarm_line l;
    char err[128];
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        check_note("%s", rows[i].in);
        swarm_reader_init(&rd);
        swarm_reader_push(&rd, rows[i].in, rows[i].n);
        if (rows[i].unframed) {
            CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)),
                SWARM_UNFRAMED);
            CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)),
                SWARM_UNFRAMED);
            CHECK_EQ_U64(swarm_reader_room(&rd), 0);
            CHECK(swarm_reader_idle(&rd));
        } else {
            CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), -1);
            CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 1);
            CHECK_EQ_INT(l.cmd, SWARM_STOP);
        }
    }
    check_note_clear();

    /* An over-long line is unframing if it began as a put. */
    memset(longput, '1', sizeof(longput));
    memcpy(longput, "put ", 4);
    longput[sizeof(longput) - 1] = '\n';
    swarm_reader_init(&rd);
    swarm_reader_push(&rd, longput, SWARM_MAX_LINE);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    swarm_reader_push(&rd, longput + SWARM_MAX_LINE, 100);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), SWARM_UNFRAMED);
    CHECK_EQ_STR(err, "line too long");
    longput[0] = 'x';
    swarm_reader_init(&rd);
    swarm_reader_push(&rd, longput, SWARM_MAX_LINE);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), 0);
    swarm_reader_push(&rd, longput + SWARM_MAX_LINE, 100);
    CHECK_EQ_INT(swarm_reader_next(&rd, &l, err, sizeof(err)), -1);
    CHECK_EQ_STR(err, "line too long");
}
