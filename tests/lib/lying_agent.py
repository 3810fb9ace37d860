#!/usr/bin/env python3
"""Runs ferry-agent behind a relay that lies in listings. Used as --agent.

Frames pass unchanged both ways, except that the answer to an OPEN LIST
gets, before its END, an ENTRY for each of LYING_AGENT_ENTRIES: entries
the box does not have, named as the test wants (such as files and
directories that exist on the client's side). Each is "f:NAME:SIZE" (a
file) or "d:NAME" (a directory), comma-separated, all with an mtime of
LYING_AGENT_MTIME (default 1000000000, long ago).
The real agent is $FERRY_AGENT_REAL.
"""
import os
import select
import struct
import subprocess
import sys
import threading

OPEN, ENTRY, END = 2, 7, 13
OP_LIST = 5
ENTRY_FILE, ENTRY_DIR = 1, 2

agent = os.environ["FERRY_AGENT_REAL"]
lies = [s for s in os.environ.get("LYING_AGENT_ENTRIES", "").split(",") if s]
mtime = int(os.environ.get("LYING_AGENT_MTIME", "1000000000"))
listing = threading.Event()


def s16(b):
    return struct.pack(">H", len(b)) + b


def entry(eid, kind, path, size):
    body = struct.pack(">IBIQQIB", eid, kind, 0o755 if kind == ENTRY_DIR
                       else 0o644, size, mtime, 0, 0) + s16(path) + s16(b"")
    return struct.pack(">IB", len(body), ENTRY) + body


def read_some(fd):
    # The agent shares our socket's flags: wait, then read.
    while True:
        select.select([fd], [], [])
        try:
            return os.read(fd, 65536)
        except BlockingIOError:
            continue


def write_all(fd, data):
    view = memoryview(data)
    while view:
        select.select([], [fd], [])
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[n:]


def relay(src, dst, on_frame):
    buf = b""
    try:
        while True:
            data = read_some(src)
            if not data:
                break
            buf += data
            out = b""
            while len(buf) >= 5:
                n, t = struct.unpack(">IB", buf[:5])
                if len(buf) < 5 + n:
                    break
                frame, buf = buf[:5 + n], buf[5 + n:]
                out += on_frame(t, frame)
            write_all(dst, out)
        write_all(dst, buf)
    except OSError as e:
        print("lying_agent: %s" % e, file=sys.stderr)
    finally:
        try:
            os.close(dst)
        except OSError:
            pass


def from_client(t, frame):
    if t == OPEN and len(frame) > 5 and frame[5] == OP_LIST:
        listing.set()
    return frame


class FromAgent:
    def __init__(self):
        self.ids = 0

    def __call__(self, t, frame):
        if not listing.is_set():
            return frame
        if t == ENTRY:
            self.ids += 1
            return frame
        if t != END:
            return frame
        extra = b""
        for lie in lies:
            parts = lie.split(":")
            if parts[0] == "d":
                extra += entry(self.ids, ENTRY_DIR, parts[1].encode(), 0)
            else:
                extra += entry(self.ids, ENTRY_FILE, parts[1].encode(),
                               int(parts[2]))
            self.ids += 1
        return extra + frame


def main():
    child = subprocess.Popen([agent] + sys.argv[1:], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    up = threading.Thread(target=relay,
                          args=(0, child.stdin.fileno(), from_client))
    down = threading.Thread(target=relay,
                            args=(child.stdout.fileno(), 1, FromAgent()))
    for t in (up, down):
        t.daemon = True
        t.start()
    rc = child.wait()
    down.join(timeout=1)
    sys.exit(rc)


if __name__ == "__main__":
    main()
