#!/usr/bin/env python3
"""treecmp.py A B: exit 0 if two trees hold the same entries.

Compares names, types, permission bits, mtimes (ns), sizes, symlink
targets and file contents. The top directories themselves and ferry's
state directory (.ferry at the top) are not compared. File contents are
compared data segment by data segment (SEEK_DATA/SEEK_HOLE), so a sparse
file of many GiB costs what its data costs. Prints the first differences.
"""
import os
import stat
import sys


def listing(root):
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
            entry = {"type": stat.S_IFMT(st.st_mode), "mtime": st.st_mtime_ns}
            if stat.S_ISLNK(st.st_mode):
                entry["target"] = os.readlink(os.path.join(root, rel))
            else:
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


def same_content(a, b, size):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        # Data in either file must match the other; holes read as zeros.
        for f1, f2 in ((fa, fb), (fb, fa)):
            for start, end in segments(f1.fileno(), size):
                pos = start
                while pos < end:
                    n = min(1 << 20, end - pos)
                    if os.pread(f1.fileno(), n, pos) != \
                            os.pread(f2.fileno(), n, pos):
                        return False
                    pos += n
    return True


def main():
    a, b = sys.argv[1], sys.argv[2]
    la, lb = listing(a), listing(b)
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
