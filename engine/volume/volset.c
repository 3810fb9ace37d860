/* volset.c: a set of volumes as files in a directory (volset.h). */
#include "volset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../common/fsx.h"
#include "../dest_write.h"

/* Largest SHA256SUMS whose other lines are kept. */
#define VOLSET_SUMS_MAX (16u << 20)

int
volset_name_ok(const char *name)
{
    size_t n = strlen(name), i;

    if (n == 0 || n > 200 || name[0] == '.' || name[0] == '-')
        return FERRY_ERR_USAGE;
    for (i = 0; i < n; i++)
        if (name[i] == '/' || (unsigned char)name[i] < 0x20 ||
            name[i] == 0x7f)
            return FERRY_ERR_USAGE;
    return 0;
}

void
volset_tmp_name(const char *file, char *out, size_t cap)
{
    snprintf(out, cap, ".%s.tmp", file);
}

int
volset_create(int dirfd, const char *tmp)
{
    int fd;

    if (unlinkat(dirfd, tmp, 0) != 0 && errno != ENOENT)
        return -errno;
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
        O_CLOEXEC, 0644);
    return fd < 0 ? -errno : fd;
}

/* 1 if what follows a set's name in a SHA256SUMS line ("rest", with its
 * newline) names one of its files: ".manifest" or ".NNNNN.tar.zst". */
static int
volset_ours(const char *rest)
{
    size_t n = strcspn(rest, "\r\n");

    if (n == sizeof(VOLUME_MANIFEST_SUFFIX) - 1 &&
        memcmp(rest, VOLUME_MANIFEST_SUFFIX, n) == 0)
        return 1;
    return n == 6 + sizeof(VOLUME_SUFFIX) - 1 && rest[0] == '.' &&
        strspn(rest + 1, "0123456789") == 5 &&
        memcmp(rest + 6, VOLUME_SUFFIX, sizeof(VOLUME_SUFFIX) - 1) == 0;
}

int
volset_sums(int dirfd, const char *name, const char (*sums)[65],
    uint32_t n, const char *manifest_sum)
{
    static const char tmp[] = "." VOLSET_SUMS ".tmp";
    char vol[VOLUME_NAME_MAX], line[VOLUME_NAME_MAX + 80];
    size_t nlen = strlen(name);
    struct buf b;
    uint32_t i;
    FILE *f;
    int fd, r = 0, k;

    buf_init(&b, VOLSET_SUMS_MAX + (size_t)(n + 1) * sizeof(line));
    fd = openat(dirfd, VOLSET_SUMS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && (f = fdopen(fd, "r")) != NULL) {
        while (r == 0 && fgets(line, sizeof(line), f) != NULL) {
            /* "HASH  NAME" or "HASH *NAME": drop this set's names. */
            const char *fn = strlen(line) > 66 ? line + 66 : "";

            if (strncmp(fn, name, nlen) == 0 && volset_ours(fn + nlen))
                continue;
            r = buf_put(&b, line, strlen(line));
        }
        fclose(f);
    } else if (fd >= 0) {
        close(fd);
    }
    for (i = 1; r == 0 && i <= n; i++) {
        if ((r = volume_file_name(name, i, vol, sizeof(vol))) != 0)
            break;
        k = snprintf(line, sizeof(line), "%s  %s\n", sums[i], vol);
        r = buf_put(&b, line, (size_t)k);
    }
    if (r == 0) {
        k = snprintf(line, sizeof(line), "%s  %s%s\n", manifest_sum, name,
            VOLUME_MANIFEST_SUFFIX);
        r = buf_put(&b, line, (size_t)k);
    }
    if (r == 0 && (fd = volset_create(dirfd, tmp)) < 0)
        r = fd;
    else if (r == 0 && (r = fsx_write_all(fd, buf_ptr(&b),
        buf_used(&b))) != 0) {
        close(fd);
        (void)unlinkat(dirfd, tmp, 0);
    } else if (r == 0 && (r = dest_write_one(dirfd, fd, tmp,
        VOLSET_SUMS)) != 0) {
        (void)unlinkat(dirfd, tmp, 0);
    }
    buf_cleanup(&b);
    return r;
}
