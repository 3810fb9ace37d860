/*
 * formcheck: what engine/formcheck.c says of each file named, one line a
 * file, for tests that make checkpoints with other programs (Python's
 * zipfile and pickle, NumPy):
 *
 *     formcheck FILE...   ->   "FORM whole" | "FORM torn" | "unknown"
 *
 * Exits 1 if a file cannot be opened or read.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/formcheck.h"

int
main(int argc, char **argv)
{
    struct formcheck fc;
    struct stat st;
    int i, fd, status = 0;

    for (i = 1; i < argc; i++) {
        if ((fd = open(argv[i], O_RDONLY | O_CLOEXEC)) < 0 ||
            fstat(fd, &st) != 0 ||
            formcheck_fd(fd, (uint64_t)st.st_size, &fc) != 0) {
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
