#!/usr/bin/env python3
"""A scripted stand-in for ferry-agent, used as --agent in tests.

It speaks just enough of protocol v2 (proto/PROTOCOL.md) to act out one
misbehaviour, chosen by the environment variable FAKE_AGENT_MODE:

  version       answers HELLO with protocol 9-9 only
  banner        prints shell-startup noise before speaking
  dotdot        pull: offers an entry named "../escape"
  symlink-walk  pull: offers a symlink "a" -> OUTSIDE and then "a/pwned"
  state-dir     pull: offers ".ferry/part/x"
  unrequested   pull: offers "other.txt" when "wanted.txt" was asked for
  huge-frame    announces a 4 GiB frame
  bad-hash      pull: sends a block whose hash does not match its data

FAKE_AGENT_OUTSIDE names the directory the symlink points to.
"""
import os
import struct
import sys

MSG = dict(HELLO=1, OPEN=2, OPEN_OK=3, ERROR=4, PLAN=5, READY=6, ENTRY=7,
           REPLY=8, BLOCK=9, FILE_END=10, FILE_DONE=11, NOTICE=12, END=13,
           SUMMARY=14)
ENTRY_FILE, ENTRY_DIR, ENTRY_SYMLINK = 1, 2, 3

inp = sys.stdin.buffer
out = sys.stdout.buffer


def send(mtype, payload=b""):
    out.write(struct.pack(">IB", len(payload), mtype) + payload)
    out.flush()


def recv():
    hdr = inp.read(5)
    if len(hdr) < 5:
        sys.exit(0)
    n, t = struct.unpack(">IB", hdr)
    return t, inp.read(n)


def s16(b):
    return struct.pack(">H", len(b)) + b


def hello(vmin=2, vmax=2):
    send(MSG["HELLO"], b"FRY1" + struct.pack(">HHQ", vmin, vmax, 1) +
         s16(b"fake-agent"))


def entry(eid, kind, path, size=0, target=b"", mode=0o644):
    send(MSG["ENTRY"], struct.pack(">IBIQQIB", eid, kind, mode, size,
                                   1600000000, 0, 0) +
         s16(path) + s16(target))


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
    hello()
    t, _ = recv()                       # OPEN
    send(MSG["OPEN_OK"], s16(b""))
    if mode == "dotdot":
        items = [(ENTRY_FILE, b"../escape", 5, b"")]
    elif mode == "symlink-walk":
        items = [(ENTRY_SYMLINK, b"a", 0, outside),
                 (ENTRY_FILE, b"a/pwned", 5, b"")]
    elif mode == "state-dir":
        items = [(ENTRY_FILE, b".ferry/part/x", 5, b"")]
    elif mode == "unrequested":
        items = [(ENTRY_FILE, b"other.txt", 5, b"")]
    elif mode == "bad-hash":
        items = [(ENTRY_FILE, b"wanted.txt", 5, b"")]
    else:
        items = []
    nfiles = sum(1 for i in items if i[0] == ENTRY_FILE)
    send(MSG["PLAN"], struct.pack(">IIQQQ", 0, len(items), len(items),
                                  nfiles, 5 * nfiles))
    t, _ = recv()                       # READY
    for eid, (kind, path, size, target) in enumerate(items):
        entry(eid, kind, path, size, target,
              0o777 if kind == ENTRY_SYMLINK else 0o644)
    for eid, (kind, path, size, target) in enumerate(items):
        t, p = recv()
        if t != MSG["REPLY"]:
            return                      # the client gave up: fine
        rid, action = struct.unpack(">IB", p[:5])
        if action == 2:                 # WANT
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
        pass
