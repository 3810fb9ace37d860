/*
 * pack.h: `ferry pack` and what it shares with `ferry unpack` (unpack.h):
 * their command line and output.
 *
 *     ferry pack [options] SRC... OUTDIR     SRC into OUTDIR/NAME.*
 *     ferry unpack [options] OUTDIR DEST     and back
 *
 * pack writes NAME.00001.tar.zst... (engine/volwrite.h), NAME.manifest
 * (proto/vmanifest.h) and SHA256SUMS (lines for other names that were
 * there are kept) in OUTDIR. Each volume is written under a temporary name
 * and renamed when it is complete and synced; the manifest and SHA256SUMS
 * come last, so a set with its manifest is whole. A failed or interrupted
 * pack removes what it made.
 */
#ifndef FERRY_CLIENT_PACK_H
#define FERRY_CLIENT_PACK_H

#include <stdint.h>

#include "../common/err.h"
#include "output.h"

struct pack_args {
    char **words;            /* operands (borrowed from argv) */
    int nwords;
    const char *name;        /* --name */
    uint64_t volume_size;    /* --volume-size */
    int json, quiet, verbose;
};

/*
 * Parses argv (argv[1] is the command): options anywhere, "--" ends them.
 * Returns 0, or FERRY_ERR_USAGE after printing one line that says what is
 * wrong.
 */
int pack_args_parse(struct pack_args *a, int argc, char **argv) FERRY_WUR;
void pack_args_cleanup(struct pack_args *a);

/* A name for a set: no '/', not starting with '.', at most 200 bytes of
 * printable text. Returns 0 or FERRY_ERR_USAGE. */
int pack_name_ok(const char *name) FERRY_WUR;

/* Output set up from the arguments (x holds the event wiring). */
void pack_output_init(struct output *o, struct xfer *x,
    const struct pack_args *a);

/* The "volume" event of one volume written or read (with --json), or a
 * line with -v. */
void pack_volume_event(struct output *o, const char *action,
    const char *file, uint32_t index, uint64_t bytes, uint64_t members,
    const char *sha256);

/* The summary event or line. */
struct pack_summary {
    const char *verb;        /* "packed" or "unpacked" */
    int exit_code;
    uint32_t volumes;
    uint64_t files, bytes, compressed;
    double elapsed;
    const char *error;       /* NULL when ok */
};
void pack_summary(struct output *o, const struct pack_summary *s);

/* Set by SIGINT and SIGTERM once pack_signals ran. */
extern volatile int pack_interrupted;
void pack_signals(void);

/* ferry pack: returns an exit status (exitcode.h). */
int pack_main(int argc, char **argv);

#endif
