/*
 * swarm_int.h: between the swarm's conductor (swarm.c, in the client's
 * parent process) and a box's link (swarm_link.c, a child of it).
 */
#ifndef FERRY_CLIENT_SWARM_INT_H
#define FERRY_CLIENT_SWARM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "swarm.h"

/* The staging folder, in the destination: DEST/.ferry-swarm/<id>/ holds
 * the transfer's files (below) and the helper's content. */
#define SWARM_STAGE_DIR ".ferry-swarm"
/* A staging folder of another transfer is removed after this many days
 * untouched. */
#define SWARM_STAGE_DAYS 7

/* The files a link puts in the staging folder: the torrent, the box's
 * certificate and its key. */
enum { SWARM_F_TORRENT, SWARM_F_CERT, SWARM_F_KEY, SWARM_FILES };
extern const char *const swarm_file_names[SWARM_FILES];

/* Exit statuses of the link's scripts on the box. */
#define SWARM_ST_NODEST 94
#define SWARM_ST_WRITE 95

/* Files a box's listing may name; beyond, they count as missing there. */
#define SWARM_LIST_MAX 4000000u
/* The largest file `go` carries (the torrent's bound). */
#define SWARM_GO_MAX (80u * 1024 * 1024)

struct swarm_blob {
    const void *p;
    size_t len;
};

/* The machine types a helper is built for. */
enum swarm_arch { SWARM_X86_64, SWARM_AARCH64, SWARM_NARCH };

/* One build of the helper. */
struct swarm_build {
    const uint8_t *bin;          /* its bytes; NULL: no build */
    size_t len;
    const uint8_t *gz;           /* the same through gzip (NULL: none) */
    size_t gz_len;
    char hash[65];
};

/* What every link takes from the conductor (a child's copy of memory). */
struct swarm_job {
    struct swarm_build helper[SWARM_NARCH];
    char id[17];                 /* the staging folder's name */
};

/* The conductor's steps (swarm_cond.h), apart for the unit tests, which
 * play the links' lines: swarm_new scans cli's sources (NULL: no swarm);
 * swarm_line takes one line of a box's link; once every box has listed
 * its DEST, swarm_prepare makes the torrent and queues `go`; swarm_step
 * is the round swarm_tick takes after a poll: it starts and feeds the
 * boxes, and stops them when it is time; swarm_test_out takes what was
 * queued for a box; swarm_test_probe sets the probe's seconds. */
struct swarm *swarm_new(struct cli *cli, volatile sig_atomic_t *stop);
int swarm_prepare(struct swarm *s) FERRY_WUR;
void swarm_line(struct swarm *s, int box, char *line);
void swarm_step(struct swarm *s);
void swarm_free(struct swarm *s);
void swarm_test_probe(struct swarm *s, double probe_s);
const uint8_t *swarm_test_out(struct swarm *s, int box, size_t *len);
int swarm_test_failed(const struct swarm *s, int box);
uint32_t swarm_test_pieces(const struct swarm *s);

/* In a forked child: box's link on sock, as swarm_link.c says; with
 * clean_only, it logs in, removes the staging folder, says `cleaned`
 * and ends. Never returns. */
void swarm_link_main(struct cli *cli, const struct swarm_job *job, int box,
    int sock, int clean_only) __attribute__((noreturn));

#endif
