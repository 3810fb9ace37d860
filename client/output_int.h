/*
 * output_int.h: what the pieces of the output share (private to
 * client/output*.c; the interface is output.h). output.c prints the
 * events and the progress line; output_summary.c the summary.
 */
#ifndef FERRY_CLIENT_OUTPUT_INT_H
#define FERRY_CLIENT_OUTPUT_INT_H

#include <stdint.h>

#include "output.h"

/* output.c */

/* The monotonic clock the output times the run by, in ns. */
uint64_t output_now_ns(void);
/* Clears the progress line so a message can take its place. Caller holds
 * the lock. */
void output_clear_line(struct output *o);
/* The box's tally its summary fills, or NULL (output_box). */
extern struct output_tally *output_box_tally;

#endif
