/*
 * swarm_cond.h: the conductor's state, between its files (all in the
 * client's parent process):
 *
 *   swarm.c       the conversation with each box's helper: its lines,
 *                 the probe, the pieces put to it
 *   swarm_make.c  what a swarm starts from: the sources' scan, the
 *                 torrent and the CA, the helper's bytes, each box's go
 *   swarm_run.c   its life beside the boxes' transfers: the links, the
 *                 rounds the boxes' loop steps, the end, the clean
 */
#ifndef FERRY_CLIENT_SWARM_COND_H
#define FERRY_CLIENT_SWARM_COND_H

#include <sys/types.h>

#include "../common/buf.h"
#include "../common/hash.h"
#include "../engine/manifest.h"
#include "torrent.h"
#include "swarm_int.h"

/* Pieces put to a box and not yet hashed there: the helper holds up to
 * 32 and 64 MiB (docs/SWARM.md). Enough that a file a piece (small
 * files) does not wait a round trip each, and at most SWARM_WINDOW_BYTES
 * of big ones. */
#define SWARM_WINDOW 24
#define SWARM_WINDOW_BYTES (32u << 20)
/* A box's own window starts here and follows its rate: SWARM_WINDOW_MIN
 * more than it hashed in the last one to two SWARM_RATE_S, so a box
 * slow to receive is not put pieces the others then wait for. */
#define SWARM_WINDOW_MIN 2
#define SWARM_RATE_S 1.0
/* Seconds for a box to log in, take the helper and listen. */
#define SWARM_LINK_S 60
/* Seconds for every box to reach another once told its peers: one that
 * has none by then cannot (a firewall, another network) and is left to
 * its own transfer. */
#define SWARM_PROBE_S 10
/* Seconds without a piece moving anywhere before the rest is left to the
 * boxes' own transfers. */
#define SWARM_STALL_S 30
/* Seconds for the helpers to stop, and a link to clean up. */
#define SWARM_STOP_S 15
/* Below this much data the swarm's start costs more than it saves. */
#define SWARM_MIN_BYTES (1u << 20)
/* The largest helper file read (a bound, not a size it has). */
#define SWARM_HELPER_MAX (256u << 20)
/* Pieces per torrent the piece length aims at: 512 KiB pieces for 1
 * GiB. Each piece costs every box events (its HAVE to each peer, the
 * picker's choice, its hash check) that add up when pieces trickle in at
 * the uplink's pace; with 2,048 pieces instead of 8,192 for 1 GiB the
 * fan-out bench's swarm row spent about 5% less CPU (docs/SWARM.md). */
#define SWARM_PIECES_AIM 2048u
#define SWARM_MIN_PIECE (256u * 1024)

/* The piece length for bytes of data to spread: SWARM_MIN_PIECE doubled
 * until the torrent has at most SWARM_PIECES_AIM pieces. */
static inline uint32_t
swarm_piece_len(uint64_t bytes)
{
    uint32_t len = SWARM_MIN_PIECE;

    while (len < TORRENT_MAX_PIECE && bytes / len > SWARM_PIECES_AIM)
        len *= 2;
    return len;
}

/* The content's folder under the staging folder (the torrent's name),
 * and in it the folder of the sources' files and that of the bundles. */
#define SWARM_CONTENT "content"
#define SWARM_FILES_DIR "files"
#define SWARM_BUNDLES_DIR "bundles"
/* Files below this size travel in bundles of at most SWARM_BUNDLE_BYTES:
 * libtorrent's work grows with a torrent's file count (docs/SWARM.md,
 * "Bundles"). */
#define SWARM_BUNDLE_BELOW (1u << 20)
#define SWARM_BUNDLE_BYTES (64u << 20)
/* The CA's life: longer than any push. */
#define SWARM_CA_HOURS 48

/* The swarm's course, as the boxes' loop sees it. */
enum swarm_phase {
    SW_LISTING,     /* the links log in and list; no torrent yet */
    SW_SPREADING,   /* pieces go out; a box that is done may commit */
    SW_STOPPING,    /* every helper told to stop */
    SW_OVER,        /* every helper stopped, or left */
};

enum sbox_state {
    SB_LINKING,     /* logging in, putting the helper there */
    SB_LISTING,     /* saying what its destination holds */
    SB_LISTED,      /* waits for the others' lists */
    SB_HELLO,       /* its helper runs: told the torrent and to start */
    SB_LISTENING,   /* listens and said what it holds: waits for the
                       others */
    SB_STARTED,     /* told its peers: takes pieces */
    SB_DONE,        /* holds every piece: its transfer may start, and it
                       seeds on for the others */
    SB_STOPPING,    /* told to stop */
    SB_ENDED,       /* its helper ended; the link waits for clean */
    SB_FAILED,
};

struct sbox {
    pid_t pid;
    int sock;
    enum sbox_state st;
    int staged;             /* its helper started on the staging folder */
    int whole;              /* it said done: it holds what it lacked */
    int made;               /* its staging folder may exist */
    char addr[80];
    unsigned port;
    char at[1024];          /* the staging folder, as the box names it */
    char in[8192];          /* a line on its way */
    size_t inlen;
    uint8_t *out;           /* lines and a piece on their way */
    size_t outcap, outlen, outoff;
    uint32_t inflight[SWARM_WINDOW];
    int ninflight;
    uint32_t hashed_now, hashed_prev;   /* this SWARM_RATE_S, the last */
    double rate_at;         /* when this SWARM_RATE_S began */
    uint64_t have, down;
    unsigned peers;         /* connected, as it last said */
    double since;           /* when the state began */
    char dest[1024];        /* the destination as the box names it */
    uint8_t *cur;           /* per s->files: current there already */
};

/* A file of the torrent: one of the sources, or a bundle of small ones
 * end to end (its parts). */
struct sfile {
    size_t k;               /* in s->files; SIZE_MAX for a bundle */
    uint64_t len;
    uint32_t first, count;  /* its pieces */
    size_t part0, nparts;   /* a bundle's, in s->parts */
};

struct spart {
    size_t k;               /* in s->files */
    uint64_t off;           /* in its bundle */
};

/* A file of the sources worth sharing (regular, not empty), by path. */
struct swarm_rel {
    char *rel;
    size_t id;              /* in the manifest */
    int hashed;             /* hash is the file's (the torrent's pass) */
    struct hash128 hash;
};

struct swarm {
    struct cli *cli;
    int n;
    struct sbox *b;
    struct swarm_job job;
    struct swarm_rel *files;   /* sorted by path */
    size_t nfiles;
    char **certs, **keys;
    size_t *cert_len, *key_len;
    struct manifest mf;
    int have_mf;
    struct torrent *t;
    struct buf tbytes;
    uint8_t *helper_mem[2 * SWARM_NARCH];  /* the builds' bytes */
    uint32_t pieces, piece_len;
    int window;             /* pieces in flight to one box, at most */
    int all_put;
    struct sfile *sf;
    size_t nsf;
    struct spart *parts;    /* the bundles', bundle by bundle */
    size_t nparts;
    struct sfile *bundles;  /* as made, before the torrent's order */
    size_t nbundles;
    uint32_t next;          /* the next piece never put */
    uint32_t *again;        /* pieces to put again (a box was lost) */
    size_t nagain, again_cap;
    int16_t *fed_to;        /* the box that holds a piece first, or -1 */
    uint8_t *bad;
    uint32_t nfed, nbad;
    uint64_t bytes, put_bytes;
    double t0, moved_at, started_at;
    int probed;             /* every box reached another, or was left */
    double probe_s;         /* SWARM_PROBE_S */
    char adopt[256];
    enum swarm_phase phase;
    void (*before_note)(void *);    /* swarm_before_note */
    void *note_ctx;
    volatile sig_atomic_t *stop;
};

/* swarm.c */
double swarm_now(void);
void swarm_note(const struct swarm *s, const char *fmt, ...)
    FERRY_PRINTF(2, 3);
/* A problem of box's (of every box's when box < 0) that costs time, not
 * data (a box that gets its data directly, a peer banned): a line, or
 * with --json a warning event, so that either output shows it. */
void swarm_warn(const struct swarm *s, int box, const char *fmt, ...)
    FERRY_PRINTF(3, 4);
void swarm_problem(const struct cli *cli, int box, const char *msg);
void swarm_lose(struct swarm *s, int i, const char *why);
int swarm_send(struct sbox *b, const char *fmt, ...) FERRY_PRINTF(2, 3);
void swarm_feed(struct swarm *s);
int swarm_all_at(const struct swarm *s, enum sbox_state st, int *n);
void swarm_start_all(struct swarm *s);
int swarm_busy(const struct swarm *s);
int swarm_window(struct sbox *b, int cap, double now, uint32_t hashed);
int swarm_rel_cmp(const void *a, const void *b);
ssize_t swarm_file_of(const struct swarm *s, const char *rel);

/* swarm_run.c: box i's link, forked. */
int swarm_fork_link(struct swarm *s, int i, int clean_only);

#endif
