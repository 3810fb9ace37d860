#!/usr/bin/env python3
"""Writes hostile tar.zst volumes for tests/integration/pack_hostile.sh.

    evil_tar.py KIND OUT.tar.zst

Each KIND is one way an archive could try to write outside the
destination or feed the reader lies. The archive is made with tarfile
(plain tar) and compressed with the zstd program.
"""
import io
import subprocess
import sys
import tarfile


def member(t, name, data=b"x", **kw):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    for k, v in kw.items():
        setattr(ti, k, v)
    t.addfile(ti, io.BytesIO(data))


def build(kind):
    if kind == "size-too-large":
        return size_too_large()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        if kind == "dotdot":
            member(t, "ok.txt")
            member(t, "../escaped.txt")
        elif kind == "absolute":
            member(t, "/tmp/ferry-evil-absolute.txt")
        elif kind == "symlink-then-file":
            ln = tarfile.TarInfo("link")
            ln.type = tarfile.SYMTYPE
            ln.linkname = sys.argv[3]
            t.addfile(ln)
            member(t, "link/escaped.txt")
        elif kind == "hardlink":
            hl = tarfile.TarInfo("hard")
            hl.type = tarfile.LNKTYPE
            hl.linkname = sys.argv[3]
            t.addfile(hl)
        elif kind == "device":
            dev = tarfile.TarInfo("null")
            dev.type = tarfile.CHRTYPE
            dev.devmajor, dev.devminor = 1, 3
            t.addfile(dev)
        elif kind == "fifo":
            f = tarfile.TarInfo("fifo")
            f.type = tarfile.FIFOTYPE
            t.addfile(f)
        elif kind == "huge-pax":
            member(t, "p.txt", pax_headers={"comment": "x" * (1 << 20)})
        elif kind == "dotferry":
            member(t, ".ferry/evil")
        else:
            raise SystemExit("unknown kind " + kind)
    return raw.getvalue()


def size_too_large():
    """One member whose size field claims more than the data there."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as t:
        member(t, "short.txt", b"y" * 100)
    data = bytearray(raw.getvalue()[:1024])
    data[124:136] = b"%011o\0" % 5000
    data[148:156] = b"        "
    data[148:156] = b"%06o\0 " % sum(data[:512])
    return bytes(data)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    base = kind in ("truncated", "corrupt-zstd")
    data = build("dotferry" if base else kind)
    if base:
        # A sound archive, damaged after compression.
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as t:
            member(t, "a.bin", bytes(range(256)) * 4000)
        data = raw.getvalue()
    z = subprocess.run(["zstd", "-q", "-c"], input=data, check=True,
                       stdout=subprocess.PIPE).stdout
    if kind == "truncated":
        z = z[:len(z) // 2]
    elif kind == "corrupt-zstd":
        z = bytearray(z)
        z[len(z) // 2] ^= 0x40
        z = bytes(z)
    with open(out, "wb") as f:
        f.write(z)


if __name__ == "__main__":
    main()
