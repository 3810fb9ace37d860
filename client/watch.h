/*
 * watch.h: `ferry pull --watch TIME host:DIR LOCAL`: keeps pulling the
 * checkpoints that appear or change in DIR until interrupted.
 *
 * Each look lists DIR through the agent (OPEN LIST, with READINESS). Its
 * top-level entries are the units: a file, or a directory of shards
 * taken as one; temporary names (dot names, *.tmp, *.part, tmp-*...)
 * never are. A unit is ready when, with --ready-marker NAME, its marker
 * exists (a directory's DIR/E/NAME, a file's sibling E + NAME). Without
 * one, never while a process holds one of its files open for writing
 * (BUSY) or one is a known format cut short (TORN: said once when no
 * writer is left); a file then is ready when the agent saw no writer
 * (IDLE) or it is a known format and whole (WHOLE), else once it looked
 * the same (size, newest mtime, entries) settle + 1 looks in a row; a
 * directory when a framework's own marker says it is complete
 * (torch.distributed.checkpoint's .metadata beside its *.distcp files,
 * a *.safetensors.index.json beside sharded *-of-*.safetensors,
 * DeepSpeed's top-level `latest` written after global_stepN/), else
 * once it looked the same settle + 1 looks in a row. A unit pulled
 * again because it changed after its pull is said as `changed`.
 * Ready units are pulled newest first, each by a pull of its own (so
 * delta, --basis and resume work as for any pull). A directory is pulled
 * into LOCAL/.E.ferry-watch and renamed into place when complete, so it
 * appears all at once. A unit whose pull fails is tried again once it is
 * stable again; after WATCH_MAX_FAILURES failures in a row it is given
 * up with a hint. A look that cannot reach the host is reported and the
 * next one tries again.
 *
 * The watch writes, replaces and removes in LOCAL only what it put there
 * itself: each unit it pulled (and each staging directory it made) is
 * recorded in LOCAL/.ferry/owned with what identifies it (engine/owned.h).
 * A unit whose name is taken here by anything else, or by a pulled unit
 * changed since, is left alone (said once) and not pulled. With --keep N
 * only the N newest are pulled, and once a pull has succeeded the pulled
 * units of the record beyond the N newest, unchanged, are removed: a
 * name the box lists is never enough.
 */
#ifndef FERRY_CLIENT_WATCH_H
#define FERRY_CLIENT_WATCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define WATCH_MAX_FAILURES 3

struct manifest;

/* A top-level entry of DIR, across looks. */
struct watch_unit {
    char *name;
    int is_dir;
    int seen;              /* in the last look */
    int has_marker;
    int is_marker;         /* a file's marker itself: never pulled */
    uint64_t size, count;  /* a directory's: over what it holds */
    int64_t mtime_sec;     /* the newest within */
    uint32_t mtime_nsec;
    unsigned stable;       /* looks in a row that found it the same */
    int pulled;            /* this version is here */
    int here;              /* a version was pulled, not removed since */
    unsigned failures;     /* pulls in a row that failed */
    int given_up;
    int left_alone;        /* its name here is not ours: said once */
    /* What this look found of it (the agent's ENTRY_S_* states over its
     * files, when the listing had them): */
    uint8_t state;         /* ENTRY_S_BUSY or TORN if any file is; WHOLE
                              or IDLE if every file is */
    int temp;              /* a temporary name: never a unit */
    int waits_marker;      /* a framework's own marker is not there yet */
    int framework_done;    /* ... it is: the directory is complete */
    int incomplete_said;   /* cut short with no writer: said once */
    uint32_t nfiles, nwhole, nidle;  /* private: the look's counts */
};

struct watch_table {
    struct watch_unit *v;  /* read-only: by name (strcmp) */
    size_t n, cap;
    const char *marker;    /* --ready-marker, or NULL */
    /* Set (by a signal handler), it ends a look under way; or NULL. */
    const volatile sig_atomic_t *stop;
    uint64_t compares;     /* read-only: names compared by the looks */
    /* For the next look: the listing's ENTRY_S_* state of each entry,
     * by id (borrowed), or NULL when the listing had none. */
    const uint8_t *states;
    /* Looks in a row a unit nobody can judge must look the same (1:
     * two looks). */
    unsigned settle;
};

/* Takes a look: the listing of DIR (paths relative to it), in
 * O(n log n) comparisons of names for n entries and units known,
 * whatever the names and their order. A unit the look did not find is
 * kept only while a copy of it is here or it was given up, so the table
 * holds no more than the listing and those. FERRY_ERR_INTERRUPTED when
 * *stop was set (the table is then as it was), or NOMEM. */
int watch_look(struct watch_table *t, const struct manifest *m) FERRY_WUR;
/* The units ready to pull, newest first, at most keep (0: all) of the
 * newest units that could ever be (so older ones wait for nothing), in
 * out (room for t->n). Returns how many. */
size_t watch_ready(const struct watch_table *t, int keep,
    struct watch_unit **out);
/* 1 once for a version of u that is a known format cut short and that
 * no writer holds (seen so twice): it will not be pulled as it is. */
int watch_unit_incomplete(struct watch_unit *u);
/* A pull of u failed: it waits to be stable again; 1 when that was the
 * WATCH_MAX_FAILURES-th failure in a row and u is given up. */
int watch_failed(struct watch_unit *u);
/* The basis of a file unit's pull: of the file units here (pulled, not
 * removed since) of u's extension and a size within a factor of two of
 * u's, the newest; or NULL. A checkpoint's names tell its age poorly
 * (step-1000.pt is as alike to step-2000.pt as to step-3000.pt, and
 * timestamps share more digits with older ones across a minute), while
 * the last one saved is the one most alike in content. */
const struct watch_unit *watch_basis_unit(const struct watch_table *t,
    const struct watch_unit *u);
/* A pull of u succeeded. */
void watch_pulled(struct watch_unit *u);
void watch_table_cleanup(struct watch_table *t);
/* The unit named name, or NULL (a binary search: the table is kept in
 * name order). */
struct watch_unit *watch_unit_find(struct watch_table *t, const char *name);
/* qsort order of units (struct watch_unit *): newest first, then by
 * name. */
int watch_unit_cmp(const void *a, const void *b);

/* Runs until interrupted (then returns EXIT_INTERRUPTED) or a usage
 * error. */
int watch_main(const struct cli *cli);

#endif
