#include "policy.h"

#include <string.h>

#include "../common/alloc.h"

int
policy_resolve(void *ctx, uint8_t op, const char *path, size_t len,
    char **out, char *msg, size_t msglen)
{
    const struct policy *pol = ctx;
    size_t hl;
    char *p;

    (void)op;
    (void)msg;
    (void)msglen;
    *out = NULL;
    /* "~" and "~/..." mean the agent's home, as with scp. */
    if (pol->home != NULL && len >= 1 && path[0] == '~' &&
        (len == 1 || path[1] == '/')) {
        hl = strlen(pol->home);
        if ((p = xmalloc(hl + len)) == NULL)
            return FERRY_ERR_NOMEM;
        memcpy(p, pol->home, hl);
        memcpy(p + hl, path + 1, len - 1);
        p[hl + len - 1] = '\0';
    } else if ((p = xstrndup(path, len)) == NULL) {
        return FERRY_ERR_NOMEM;
    }
    *out = p;
    return 0;
}
