/*
 * pack.h: `ferry pack` and what it shares with `ferry unpack` (unpack.h):
 * their command line and output.
 *
 *     ferry pack [options] SRC... OUTDIR     SRC into OUTDIR/NAME.*
 *     ferry unpack [options] OUTDIR DEST     and back
 *
 * pack writes NAME.00001.tar.zst... (engine/volume/volwrite.h), NAME.manifest
 * (proto/vmanifest.h) and SHA256SUMS (lines for other names that were
 * there are kept) in OUTDIR. Each volume is written under a temporary name
 * and renamed when it is complete and synced; the manifest and SHA256SUMS
 * come last, so a set with its manifest is whole. A failed or interrupted
 * pack removes what it made.
 */
#ifndef FERRY_CLIENT_PACK_H
#define FERRY_CLIENT_PACK_H

#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../engine/volume/volwrite.h"
#include "output.h"

struct pack_args {
    char **words;            /* operands (borrowed from argv) */
    int nwords;
    const char *name;        /* --name */
    uint64_t volume_size;    /* --volume-size */
    int json, quiet, verbose;
    char err[2048];          /* what is wrong with the command line */
};

/*
 * Parses argv (argv[1] is the command): options anywhere, "--" ends them.
 * Returns 0, or an error with a->err saying what is wrong (pack_usage
 * says it).
 */
int pack_args_parse(struct pack_args *a, int argc, char **argv) FERRY_WUR;
void pack_args_cleanup(struct pack_args *a);
/* A usage error, a->err: its line on stderr and, with --json, its error
 * event and a summary, as every end has. Frees a; returns EXIT_USAGE. */
int pack_usage(struct pack_args *a);

/*
 * The set's name: given (--name) if not NULL, else the base name of the
 * source src, which must pass volset_name_ok. *name points at given or
 * at a new string in *owned (the caller frees it). Returns 0, an error,
 * or FERRY_ERR_USAGE after one line on stderr.
 */
int pack_name_for(const char *given, const char *src, const char **name,
    char **owned) FERRY_WUR;

/*
 * The packing loop of `ferry pack` and of `ferry push --keep-volumes`:
 * sources walked (manifest_walk) into a volume writer, whatever its sink
 * does with the bytes (files in OUTDIR, or frames to the agent). A file
 * that cannot be read is reported and left out (source_failed); one that
 * changes while it is packed stops the walk (FERRY_ERR_CHANGED).
 */
struct pack_src {
    char **srcs;             /* public: the sources (borrowed) */
    int nsrcs;               /* public */
    struct output *out;      /* public: where problems are said */
    struct xfer *x;          /* public: ... through its events */
    dev_t skip_dev;          /* public: a directory not to pack (the */
    ino_t skip_ino;          /*   output), skip_ino 0: none */
    volatile int *stop;      /* public: set to stop the walk, or NULL */
    int sink_err;            /* public: the sink has said its error */
    struct volw *w;          /* read-only: the last walk's writer */
    int source_failed;       /* read-only: something was left out */
};

/* Walks ps->srcs into a new writer (options vo, sink) and finishes it;
 * the previous walk's writer is freed first. Returns 0 or the error that
 * stopped the walk (said on ps->out, unless the sink said it). The
 * caller frees ps->w with volw_free. */
int pack_src_walk(struct pack_src *ps, const struct volw_opts *vo,
    const struct volw_sink *sink) FERRY_WUR;

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
    const char *verb;        /* "packed", "unpacked" or "stored" */
    int exit_code;
    uint32_t volumes;
    uint64_t files, bytes, compressed;
    double elapsed;
    const char *error;       /* NULL when ok */
    /* A push with --keep-volumes: where the set went, its volumes sent
     * and those the other side had already. */
    const char *where;
    uint32_t sent, kept;
    uint64_t bytes_sent;
};
void pack_summary(struct output *o, const struct pack_summary *s);

/* Set by SIGINT and SIGTERM once pack_signals ran. */
extern volatile int pack_interrupted;
void pack_signals(void);

/* ferry pack: returns an exit status (exitcode.h). */
int pack_main(int argc, char **argv);

#endif
