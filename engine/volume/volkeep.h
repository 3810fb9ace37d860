/*
 * volkeep.h: the agent's side of `ferry push --keep-volumes` (OPEN KEEP):
 * a set of volumes stored as files in a directory, as `ferry pack` run
 * there would leave them (engine/volume/volset.h), instead of unpacked.
 *
 *     client                              agent
 *     OPEN KEEP [DIR, NAME]     ->
 *                               <-        OPEN_OK
 *                               <-        KEEP_VOL ... (volumes held), END
 *     VOL_BEGIN k, VOL_DATA ..., KEEP_VOL k     (a volume sent)
 *     KEEP_VOL k                                (or: keep the one held)
 *     KEEP_MAN ...              ->        (the manifest, any time)
 *     KEEP_DONE                 ->
 *                               <-        END
 *
 * First the agent reads back the volumes of NAME it holds (1, 2, ...
 * up to the first missing one) and says each one's size and SHA-256,
 * a step at a time. Then every volume of the set comes in order, either
 * sent (written under a temporary name, synced, and renamed only once
 * its size and SHA-256 are the ones the client says) or confirmed, when
 * the one held is the one the client made again. KEEP_DONE commits the
 * manifest, records the volumes this run committed as ferry's
 * (DIR/.ferry/owned, engine/owned.h), removes the volumes of NAME past
 * the set's last that ferry committed and nobody changed since (never a
 * file of such a name it did not write), and writes SHA256SUMS. A connection lost before that leaves the finished volumes
 * (a re-run keeps them) and removes the temporary files. The checks are
 * listed in proto/PROTOCOL.md, Kept volumes; any failure is fatal.
 */
#ifndef FERRY_ENGINE_VOLKEEP_H
#define FERRY_ENGINE_VOLKEEP_H

#include "../../common/err.h"
#include "../conn.h"
#include "../xfer.h"

struct volkeep;

/*
 * Opens the set name (checked with volset_name_ok) in the directory dir
 * (made if missing, its missing parents only with OPEN_F_MKPATH in flags:
 * dest_mkdir; the caller confined the path), and locks it against another
 * KEEP there. Returns 0 with the role in *out, or an error with its
 * message in x's local_error.
 */
int volkeep_new(const char *dir, const char *name, uint32_t flags,
    struct xfer *x, struct volkeep **out) FERRY_WUR;

/* Closes the files and removes temporary ones left by an unfinished
 * run. NULL is a no-op. */
void volkeep_free(struct volkeep *k);

/* A volume's bound, PROTO_MAX_VOLUME_SIZE unless a test lowers it to
 * reach it without a terabyte. */
void volkeep_set_max_volume(struct volkeep *k, uint64_t bytes);

/* conn_step_fn of the role. */
int volkeep_step(void *role, struct conn_step *st) FERRY_WUR;

#endif
