#!/usr/bin/env python3
"""Plays a client that knows a running transfer's id (and even its key)
against real agents, to show what the rendezvous lets through.

    rendezvous_attack.py AGENT RESTRICT_ROOT VICTIM_FILE VICTIM_DEST

Starts a victim transfer on an unrestricted agent (a pull of VICTIM_FILE,
then a push into VICTIM_DEST), and against each tries JOINs and OPENs
from other agents: restricted ones (--restrict RESTRICT_ROOT with
--write-only or --read-only) and unrestricted ones, with and without the
key. Prints one line per try, "NAME: ANSWER" (JOIN_OK, ERROR, CLOSED),
and "proc: ..." lines about /proc/net/unix. Speaks protocol 4
(proto/PROTOCOL.md).
"""
import os
import secrets
import struct
import subprocess
import sys
import time

HELLO, OPEN, OPEN_OK, ERROR, JOIN, JOIN_OK = 1, 2, 3, 4, 18, 19
NAMES = {OPEN_OK: "OPEN_OK", ERROR: "ERROR", JOIN_OK: "JOIN_OK"}
CAP_STREAMS = 1 << 4
OPEN_PUSH, OPEN_PULL = 1, 2

agent, root, victim_file, victim_dest = sys.argv[1:5]


def frame(t, payload=b""):
    return struct.pack(">IB", len(payload), t) + payload


def s16(b):
    return struct.pack(">H", len(b)) + b


def hello():
    return frame(HELLO, b"FRY1" + struct.pack(">HHQ", 4, 4, CAP_STREAMS) +
                 s16(b"rendezvous test"))


def open_msg(op, tid, key, path):
    return frame(OPEN, struct.pack(">BII", op, 0, 1 << 20) + tid + key +
                 struct.pack(">H", 1) + s16(path.encode()))


def join_msg(tid, key, stream):
    return frame(JOIN, tid + key + struct.pack(">H", stream))


def start(*extra):
    return subprocess.Popen([agent, "serve"] + list(extra),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)


def read_frame(p):
    hdr = p.stdout.read(5)
    if len(hdr) < 5:
        return None, b""
    n, t = struct.unpack(">IB", hdr)
    return t, p.stdout.read(n)


def answer(p):
    """The first frame after the agent's HELLO, by name."""
    t, _ = read_frame(p)
    if t == HELLO:
        t, _ = read_frame(p)
    return NAMES.get(t, "CLOSED" if t is None else "type %d" % t)


def victim(op, path):
    tid, key = secrets.token_bytes(16), secrets.token_bytes(32)
    p = start()
    p.stdin.write(hello() + open_msg(op, tid, key, path))
    p.stdin.flush()
    got = answer(p)
    if got != "OPEN_OK":
        sys.exit("victim %d: %s" % (op, got))
    return p, tid, key


def try_join(name, tid, key, stream, *extra):
    p = start(*extra)
    p.stdin.write(hello() + join_msg(tid, key, stream))
    p.stdin.flush()
    print("%s: %s" % (name, answer(p)), flush=True)
    p.stdin.close()
    p.kill()
    p.wait()


def try_open(name, op, tid, path, *extra):
    p = start(*extra)
    p.stdin.write(hello() + open_msg(op, tid, secrets.token_bytes(32), path))
    p.stdin.flush()
    print("%s: %s" % (name, answer(p)), flush=True)
    return p


def proc_check(tid, key):
    with open("/proc/net/unix") as f:
        text = f.read()
    print("proc: id %s" % ("listed" if tid.hex() in text else "hidden"))
    print("proc: key %s" % ("listed" if key.hex() in text else "hidden"))


pull, pull_id, pull_key = victim(OPEN_PULL, victim_file)
# Give the victim time to bind its name (it does so before OPEN_OK, but
# the listener starts on its loop).
time.sleep(0.2)
proc_check(pull_id, pull_key)
try_join("pull: restricted write-only, id and key", pull_id, pull_key, 1,
         "--restrict", root, "--write-only")
try_join("pull: restricted, id and key", pull_id, pull_key, 1,
         "--restrict", root)
try_join("pull: id without key", pull_id, secrets.token_bytes(32), 1)
# An OPEN of the running id (another key) from a restricted key's agent:
# it must not stop the victim.
other = try_open("pull: restricted open of its id", OPEN_PUSH, pull_id,
                 "up", "--restrict", root)
time.sleep(0.5)
print("pull: victim %s" % ("alive" if pull.poll() is None else "stopped"))
try_join("pull: unrestricted, id and key", pull_id, pull_key, 2)
other.kill()
other.wait()
pull.kill()
pull.wait()

push, push_id, push_key = victim(OPEN_PUSH, victim_dest)
time.sleep(0.2)
try_join("push: restricted read-only, id and key", push_id, push_key, 1,
         "--restrict", root, "--read-only")
try_join("push: unrestricted, id and key", push_id, push_key, 1)
push.kill()
push.wait()
