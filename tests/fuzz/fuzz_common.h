/*
 * fuzz_common.h: the decode checks behind every fuzz target.
 *
 * One copy serves three users: the libFuzzer targets (fuzz_frame.c,
 * fuzz_msg.c, fuzz_journal.c), the plain replay driver (replay.c), and the
 * unit tests, which replay tests/fuzz/corpus/ and run the mutation tests
 * through fuzz_decode and fuzz_journal so that they check the same
 * invariants as the fuzzers.
 */
#ifndef FERRY_TESTS_FUZZ_FUZZ_COMMON_H
#define FERRY_TESTS_FUZZ_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/buf.h"

#include "../../common/err.h"

/* The libFuzzer entry point: each fuzz_<target>.c defines it, and
 * replay.c calls it without libFuzzer. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Decodes (p, n) as the payload of a message of the given type with the
 * matching msg_*_decode and stores its result in *rc. Then checks what the
 * decoder promises: on failure every field is zero; on success the fields
 * keep the invariants msg.h documents (enum ranges, lengths, paths that
 * pass fsx_path_check, byte fields borrowed from inside the payload), and
 * encoding the struct again gives back exactly the payload.
 *
 * Returns NULL if all holds, or a static text naming the first broken
 * promise. A type with no decoder (0, > MSG_TYPE_MAX) sets *rc to
 * FERRY_ERR_PROTOCOL and returns NULL.
 */
const char *fuzz_decode(uint8_t type, const uint8_t *p, size_t n, int *rc);

/*
 * Target bodies; both return 0 and abort() with a message on stderr when
 * fuzz_decode finds a broken promise, which is how libFuzzer and the unit
 * tests notice.
 *
 * fuzz_frame_one: (p, n) is a byte stream, cut into frames with
 * frame_parse (whose own results are checked too) and each payload decoded
 * by its type. fuzz_msg_one: the first byte is the message type and the
 * rest its payload.
 */
int fuzz_frame_one(const uint8_t *p, size_t n);
int fuzz_msg_one(const uint8_t *p, size_t n);
/* fuzz_msg_one's checks of a payload of the given type. */
int fuzz_msg_typed(uint8_t type, const uint8_t *p, size_t n);

/* The delta messages (fuzz_deltamsg.c): invariants (and DELTA's
 * wrappers) for the table of fuzz_common.c, and the delta target's body
 * (the first byte picks DELTA_SIGS, DELTA_BLOCKS or DELTA, the rest is
 * the payload). */
const char *fuzz_delta_sigs_check(const void *m, const uint8_t *p, size_t n);
const char *fuzz_delta_blocks_check(const void *m, const uint8_t *p,
    size_t n);
int fuzz_delta_decode(const uint8_t *p, size_t n, void *m);
int fuzz_delta_encode(struct buf *b, const void *m);
const char *fuzz_delta_check(const void *m, const uint8_t *p, size_t n);
int fuzz_delta_one(const uint8_t *p, size_t n);
/* 1 if (q, len) lies inside the payload (p, n). */
int fuzz_inside(const void *q, size_t len, const uint8_t *p, size_t n);

/*
 * Checks what proto/journal.h promises for (p, n) as a whole resume
 * journal: journal_header_decode fails with SHORT, FORMAT or TOO_LARGE
 * (TOO_LARGE for any path length over the limit) and leaves every field
 * zero, or succeeds with a power-of-two block size in range, a path that
 * passes fsx_path_check (borrowed from p), mtime_nsec < 1e9, mode <=
 * 07777 and *used the header's length within n, and encoding the header
 * gives back its bytes. Each whole record after it decodes to FORMAT
 * with zeroed fields or re-encodes to its bytes; the torn tail is SHORT.
 * The same checks then run on a copy whose check fields are recomputed,
 * so that fuzzing reaches the field validation behind the XXH3 checks.
 *
 * *rc gets the header's result for (p, n) as given. Returns NULL if all
 * holds, or a static text naming the first broken promise.
 * fuzz_journal_one is the target body (the input is the journal file).
 */
const char *fuzz_journal(const uint8_t *p, size_t n, int *rc);
int fuzz_journal_one(const uint8_t *p, size_t n);

/*
 * Checks what proto/tar.h promises for (p, n) as an uncompressed tar
 * stream (fuzz_archive.c): every event within bounds (names
 * NUL-terminated and at most TAR_MAX_NAME, data inside its entry and
 * inside the input, no data for non-files, pieces within their file),
 * every error with a reason, and the same events and result when the
 * stream is fed 7 bytes at a time as when fed at once. *rc gets the
 * reader's error or tar_rd_finish's result. Returns NULL if all holds.
 * fuzz_tar_one is the target body.
 */
const char *fuzz_tar(const uint8_t *p, size_t n, int *rc);
int fuzz_tar_one(const uint8_t *p, size_t n);

/*
 * Checks what proto/vmanifest.h promises for (p, n) as a volume set's
 * manifest (fuzz_archive.c), line by line: vman_decode fails with FORMAT
 * or TOO_LARGE and leaves every field zero, or gives a known type, a
 * path (END may have none) of 1..VMAN_MAX_PATH bytes without NUL in the
 * store, NUL-terminated, and each type's ranges; vman_encode writes it as
 * a line the reader takes (at most VMAN_MAX_LINE bytes) and reads back
 * to the same type and path, and writes that again to the same line.
 * *rc gets the last line's result. fuzz_vman_one is the target body.
 */
const char *fuzz_vman(const uint8_t *p, size_t n, int *rc);
int fuzz_vman_one(const uint8_t *p, size_t n);

/*
 * The client's targets (fuzz_client.c, linked only where the client's
 * objects and libssh2 are). fuzz_sshcfg: (p, n) as `ssh -G` output;
 * sshcfg_parse fails with FORMAT or NOMEM and leaves every field zero,
 * or gives a hostname, a port in 1..65535, at most SSHCFG_MAX_FILES
 * files each with "~" expanded, numbers within their bounds, and
 * settings that, printed back as lines, parse to the same again.
 * fuzz_known_hosts: (p, n) as a known_hosts file; ssh_known_lookup of
 * three fixed host keys gives a LIBSSH2_KNOWNHOST_CHECK_* result, and a
 * line number (within the file) exactly when the key has changed.
 */
const char *fuzz_sshcfg(const uint8_t *p, size_t n, int *rc);
int fuzz_sshcfg_one(const uint8_t *p, size_t n);
const char *fuzz_known_hosts(const uint8_t *p, size_t n, int *rc);
int fuzz_known_hosts_one(const uint8_t *p, size_t n);
/* fuzz_conductor (fuzz_conductor_lines.c): lines a box's swarm link says
 * to the client, fed to swarm_line; see that file for what is checked. */
int fuzz_conductor_one(const uint8_t *p, size_t n);

/*
 * Checks what proto/rvmsg.h promises for (p, n) as one rendezvous
 * datagram: rvmsg_decode fails and leaves every field zero, or gives a
 * known kind, a scope of 1..RVMSG_MAX_SCOPE bytes without NUL and bytes
 * within the limit (some for JOIN, none for STOP), both borrowed from
 * inside p, and encoding it again gives back exactly p. fuzz_rvmsg_one
 * is the target body.
 */
const char *fuzz_rvmsg(const uint8_t *p, size_t n, int *rc);
int fuzz_rvmsg_one(const uint8_t *p, size_t n);

/*
 * Checks what proto/tensor_piece.h promises for (p, n) as the rebuilding
 * of one block (fuzz_pieces.c): the first 4 bytes (big-endian, mod
 * PROTO_MAX_TENSOR_PIECE + 1) are the block's length, the rest its
 * sequence of pieces, rebuilt against the fixed basis of
 * fuzz_tensor_basis (reads past it refused). tensor_piece_decode_seq
 * fails with SHORT, TOO_LARGE, FORMAT, TRAILING, PROTOCOL or NOMEM,
 * writing nothing past the block, or succeeds, and then each piece
 * coded again from the bytes it made, with its own mode, width and
 * lead, keeps within TENSOR_PIECE_BOUND and decodes to them again. *rc
 * gets the decoder's result. fuzz_tensor_one is the target body.
 */
const char *fuzz_tensor(const uint8_t *p, size_t n, int *rc);
int fuzz_tensor_one(const uint8_t *p, size_t n);
/* The fixed basis of the tensor target (256 KiB; *n gets its length),
 * which its seeds are coded against too. */
const uint8_t *fuzz_tensor_basis(size_t *n);

typedef int fuzz_fn(const uint8_t *p, size_t n);

struct fuzz_target {
    const char *name;  /* tests/fuzz/fuzz_<name>.c, corpus/<name>/ */
    fuzz_fn *fn;
};

/* Every target of the decoders, then every target of the client's
 * parsers (fuzz_client.c), each ending with { NULL, NULL }. */
extern const struct fuzz_target fuzz_targets[];
extern const struct fuzz_target fuzz_client_targets[];

/*
 * Feeds the file at path to fn, or every file in it (sorted by name,
 * dotfiles skipped) if it is a directory. Each input sits in a heap block
 * of exactly its size, so AddressSanitizer catches reads past its end.
 * Adds the number of files to *count. Returns 0, -errno, or
 * FERRY_ERR_TOO_LARGE for a file over 64 MiB.
 */
int fuzz_replay(const char *path, fuzz_fn *fn, size_t *count) FERRY_WUR;

#endif
