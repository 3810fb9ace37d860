/*
 * boxes_report.c: how each of many boxes ended, and how all did
 * (boxes_int.h): "box" events and the overall "summary" with --json,
 * else a line per box and one for all on stderr.
 */
#include "boxes_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/buf.h"
#include "../engine/xfer.h"
#include "exitcode.h"

/* The counts of a box, or of all, into the event in b. */
static int
boxes_json_counts(struct buf *b, const struct output_tally *t)
{
    const struct {
        const char *key;
        uint64_t v;
    } f[] = {
        { "files_total", t->files_total }, { "files_sent", t->files_sent },
        { "files_skipped", t->files_skipped },
        { "files_failed", t->files_failed }, { "files_left", t->files_left },
        { "bytes_payload", t->bytes_payload },
        { "bytes_wire", t->bytes_wire }, { "bytes_wire_in", t->bytes_wire_in },
    };
    size_t i;
    int r = 0;

    for (i = 0; i < sizeof(f) / sizeof(f[0]) && r == 0; i++)
        r = output_json_num(b, f[i].key, f[i].v);
    return r;
}

void
boxes_report_box(struct boxes_run *br, int box)
{
    const struct output_tally *t = &br->tally[box];
    const char *label = br->cli->boxes[box].label;
    int code = br->codes[box];
    struct buf b;
    int r;

    if (br->cli->json) {
        buf_init(&b, 1 << 14);
        r = output_json_begin(&b, "box");
        if (r == 0)
            r = output_json_str(&b, "host", label);
        if (r == 0)
            r = output_json_num(&b, "exit_code", (uint64_t)code);
        if (r == 0)
            r = output_json_raw(&b, "ok", code == EXIT_OK ? "true" :
                "false");
        if (r == 0)
            r = boxes_json_counts(&b, t);
        if (r == 0 && t->error[0] != '\0')
            r = output_json_str(&b, "error", t->error);
        output_json_line(&b, r);
        return;
    }
    /* A box that ended without its own summary (it could not start, was
     * never begun, or crashed) says why here; the others said it
     * themselves, and all have their line at the end. */
    boxes_progress_clear(br);
    if (!t->set && code != EXIT_OK)
        fprintf(stderr, "ferry: %s: %s (exit %d)\n", label, t->error[0] ?
            t->error : "failed", code);
}

void
boxes_progress(struct boxes_run *br)
{
    uint64_t done = 0, total = 0;
    double rate = 0, now = boxes_now();
    char d[32], t[32], r[32], f[32];
    int i, ended = 0, failed = 0, begun = 0;

    if (now - br->drawn_at < 1.0)
        return;
    br->drawn_at = now;
    for (i = 0; i < br->nboxes; i++) {
        const struct output_tally *tl = &br->tally[i];

        if (br->codes[i] >= 0) {
            ended++;
            failed += br->codes[i] != EXIT_OK;
            done += tl->bytes_total;
            total += tl->bytes_total;
            continue;
        }
        begun += tl->live_total > 0;
        done += tl->live_done;
        total += tl->live_total;
        rate += tl->live_rate;
    }
    text_bytes((double)done, d, sizeof(d));
    text_bytes((double)total, t, sizeof(t));
    text_bytes(rate, r, sizeof(r));
    snprintf(f, sizeof(f), ", %d failed", failed);
    fprintf(stderr, "\r\033[K%d/%d boxes done%s, %d moving: %3.0f%%, %s "
        "of %s, %s/s", ended, br->nboxes, failed > 0 ? f : "", begun,
        total > 0 ? 100.0 * (double)done / (double)total : 0.0, d, t, r);
    fflush(stderr);
    br->drawn = 1;
}

void
boxes_progress_clear(struct boxes_run *br)
{
    if (br->drawn) {
        fputs("\r\033[K", stderr);
        br->drawn = 0;
        /* The line comes back at the next tick, not at once after each
         * line of a box's. */
        br->drawn_at = boxes_now();
    }
}

/* The boxes' counts added up. */
static void
boxes_add(const struct boxes_run *br, struct output_tally *sum, int *ok)
{
    int i;

    memset(sum, 0, sizeof(*sum));
    *ok = 0;
    for (i = 0; i < br->nboxes; i++) {
        const struct output_tally *t = &br->tally[i];

        *ok += br->codes[i] == EXIT_OK;
        sum->files_total += t->files_total;
        sum->files_sent += t->files_sent;
        sum->files_skipped += t->files_skipped;
        sum->files_failed += t->files_failed;
        sum->files_left += t->files_left;
        sum->bytes_payload += t->bytes_payload;
        sum->bytes_wire += t->bytes_wire;
        sum->bytes_wire_in += t->bytes_wire_in;
    }
}

/* text without its leading "LABEL: " (the line names the box already). */
static const char *
boxes_unnamed(const char *text, const char *label)
{
    size_t n = strlen(label);

    if (strncmp(text, label, n) == 0 && text[n] == ':' && text[n + 1] == ' ')
        return text + n + 2;
    return text;
}

/* One box's line of the end: "ferry: box1: ok, 12 sent, 0 up to date
 * (3.1 MiB)" or "ferry: box3: failed (exit 3): why". */
static void
boxes_line(const struct boxes_run *br, int box)
{
    const struct output_tally *t = &br->tally[box];
    const char *label = br->cli->boxes[box].label;
    const char *verb = br->cli->cmd == CMD_PULL ? "received" : "sent";
    char num[32];

    text_bytes((double)t->bytes_payload, num, sizeof(num));
    if (br->codes[box] == EXIT_OK && t->set)
        fprintf(stderr, "ferry: %s: ok, %" PRIu64 " %s (%s), %" PRIu64
            " up to date\n", label, t->files_sent, verb, num,
            t->files_skipped);
    else if (br->codes[box] == EXIT_OK)
        fprintf(stderr, "ferry: %s: ok\n", label);
    else
        fprintf(stderr, "ferry: %s: failed (exit %d)%s%s\n", label,
            br->codes[box], t->error[0] ? ": " : "", boxes_unnamed(t->error,
            label));
}

void
boxes_report_end(struct boxes_run *br, int code)
{
    struct output_tally sum;
    double elapsed = boxes_now() - br->t0;
    char tmp[32];
    struct buf b;
    int ok, i, r;

    boxes_add(br, &sum, &ok);
    if (br->cli->json) {
        buf_init(&b, 1 << 14);
        r = output_json_begin(&b, "summary");
        if (r == 0)
            r = output_json_raw(&b, "ok", code == EXIT_OK ? "true" :
                "false");
        if (r == 0)
            r = output_json_num(&b, "exit_code", (uint64_t)code);
        if (r == 0)
            r = output_json_num(&b, "boxes", (uint64_t)br->nboxes);
        if (r == 0)
            r = output_json_num(&b, "boxes_ok", (uint64_t)ok);
        if (r == 0)
            r = output_json_num(&b, "boxes_failed",
                (uint64_t)(br->nboxes - ok));
        if (r == 0)
            r = boxes_json_counts(&b, &sum);
        snprintf(tmp, sizeof(tmp), "%.3f", elapsed);
        if (r == 0)
            r = output_json_raw(&b, "elapsed_s", tmp);
        if (r == 0)
            r = output_json_command(&b);
        output_json_line(&b, r);
        return;
    }
    if (br->cli->quiet)
        return;
    for (i = 0; i < br->nboxes; i++)
        boxes_line(br, i);
    fprintf(stderr, "ferry: %d boxes: %d ok, %d failed, in %.1f s%s\n",
        br->nboxes, ok, br->nboxes - ok, elapsed, ok < br->nboxes &&
        code != EXIT_INTERRUPTED ? "; the same command again completes "
        "them" : "");
}
