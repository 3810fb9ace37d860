/*
 * boxes.h: a push to many boxes, or a pull from many (cli.boxes): one
 * transfer per box, several at once.
 *
 * Each box's transfer is the one-box command, run in a child process of
 * its own with its own connections, retries and resume, so that a box
 * that fails or hangs costs the others nothing and one box's state (its
 * libuv loop, its signals, its SSH sessions) never meets another's. The
 * parent only starts them (at most --boxes-at-once at a time), puts each
 * box's host before its lines, and ends with a line per box and the
 * overall status. That one-box command is the data plane: a plane that
 * spreads data among the boxes can take its place behind boxes_main,
 * which stays the client's part (what to send where, and the verdict).
 */
#ifndef FERRY_CLIENT_BOXES_H
#define FERRY_CLIENT_BOXES_H

#include "cli.h"

/* The one-box command for cli (main.c's): returns an exit status. */
typedef int boxes_one_fn(const struct cli *cli);

/*
 * Runs cli's boxes, each by one() in a child process in which cli names
 * that box alone (remote, and for a pull its sources and DEST/HOST).
 * A pull makes DEST first if it is missing (its parent must be there, or
 * --mkpath). Returns EXIT_OK when every box succeeded, EXIT_BOXES when
 * one or more failed (each box's status is in its line and its "box" event),
 * EXIT_INTERRUPTED after Ctrl-C or SIGTERM, or the status of what
 * stopped it before any box began.
 */
int boxes_main(struct cli *cli, boxes_one_fn *one);

/*
 * The overall status of boxes whose statuses are codes[0..n): EXIT_OK
 * when all are 0, EXIT_INTERRUPTED when interrupted, else EXIT_BOXES
 * (all failing alike too: one rule a script can test).
 */
int boxes_status(const int *codes, int n, int interrupted);

#endif
