/*
 * fsx.h: file system helpers that are safe against hostile names.
 *
 * Paths that come from the other side are relative, '/'-separated, and are
 * only ever resolved beneath a directory fd, one component at a time with
 * O_NOFOLLOW: a symlink anywhere in the path is refused, so nothing (a link
 * made earlier in the same transfer, a swap between check and open) can
 * lead a write outside the root.
 */
#ifndef FERRY_COMMON_FSX_H
#define FERRY_COMMON_FSX_H

#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/types.h>

#include "err.h"

/*
 * Flags to open a file we expect to be regular, for reading: no symlink
 * followed, and O_NONBLOCK so that a FIFO put in its place cannot hang
 * the open (the caller's fstat then sees it is not a regular file; for
 * regular files O_NONBLOCK changes nothing).
 */
#define FSX_O_READ (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

/* Longest relative path and component we accept. */
#define FSX_PATH_MAX 4095
#define FSX_NAME_MAX 255

/*
 * Checks a relative path from the wire: 1..FSX_PATH_MAX bytes, no NUL, not
 * absolute, no empty, "." or ".." component, no trailing '/', components at
 * most FSX_NAME_MAX bytes. Returns 0 or FERRY_ERR_BAD_PATH.
 */
int fsx_path_check(const char *p, size_t len) FERRY_WUR;

/*
 * Opens the directory rel (NUL-terminated, checked with fsx_path_check, or
 * "" for the root itself) beneath rootfd without following any symlink:
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel
 * has it (Linux 5.6+), else one component at a time with O_NOFOLLOW.
 * With create, missing directories are made with mode 0755 (umask applies).
 * On success *out is a new O_DIRECTORY fd the caller closes.
 */
int fsx_open_dir(int rootfd, const char *rel, int create, int *out) FERRY_WUR;

/*
 * Opens the parent directory of rel beneath rootfd as fsx_open_dir does and
 * points *name at rel's last component (inside rel).
 */
int fsx_open_parent(int rootfd, const char *rel, int create, int *dirfd,
    const char **name) FERRY_WUR;

/* Lets fsx_open_dir try openat2 (on, the default) or always walk (off):
 * for tests of both ways. */
void fsx_use_openat2(int on);

/*
 * Calls fn for each entry of the directory name beneath parent (opened
 * without following a symlink), but "." and "..": with the directory's
 * fd and stat, the entry's name and its lstat. An entry gone before it
 * could be looked at is passed over. Stops at the first non-zero value
 * fn returns, and returns it; else 0, or -errno (-ENOENT: no such
 * directory).
 */
struct stat;
typedef int fsx_entry_fn(void *ctx, int dirfd, const struct stat *dir,
    const char *name, const struct stat *st);
int fsx_dir_each(int parent, const char *name, fsx_entry_fn *fn, void *ctx)
    FERRY_WUR;

/* pwrite / pread loops; fsx_pread_full stops early only at end of file and
 * reports what it got in *got. */
int fsx_pwrite_all(int fd, const void *p, size_t n, uint64_t off) FERRY_WUR;
int fsx_pread_full(int fd, void *p, size_t n, uint64_t off,
    size_t *got) FERRY_WUR;
int fsx_write_all(int fd, const void *p, size_t n) FERRY_WUR;

/* Sets a pipe's capacity to FSX_PIPE_BYTES, or to the most below it the
 * system allows (Linux: pipe-max-size, 1 MiB by default, unless the
 * process has CAP_SYS_RESOURCE); does nothing to other descriptors or
 * elsewhere. See docs/DESIGN.md, "The agent's pipes". */
#define FSX_PIPE_BYTES (1024 * 1024)
void fsx_pipe_widen(int fd);

/* fsync / fdatasync returning -errno. */
int fsx_fsync(int fd) FERRY_WUR;
int fsx_fdatasync(int fd) FERRY_WUR;

/* mkdir -p for a user-given local path (symlinks are followed: the user
 * named it). Returns 0 if it exists as a directory afterwards. */
int fsx_mkdir_p(const char *path, mode_t mode) FERRY_WUR;

/*
 * The highest directory missing on the way to path, path included: *missing
 * is a new string naming it ("a/b" for "a/b/c/d" when only "a" is there),
 * NULL when nothing is missing. Returns 0, or -errno when a component
 * cannot be looked at (ENOTDIR: one on the way is not a directory).
 */
int fsx_first_missing(const char *path, char **missing) FERRY_WUR;

/* Opens directory name beneath dirfd (create: making it 0700 first) and
 * checks that it is private: a real directory (no symlink), ours, not
 * writable by others. FERRY_ERR_STATE when it is not. */
int fsx_open_private_dir(int dirfd, const char *name, int create, int *out)
    FERRY_WUR;

/* Sets atime and mtime of fd (or of name beneath dirfd without following a
 * link when fd < 0) to the given mtime. Callers that treat metadata as
 * best effort may ignore the result. */
int fsx_set_mtime(int fd, int dirfd, const char *name, int64_t sec,
    uint32_t nsec);

/*
 * Closes fds (at most FSX_DETACH_MAX), leaving the last reference to each
 * with a detached process (double fork) that closes it once the caller's
 * copies are gone. For the old version of a replaced file: the kernel
 * frees its pages and blocks when the last reference goes (512 MiB:
 * 0.02 s on tmpfs, 0.19 s on ext4), and the caller need not wait for that (docs/DESIGN.md,
 * "The old version's pages"). The process holds nothing else: it closes
 * every other descriptor it inherited (pipes to the peer, locks) before
 * it waits. Where fork fails the fds are closed here.
 */
#define FSX_DETACH_MAX 64
void fsx_close_detached(const int *fds, size_t n);

/* Splits a path at its last '/' into dir and base (both new strings, dir
 * "." when there is none). Trailing slashes are ignored. */
int fsx_split(const char *path, char **dir, char **base) FERRY_WUR;

/* Drops the trailing slashes of path, in place ("/" stays), so that a
 * name joined to it reads "dir/name", not "dir//name". Returns path. */
char *fsx_trim_slashes(char *path);

#endif
