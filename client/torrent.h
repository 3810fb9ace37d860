/*
 * torrent.h: makes private BitTorrent v2 torrents (BEP 52), for fan-out.
 *
 * The client runs no BitTorrent itself, but it makes the torrent that the
 * boxes share, from the same pass over the bytes that fills SHA256SUMS:
 * the torrent's merkle roots are then the client's word on the content,
 * and the certificate it carries (ssl-cert) its word on who may take part.
 * The boxes' helper (swarm/ferry-swarm.cpp) loads it with libtorrent.
 *
 * What is made: v2 only (no v1 "pieces", so no SHA-1), "private" set, no
 * tracker, an optional "ssl-cert" in the info dict, so that the info-hash
 * commits to the per-transfer CA. Each file has a merkle tree of SHA-256
 * over 16 KiB blocks; files of more than one piece get a piece layer.
 *
 *     struct torrent *t;
 *     if ((r = torrent_new(&t, "data", 262144)) != 0) goto out;
 *     r = torrent_file_begin(t, "sub/a.bin");
 *     r = torrent_file_update(t, p, n);   // as the bytes are read
 *     r = torrent_file_end(t);
 *     ...                                 // every file, any order
 *     r = torrent_set_cert(t, pem, pem_len);
 *     r = torrent_finish(t, &out, info_hash);
 *     torrent_free(t);
 *
 * Layout: the torrent's files live under its name, as libtorrent saves
 * them (SAVE_PATH/NAME/sub/a.bin). A torrent of exactly one file given
 * without a folder (a path with no '/') is written in single-file form,
 * as libtorrent makes it: its name becomes the file's name, and libtorrent
 * saves it at SAVE_PATH/FILE. Either way the content is at
 * SAVE_PATH/<torrent_name()>.
 *
 * Order: the files may be added in any order; the torrent lists them
 * sorted by path component, and pieces are numbered in that order, each
 * file starting on a piece (torrent_file_at maps the pieces back).
 *
 * Hashing uses OpenSSL (the CPU's SHA instructions): this module is the
 * client's, and is left out of the agent, which links no OpenSSL.
 */
#ifndef FERRY_COMMON_TORRENT_H
#define FERRY_COMMON_TORRENT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/err.h"

/* BEP 52's block: the leaves of every file's merkle tree. */
#define TORRENT_BLOCK 16384u
/* Piece lengths: a power of two in this range. libtorrent takes up to
 * 128 MiB; above 16 MiB a piece is too coarse to spread among boxes. */
#define TORRENT_MIN_PIECE TORRENT_BLOCK
#define TORRENT_MAX_PIECE (16u * 1024 * 1024)
/* Bounds on what one torrent holds, so that neither the maker nor a
 * helper that loads the result (swarm/ferry-swarm.cpp, which sets the
 * same limits when it loads) can be made to use unbounded memory. */
#define TORRENT_MAX_FILES 100000u
#define TORRENT_MAX_PIECES (1u << 21)
#define TORRENT_MAX_PATH 4096u
#define TORRENT_MAX_COMPONENT 255u
#define TORRENT_MAX_DEPTH 32u
#define TORRENT_MAX_CERT 16384u
/* The whole .torrent: piece layers are 32 bytes a piece. */
#define TORRENT_MAX_BYTES (80u * 1024 * 1024)

struct torrent;

/* ---- making ---- */

/*
 * Starts a torrent named name (one path component, at most
 * TORRENT_MAX_COMPONENT bytes) with pieces of piece_len bytes (a power of
 * two, TORRENT_MIN_PIECE..TORRENT_MAX_PIECE). Returns 0 and *tp, or
 * BAD_PATH, USAGE or NOMEM. Free with torrent_free.
 */
int torrent_new(struct torrent **tp, const char *name, uint32_t piece_len)
    FERRY_WUR;
void torrent_free(struct torrent *t);

/*
 * Starts the next file: path relative to the torrent's folder, '/'
 * between components; no empty, "." or ".." component, no NUL, at most
 * TORRENT_MAX_PATH bytes, TORRENT_MAX_DEPTH components. Returns 0, or
 * BAD_PATH, TOO_LARGE (too many files), PROTOCOL (a file is already open)
 * or NOMEM. Two equal paths, or a file and a folder of the same path,
 * are found by torrent_finish (EXISTS), once the paths are sorted.
 */
int torrent_file_begin(struct torrent *t, const char *path) FERRY_WUR;
/* Hashes the next n bytes of the open file. TOO_LARGE past
 * TORRENT_MAX_PIECES pieces in all; PROTOCOL with no file open. */
int torrent_file_update(struct torrent *t, const void *p, size_t n)
    FERRY_WUR;
/* Ends the open file: its length and merkle root are then fixed. */
int torrent_file_end(struct torrent *t) FERRY_WUR;

/* The per-transfer CA certificate (PEM), copied into the info dict as
 * "ssl-cert"; at most TORRENT_MAX_CERT bytes. */
int torrent_set_cert(struct torrent *t, const void *pem, size_t len)
    FERRY_WUR;

/*
 * Writes the .torrent to out (which must allow TORRENT_MAX_BYTES, or the
 * result may not fit: TOO_LARGE) and its v2 info-hash, SHA-256 of the
 * bencoded info dict, to info_hash. Needs at least one file and none
 * open (PROTOCOL); EXISTS for a path given twice or both as a file and as
 * a folder; UNSUPPORTED if every file is empty (libtorrent loads no
 * torrent of no bytes). No file may be added after it; the map below stays.
 */
int torrent_finish(struct torrent *t, struct buf *out,
    uint8_t info_hash[32]) FERRY_WUR;

/* ---- after torrent_finish ---- */

/* The torrent's name (the single file's, in single-file form). */
const char *torrent_name(const struct torrent *t);
uint32_t torrent_pieces(const struct torrent *t);
size_t torrent_files(const struct torrent *t);

/*
 * File i (0..torrent_files()-1) in the torrent's order: its path under
 * the torrent's folder (borrowed, valid until torrent_free; in
 * single-file form, the name), its length, its first piece and how many
 * pieces it has (0 for an empty file). Piece first+k holds the file's
 * bytes from k * piece_len, at most piece_len of them.
 */
void torrent_file_at(const struct torrent *t, size_t i, const char **path,
    uint64_t *length, uint32_t *first_piece, uint32_t *npieces);

#endif
