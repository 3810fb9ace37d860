/*
 * cli_expand.c: how the words of options read before they are applied
 * (cli_int.h): a word of flags (-avzP, -avj4) split into one word a
 * flag, which letter takes a value, and the command moved first when
 * options come before it. Apart from cli.c, which applies each option
 * and checks how they go together.
 */
#include "cli_int.h"

#include <ctype.h>
#include <string.h>

#include "../common/alloc.h"
#include "cli_opts.h"

/*
 * How a word of letters after one '-' reads. A word of letters only
 * (-rlptgoD, -avzP) is a group, each letter with the meaning rsync gives
 * it; a letter that takes a value even there (-j, -e) takes the rest of
 * the word, or the next word. A word with something else in it, whose
 * first letter is a flag (-vp2222, -avj4), is flags up to the first
 * letter that takes a value alone, which takes the rest. Any other word
 * (-p2222, -oKey=V, "-x") stays whole. Returns 1 when the word is split,
 * with *group 1 for a group.
 */
static int
cli_split_kind(const char *a, int *group)
{
    const struct cli_opts_row *o;
    size_t j;

    *group = 0;
    if (a[0] != '-' || a[1] == '-' || a[1] == '\0' || a[2] == '\0')
        return 0;
    for (j = 1; isalpha((unsigned char)a[j]); j++)
        ;
    if (a[j] == '\0') {
        *group = 1;
        return 1;
    }
    if ((o = cli_opts_letter(a[1], 0)) == NULL)
        o = cli_opts_letter(a[1], 1);
    return o != NULL && o->arg == CLI_OPTS_FLAG;
}

/* The letter at a[j] of a split word takes the value after it. */
static int
cli_split_value_at(const char *a, size_t j, int group)
{
    const struct cli_opts_row *o = cli_opts_letter(a[j], group);

    return o != NULL && o->arg != CLI_OPTS_FLAG;
}

/* 1 if the word a, an option, takes the next word as its value. */
static int
cli_takes_next(const char *a)
{
    const struct cli_opts_row *o;
    size_t nl, j;
    int group;

    if (!cli_split_kind(a, &group)) {
        o = cli_opts_find(a, 0, &nl);
        return o != NULL && o->arg == CLI_OPTS_VALUE && a[nl] == '\0';
    }
    for (j = 1; a[j] != '\0'; j++)
        if (cli_split_value_at(a, j, group))
            return a[j + 1] == '\0';
    return 0;
}

int
cli_command_first(int argc, char **argv)
{
    char *cmd;
    int i, j;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--") == 0 || strcmp(a, "--help") == 0 ||
            strcmp(a, "-h") == 0 || strcmp(a, "--version") == 0 ||
            strcmp(a, "-V") == 0)
            return 1;
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (cli_takes_next(a))
            i++;
    }
    if (i >= argc)
        return 1;
    cmd = argv[i];
    for (j = i; j > 1; j--)
        argv[j] = argv[j - 1];
    argv[1] = cmd;
    return i;
}

/*
 * Splits the words of flags (cli_split_kind) after the command into words
 * of one flag each: "-avzP" into "-a" "-v" "-z" "-P", "-avj4" into "-a"
 * "-v" "-j4". (*from)[k] is the word a flag came from when it has the
 * meaning letters have in a group (rsync's), else NULL. Words after "--"
 * stay as they are.
 */
int
cli_expand(struct cli *c, int argc, char **argv, char ***out,
    const char ***from, int *outc)
{
    char **args, *buf, *p;
    const char **f;
    int i, n = 0, done = 0, group;
    size_t j, len, total = 0;

    for (i = 2; i < argc; i++)
        total += strlen(argv[i]);
    if ((args = xcalloc(total + (size_t)argc + 1, sizeof(*args))) == NULL)
        return FERRY_ERR_NOMEM;
    if ((f = xcalloc(total + (size_t)argc + 1, sizeof(*f))) == NULL) {
        xfree(args);
        return FERRY_ERR_NOMEM;
    }
    for (i = 2; i < argc; i++) {
        const char *a = argv[i];

        if (done || !cli_split_kind(a, &group)) {
            done |= strcmp(a, "--") == 0;
            args[n++] = argv[i];
            continue;
        }
        len = strlen(a);
        if (c->nexpanded == CLI_MAX_OPTS ||
            (buf = xmalloc(3 * len + 1)) == NULL) {
            xfree(args);
            xfree(f);
            return c->nexpanded == CLI_MAX_OPTS ?
                cli_fail(c, "too many groups of flags") : FERRY_ERR_NOMEM;
        }
        c->expanded[c->nexpanded++] = buf;
        /* Each letter becomes "-x\0"; a value rides with its flag, with
         * the meaning it has alone unless the word is a group. */
        for (j = 1, p = buf; j < len; j++) {
            f[n] = a;
            args[n++] = p;
            *p++ = '-';
            if (cli_split_value_at(a, j, group)) {
                f[n - 1] = group ? a : NULL;
                memcpy(p, a + j, len - j + 1);
                break;
            }
            *p++ = a[j];
            *p++ = '\0';
        }
    }
    *out = args;
    *from = f;
    *outc = n;
    return 0;
}
