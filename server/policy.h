/*
 * policy.h: what a client may ask of this agent.
 *
 * Every path a client names in OPEN (a push's destination, a pull's
 * sources, the destination of status and clean) comes here before
 * anything is opened.
 *
 * Unrestricted (the default): the client has the trust of the user's own
 * shell login: any path the user can reach, "~" and "~/" meaning $HOME.
 *
 * Restricted (`ferry-agent serve --restrict ROOT`, for a forced command
 * in authorized_keys): paths mean places beneath ROOT only. A relative
 * path and "~" are relative to ROOT; an absolute path must lie beneath
 * it; ".." is refused; so is any path that goes through a symlink, at
 * any component (a link made by an earlier push cannot lead out). With
 * read_only, a client may pull and list, not push or clean; with
 * write_only, push, list and clean, not pull. Where the kernel has
 * Landlock (Linux 5.19+, ABI 2), the agent also asks it to refuse any file
 * access outside ROOT (policy_confine), which closes the race of a link
 * swapped in after the check. See docs/SECURITY.md.
 */
#ifndef FERRY_SERVER_POLICY_H
#define FERRY_SERVER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

struct policy {
    const char *home;   /* $HOME, or NULL */
    char *root;         /* restricted: canonical ROOT (owned); else NULL */
    int read_only;
    int write_only;
};

/* Sets up a restricted policy beneath root (made canonical: it must be
 * an existing directory). Returns 0 or an error with a message. */
int policy_restrict(struct policy *p, const char *root, char *msg,
    size_t msglen) FERRY_WUR;
void policy_cleanup(struct policy *p);

/*
 * What this agent may reach, as one string that two agents compare
 * before one hands a connection to the other (rendezvous.h): "any" when
 * unrestricted, else "rw:", "ro:" (--read-only) or "wo:" (--write-only)
 * and the canonical root. Returns its length, or FERRY_ERR_TOO_LARGE
 * if it does not fit in n bytes (NUL included).
 */
int policy_scope(const struct policy *p, char *out, size_t n) FERRY_WUR;

/* session_policy.resolve for the agent: *out is a new string. */
int policy_resolve(void *ctx, uint8_t op, const char *path, size_t len,
    char **out, char *msg, size_t msglen) FERRY_WUR;

/*
 * With a restricted policy, asks the kernel (Landlock) to refuse this
 * process any file access outside ROOT. Returns 1 if the kernel did, 0
 * if it cannot (no Landlock, or too old an ABI: the path checks remain),
 * or an error.
 */
int policy_confine(const struct policy *p) FERRY_WUR;

#endif
