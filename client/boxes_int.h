/*
 * boxes_int.h: what the pieces of many boxes share (private to
 * client/boxes*.c; the interface is boxes.h). boxes.c runs the boxes;
 * boxes_report.c says how each ended and how all did.
 */
#ifndef FERRY_CLIENT_BOXES_INT_H
#define FERRY_CLIENT_BOXES_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "../common/text.h"
#include "boxes.h"
#include "output.h"

/* Children at once, whatever --boxes-at-once says (each holds pipes and
 * its own connections). */
#define BOXES_SLOTS_MAX CLI_MAX_BOXES

struct boxes_run;

/* The longest line of a box's stdout kept whole. */
#define BOXES_LINE_MAX (1u << 20)

/* A child running one box. */
struct boxes_slot {
    struct boxes_run *br;
    pid_t pid;             /* 0: none running */
    int box;               /* its index in cli.boxes */
    int out, err;          /* the read ends of its stdout and stderr */
    const char *label;
    int json;
    char *line;            /* stdout's unfinished line */
    size_t len, cap;
    struct text_lines errl;  /* stderr's lines */
};

struct boxes_run {
    struct cli *cli;
    boxes_one_fn *one;
    struct swarm *swarm;     /* the push's swarm, NULL if none */
    int nboxes;
    struct output_tally *tally;  /* per box, shared with its child */
    int *codes;                  /* per box: its status, -1 until known */
    char **dests;                /* per box of a pull: DEST/HOST */
    struct boxes_slot *slots;
    int nslots, running;
    uint8_t *begun;              /* per box: its transfer was started */
    int nbegun;
    double t0;
    int progress;                /* draw one line for all boxes */
    int drawn;                   /* ... and it is on the screen */
    double drawn_at;
};

/* boxes.c */

/* The monotonic clock, in seconds. */
double boxes_now(void);

/* boxes_report.c */

/* Says how box ended: a "box" event (host, exit_code, ok, the counts,
 * error), and with a failure one line naming the host. */
void boxes_report_box(struct boxes_run *br, int box);
/* The progress line of all boxes, at most once a second (boxes begun,
 * done and failed; their bytes, rate and share done), and its removal
 * before any other line. */
void boxes_progress(struct boxes_run *br);
void boxes_progress_clear(struct boxes_run *br);
/* The end: a line per box and one for all, or the "summary" event with
 * the boxes' counts and code (the process's exit status). */
void boxes_report_end(struct boxes_run *br, int code);

#endif
