/*
 * swarm_line.h: the line protocol by which the agent drives ferry-swarm.
 *
 * In C, apart from the C++ helper, so that the unit tests (and a fuzz
 * target) can reach every refusal. The helper reads its commands from a
 * pipe through a swarm_reader, which bounds what it holds, and parses
 * each line into a struct swarm_line; docs/SWARM.md lists the commands.
 *
 * One command, `put INDEX LEN`, is followed by LEN raw bytes, not a line:
 * once the reader has returned it, it hands out those bytes through
 * swarm_reader_take, newlines and NULs included, and only then lines
 * again. A `put` header it refuses leaves the rest of the input without
 * framing, so the reader answers SWARM_UNFRAMED and takes nothing more.
 *
 *     struct swarm_reader rd;
 *     swarm_reader_init(&rd);
 *     n = read(0, buf, swarm_reader_room(&rd));
 *     swarm_reader_push(&rd, buf, n);
 *     for (;;) {
 *         if (swarm_reader_payload(&rd) > 0) {
 *             k = swarm_reader_take(&rd, piece + got, left);
 *             ...                 (0: wait for more input)
 *         } else if ((r = swarm_reader_next(&rd, &line, err, sizeof(err)))
 *             == 0) {
 *             break;              (wait for more input)
 *         } else {
 *             r > 0 ? run(&line) : r == SWARM_UNFRAMED ? die(err) : say(err);
 *         }
 *     }
 */
#ifndef FERRY_SWARM_SWARM_LINE_H
#define FERRY_SWARM_SWARM_LINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A line, its newline included. */
#define SWARM_MAX_LINE 4096
/* What a reader holds: a few lines' worth beyond one read. */
#define SWARM_READER_CAP (64 * 1024)
/* Peers one helper is told of: the boxes of one transfer. */
#define SWARM_MAX_PEERS 1024
#define SWARM_MAX_OFFSET (1LL << 62)
/* libtorrent's rate limits are ints. */
#define SWARM_MAX_RATE INT32_MAX
/* A put's payload: one piece, and the helper takes pieces of at most
 * 16 MiB (it holds each in memory until libtorrent has hashed it). */
#define SWARM_MAX_PUT (16 * 1024 * 1024)
/* swarm_reader_next: a refused `put` header, after which the input
 * cannot be framed. */
#define SWARM_UNFRAMED (-2)

enum swarm_cmd {
    SWARM_TORRENT = 1, /* torrent PATH */
    SWARM_CERT,        /* cert PATH: this box's certificate (PEM) */
    SWARM_KEY,         /* key PATH: its private key (PEM) */
    SWARM_SAVE,        /* save PATH: the folder to fill */
    SWARM_LISTEN,      /* listen ADDR:PORT (port 0: any) */
    SWARM_START,       /* start */
    SWARM_PEER,        /* peer ADDR:PORT */
    SWARM_PIECE,       /* piece INDEX OFFSET PATH */
    SWARM_STOP,        /* stop */
    SWARM_LIMIT,       /* limit UP DOWN: bytes/s among boxes, 0: none */
    SWARM_ALLOW,       /* allow ADDR: may connect, is not dialled */
    SWARM_PUT,         /* put INDEX LEN, then LEN bytes of payload */
    SWARM_LINK,        /* link INDEX PATH: the file whose first piece is
                          INDEX is served from PATH, never written */
    SWARM_PART,        /* part FIRST OFFSET LEN PATH: bytes OFFSET.. of
                          the bundle whose first piece is FIRST are the
                          file PATH of the content, made once it is whole */
    SWARM_FROM,        /* from FIRST OFFSET LEN PATH: those bytes are
                          the box's file PATH; a bundle given whole this
                          way is made from them before start */
};

struct swarm_line {
    enum swarm_cmd cmd;
    char ip[48];           /* listen, peer, allow: numeric, checked */
    int port;
    int64_t piece;         /* piece, put, link, part, from: 0..INT32_MAX */
    int64_t offset;        /* piece, part, from: 0..SWARM_MAX_OFFSET */
    int64_t len;           /* put: 1..SWARM_MAX_PUT; part, from:
                              1..SWARM_MAX_OFFSET */
    int64_t up, down;      /* limit: 0..SWARM_MAX_RATE */
    char arg[SWARM_MAX_LINE]; /* PATH, NUL-terminated */
    size_t arg_len;
};

/*
 * Parses one line (without its newline). Returns 0, or -1 with a reason
 * of one line in err: an unknown command, a missing or extra word, a
 * number out of range, an address that is not numeric IPv4 or bracketed
 * IPv6, a path that is empty or holds a control character.
 */
int swarm_line_parse(const char *s, size_t n, struct swarm_line *l,
    char *err, size_t errlen);

/* 1 if p (a path inside a torrent, '/' between components) is relative
 * and has no empty, "." or ".." component: safe beneath a folder. */
int swarm_path_ok(const char *p);

struct swarm_reader {
    char in[SWARM_READER_CAP]; /* private */
    size_t len;                /* private */
    int skipping;              /* private: inside an over-long line (2: one
                                  that began as a put) */
    int unframed;              /* private: a put header was refused */
    size_t payload;            /* private: put bytes not yet taken */
};

void swarm_reader_init(struct swarm_reader *r);
/* How many bytes push may take now (0 once unframed). */
size_t swarm_reader_room(const struct swarm_reader *r);
/* Takes n <= swarm_reader_room() bytes; more are dropped. */
void swarm_reader_push(struct swarm_reader *r, const void *p, size_t n);
/*
 * The next whole line: 1 and *l, 0 when none is whole yet or a put's
 * payload is being taken, -1 and err for a line refused (malformed, or
 * longer than SWARM_MAX_LINE: such a line is dropped as it comes and
 * refused once, at its end). After a put line (1, l->cmd == SWARM_PUT)
 * the next l->len bytes are payload, for swarm_reader_take. A put line
 * refused (or an over-long line that began with "put ") gives
 * SWARM_UNFRAMED and err; every later call gives it again.
 */
int swarm_reader_next(struct swarm_reader *r, struct swarm_line *l,
    char *err, size_t errlen);
/* Payload bytes of the last put not yet taken (0: lines again). */
size_t swarm_reader_payload(const struct swarm_reader *r);
/* Copies up to max payload bytes, of those held, to dst; returns how
 * many (0 when none is held yet). Never reads past the payload. */
size_t swarm_reader_take(struct swarm_reader *r, void *dst, size_t max);
/* 1 if nothing can be had without more input: no payload byte held
 * while one is owed, no whole line otherwise (a partial one may wait). */
int swarm_reader_idle(const struct swarm_reader *r);

#ifdef __cplusplus
}
#endif

#endif
