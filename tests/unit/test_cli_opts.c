/*
 * The table of options (client/cli_opts.c) against what is printed from
 * it and written about it: each command's help lists exactly that
 * command's rows, and docs/ferry.1 has an entry for exactly the table's
 * options, each in the section its row names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/cli_opts.h"
#include "../../client/help.h"
#include "check.h"

#define KEYS_MAX 256
#define KEY_LEN 48

/* A row's key as help and the man page show it: "n|--dry-run", "F|",
 * "|--exclude". */
static void
row_key(const struct cli_opts_row *o, char *out)
{
    snprintf(out, KEY_LEN, "%c|%s", o->letter != 0 ? o->letter : ' ',
        o->name != NULL ? o->name : "");
}

static int
key_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The long name at p ("--dry-run" out of "--dry-run PAT"), into out. */
static size_t
long_name(const char *p, char *out, size_t outlen)
{
    size_t n = 2;

    while (p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z') ||
        (p[n] >= '0' && p[n] <= '9'))
        n++;
    snprintf(out, outlen, "%.*s", (int)n, p);
    return n;
}

/* The keys of the entries of a help text: lines "  -x, --name ARG
 * text", "  -x ARG text" or "      --name ARG text". */
static size_t
help_keys(const char *text, char keys[][KEY_LEN])
{
    const char *line = text;
    char name[KEY_LEN - 4];
    size_t n = 0;

    for (; *line != '\0'; line = strchr(line, '\n') + 1) {
        char letter = ' ';

        name[0] = '\0';
        if (strncmp(line, "  -", 3) == 0 && line[3] != '-') {
            letter = line[3];
            if (strncmp(line + 4, ", --", 4) == 0)
                long_name(line + 6, name, sizeof(name));
        } else if (strncmp(line, "      --", 8) == 0) {
            long_name(line + 6, name, sizeof(name));
        } else {
            continue;
        }
        CHECK(n < KEYS_MAX);
        snprintf(keys[n++], KEY_LEN, "%c|%s", letter, name);
    }
    return n;
}

/* Fails unless the key lists want (the table's) and got (what is
 * printed or written) are the same, naming the first key one has and
 * the other lacks. */
static void
keys_same(char want[][KEY_LEN], size_t nwant, char got[][KEY_LEN],
    size_t ngot, const char *what)
{
    size_t i = 0, j = 0;
    int d;

    qsort(want, nwant, KEY_LEN, key_cmp);
    qsort(got, ngot, KEY_LEN, key_cmp);
    while (i < nwant || j < ngot) {
        d = i == nwant ? 1 : j == ngot ? -1 : strcmp(want[i], got[j]);
        if (d < 0)
            check_fail(__FILE__, __LINE__, "%s lacks the table's '%s'",
                what, want[i]);
        if (d > 0)
            check_fail(__FILE__, __LINE__, "%s has '%s', which the table "
                "lacks", what, got[j]);
        i++;
        j++;
    }
}

/* Each command's help (help_command) lists one entry for each of its
 * rows and nothing else, and `ferry --help` only rows of push or pull. */
TEST(client_cli_help_rows)
{
    static const char *const cmds[] = { "push", "pull", "status", "clean",
        "pack", "unpack" };
    static char want[KEYS_MAX][KEY_LEN], got[KEYS_MAX][KEY_LEN];
    char *text;
    size_t i, j, len, nwant, ngot;
    FILE *f;

    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        unsigned bit = cli_opts_cmd(cmds[i]);

        check_note("ferry help %s", cmds[i]);
        CHECK(bit != 0);
        nwant = 0;
        for (j = 0; j < cli_opts_count; j++)
            if ((cli_opts_table[j].cmds & bit) != 0)
                row_key(&cli_opts_table[j], want[nwant++]);
        CHECK(nwant > 0);
        CHECK((f = open_memstream(&text, &len)) != NULL);
        CHECK_OK(help_command(f, cmds[i]));
        fclose(f);
        ngot = help_keys(text, got);
        free(text);
        keys_same(want, nwant, got, ngot, cmds[i]);
    }
    check_note("ferry --help");
    CHECK((f = open_memstream(&text, &len)) != NULL);
    help_usage(f);
    fclose(f);
    ngot = help_keys(text, got);
    free(text);
    CHECK(ngot > 10);
    for (i = 0; i < ngot; i++) {
        for (j = 0; j < cli_opts_count; j++) {
            row_key(&cli_opts_table[j], want[0]);
            if (strcmp(want[0], got[i]) == 0 &&
                (cli_opts_table[j].cmds & (CLI_OPTS_PUSH | CLI_OPTS_PULL)))
                break;
        }
        check_note("ferry --help: %s", got[i]);
        CHECK(j < cli_opts_count);
    }
    check_note_clear();
}

/* The options named in a man page's entry tag (the line after .TP):
 * "\-n", "\-\-dry\-run" and the like, one key a token. */
static size_t
man_tag_tokens(const char *tag, char keys[][KEY_LEN], size_t n)
{
    char plain[512], name[KEY_LEN - 4];
    size_t i, j = 0;

    /* Unescape "\-" and drop font changes ("\fR"). */
    for (i = 0; tag[i] != '\0' && j + 1 < sizeof(plain); i++) {
        if (tag[i] == '\\' && tag[i + 1] == '-') {
            plain[j++] = '-';
            i++;
        } else if (tag[i] == '\\' && tag[i + 1] == 'f' && tag[i + 2]) {
            i += 2;
        } else {
            plain[j++] = tag[i];
        }
    }
    plain[j] = '\0';
    for (i = 0; plain[i] != '\0'; i++) {
        if (plain[i] != '-' || (i > 0 && strchr(" \",(", plain[i - 1]) ==
            NULL))
            continue;
        CHECK(n < KEYS_MAX);
        if (plain[i + 1] == '-') {
            i += long_name(plain + i, name, sizeof(name)) - 1;
            snprintf(keys[n++], KEY_LEN, "%s", name);
        } else if (plain[i + 1] != '\0') {
            snprintf(keys[n++], KEY_LEN, "-%c", plain[i + 1]);
            i++;
        }
    }
    return n;
}

/* Drops repeats from the sorted keys. */
static size_t
keys_unique(char keys[][KEY_LEN], size_t n)
{
    size_t i, k = 0;

    qsort(keys, n, KEY_LEN, key_cmp);
    for (i = 0; i < n; i++)
        if (k == 0 || strcmp(keys[k - 1], keys[i]) != 0)
            memmove(keys[k++], keys[i], KEY_LEN);
    return k;
}

/* docs/ferry.1 has an entry for every option of the table, in the
 * section the row names, and no entry for an option the table lacks. */
TEST(client_cli_man_page)
{
    static const char *const sections[] = { "OPTIONS", "RSYNC FLAGS" };
    static char want[KEYS_MAX][KEY_LEN], got[KEYS_MAX][KEY_LEN];
    const char *path = getenv("FERRY_MAN_PAGE");
    char line[1024], section[64] = "";
    size_t i, j, nwant, ngot;
    int tag = 0;
    FILE *f;

    if (path == NULL)
        path = "docs/ferry.1";
    if ((f = fopen(path, "r")) == NULL)
        check_fail(__FILE__, __LINE__, "no man page at %s: run from the "
            "top of the tree or set FERRY_MAN_PAGE", path);
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        check_note("section %s", sections[i]);
        nwant = ngot = 0;
        for (j = 0; j < cli_opts_count; j++) {
            const struct cli_opts_row *o = &cli_opts_table[j];

            if (strcmp(o->man, sections[i]) != 0)
                continue;
            if (o->letter != 0)
                snprintf(want[nwant++], KEY_LEN, "-%c", o->letter);
            if (o->name != NULL)
                snprintf(want[nwant++], KEY_LEN, "%s", o->name);
        }
        rewind(f);
        while (fgets(line, sizeof(line), f) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            if (strncmp(line, ".SH ", 4) == 0) {
                snprintf(section, sizeof(section), "%.63s", line + 4);
            } else if (strcmp(line, ".TP") == 0) {
                tag = 1;
                continue;
            } else if (tag && strcmp(section, sections[i]) == 0) {
                ngot = man_tag_tokens(line, got, ngot);
            }
            tag = 0;
        }
        CHECK(nwant > 0);
        nwant = keys_unique(want, nwant);
        ngot = keys_unique(got, ngot);
        keys_same(want, nwant, got, ngot, sections[i]);
    }
    fclose(f);
    check_note_clear();
}
