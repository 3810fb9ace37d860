/*
 * volset.h: a set of volumes as files in a directory, the way `ferry
 * pack` leaves them and a push with --keep-volumes stores them on the
 * box (engine/volume/volkeep.h): NAME.00001.tar.zst..., NAME.manifest and
 * SHA256SUMS. Both write through these functions, so the two sets are
 * the same files made by the same rules:
 *
 *  - each file is written under a temporary name (".FILE.tmp") and
 *    committed to its final name only when complete and checked, by the
 *    rules of the writer of destinations (dest_write_one), so no partial
 *    file ever has a final name;
 *  - names are made here from a checked set name, beneath the
 *    directory's fd, never through a symlink;
 *  - SHA256SUMS keeps the lines of other sets, drops this set's old
 *    ones, and comes last.
 */
#ifndef FERRY_ENGINE_VOLSET_H
#define FERRY_ENGINE_VOLSET_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"
#include "volume.h"

#define VOLSET_SUMS "SHA256SUMS"
/* Longest temporary name volset_tmp_name makes. */
#define VOLSET_TMP_MAX (VOLUME_NAME_MAX + 8)

/* A name for a set: no '/', not starting with '.' or '-', at most 200
 * bytes, no control characters. Returns 0 or FERRY_ERR_USAGE. */
int volset_name_ok(const char *name) FERRY_WUR;

/* ".FILE.tmp", the temporary name of file, into out. */
void volset_tmp_name(const char *file, char *out, size_t cap);

/* Creates tmp in dirfd for writing (0644 less the umask): whatever had
 * the name is removed first and the file made anew (O_EXCL, no
 * symlink followed), so a link planted there is never written through.
 * Returns the fd or -errno. */
int volset_create(int dirfd, const char *tmp) FERRY_WUR;

/*
 * Writes dirfd's SHA256SUMS (through a temporary file, committed): the
 * lines there of other names, then "SUM  NAME.0000k.tar.zst" for k in
 * 1..n (sums[k], lowercase hex) and the manifest's line. Returns 0 or
 * an error; SHA256SUMS is then as it was.
 */
int volset_sums(int dirfd, const char *name, const char (*sums)[65],
    uint32_t n, const char *manifest_sum) FERRY_WUR;

#endif
