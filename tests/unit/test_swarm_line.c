/* Tests for swarm/swarm_line.c: the lines ferry-swarm takes from the
 * agent, and the refusal of every other. */
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
