#!/usr/bin/env python3
"""treecmp.py [--content] A B: exit 0 if two trees hold the same entries.

--content compares only names, types, sizes, symlink targets and file
contents, not permission bits or mtimes: the benchmark's peers (scp -r,
tar) keep other metadata than ferry. Contents are compared in one pass
with reused buffers when a file has no holes (a 1 GiB file takes a
fraction of a second).

Compares names, types, permission bits, mtimes (ns), sizes, symlink
targets and file contents. The top directories themselves and ferry's
state directory (.ferry at the top) are not compared. File contents are
compared data segment by data segment (SEEK_DATA/SEEK_HOLE), so a sparse
file of many GiB costs what its data costs. Prints the first differences.
"""
import os
import stat
import sys


def listing(root, content_only=False):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            rel_dir = ""
            if ".ferry" in dirnames:
                dirnames.remove(".ferry")
        for name in dirnames + filenames:
            rel = os.path.join(rel_dir, name)
            st = os.lstat(os.path.join(root, rel))
            entry = {"type": stat.S_IFMT(st.st_mode)}
            if not content_only:
                entry["mtime"] = st.st_mtime_ns
            if stat.S_ISLNK(st.st_mode):
                entry["target"] = os.readlink(os.path.join(root, rel))
            elif not content_only:
                entry["mode"] = stat.S_IMODE(st.st_mode)
            if stat.S_ISREG(st.st_mode):
                entry["size"] = st.st_size
            out[rel] = entry
    return out


def segments(fd, size):
    """Yields (start, end) of data segments."""
    off = 0
    while off < size:
        try:
            start = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            return
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, end
        off = end


BUF = 4 << 20
# Allocated once: zeroing 8 MiB per file would cost more than comparing
# thousands of small files.
BUFFERS = (bytearray(BUF), bytearray(BUF))


def same_range(fa, fb, start, end, ba, bb):
    pos = start
    while pos < end:
        n = os.preadv(fa, [ba], pos)
        if os.preadv(fb, [bb], pos) != n or n == 0:
            return False
        n = min(n, end - pos)
        # Whole buffers compare in place (memcmp); only a tail is copied.
        if not (ba == bb if n == BUF else ba[:n] == bb[:n]):
            return False
        pos += n
    return True


def same_content(a, b, size):
    """Contents equal, holes reading as zeros. When either file has no
    holes, one pass over the whole range covers everything; otherwise each
    file's data segments are checked against the other file."""
    ba, bb = BUFFERS
    with open(a, "rb") as fa, open(b, "rb") as fb:
        sa = list(segments(fa.fileno(), size))
        sb = list(segments(fb.fileno(), size))
        if sa == [(0, size)] or sb == [(0, size)]:
            ranges = [(0, size)]
        else:
            ranges = sa + sb
        return all(same_range(fa.fileno(), fb.fileno(), s, e, ba, bb)
                   for s, e in ranges)


def main():
    args = sys.argv[1:]
    content_only = bool(args) and args[0] == "--content"
    if content_only:
        args = args[1:]
    if len(args) != 2:
        print("usage: treecmp.py [--content] A B", file=sys.stderr)
        return 2
    a, b = args
    la, lb = listing(a, content_only), listing(b, content_only)
    problems = []
    for rel in sorted(set(la) | set(lb)):
        if rel not in la or rel not in lb:
            problems.append("only in %s: %r" % (a if rel in la else b, rel))
        elif la[rel] != lb[rel]:
            problems.append("differs: %r: %s vs %s" % (rel, la[rel], lb[rel]))
        elif stat.S_ISREG(la[rel]["type"]) and not same_content(
                os.path.join(a, rel), os.path.join(b, rel), la[rel]["size"]):
            problems.append("content differs: %r" % rel)
    for p in problems[:20]:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
