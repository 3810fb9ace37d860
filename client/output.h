/*
 * output.h: what the user sees: problems on stderr, a progress line when
 * stderr is a terminal, NDJSON events on stdout with --json, and the
 * summary.
 *
 * Every name that reaches the terminal is escaped (text_escape): names come
 * from the other side and may hold escape sequences.
 */
#ifndef FERRY_CLIENT_OUTPUT_H
#define FERRY_CLIENT_OUTPUT_H

#include <pthread.h>
#include <stdint.h>

#include <uv.h>

#include "../common/buf.h"
#include "../engine/xfer.h"

struct output {
    int json;           /* public: NDJSON on stdout */
    int progress;       /* public: draw the progress line */
    int quiet;          /* public */
    int verbose;        /* public */
    /* public: put before paths of each side in messages, separator
     * included, e.g. "box:/ws/" for the remote destination; NULL names
     * paths as they are. */
    const char *source_prefix;
    const char *dest_prefix;
    /* private */
    struct xfer *x;
    pthread_mutex_t lock;
    uint64_t t0_ns;
    uv_timer_t timer;
    int timer_on, line_drawn;
    uint64_t last_bytes, last_ns;
    double rate;
};

/* Wires the output to x's events. */
void output_init(struct output *o, struct xfer *x);
/* Starts the progress timer on loop (if progress is on). */
void output_start(struct output *o, uv_loop_t *loop);
void output_stop(struct output *o);

/* One line on stderr (and an "error" event with --json), for problems
 * that end the run. where names the host or path. */
void output_fatal(struct output *o, const char *where, int code,
    const char *text);
/* Any other message on stderr, e.g. the interrupt hint. */
void output_note(struct output *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A lost connection about to be retried: a line on stderr and a "retry"
 * event. */
void output_retry(struct output *o, int attempt, int max, unsigned delay_s,
    const char *why);

struct output_summary {
    int ok;
    int exit_code;
    uint64_t bytes_wire_out;
    uint64_t bytes_wire_in;
    unsigned streams;
    const char *error;  /* NULL when ok */
};

void output_summary(struct output *o, const struct output_summary *s);

/*
 * Other commands' events (pack, unpack): a JSON object built in b (from
 * buf_init), one field at a time; output_json_end prints it as one line
 * on stdout when every step went well (r: the first error) and frees b.
 */
int output_json_begin(struct buf *b, const char *event);
int output_json_str(struct buf *b, const char *key, const char *val);
int output_json_num(struct buf *b, const char *key, uint64_t val);
void output_json_end(struct output *o, struct buf *b, int r);

#endif
