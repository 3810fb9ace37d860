#include "volume.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../../common/fsx.h"
#include "../../common/hash.h"

int
volume_file_name(const char *name, uint32_t index, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s.%05" PRIu32 "%s", name, index,
        VOLUME_SUFFIX);

    return n < 0 || (size_t)n >= cap ? FERRY_ERR_TOO_LARGE : 0;
}

int
volume_piece_name(const char *path, size_t len, uint32_t index, char *out,
    size_t cap, size_t *outlen)
{
    /* ".ferry-piece-00001" and, when cut, "~" and 16 hex digits. */
    const size_t mark = sizeof(VOLUME_PIECE_MARK) - 1 + 5, tag = 17;
    const char *slash = memrchr(path, '/', len);
    size_t base = slash != NULL ? len - (size_t)(slash + 1 - path) : len;
    size_t keep = len;
    int n;

    *outlen = 0;
    if (base + mark > FSX_NAME_MAX) {
        keep = len - base + (FSX_NAME_MAX - mark - tag);
        /* Do not cut a UTF-8 sequence: back off continuation bytes. */
        while (keep > len - base && ((uint8_t)path[keep] & 0xc0) == 0x80)
            keep--;
    }
    if (keep + mark + tag + 1 > cap)
        return FERRY_ERR_TOO_LARGE;
    memcpy(out, path, keep);
    n = 0;
    if (keep < len)
        n = snprintf(out + keep, cap - keep, "~%016" PRIx64,
            hash_name64(path, len));
    n += snprintf(out + keep + (size_t)n, cap - keep - (size_t)n,
        "%s%05" PRIu32, VOLUME_PIECE_MARK, index);
    *outlen = keep + (size_t)n;
    return 0;
}
