#!/usr/bin/env python3
"""Makes old and new versions of files for the delta tests.

    delta_edits.py OLD_DIR NEW_DIR FIRST_SEED COUNT [PIECE]

For each seed, OLD_DIR/f<seed> is a random file and NEW_DIR/f<seed> the
same after random edits: overwrite, insert, delete, truncate, extend,
all new, empty, or identical with a new mtime. Sizes are picked around
PIECE (the smallest signature piece, 4096) and its multiples, so that
edits fall on and across piece and block boundaries. Prints one line per
file: name, old size, new size, edits.
"""
import os
import random
import sys

EDITS = ("overwrite", "insert", "delete", "truncate", "extend", "new",
         "empty", "same")


def rand_bytes(r, n):
    # Mostly random data, sometimes runs of one byte (zeros included), so
    # that the basis has repeated pieces.
    if r.random() < 0.2:
        return bytes([r.choice((0, 0x41))]) * n
    return r.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def old_size(r, piece):
    kind = r.randrange(6)
    if kind == 0:
        return r.randrange(0, piece)                      # under a piece
    if kind == 1:
        return piece * r.randrange(1, 40) + r.choice((-1, 0, 1))
    if kind == 2:
        return 65536 * r.randrange(1, 6) + r.randrange(-3, 4)  # blocks
    return r.randrange(piece, 3 << 20)


def edit(r, data, piece):
    what = []
    nedits = r.randrange(1, 5)
    for _ in range(nedits):
        e = r.choice(EDITS)
        n = len(data)
        at = r.randrange(0, n + 1)
        size = r.choice((1, 7, piece - 1, piece, piece + 1,
                         r.randrange(1, 3 * piece)))
        if e == "overwrite" and n > 0:
            at = min(at, n - 1)
            data[at:at + size] = rand_bytes(r, min(size, n - at))
        elif e == "insert":
            data[at:at] = rand_bytes(r, size)
        elif e == "delete":
            del data[at:at + size]
        elif e == "truncate":
            del data[at:]
        elif e == "extend":
            data += rand_bytes(r, size)
        elif e == "new":
            data[:] = rand_bytes(r, r.randrange(0, 2 * piece + 5))
        elif e == "empty":
            data[:] = b""
        what.append(e)
    return what


def main():
    old_dir, new_dir, first, count = sys.argv[1:5]
    piece = int(sys.argv[5]) if len(sys.argv) > 5 else 4096
    for seed in range(int(first), int(first) + int(count)):
        r = random.Random(seed)
        old = bytearray(rand_bytes(r, old_size(r, piece)))
        new = bytearray(old)
        what = edit(r, new, piece)
        name = "f%d" % seed
        with open(os.path.join(old_dir, name), "wb") as f:
            f.write(old)
        with open(os.path.join(new_dir, name), "wb") as f:
            f.write(new)
        # The old copy is older, so that size and mtime tell them apart
        # even when the content is the same.
        os.utime(os.path.join(old_dir, name), (1000000000, 1000000000))
        print(name, len(old), len(new), ",".join(what))


main()
