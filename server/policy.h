/*
 * policy.h: what a client may ask of this agent.
 *
 * Every path a client names in OPEN (a push's destination, a pull's
 * sources, the destination of status and clean) comes here before
 * anything is opened. The default policy gives the client the trust of
 * the user's own shell login: any path the user can reach, "~" and "~/"
 * meaning $HOME. See docs/SECURITY.md.
 */
#ifndef FERRY_SERVER_POLICY_H
#define FERRY_SERVER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

struct policy {
    const char *home;   /* $HOME, or NULL */
};

/* session_policy.resolve for the agent: *out is a new string. */
int policy_resolve(void *ctx, uint8_t op, const char *path, size_t len,
    char **out, char *msg, size_t msglen) FERRY_WUR;

#endif
