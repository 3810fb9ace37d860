#!/usr/bin/env python3
"""A scripted stand-in for ferry-agent, used as --agent in tests.

It speaks just enough of protocol v4 (proto/PROTOCOL.md) to act out one
misbehaviour, chosen by the environment variable FAKE_AGENT_MODE:

  version       answers HELLO with protocol 9-9 only
  banner        prints shell-startup noise before speaking
  dotdot        pull: offers an entry named "../escape"
  symlink-walk  pull: offers a symlink "a" -> OUTSIDE and then "a/pwned"
  state-dir     pull: offers ".ferry/part/x"
  unrequested   pull: offers "other.txt" when "wanted.txt" was asked for
  huge-frame    announces a 4 GiB frame
  bad-hash      pull: sends a block whose hash does not match its data
  vol-dotdot    pull with volumes: "wanted.txt" comes as a volume whose
                member is "../escape"
  vol-absolute  ... whose member is OUTSIDE/abs.txt (an absolute name)
  vol-symlink   ... whose members are a symlink "wanted.txt" -> OUTSIDE
                and a file "wanted.txt/pwned" through it
  vol-short     ... whose member's size field is larger than its data
  list-many     list (OPEN LIST): FAKE_AGENT_NAMES top-level files
                ck-N.pt, in batches of 1000 FAKE_AGENT_PAUSE seconds
                apart (default 0), then END; FAKE_AGENT_LISTED, if set,
                is created once the client has had it all (it closed
                the connection, or ended the agent)
  many-partials status: lists 65537 unfinished files, one more than a
                client holds

FAKE_AGENT_OUTSIDE names the directory the symlink points to.
"""
import io
import os
import signal
import struct
import subprocess
import sys
import tarfile
import time

MSG = dict(HELLO=1, OPEN=2, OPEN_OK=3, ERROR=4, PLAN=5, READY=6, ENTRY=7,
           REPLY=8, BLOCK=9, FILE_END=10, FILE_DONE=11, NOTICE=12, END=13,
           SUMMARY=14, PARTIAL=15, VOL_OPTS=32, VOL_BEGIN=33, VOL_FILE=34, VOL_DATA=35,
           VOL_END=36)
CAP_SPARSE, CAP_VOLUMES, CAP_FILTERS = 1, 8, 128
ENTRY_FILE, ENTRY_DIR, ENTRY_SYMLINK = 1, 2, 3

inp = sys.stdin.buffer
out = sys.stdout.buffer


def frame(mtype, payload=b""):
    return struct.pack(">IB", len(payload), mtype) + payload


def send(mtype, payload=b""):
    out.write(frame(mtype, payload))
    out.flush()


def recv():
    hdr = inp.read(5)
    if len(hdr) < 5:
        sys.exit(0)
    n, t = struct.unpack(">IB", hdr)
    return t, inp.read(n)


def s16(b):
    return struct.pack(">H", len(b)) + b


def hello(vmin=4, vmax=4, caps=CAP_SPARSE):
    send(MSG["HELLO"], b"FRY1" + struct.pack(">HHQ", vmin, vmax, caps) +
         s16(b"fake-agent"))


def evil_volume(mode, outside):
    """A zstd-compressed tar archive that lies as the mode says."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        def add(name, data=b"pwned", **kw):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            for k, v in kw.items():
                setattr(ti, k, v)
            t.addfile(ti, io.BytesIO(data))
        if mode == "vol-dotdot":
            add("../escape")
        elif mode == "vol-absolute":
            add(outside.decode() + "/abs.txt")
        elif mode == "vol-symlink":
            add("wanted.txt", b"", type=tarfile.SYMTYPE,
                linkname=outside.decode())
            add("wanted.txt/pwned")
        else:
            add("wanted.txt")
    data = raw.getvalue()
    if mode == "vol-short":
        # The header says 5 bytes; cut the archive inside the data.
        data = data[:data.rindex(b"pwned")] + b"pw"
    return subprocess.run(["zstd", "-q", "-c"], input=data,
                          stdout=subprocess.PIPE, check=True).stdout


def send_volume(rid, vol):
    send(MSG["VOL_BEGIN"], struct.pack(">I", 1))
    send(MSG["VOL_FILE"], struct.pack(">II", 1, rid) + b"\0" * 16)
    send(MSG["VOL_DATA"], struct.pack(">II", 1, len(vol)) + vol)
    send(MSG["VOL_END"], struct.pack(">IQI", 1, len(vol), 1))


def entry_frame(eid, kind, path, size=0, target=b"", mode=0o644):
    return frame(MSG["ENTRY"], struct.pack(">IBIQQIB", eid, kind, mode,
                                           size, 1600000000, 0, 0) +
                 s16(path) + s16(target))


def entry(eid, kind, path, size=0, target=b"", mode=0o644):
    out.write(entry_frame(eid, kind, path, size, target, mode))
    out.flush()


def list_many():
    """Answers an OPEN LIST with many names, as slowly as asked."""
    n = int(os.environ.get("FAKE_AGENT_NAMES", "200000"))
    pause = float(os.environ.get("FAKE_AGENT_PAUSE", "0"))
    recv()                              # OPEN
    send(MSG["OPEN_OK"], s16(b""))
    for first in range(0, n, 1000):
        out.write(b"".join(entry_frame(i, ENTRY_FILE, b"ck-%d.pt" % i, 5)
                           for i in range(first, min(n, first + 1000))))
        out.flush()
        time.sleep(pause)
    send(MSG["END"])

    def listed(*_):
        if os.environ.get("FAKE_AGENT_LISTED"):
            open(os.environ["FAKE_AGENT_LISTED"], "w").close()
        sys.exit(0)
    signal.signal(signal.SIGTERM, listed)
    while inp.read(65536):
        pass
    listed()


def xxh_block(data):
    # The fake agent cannot compute XXH3 without a library; blocks it
    # sends are expected to be rejected or never asked for.
    return b"\0" * 16


def main():
    mode = os.environ.get("FAKE_AGENT_MODE", "")
    outside = os.environ.get("FAKE_AGENT_OUTSIDE", "/tmp").encode()
    if mode == "banner":
        out.write(b"Welcome to the GPU box! Have a nice day.\n")
        out.flush()
    if mode == "huge-frame":
        out.write(struct.pack(">IB", 0xffffffff, MSG["HELLO"]))
        out.flush()
        recv()
        return
    t, _ = recv()                       # HELLO
    if mode == "version":
        hello(9, 9)
        recv()
        return
    if mode == "list-many":
        hello(caps=CAP_SPARSE | CAP_FILTERS)
        list_many()
        return
    volumes = mode.startswith("vol-")
    hello(caps=CAP_SPARSE | (CAP_VOLUMES if volumes else 0))
    t, _ = recv()                       # OPEN
    send(MSG["OPEN_OK"], s16(b""))
    if mode == "many-partials":
        for i in range(65537):
            send(MSG["PARTIAL"], s16(b"p%06d" % i) +
                 struct.pack(">QQq", 1 << 30, 1 << 29, 5))
        send(MSG["END"])
        recv()
        return
    if mode == "dotdot":
        items = [(ENTRY_FILE, b"../escape", 5, b"")]
    elif mode == "symlink-walk":
        items = [(ENTRY_SYMLINK, b"a", 0, outside),
                 (ENTRY_FILE, b"a/pwned", 5, b"")]
    elif mode == "state-dir":
        items = [(ENTRY_FILE, b".ferry/part/x", 5, b"")]
    elif mode == "unrequested":
        items = [(ENTRY_FILE, b"other.txt", 5, b"")]
    elif mode == "bad-hash" or volumes:
        items = [(ENTRY_FILE, b"wanted.txt", 5, b"")]
    else:
        items = []
    nfiles = sum(1 for i in items if i[0] == ENTRY_FILE)
    send(MSG["PLAN"], struct.pack(">IIQQQ", 0, len(items), len(items),
                                  nfiles, 5 * nfiles))
    t, _ = recv()                       # READY
    if volumes:
        t, _ = recv()                   # VOL_OPTS
    for eid, (kind, path, size, target) in enumerate(items):
        entry(eid, kind, path, size, target,
              0o777 if kind == ENTRY_SYMLINK else 0o644)
    for eid, (kind, path, size, target) in enumerate(items):
        t, p = recv()
        if t != MSG["REPLY"]:
            return                      # the client gave up: fine
        rid, action = struct.unpack(">IB", p[:5])
        if action == 2 and volumes:
            send_volume(rid, evil_volume(mode, outside))
            t, p = recv()               # the client's ERROR, or FILE_DONE
        elif action == 2:               # WANT
            data = b"pwned"
            send(MSG["BLOCK"], struct.pack(">IQBI", rid, 0, 0, len(data)) +
                 xxh_block(data) + struct.pack(">I", len(data)) + data)
            send(MSG["FILE_END"], struct.pack(">Ii", rid, 0) + b"\0" * 16 +
                 s16(b""))
            t, p = recv()               # FILE_DONE
    send(MSG["END"])
    recv()                              # SUMMARY


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, ConnectionResetError):
        # The client hung up, as it should on most of these modes: what
        # stdout still buffers would be flushed at exit into the closed
        # pipe, and Python would say so on stderr (unless run with
        # PYTHONUNBUFFERED), which the tests count as ferry's lines.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
