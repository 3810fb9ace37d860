/*
 * formcheck: what engine/formcheck.c says of each file named, one line a
 * file, for tests that make checkpoints with other programs (Python's
 * zipfile and pickle, NumPy):
 *
 *     formcheck FILE...   ->   "FORM whole" | "FORM torn" | "unknown"
 *
 * With -t, what engine/tensor/tensor_layout.c finds instead: a line "FORM N"
 * (safetensors, torch, npy or none, and the count), then one line a
 * tensor, "NAME OFFSET LENGTH WIDTH" (width 0: not known).
 *
 * Exits 1 if a file cannot be opened or read.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/formcheck.h"
#include "../../engine/tensor/tensor_layout.h"

static int
tensors(int fd, uint64_t size)
{
    struct tensor_layout l;
    size_t i;

    if (tensor_layout_fd(fd, size, &l) != 0) {
        tensor_layout_cleanup(&l);
        return -1;
    }
    printf("%s %zu\n", tensor_layout_form_name(l.form), l.n);
    for (i = 0; i < l.n; i++)
        printf("%s %llu %llu %u\n", l.v[i].name,
            (unsigned long long)l.v[i].off, (unsigned long long)l.v[i].len,
            l.v[i].width);
    tensor_layout_cleanup(&l);
    return 0;
}

int
main(int argc, char **argv)
{
    struct formcheck fc;
    struct stat st;
    int i, fd, status = 0, layout = argc > 1 && strcmp(argv[1], "-t") == 0;

    for (i = 1 + layout; i < argc; i++) {
        if ((fd = open(argv[i], O_RDONLY | O_CLOEXEC)) < 0 ||
            fstat(fd, &st) != 0) {
            perror(argv[i]);
            status = 1;
        } else if (layout) {
            if (tensors(fd, (uint64_t)st.st_size) != 0) {
                perror(argv[i]);
                status = 1;
            }
        } else if (formcheck_fd(fd, (uint64_t)st.st_size, &fc) != 0) {
            perror(argv[i]);
            status = 1;
        } else if (fc.form == FORM_UNKNOWN) {
            printf("unknown\n");
        } else {
            printf("%s %s\n", formcheck_name(fc.form),
                fc.whole ? "whole" : "torn");
        }
        if (fd >= 0)
            close(fd);
    }
    return status;
}
