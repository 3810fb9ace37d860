/*
 * volume.h: what the volume writer (volwrite.h) and reader (volread.h)
 * share: names and limits.
 *
 * A set of volumes is NAME.00001.tar.zst, NAME.00002.tar.zst, ... with
 * NAME.manifest (proto/vmanifest.h) beside them. Each volume is an
 * independent POSIX tar archive (proto/tar.h) in one zstd frame, at most
 * the volume size long (compressed). A file too large for a volume is cut
 * into pieces, one per volume it spans; a piece is a tar member named
 *
 *     dir/base.ferry-piece-00001
 *
 * so that stock tools extract the pieces side by side and `cat
 * base.ferry-piece-*` joins them in order (five digits: at most
 * VOLUME_MAX_COUNT volumes, so the names sort). Its pax header says which
 * file, offset and piece it is (see tar.h).
 */
#ifndef FERRY_ENGINE_VOLUME_H
#define FERRY_ENGINE_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"
#include "../../proto/msg_vol.h"

#define VOLUME_DEFAULT_SIZE (UINT64_C(2) << 30)
/* Small volumes are for tests; below this the headers alone crowd out
 * the data. */
#define VOLUME_MIN_SIZE (UINT64_C(64) << 10)
/* The largest: what a set's volume may be to travel as it is (KEEP_VOL
 * of push --keep-volumes) and what a transfer's volumes may be (VOL_OPTS),
 * so that a set ferry pack makes can be stored on a box as it is. */
#define VOLUME_MAX_SIZE PROTO_MAX_VOLUME_SIZE
/* Five digits in names, so a glob lists them in order. */
#define VOLUME_MAX_COUNT 99999u
#define VOLUME_SUFFIX ".tar.zst"
#define VOLUME_MANIFEST_SUFFIX ".manifest"
#define VOLUME_PIECE_MARK ".ferry-piece-"
/* Longest volume or piece name these functions make. */
#define VOLUME_NAME_MAX 4200u

/* "NAME.00001.tar.zst" into out. Returns 0 or FERRY_ERR_TOO_LARGE. */
int volume_file_name(const char *name, uint32_t index, char *out,
    size_t cap) FERRY_WUR;

/*
 * The member name of piece index (from 1) of the file at path (len
 * bytes) into out (NUL-terminated, *outlen bytes). When the last
 * component with the mark would pass 255 bytes, the base is cut (at a
 * UTF-8 boundary) and a hash of the whole path added, so that names stay
 * valid and distinct. Returns 0 or FERRY_ERR_TOO_LARGE.
 */
int volume_piece_name(const char *path, size_t len, uint32_t index,
    char *out, size_t cap, size_t *outlen) FERRY_WUR;

#endif
