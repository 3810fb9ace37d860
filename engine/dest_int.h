/*
 * dest_int.h: what the files of the destination share (private to
 * engine/dest*.c; the interface is dest.h).
 *
 *   dest.c        the destination's life, its entries, the batch of
 *                 staged files and its commit
 *   dest_open.c   resolving DEST, its state directory, salt and lock
 *   dest_state.c  the state of a destination seen from outside: whether
 *                 a transfer holds it, what it keeps, `ferry clean`
 *   dest_adopt.c  --adopt DIR: staged files taken into place
 */
#ifndef FERRY_ENGINE_DEST_INT_H
#define FERRY_ENGINE_DEST_INT_H

#include "dest.h"
#include "dest_write.h"

struct dest {
    struct xfer *x;
    char *path;            /* as the user wrote it */
    uint32_t flags;
    uint8_t transfer_id[16];
    char *root;            /* resolved destination directory */
    char *made;            /* the highest directory of root that
                              dest_resolve made, or NULL */
    char *rename;          /* new name of a single file, or NULL */
    char *basis;           /* --basis FILE, or NULL */
    char *adopt;           /* --adopt DIR, or NULL */
    int adopt_synced;      /* what DIR held was made durable (Linux) */
    size_t adopt_unsynced; /* adopted since the last sync */
    int basis_dirfd;       /* dest_set_basis_dir, or -1 */
    int rootfd, statefd, partfd, lockfd;
    uint8_t salt[16];
    int resolved;
    int state_checked;     /* looked for an existing state directory */
    int state_err;         /* the state directory cannot be used: why */
    struct dest_writer w;  /* its batch's owners: struct dest_staged */
    struct dest_write_meta *dirs;
    size_t ndirs, dirs_cap;
};

/* What the lock file open at fd says of its holder: its first line
 * ("pid N, transfer X"), or "" if it cannot be read. */
void dest_lock_holder(int fd, char *out, size_t n);

/* --adopt: DIR/path takes the place of name in pfd when it holds what m
 * says; 1 if it did (dest_adopt.c). */
int dest_adopt(struct dest *d, const struct msg_entry *m, const char *path,
    uint32_t block_size, int pfd, const char *name);

#endif
