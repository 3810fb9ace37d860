/*
 * The swarm's conductor (client/swarm.c), frame in and frame out: the
 * links' lines are played, and what the conductor queues for each box is
 * read back. Three boxes; a source of a large file of 6 pieces and a
 * small one of 3, which travels in a bundle (pieces 0-2, before the
 * large file's 3-8: the torrent's files are in path order, "bundles/"
 * before "files/").
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../client/cli.h"
#include "../../client/swarm_cond.h"
#include "../../client/swarm_int.h"
#include "check.h"

#define PIECE (256 * 1024)

struct conduct {
    char dir[CHECK_PATH_MAX], src[CHECK_PATH_MAX + 8], word[CHECK_PATH_MAX + 9];
    char *argv[8];
    struct cli cli;
    struct swarm *s;
    struct stat b;          /* sub/b.bin's */
    int extra;              /* s/c.txt and s/d.txt too, small, held by none */
};

static volatile sig_atomic_t no_stop;

static void
conduct_init_with(struct conduct *c, int extra)
{
    char path[CHECK_PATH_MAX + 32];
    int argc = 0;

    memset(c, 0, sizeof(*c));
    c->extra = extra;
    check_tmpdir(c->dir);
    snprintf(c->src, sizeof(c->src), "%s/src", c->dir);
    CHECK(mkdir(c->src, 0755) == 0);
    snprintf(path, sizeof(path), "%s/sub", c->src);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof(path), "%s/a.bin", c->src);
    check_write_file(path, NULL, 6 * PIECE - 1000, 1);
    snprintf(path, sizeof(path), "%s/sub/b.bin", c->src);
    check_write_file(path, NULL, 2 * PIECE + 5, 2);
    CHECK(stat(path, &c->b) == 0);
    if (extra) {
        snprintf(path, sizeof(path), "%s/s", c->src);
        CHECK(mkdir(path, 0755) == 0);
        snprintf(path, sizeof(path), "%s/s/c.txt", c->src);
        check_write_file(path, NULL, 3000, 3);
        snprintf(path, sizeof(path), "%s/s/d.txt", c->src);
        check_write_file(path, NULL, PIECE + 100, 4);
    }
    /* The helper's bytes are not looked at here. */
    setenv("FERRY_SWARM", "/bin/sh", 1);
    c->argv[argc++] = "ferry";
    c->argv[argc++] = "push";
    c->argv[argc++] = "--quiet";
    /* src/: the files' paths are a.bin and sub/b.bin. */
    snprintf(c->word, sizeof(c->word), "%s/", c->src);
    c->argv[argc++] = c->word;
    c->argv[argc++] = "b[1-3]:/d";
    CHECK_OK(cli_parse(&c->cli, argc, c->argv));
    CHECK_EQ_INT(c->cli.nboxes, 3);
    c->s = swarm_new(&c->cli, &no_stop);
    CHECK(c->s != NULL);
}

static void
conduct_init(struct conduct *c)
{
    conduct_init_with(c, 0);
}

static void
conduct_free(struct conduct *c)
{
    swarm_free(c->s);
    cli_cleanup(&c->cli);
    check_rmtree(c->dir);
    unsetenv("FERRY_SWARM");
}

/* Box i's link says line. */
static void
say(struct conduct *c, int i, const char *line)
{
    char buf[1200];

    snprintf(buf, sizeof(buf), "%s", line);
    swarm_line(c->s, i, buf);
}

/* What was queued for box i, as a string (payload bytes included). */
static char *
out(struct conduct *c, int i, size_t *len)
{
    const uint8_t *p = swarm_test_out(c->s, i, len);
    char *copy = malloc(*len + 1);

    CHECK(copy != NULL);
    memcpy(copy, p, *len);
    copy[*len] = '\0';
    return copy;
}

static int
has(const char *hay, size_t len, const char *needle)
{
    return memmem(hay, len, needle, strlen(needle)) != NULL;
}

/* Every box logs in and lists its DEST: box 1 holds sub/b.bin as it is,
 * box 2 holds a.bin with another mtime, box 3 nothing; then the torrent,
 * and each box's helper says hello, listens and says what it holds. */
static void
conduct_start(struct conduct *c)
{
    char line[300], *o;
    size_t len;

    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "link 10.0.0.%d", i + 1);
        say(c, i, line);
        say(c, i, "dest /d");
    }
    snprintf(line, sizeof(line), "cur %lld %lld %ld sub/b.bin",
        (long long)c->b.st_size, (long long)c->b.st_mtim.tv_sec,
        c->b.st_mtim.tv_nsec);
    say(c, 0, line);
    say(c, 1, "cur 1571840 12 0 a.bin");
    for (int i = 0; i < 3; i++)
        say(c, i, "listed");
    CHECK_OK(swarm_prepare(c->s));
    CHECK_EQ_INT((int)swarm_test_pieces(c->s), c->extra ? 11 : 9);
    for (int i = 0; i < 3; i++) {
        o = out(c, i, &len);
        CHECK(strncmp(o, "go ", 3) == 0);
        free(o);
        say(c, i, "at /d/.ferry-swarm/x");
        say(c, i, "hello 2");
        o = out(c, i, &len);
        CHECK(has(o, len, "torrent /d/.ferry-swarm/x/t.torrent\n"));
        CHECK(has(o, len, "save /d/.ferry-swarm/x\n"));
        snprintf(line, sizeof(line), "listen 10.0.0.%d:0\nstart\n", i + 1);
        CHECK(has(o, len, line));
        /* What a box holds as it is, it serves from there, a bundle
         * by making it from its files; a box that lacks a bundle makes
         * its files once it is whole. b.bin's bundle (0-2) comes before
         * a.bin (3-8). */
        if (!c->extra) {
            CHECK_EQ_INT(has(o, len, "from 0 0 524293 /d/sub/b.bin\n"),
                i == 0);
            CHECK_EQ_INT(has(o, len, "part 0 0 524293 files/sub/b.bin\n"),
                i != 0);
        }
        CHECK(!has(o, len, "link "));
        free(o);
    }
}

/* conduct_start, then every helper listens and holds nothing, is told
 * its peers, and reaches both others: pieces go out. */
static void
conduct_spread(struct conduct *c)
{
    char line[64];

    conduct_start(c);
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "listening 10.0.0.%d %d", i + 1,
            7000 + i);
        say(c, i, line);
        say(c, i, "holds-end");
    }
    swarm_step(c->s);
    for (int i = 0; i < 3; i++)
        say(c, i, "progress 0 9 2 0 0");
    swarm_step(c->s);
}

TEST(swarm_conduct_peers_and_pieces)
{
    struct conduct c;
    char line[64], *o;
    size_t len;

    conduct_init(&c);
    conduct_start(&c);
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "listening 10.0.0.%d %d", i + 1,
            7000 + i);
        say(&c, i, line);
        /* Not ready before it says what it holds. */
        swarm_step(c.s);
        o = out(&c, i, &len);
        CHECK(!has(o, len, "peer "));
        free(o);
    }
    say(&c, 0, "holds 0 3");
    for (int i = 0; i < 3; i++)
        say(&c, i, "holds-end");
    swarm_step(c.s);
    /* Each is told both others, once all are ready. */
    for (int i = 0; i < 3; i++) {
        o = out(&c, i, &len);
        for (int j = 0; j < 3; j++) {
            snprintf(line, sizeof(line), "peer 10.0.0.%d:%d\n", j + 1,
                7000 + j);
            CHECK_EQ_INT(has(o, len, line), i != j);
        }
        /* No piece before the probe: none has a peer yet. */
        CHECK(!has(o, len, "put "));
        free(o);
    }
    for (int i = 0; i < 3; i++)
        say(&c, i, "progress 0 9 2 0 0");
    /* The pieces no box holds, each to one box only, with its bytes; not
     * 0-2, which box 1 serves. A box takes a piece a round while its
     * last one is on its way (here: taken at once). */
    {
        int seen[9] = { 0 };

        for (int round = 0; round < 4; round++) {
            swarm_step(c.s);
            for (int i = 0; i < 3; i++) {
                o = out(&c, i, &len);
                for (int p = 0; p < 9; p++) {
                    snprintf(line, sizeof(line), "put %d %d\n", p,
                        p == 8 ? PIECE - 1000 : PIECE);
                    seen[p] += has(o, len, line);
                }
                free(o);
            }
        }
        for (int p = 3; p < 9; p++)
            CHECK_EQ_INT(seen[p], 1);
        for (int p = 0; p < 3; p++)
            CHECK_EQ_INT(seen[p], 0);
    }
    conduct_free(&c);
}

/* Count the pieces queued for box i (and drop them from its queue):
 * its lines, each put's payload skipped. */
static int
puts_to(struct conduct *c, int i)
{
    size_t len, at = 0;
    char *o = out(c, i, &len);
    int n = 0;

    while (at < len) {
        const char *nl = memchr(o + at, '\n', len - at);
        unsigned p;
        size_t plen;

        CHECK(nl != NULL);
        if (sscanf(o + at, "put %u %zu\n", &p, &plen) == 2) {
            n++;
            at = (size_t)(nl - o) + 1 + plen;
        } else {
            at = (size_t)(nl - o) + 1;
        }
    }
    CHECK(at == len);
    free(o);
    return n;
}

/* A box's window starts small and grows by a piece for each it hashes:
 * pieces do not pile up behind a box that has yet to show its rate. */
TEST(swarm_conduct_window)
{
    struct conduct c;
    int n[3] = { 0 };

    conduct_init(&c);
    conduct_spread(&c);
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 3; i++)
            n[i] += puts_to(&c, i);
        swarm_step(c.s);
    }
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(n[i], SWARM_WINDOW_MIN);
    /* Box 1 hashes one of its two (the pieces went out in turn: its
     * first was 0): it is put two more, a window of three with one in
     * flight; the others none. */
    say(&c, 0, "fed 0");
    memset(n, 0, sizeof(n));
    for (int round = 0; round < 4; round++) {
        swarm_step(c.s);
        for (int i = 0; i < 3; i++)
            n[i] += puts_to(&c, i);
    }
    CHECK_EQ_INT(n[0], 2);
    CHECK_EQ_INT(n[1], 0);
    CHECK_EQ_INT(n[2], 0);
    conduct_free(&c);
}

/* The window's arithmetic, time given: SWARM_WINDOW_MIN more than the
 * pieces hashed in the last one to two SWARM_RATE_S, never above its
 * cap; a box silent for two of them is back to the least. */
/* Pieces grow from SWARM_MIN_PIECE until the torrent has at most
 * SWARM_PIECES_AIM of them, up to the largest a torrent takes. */
TEST(swarm_piece_len_aims)
{
    uint64_t gib = 1ull << 30;

    CHECK_EQ_INT(swarm_piece_len(0), SWARM_MIN_PIECE);
    CHECK_EQ_INT(swarm_piece_len((uint64_t)SWARM_MIN_PIECE *
        (SWARM_PIECES_AIM + 1) - 1), SWARM_MIN_PIECE);
    CHECK_EQ_INT(swarm_piece_len((uint64_t)SWARM_MIN_PIECE *
        (SWARM_PIECES_AIM + 1)), 2 * SWARM_MIN_PIECE);
    CHECK_EQ_INT(swarm_piece_len(gib), 512 * 1024);
    CHECK(gib / swarm_piece_len(gib) <= SWARM_PIECES_AIM);
    CHECK_EQ_INT(swarm_piece_len(UINT64_MAX), TORRENT_MAX_PIECE);
}

TEST(swarm_window_follows_rate)
{
    struct sbox b;

    memset(&b, 0, sizeof(b));
    b.rate_at = 100.0;
    CHECK_EQ_INT(swarm_window(&b, 24, 100.0, 0), SWARM_WINDOW_MIN);
    CHECK_EQ_INT(swarm_window(&b, 24, 100.2, 1), SWARM_WINDOW_MIN + 1);
    CHECK_EQ_INT(swarm_window(&b, 24, 100.5, 3), SWARM_WINDOW_MIN + 4);
    /* The next second: the last one's four still count. */
    CHECK_EQ_INT(swarm_window(&b, 24, 101.1, 1), SWARM_WINDOW_MIN + 5);
    /* The one after: only the second's one, and this one's. */
    CHECK_EQ_INT(swarm_window(&b, 24, 102.3, 2), SWARM_WINDOW_MIN + 3);
    /* A fast box: capped. */
    CHECK_EQ_INT(swarm_window(&b, 24, 102.4, 40), 24);
    CHECK_EQ_INT(swarm_window(&b, 8, 102.5, 0), 8);
    /* Silent for two seconds: the least again. */
    CHECK_EQ_INT(swarm_window(&b, 24, 104.6, 0), SWARM_WINDOW_MIN);
}

TEST(swarm_conduct_refusals)
{
    struct conduct c;

    conduct_init(&c);
    conduct_spread(&c);
    /* An answer for a piece the box was not given: it leaves. Box 3 was
     * given piece 2 alone (0 and 1 went to boxes 1 and 2). */
    CHECK(!swarm_test_failed(c.s, 2));
    say(&c, 2, "fed 0");
    CHECK(swarm_test_failed(c.s, 2));
    /* A helper that read another torrent leaves too. */
    CHECK(!swarm_test_failed(c.s, 1));
    say(&c, 1, "torrent files 10 262144");
    CHECK(swarm_test_failed(c.s, 1));
    /* A fatal line from its helper. */
    say(&c, 0, "fatal listen: address in use");
    CHECK(swarm_test_failed(c.s, 0));
    conduct_free(&c);
}

TEST(swarm_conduct_probe)
{
    struct conduct c;
    char line[64], *o;
    size_t len;

    conduct_init(&c);
    conduct_start(&c);
    /* The probe's time is up at once: a box with no peer by then leaves,
     * and the pieces go to the two that reached each other. */
    swarm_test_probe(c.s, 0);
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "listening 10.0.0.%d %d", i + 1,
            7000 + i);
        say(&c, i, line);
        say(&c, i, "holds-end");
    }
    say(&c, 1, "progress 0 9 1 0 0");
    say(&c, 2, "progress 0 9 1 0 0");
    swarm_step(c.s);
    CHECK(swarm_test_failed(c.s, 0));
    CHECK(!swarm_test_failed(c.s, 1));
    CHECK(!swarm_test_failed(c.s, 2));
    for (int i = 1; i < 3; i++) {
        o = out(&c, i, &len);
        CHECK(has(o, len, "put "));
        free(o);
    }
    conduct_free(&c);
}

/* A box whose helper is done is released for its transfer while the
 * others still fetch, and its helper is not stopped: it seeds on. One
 * that left before it was done is not released while its helper may
 * still write. The helpers are stopped once the last box is done, and
 * the swarm is over when they have ended. */
TEST(swarm_conduct_done_released)
{
    struct conduct c;
    char *o;
    size_t len;

    conduct_init(&c);
    conduct_spread(&c);
    for (int i = 0; i < 3; i++) {
        CHECK(!swarm_ready(c.s, i));
        free(out(&c, i, &len));
    }
    say(&c, 0, "done");
    swarm_step(c.s);
    CHECK(swarm_ready(c.s, 0));
    CHECK(!swarm_ready(c.s, 1));
    CHECK(!swarm_ready(c.s, 2));
    CHECK(swarm_running(c.s));
    o = out(&c, 0, &len);
    CHECK(!has(o, len, "stop\n"));
    free(o);
    /* Box 2's helper fails before it is done: it may still be writing,
     * so its transfer waits (for the swarm's end here). */
    say(&c, 1, "fatal file x: no space");
    swarm_step(c.s);
    CHECK(swarm_test_failed(c.s, 1));
    CHECK(!swarm_ready(c.s, 1));
    CHECK(!swarm_ready(c.s, 2));
    o = out(&c, 0, &len);
    CHECK(!has(o, len, "stop\n"));
    free(o);
    /* The last is done: every helper still in is told to stop, and the
     * swarm runs until they have. */
    say(&c, 2, "done");
    swarm_step(c.s);
    CHECK(swarm_ready(c.s, 2));
    for (int i = 0; i < 3; i += 2) {
        o = out(&c, i, &len);
        CHECK(has(o, len, "stop\n"));
        free(o);
    }
    CHECK(swarm_running(c.s));
    say(&c, 0, "link-end 0");
    swarm_step(c.s);
    CHECK(swarm_running(c.s));
    say(&c, 2, "link-end 0");
    swarm_step(c.s);
    CHECK(!swarm_running(c.s));
    CHECK(swarm_ready(c.s, 1));
    conduct_free(&c);
}

/* The small files travel in bundles, one for each set of boxes that
 * holds them: b.bin (box 1 holds it) alone, c.txt and d.txt (none do)
 * end to end in another. Box 1 makes b.bin's bundle from its own copy
 * and is told which parts of the other make which file; a piece of a
 * bundle carries its files' bytes in order. */
TEST(swarm_conduct_bundles)
{
    struct conduct c;
    char path[CHECK_PATH_MAX + 32], line[300], *o, *put;
    unsigned cd = 99, bb = 99, b2 = 98;
    uint8_t want[PIECE];
    size_t len;
    FILE *f;

    conduct_init_with(&c, 1);
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "link 10.0.0.%d", i + 1);
        say(&c, i, line);
        say(&c, i, "dest /d");
    }
    snprintf(line, sizeof(line), "cur %lld %lld %ld sub/b.bin",
        (long long)c.b.st_size, (long long)c.b.st_mtim.tv_sec,
        c.b.st_mtim.tv_nsec);
    say(&c, 0, line);
    for (int i = 0; i < 3; i++)
        say(&c, i, "listed");
    CHECK_OK(swarm_prepare(c.s));
    for (int i = 0; i < 3; i++) {
        free(out(&c, i, &len));
        say(&c, i, "at /d/.ferry-swarm/x");
        say(&c, i, "hello 2");
        o = out(&c, i, &len);
        if (i == 0) {
            put = strstr(o, "from ");
            CHECK(put != NULL && sscanf(put, "from %u 0 524293 "
                "/d/sub/b.bin\n", &bb) == 1);
            CHECK(!has(o, len, "files/sub/b.bin"));
        } else {
            put = strstr(o, "part ");
            CHECK(put != NULL);
            put = strstr(o, "files/sub/b.bin");
            CHECK(put != NULL);
            CHECK(!has(o, len, "from "));
        }
        put = strstr(o, " 0 3000 files/s/c.txt\n");
        CHECK(put != NULL);
        while (put > o && put[-1] != '\n')
            put--;
        CHECK(sscanf(put, "part %u 0 3000 files/s/c.txt\n", &cd) == 1);
        snprintf(line, sizeof(line), "part %u 3000 %d files/s/d.txt\n", cd,
            PIECE + 100);
        CHECK(has(o, len, line));
        if (i == 1) {
            put = strstr(o, "files/sub/b.bin");
            while (put > o && put[-1] != '\n')
                put--;
            CHECK(sscanf(put, "part %u 0 524293 files/sub/b.bin\n",
                &b2) == 1);
        }
        free(o);
    }
    CHECK(bb == b2);
    CHECK((bb == 0 && cd == 3) || (cd == 0 && bb == 2));
    CHECK_EQ_INT((int)swarm_test_pieces(c.s), 11);
    /* Box 1 holds b.bin's bundle: the rest go out, and the first piece
     * of c.txt and d.txt's bundle is c.txt, then d.txt's head. */
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "listening 10.0.0.%d %d", i + 1,
            7000 + i);
        say(&c, i, line);
        if (i == 0) {
            snprintf(line, sizeof(line), "holds %u 3", bb);
            say(&c, i, line);
        }
        say(&c, i, "holds-end");
    }
    swarm_step(c.s);
    for (int i = 0; i < 3; i++)
        say(&c, i, "progress 0 11 2 0 0");
    snprintf(path, sizeof(path), "%s/s/c.txt", c.src);
    CHECK((f = fopen(path, "rb")) != NULL);
    CHECK_EQ_INT((int)fread(want, 1, 3000, f), 3000);
    fclose(f);
    snprintf(path, sizeof(path), "%s/s/d.txt", c.src);
    CHECK((f = fopen(path, "rb")) != NULL);
    CHECK_EQ_INT((int)fread(want + 3000, 1, PIECE - 3000, f), PIECE - 3000);
    fclose(f);
    {
        int found = 0, last = 0;

        for (int round = 0; round < 6; round++) {
            swarm_step(c.s);
            for (int i = 0; i < 3; i++) {
                o = out(&c, i, &len);
                snprintf(line, sizeof(line), "put %u %d\n", cd, PIECE);
                if ((put = memmem(o, len, line, strlen(line))) != NULL) {
                    put += strlen(line);
                    CHECK(put + PIECE <= o + len);
                    CHECK(memcmp(put, want, PIECE) == 0);
                    found++;
                }
                /* The bundle's last piece: d.txt's tail, 3100 bytes. */
                snprintf(line, sizeof(line), "put %u 3100\n", cd + 1);
                last += has(o, len, line);
                for (unsigned p = bb; p < bb + 3; p++) {
                    snprintf(line, sizeof(line), "put %u ", p);
                    CHECK(!has(o, len, line));
                }
                free(o);
            }
        }
        CHECK_EQ_INT(found, 1);
        CHECK_EQ_INT(last, 1);
    }
    conduct_free(&c);
}
