/*
 * output.h: what the user sees: problems on stderr, a progress line when
 * stderr is a terminal, NDJSON events on stdout with --json (each one as
 * docs/events.schema.json has it), and the summary.
 *
 * Every text that reaches the terminal is escaped (text.h): names come
 * from the other side and may hold escape sequences, and so may the error
 * texts it sends.
 */
#ifndef FERRY_CLIENT_OUTPUT_H
#define FERRY_CLIENT_OUTPUT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../common/buf.h"
#include "../engine/xfer.h"

#define OUTPUT_NAME_MAX 4096

struct output {
    int json;           /* public: NDJSON on stdout */
    int progress;       /* public: draw the progress line */
    int quiet;          /* public */
    int verbose;        /* public */
    int pull;           /* public: files are received, not sent */
    /* public: put before paths of each side in messages, e.g. "box:/ws"
     * for the remote destination (one '/' is put between); NULL names
     * paths as they are. */
    const char *source_prefix;
    const char *dest_prefix;
    /* public, for a pull: the remote sources as written (borrowed), so
     * that a source's problem is named by where it is on the host
     * ("box:/ws/ckpt/step.pt"), not by its place in the destination. */
    char *const *source_paths;
    int nsource_paths;
    /* private */
    struct xfer *x;
    pthread_mutex_t lock;
    uint64_t t0_ns;
    uv_timer_t timer;
    int timer_on, line_drawn;
    uint64_t last_bytes, last_ns;  /* bytes_moved at the last tick */
    double rate;
    char current[OUTPUT_NAME_MAX];  /* under lock; "" when none */
};

/* Wires the output to x's events. */
void output_init(struct output *o, struct xfer *x);
/* Starts the progress timer on loop (if progress is on). */
void output_start(struct output *o, uv_loop_t *loop);
/* The line while the sources are scanned before anything moves (the
 * space check waits for the tree's total): what was found so far. Drawn
 * only where the progress line would be; output_stop or any message
 * clears it. */
void output_scanning(struct output *o, uint64_t entries, uint64_t bytes);
void output_stop(struct output *o);

/* One line on stderr and an "error" event with "fatal": true, for the
 * problem that ends the run. where names the host or path, or is NULL
 * when text names it already. Call output_summary after it. */
void output_fatal(struct output *o, const char *where, int code,
    const char *text);
/* A fatal error before a transfer began (the command line, a local
 * status): output_fatal, then a summary with nothing done, on an output
 * of its own. Returns exit_code. */
int output_fatal_early(int json, int quiet, const char *where, int code,
    const char *text, int exit_code);
/* Any other message on stderr, e.g. the bootstrap note. */
void output_note(struct output *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Another transfer holds the destination where (as the user names it):
 * a "busy" event (path, holder) and, with waits, a line saying that this
 * one waits for it (the wait itself is dest.h's). holder is the lock
 * file's line from the side that read it ("pid N, transfer X"), escaped
 * here. */
void output_busy(struct output *o, const char *where, const char *holder,
    int waits);

/* A lost connection about to be retried: a line on stderr and a "retry"
 * event. give_up_s: seconds without progress left before ferry gives up
 * (reported in the event), or -1 when only --retries limits it. */
struct output_retry {
    int attempt;        /* 1, 2, ...: failures in a row without progress */
    int max;            /* --retries, -1 when unlimited */
    double delay_s;     /* until the next try (it may come sooner) */
    double give_up_s;
    const char *why;
};

void output_retry(struct output *o, const struct output_retry *r);

/* The version of the summary event's fields (README, "Output"). */
#define OUTPUT_SCHEMA 2

struct output_summary {
    int ok;
    int exit_code;
    int began;            /* the transfer got under way: after a fatal
                           * error the line still says what it did */
    uint64_t bytes_wire_out;
    uint64_t bytes_wire_in;
    unsigned streams;     /* most connections used at once */
    int retries;          /* reconnects */
    double moving_s;      /* time connected, for the rate; 0: elapsed */
    const char *error;    /* NULL when ok */
};

/* A stream added to a transfer or retired from it ("added", "retired"),
 * with why: a JSON "stream" event, and a line with -v. */
void output_stream(struct output *o, const char *action, unsigned stream,
    unsigned active, const char *why);

/*
 * The counts of the summary, one rule for every end: files_total = sent +
 * up to date + failed + left, where left is what a run that stopped (a
 * fatal error, a lost link it gave up on, Ctrl-C) never finished.
 */
void output_summary(struct output *o, const struct output_summary *s);

/*
 * After the summary of a transfer that stopped: one line saying what the
 * destination dest (as the user names it) keeps for a resume, that the
 * same command resumes it and `ferry clean` frees it; when nothing is
 * known to be kept, only that running again resumes (if resumable: a
 * lost link). Nothing with -q or --json (the summary has kept_files and
 * kept_bytes).
 */
void output_resume(struct output *o, const char *dest, int resumable);

/*
 * The progress line, as a pure function (unit-tested). It fits in cols
 * columns (less one: a line that fills the last column wraps on some
 * terminals): fields are dropped when there is no room, the current name
 * first, then the file count, the rate, the total, the ETA and the bytes
 * done; the percentage stays. The current name (escaped) gets what room
 * is left, shortened in the middle, or is left out below 8 columns.
 */
struct output_progress {
    uint64_t done, total;       /* bytes */
    uint64_t files, ftotal;
    int growing;                /* a scan still adds to the totals */
    double rate;                /* bytes per second, 0 when unknown */
    const char *current;        /* NULL or "" when none */
};

/* Exported for the tests; otherwise used only in its file. */
char *output_progress_line(const struct output_progress *p, size_t cols,
    char *out, size_t outlen);

/*
 * Other commands' events (pack, unpack): a JSON object built in b (from
 * buf_init), one field at a time; output_json_end prints it as one line
 * on stdout when every step went well (r: the first error) and frees b.
 */
int output_json_begin(struct buf *b, const char *event);
int output_json_str(struct buf *b, const char *key, const char *val);
int output_json_num(struct buf *b, const char *key, uint64_t val);
/* val as it is: a JSON literal (true, -3, 1.5). */
int output_json_raw(struct buf *b, const char *key, const char *val);
/* ,"command":NAME, the command output_command named; nothing before
 * one is known. Every summary ends with it. */
int output_json_command(struct buf *b);
void output_json_end(struct output *o, struct buf *b, int r);
/* output_json_end for a line outside any transfer's output (the parent
 * of many boxes, one thread). */
void output_json_line(struct buf *b, int r);

/* The command this process runs ("push", "status", "pack"), named by
 * every summary. */
void output_command(const char *name);

/*
 * One box of many (boxes.h): what its run's summary said, for the line
 * and the "box" event its parent prints. It lives in memory the parent
 * shares with the child that runs the box.
 */
struct output_tally {
    int set;                  /* a summary was given */
    int exit_code;
    uint64_t files_total, files_sent, files_skipped, files_failed;
    uint64_t files_left, bytes_total, bytes_payload, bytes_wire;
    uint64_t bytes_wire_in;
    char error[512];          /* the fatal error's text, "" when none */
    /* While it runs, with progress on: what its progress line would say
     * (written by the child, read by the parent to draw one line for
     * all; a torn read costs one wrong tick). */
    volatile uint64_t live_done, live_total;
    volatile double live_rate;
};

/* This process runs one box of many: every JSON event it prints names
 * host ("host"), its summary fills *tally (NULL: none), and its progress
 * line, if on, is not drawn but kept in tally's live fields. host is
 * borrowed for the life of the process. */
void output_box(const char *host, struct output_tally *tally);

#endif
