/*
 * incoming_basis.c: --basis auto's guess for a file new to the
 * destination, as rsync's --fuzzy (DESIGN, "When delta is used", 1).
 */
#include "../incoming_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/fsx.h"

/* How alike two names are: the bytes they share at the start and at the
 * end (step-1000.bin and step-2000.bin share "step-" and "000.bin"). */
static size_t
incoming_basis_name_likeness(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), pre = 0, suf = 0;

    while (pre < la && pre < lb && a[pre] == b[pre])
        pre++;
    while (suf < la - pre && suf < lb - pre &&
        a[la - 1 - suf] == b[lb - 1 - suf])
        suf++;
    return pre + suf;
}

/* 1 if candidate c (size cs) is a better basis for a file of size want
 * than the best so far (size bs, likeness bl): the closer size first,
 * then the more alike name. */
static int
incoming_basis_better(uint64_t want, uint64_t cs, size_t cl, uint64_t bs,
    size_t bl, int have)
{
    uint64_t dc = cs > want ? cs - want : want - cs;
    uint64_t db = bs > want ? bs - want : want - bs;

    return !have || dc < db || (dc == db && cl > bl);
}

/*
 * --basis auto, for a file new to the destination: the most similar
 * regular file beside it (the same extension, a size within a factor of
 * two, then the closest size and the most alike name), as rsync's
 * --fuzzy. Looks at INCOMING_BASIS_SCAN names at most. Returns an open
 * fd, with its name in best, or -1 when there is none.
 */
int
incoming_basis_pick(int pfd, const char *name, uint64_t want,
    char *best)
{
    const char *ext = strrchr(name, '.'), *cext;
    uint64_t best_size = 0;
    size_t best_like = 0, seen = 0;
    struct dirent *de;
    struct stat st;
    DIR *dir;
    int dfd, have = 0;

    if ((dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    if ((dir = fdopendir(dfd)) == NULL) {
        close(dfd);
        return -1;
    }
    while ((de = readdir(dir)) != NULL && seen++ < INCOMING_BASIS_SCAN) {
        /* Hidden names (our .ferry among them) and the file itself are
         * not candidates. */
        if (de->d_name[0] == '.' || strcmp(de->d_name, name) == 0)
            continue;
        cext = strrchr(de->d_name, '.');
        if ((ext == NULL) != (cext == NULL) ||
            (ext != NULL && strcmp(ext, cext) != 0))
            continue;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_size <= 0 ||
            (uint64_t)st.st_size > 2 * want || 2 * (uint64_t)st.st_size < want)
            continue;
        if (incoming_basis_better(want, (uint64_t)st.st_size,
            incoming_basis_name_likeness(de->d_name, name), best_size,
                best_like, have)) {
            snprintf(best, FSX_NAME_MAX + 1, "%s", de->d_name);
            best_size = (uint64_t)st.st_size;
            best_like = incoming_basis_name_likeness(de->d_name, name);
            have = 1;
        }
    }
    closedir(dir);
    return have ? openat(pfd, best, FSX_O_READ) : -1;
}
