/*
 * formcheck.h: is a file of a format we know whole, or cut short?
 *
 * A watch pulls checkpoints while the training job writes them; a file
 * caught halfway must not be handed over as ready. Whether a writer still
 * holds the file is asked of the kernel (formcheck_busy_*); this module
 * answers the other half for the formats checkpoints come in, by reading
 * a few small pieces of the file (its ends and its index), never its data:
 *
 *   zip (torch.save, .pth/.pt/.ckpt; zip64 too): the end of central
 *       directory record is the file's last bytes (less a comment), its
 *       central directory lies before it, and every member's local header
 *       and data lie before the central directory;
 *   safetensors: the 8-byte header length, a JSON header that parses, and
 *       the file's size equal to the header's end plus the largest
 *       data_offsets end;
 *   NumPy .npy: the header's shape and dtype give the size exactly;
 *   tar: headers walk from the start to the two zero blocks that end it;
 *   a ferry volume (NAME.00001.tar.zst: one zstd frame with its content
 *       checksum): its blocks' headers walk from the frame's header to
 *       the last block, and the checksum ends the file;
 *   a volume set's manifest (NAME.manifest): the head line first, and the
 *       end line last, ended by a newline at the file's end.
 *
 * A file that is none of these (or whose dtype cannot give a size, an
 * object array) is FORM_UNKNOWN: only the busy check and a quiet period
 * judge it. Reads are bounded (CKPTFMT_MAX_INDEX of index, at most
 * FORMCHECK_MAX_MEMBERS tar members or zstd blocks, a manifest's first
 * and last VMAN_MAX_LINE bytes), so a file made to look like one of
 * these costs little. The checks say "whole" of a file that has the
 * shape of a complete one; they do not check its data. The zip,
 * safetensors and npy structures are read by engine/tensor/ckptfmt.c, the
 * parser tensor_layout.c finds tensors with.
 */
#ifndef FERRY_ENGINE_FORMCHECK_H
#define FERRY_ENGINE_FORMCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "tensor/ckptfmt.h"

/* Most tar members or zstd blocks walked; more is FORM_UNKNOWN. */
#define FORMCHECK_MAX_MEMBERS 1000000u

enum form {
    FORM_UNKNOWN = 0,
    FORM_ZIP,
    FORM_SAFETENSORS,
    FORM_NPY,
    FORM_TAR,
    FORM_VOLUME,
    FORM_VMANIFEST
};

struct formcheck {
    enum form form;
    int whole;             /* 1: complete; 0: cut short (form known) */
    char why[96];          /* when not whole: what is missing */
};

/* Judges the open regular file fd of size bytes. Returns 0 with *out
 * filled (FORM_UNKNOWN when no format is recognized), or -errno when a
 * read fails. */
int formcheck_fd(int fd, uint64_t size, struct formcheck *out) FERRY_WUR;

/* The same over bytes in memory (for tests and the fuzz target). */
int formcheck_mem(const uint8_t *p, size_t n, struct formcheck *out)
    FERRY_WUR;

/* "zip", "safetensors", "npy", "tar", "volume", "volume-manifest" or
 * "unknown". */
const char *formcheck_name(enum form f);

/*
 * Whether some process holds a file open for writing.
 *
 * formcheck_busy_lease asks the kernel for a read lease on the open fd
 * (fcntl F_SETLEASE, F_RDLCK, released at once): it is refused with
 * EAGAIN while any process of any user has the file open for writing.
 * Returns 1 (busy), 0 (not) or -errno when leases cannot tell (not the
 * file's owner without CAP_LEASE, NFS, some overlay file systems): then
 * formcheck_busy_scan's answer counts.
 *
 * formcheck_busy_scan: the (device, inode) pairs every process this user
 * can see holds open for writing, from /proc/PID/fd and fdinfo, collected
 * once per look into *set (sorted; free with formcheck_busy_free), at most
 * FORMCHECK_MAX_OPEN of them. formcheck_busy_in says whether st_dev and
 * st_ino are among them.
 */
#define FORMCHECK_MAX_OPEN 65536u

struct formcheck_busy {
    struct formcheck_open { dev_t dev; ino_t ino; } *v;
    size_t n;
};

int formcheck_busy_lease(int fd) FERRY_WUR;
int formcheck_busy_scan(struct formcheck_busy *set) FERRY_WUR;
int formcheck_busy_in(const struct formcheck_busy *set, dev_t dev,
    ino_t ino);
void formcheck_busy_free(struct formcheck_busy *set);

#endif
