/*
 * status and clean of a destination that holds an unfinished file
 * (dest_state_list), when clean cannot finish: the list it made must
 * be freed (LeakSanitizer checks each case under make asan), the
 * unfinished files still go, and the message names the state
 * directory, not a file being copied.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/partial.h"
#include "roles.h"

#define CS_BIG (PARTIAL_JOURNAL_MIN + 2 * RT_BS + 99)

TEST(clean_fails_partway)
{
    static const struct rt_case c = { .name = "clean_fails_partway" };
    struct rt *rt = check_alloc(sizeof(*rt));
    struct rt_pump *p = check_alloc(sizeof(*p));
    char dest[CHECK_PATH_MAX], stuck[CHECK_PATH_MAX], text[RT_TEXT_MAX];
    struct partial_info *v = (struct partial_info *)1;
    size_t n = 99;
    struct stat st;

    rt_init(rt, &c);
    rt_make_source(rt);
    rt_write(rt, "src/big", CS_BIG);
    memset(p, 0, sizeof(*p));
    p->nstreams = 1;
    p->cut_blocks = CS_BIG / RT_BS / 2;
    CHECK_OK(rt_push(rt, p));
    rt_path(rt, "dest", dest);

    /* status lists the unfinished file. */
    CHECK_OK(dest_state_list(dest, 0, &v, &n));
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_STR(v[0].path, "src/big");
    CHECK_EQ_U64(v[0].size, CS_BIG);
    CHECK(v[0].done > 0 && v[0].done < CS_BIG);
    partial_list_free(v, n);

    /* Something that is no file of ours in the part directory: clean
     * lists and removes the unfinished file, then cannot remove the
     * state directory. */
    rt_path(rt, "dest/.ferry/part/stuck", stuck);
    CHECK(mkdir(stuck, 0700) == 0);
    rt_path(rt, "dest/.ferry/part/stuck/inner", text);
    CHECK(mkdir(text, 0700) == 0);
    v = (struct partial_info *)1;
    n = 99;
    CHECK_EQ_ERR(dest_state_list(dest, 1, &v, &n), -ENOTEMPTY);
    CHECK(v == NULL);
    CHECK_EQ_U64(n, 0);
    CHECK(strstr(dest_state_strerror(-ENOTEMPTY), ".ferry") != NULL);
    rt_tree(rt, "dest/.ferry/part", text, sizeof(text));
    CHECK_EQ_STR(text, "stuck/ stuck/inner/");

    /* Once it is gone, clean finishes and the state directory goes. */
    rt_path(rt, "dest/.ferry/part/stuck/inner", text);
    CHECK(rmdir(text) == 0 && rmdir(stuck) == 0);
    CHECK_OK(dest_state_list(dest, 1, &v, &n));
    CHECK_EQ_U64(n, 0);
    partial_list_free(v, n);
    rt_path(rt, "dest/.ferry", text);
    CHECK(lstat(text, &st) != 0 && errno == ENOENT);
    rt_finish(rt);
    free(p);
    free(rt);
}
