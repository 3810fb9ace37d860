/*
 * prune.h: removing what a mirror (--delete) does not keep, beneath a
 * destination and nowhere else.
 */
#ifndef FERRY_ENGINE_PRUNE_H
#define FERRY_ENGINE_PRUNE_H

#include "../common/err.h"

/* How deep a removed directory may go (one fd open per level). */
#define PRUNE_MAX_DEPTH 256

/*
 * Removes rel beneath the directory rootfd: a file or a symlink (the link
 * itself), or a directory with everything it holds. rel is checked as a
 * path from the wire (fsx_path_check) and its parents are opened without
 * following any symlink, so nothing outside rootfd can be reached; a
 * symlink met inside a removed directory is removed, never followed. The
 * state directory (".ferry" at the top) is never removed. Returns 0 (also
 * when rel is already gone), FERRY_ERR_BAD_PATH for a path that is not
 * allowed, FERRY_ERR_TOO_LARGE past PRUNE_MAX_DEPTH, or -errno.
 */
int prune_beneath(int rootfd, const char *rel) FERRY_WUR;

#endif
