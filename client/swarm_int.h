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

/* What every link takes from the conductor (a child's copy of memory). */
struct swarm_job {
    const uint8_t *helper;       /* bin/ferry-swarm's bytes */
    size_t helper_len;
    char helper_hash[65];
    char id[17];                 /* the staging folder's name */
};

/* In a forked child: box's link on sock, as swarm_link.c says. Never
 * returns. */
void swarm_link_main(struct cli *cli, const struct swarm_job *job, int box,
    int sock) __attribute__((noreturn));

#endif
