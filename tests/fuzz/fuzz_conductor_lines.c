/*
 * fuzz_conductor_lines.c: the check behind fuzz_conductor, the lines the
 * client reads from each box's swarm link (swarm_line in client/swarm.c).
 * A box's helper and link run on a machine the client does not trust, so
 * what they say may be anything: a line for the wrong state, pieces it
 * was never given, numbers out of range.
 *
 * Each input is lines; a line's first byte picks the box (of three) and
 * the rest is what that box said. The boxes start in three states (one
 * logging in, one whose helper says hello, one taking pieces with four in
 * flight) over a torrent of 16 pieces: one file of 15 pieces, one bundle
 * of two files in the last, so that `cur`, `link`, `from` and `part` are reached.
 * After every line: the count of pieces held matches the table, every
 * holder is a box, pieces in flight and to put again are pieces and
 * within their room, a port is a port, the states are states and the
 * strings a box set are NUL-terminated.
 *
 * Linked into fuzz_conductor (with the client's objects) and into the
 * unit tests, which replay tests/fuzz/corpus/conductor/.
 */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/swarm_cond.h"
#include "../../common/alloc.h"
#include "../../proto/msg.h"

#define CONDUCTOR_BOXES 3
#define CONDUCTOR_PIECES 16u

static void
conductor_abort(const char *why)
{
    fprintf(stderr, "fuzz_conductor: %s\n", why);
    abort();
}

static void
conductor_check(const struct swarm *s)
{
    uint32_t p, held = 0;
    size_t k;

    for (p = 0; p < s->pieces; p++) {
        if (s->fed_to[p] >= s->n || s->fed_to[p] < -1)
            conductor_abort("a piece held by no box of the swarm");
        held += s->fed_to[p] >= 0;
    }
    if (held != s->nfed)
        conductor_abort("the count of pieces held is off");
    if (s->nagain > s->again_cap)
        conductor_abort("more pieces to put again than room");
    for (k = 0; k < s->nagain; k++)
        if (s->again[k] >= s->pieces)
            conductor_abort("a piece to put again that is none");
    for (int i = 0; i < s->n; i++) {
        const struct sbox *b = &s->b[i];

        if (b->ninflight < 0 || b->ninflight > SWARM_WINDOW)
            conductor_abort("pieces in flight out of their room");
        for (int j = 0; j < b->ninflight; j++)
            if (b->inflight[j] >= s->pieces)
                conductor_abort("a piece in flight that is none");
        if (b->port > 65535 || b->st < SB_LINKING || b->st > SB_FAILED)
            conductor_abort("a box's port or state out of range");
        if (memchr(b->addr, '\0', sizeof(b->addr)) == NULL ||
            memchr(b->at, '\0', sizeof(b->at)) == NULL ||
            memchr(b->dest, '\0', sizeof(b->dest)) == NULL)
            conductor_abort("a box's string is not terminated");
        if (b->outoff > b->outlen)
            conductor_abort("a box's output ran past its end");
    }
}

int
fuzz_conductor_one(const uint8_t *p, size_t n)
{
    static char *labels[CONDUCTOR_BOXES] = { "box1", "box2", "box3" };
    static const char *rels[] = { "big.bin", "small/a", "small/b" };
    struct cli_box boxes[CONDUCTOR_BOXES];
    struct swarm_rel files[3];
    struct sfile sf[2];
    struct spart parts[2];
    struct sbox b[CONDUCTOR_BOXES];
    uint32_t again[2 * CONDUCTOR_PIECES];
    int16_t fed_to[CONDUCTOR_PIECES];
    uint8_t bad[CONDUCTOR_PIECES];
    uint8_t cur[CONDUCTOR_BOXES][3];
    struct swarm s;
    struct cli cli;
    char line[8192];
    size_t i, at = 0;
    int r = 0;

    memset(&cli, 0, sizeof(cli));
    memset(boxes, 0, sizeof(boxes));
    memset(&s, 0, sizeof(s));
    memset(b, 0, sizeof(b));
    memset(cur, 0, sizeof(cur));
    memset(bad, 0, sizeof(bad));
    for (i = 0; i < CONDUCTOR_BOXES; i++) {
        boxes[i].label = labels[i];
        b[i].sock = -1;
        b[i].cur = cur[i];
    }
    cli.boxes = boxes;
    cli.nboxes = CONDUCTOR_BOXES;
    cli.quiet = 1;
    s.cli = &cli;
    s.n = CONDUCTOR_BOXES;
    s.b = b;
    manifest_init(&s.mf);
    for (i = 0; i < 3 && r == 0; i++) {
        r = manifest_add_listed(&s.mf, rels[i], ENTRY_FILE, 0644,
            i == 0 ? 15u << 18 : 1000, 1700000000, 5);
        files[i].rel = (char *)rels[i];
        files[i].id = i;
    }
    if (r != 0)
        conductor_abort("no manifest");
    s.files = files;
    s.nfiles = 3;
    memset(sf, 0, sizeof(sf));
    sf[0].k = 0;
    sf[0].count = 15;
    sf[1].k = SIZE_MAX;
    sf[1].first = 15;
    sf[1].count = 1;
    sf[1].nparts = 2;
    parts[0].k = 1;
    parts[0].off = 0;
    parts[1].k = 2;
    parts[1].off = 1000;
    s.sf = sf;
    s.nsf = 2;
    s.parts = parts;
    s.nparts = 2;
    s.pieces = CONDUCTOR_PIECES;
    s.piece_len = 1u << 18;
    s.window = SWARM_WINDOW;
    s.again = again;
    s.again_cap = sizeof(again) / sizeof(again[0]);
    for (i = 0; i < CONDUCTOR_PIECES; i++)
        fed_to[i] = -1;
    s.fed_to = fed_to;
    s.bad = bad;
    /* Box 1 logs in, box 2's helper is about to say hello, box 3 takes
     * pieces. */
    b[0].st = SB_LINKING;
    b[1].st = SB_HELLO;
    b[2].st = SB_STARTED;
    for (i = 0; i < 4; i++)
        b[2].inflight[b[2].ninflight++] = (uint32_t)(8 + i);
    while (at < n) {
        const uint8_t *nl = memchr(p + at, '\n', n - at);
        size_t len = (nl != NULL ? (size_t)(nl - p) : n) - at;
        int box = p[at] % CONDUCTOR_BOXES;

        if (len > 0 && len - 1 < sizeof(line)) {
            memcpy(line, p + at + 1, len - 1);
            line[len - 1] = '\0';
            swarm_line(&s, box, line);
            conductor_check(&s);
        }
        at += len + 1;
    }
    for (i = 0; i < CONDUCTOR_BOXES; i++)
        xfree(b[i].out);
    manifest_cleanup(&s.mf);
    return 0;
}
