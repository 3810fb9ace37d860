/*
 * mirror.h: --dry-run and --delete.
 *
 * A dry run scans the sources (a push) or has the agent list them with
 * the pull's filters (OPEN LIST), lists the destination the same way
 * (the agent for a push, the local tree for a pull), and prints what the
 * transfer would send (size and mtime differ, as the receiver decides),
 * skip, and with --delete remove; it writes nothing anywhere, not even
 * the state directory.
 *
 * --delete runs the transfer first; only when it succeeded are the two
 * trees compared again, and what the destination has and the sources do
 * not is removed beneath the destination: by the agent (OPEN DELETE,
 * engine/prune.c) for a push, here for a pull. Entries the filters
 * exclude are kept unless --delete-excluded. A transfer of one file
 * into a name that is not a directory deletes nothing.
 */
#ifndef FERRY_CLIENT_MIRROR_H
#define FERRY_CLIENT_MIRROR_H

#include <stdint.h>

#include "cli.h"
#include "run.h"

/* Runs a push or pull with --dry-run or --delete. Returns an exit
 * status (README.md). */
int mirror_main(const struct cli *cli);

/* The bytes a push or pull of o would write (the files not up to date,
 * less what the destination keeps of them), as a dry run finds them,
 * without a word; a push's sources are scanned, unless scanned (its
 * run's scan) is given. Returns an exit status. */
struct manifest;
int mirror_space_need(const struct cli *cli, const struct run_opts *o,
    const struct manifest *scanned, uint64_t *need);

/* The agent's listing of the pull source path (with the pull's filters)
 * into *out (manifest_init'ed here; the caller cleans it up). Problems
 * are reported as the command's are. With states, the listing asks for
 * each file's readiness (OPEN_F_READINESS) and *states gets an ENTRY_S_*
 * byte per entry id (freed by the caller; NULL if there were none).
 * Returns an exit status. */
int mirror_list(const struct cli *cli, const char *path, struct manifest *out,
    uint8_t **states);

/* What a comparison of two trees found: files and bytes to send, up to
 * date, and to delete. */
struct mirror_counts {
    uint64_t nsend, bsend, nskip, bskip, ndel, bdel;
};

/* Compares the sources src of cli's push or pull of o (paths relative to
 * the destination) with the destination's entries dst, as a dry run does
 * but without a word, deleting as del_mode says (0: nothing; else
 * cli->delete's 1, or 2 for --delete-excluded): the counts into *n, the
 * topmost paths to delete into *del (xfree it; the paths are kept in
 * store), *ndel of them. Returns 0 or an error. Exported for the tests;
 * otherwise its file compares through mirror_compare. */
struct arena;
int mirror_diff(const struct cli *cli, const struct run_opts *o, int del_mode,
    const struct manifest *src, const struct manifest *dst,
    struct arena *store, struct mirror_counts *n, const char ***del,
    size_t *ndel);

/* Paths in one OPEN DELETE (the agent's limit is PROTO_MAX_OPEN_PATHS,
 * the destination included). */
#define MIRROR_DELETE_BATCH 1000

#endif
