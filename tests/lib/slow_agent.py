#!/usr/bin/env python3
"""Runs ferry-agent behind a rate-limited pipe, for tests that must catch
a transfer in the middle. Used as --agent.

SLOW_AGENT_RATE  bytes per second (default 20 MB/s)
SLOW_AGENT_DIR   "up" limits what ferry sends to the agent (push), "down"
                 what the agent sends back (pull); default up
SLOW_AGENT_PIDFILE  if set, the agent's pid is written there
SLOW_AGENT_PIDS  if set, this wrapper's own pid is appended there, a line
                 per connection (to cut or freeze one stream of several)
The real agent is $FERRY_AGENT_REAL.
"""
import os
import select
import subprocess
import sys
import threading
import time

rate = float(os.environ.get("SLOW_AGENT_RATE", 20e6))
direction = os.environ.get("SLOW_AGENT_DIR", "up")
agent = os.environ["FERRY_AGENT_REAL"]


def pump(src, dst, limited):
    start = time.monotonic()
    sent = 0
    try:
        # The agent shares our stdout, and makes it non-blocking, which
        # makes our stdin (the same socket) non-blocking too: wait for it.
        while True:
            select.select([src], [], [])
            try:
                data = os.read(src, 65536)
            except BlockingIOError:
                continue
            if not data:
                break
            view = memoryview(data)
            while view:
                select.select([], [dst], [])
                try:
                    n = os.write(dst, view)
                except BlockingIOError:
                    continue
                view = view[n:]
            sent += len(data)
            if limited:
                ahead = sent / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
    except OSError as e:
        print("slow_agent: %s" % e, file=sys.stderr)
    finally:
        try:
            os.close(dst)
        except OSError:
            pass


def main():
    args = [agent] + sys.argv[1:]
    pids = os.environ.get("SLOW_AGENT_PIDS")
    if pids:
        with open(pids, "a") as f:
            f.write("%d\n" % os.getpid())
    if direction == "up":
        child = subprocess.Popen(args, stdin=subprocess.PIPE)
        pidfile = os.environ.get("SLOW_AGENT_PIDFILE")
        if pidfile:
            with open(pidfile, "w") as f:
                f.write(str(child.pid))
        t = threading.Thread(target=pump,
                             args=(0, child.stdin.fileno(), True))
    else:
        child = subprocess.Popen(args, stdout=subprocess.PIPE)
        pidfile = os.environ.get("SLOW_AGENT_PIDFILE")
        if pidfile:
            with open(pidfile, "w") as f:
                f.write(str(child.pid))
        t = threading.Thread(target=pump,
                             args=(child.stdout.fileno(), 1, True))
    t.daemon = True
    t.start()
    rc = child.wait()
    t.join(timeout=1)
    sys.exit(rc)


if __name__ == "__main__":
    main()
