/*
 * session_int.h: what the parts of the session share (session.c: the
 * handshake and transfers; session_ops.c: the agent's other operations,
 * FILTERS, LIST and DELETE, and the scan of a pull's sources). Not for
 * use outside engine/session*.c.
 */
#ifndef FERRY_ENGINE_SESSION_INT_H
#define FERRY_ENGINE_SESSION_INT_H

#include "../proto/frame.h"
#include "../proto/msg.h"
#include "../proto/msg_space.h"
#include "listing.h"
#include "manifest.h"
#include "session.h"
#include "side.h"

enum sess_state {
    S_CLIENT_START, S_CLIENT_WAIT_HELLO, S_CLIENT_WAIT_OPEN_OK,
    S_CLIENT_WAIT_SPACE,
    S_AGENT_WAIT_HELLO, S_AGENT_WAIT_OPEN,
    S_RUN, S_DONE
};

/* What the streams of one transfer share on the agent: made by the
 * session that opened it, borrowed by the ones that joined. */
struct session_shared {
    uint8_t transfer_id[16];
    uint8_t transfer_key[32];
    uint32_t flags, block_size;
    struct side *side;       /* the agent's end, and its streams' roles */
    struct session_scan *scan;  /* a live pull's scan, or NULL */
    uint32_t streams_used;   /* a bit per stream number */
};

struct session {
    enum sess_state state;
    struct xfer *x;
    struct session_open open;
    const struct session_policy *pol;
    conn_step_fn *role_step;
    void *role;
    unsigned stream;
    /* The agent's: the transfer it opened (owned) or joined. */
    struct session_shared *shared;
    int owns_shared;
    int has_role;            /* its stream's role is the side's */
    struct listing *own_listing;
    struct probe_answer *own_probe;
    struct volkeep *own_keep;
    char peer_software[PROTO_MAX_SOFTWARE + 1];
    uint64_t peer_caps;
    int error_sent;
    /* The agent's: rules from FILTERS (NULL until one came). */
    struct filter *filter;
    /* The agent's: what SPACE will say after OPEN_OK. */
    struct msg_space space;
    /* The agent's: another transfer holds a push's destination (its
     * lock file's line), said in BUSY before SPACE. */
    int busy;
    char holder[PROTO_MAX_HOLDER + 1];
};

/* A path of OPEN through the program's policy: the local path (new) in
 * *out, or the policy's refusal as the session's error. */
int session_resolve(struct session *s, uint8_t op, const struct msg_str *p,
    char **out) FERRY_WUR;

/* Local paths to scan (owned). */
struct session_paths;

struct session_paths {
    char **v;
    size_t n, cap;
};

void session_paths_free(struct session_paths *l);
/* Appends to l the local paths of one source of a pull or LIST,
 * expanding a glob (see PROTOCOL.md, OPEN). A glob that matches nothing
 * fails a pull; for a LIST it returns 1, with nothing appended. */
int session_source_paths(struct session *s, uint8_t op,
    const struct msg_str *p, struct session_paths *l) FERRY_WUR;
/* 0 when no two paths of l would land on one top-level name of the
 * destination (manifest_top_clash), else FERRY_ERR_USAGE naming them
 * (xfer_fail). */
int session_top_clash(struct session *s, const struct session_paths *l)
    FERRY_WUR;
/* Scans each path of l into mf. */
int session_scan_paths(struct manifest *mf, const struct session_paths *l)
    FERRY_WUR;

/* KEEP: the set paths[1] stored in the directory paths[0] (volkeep.h),
 * answered with OPEN_OK. */
int session_agent_keep(struct session *s, const struct msg_open *o,
    struct buf *out) FERRY_WUR;

/* The space of the file system of path, or of its nearest existing
 * parent, into m->avail and m->size (zeros if none is found). */
void session_fs_space(const char *path, struct msg_space *m);
/* Notes whether another transfer holds the destination path (dest_busy),
 * for a client that knows BUSY. */
void session_note_busy(struct session *s, const char *path);
/* BUSY to out if session_note_busy found the destination held. */
int session_send_busy(const struct session *s, struct buf *out) FERRY_WUR;

/* The rules a scan of sources (a pull's, a LIST's) applies to mf: those
 * of FILTERS, and the sources' ignore files for a client with
 * PROTO_CAP_IGNORE. */
void session_set_filter(struct session *s, struct manifest *mf);

/* The agent's FILTERS (once, before OPEN), LIST and DELETE. */
int session_agent_filters(struct session *s, const struct frame *f)
    FERRY_WUR;
int session_agent_list(struct session *s, const struct msg_open *o,
    struct buf *out) FERRY_WUR;
int session_agent_delete(struct session *s, const struct msg_open *o,
    struct buf *out) FERRY_WUR;

#endif
