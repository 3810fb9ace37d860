#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a user at a keyboard would.

    pty_run.py [--timeout S] [--log FILE] [--time-file FILE] STEP... -- CMD...

Steps run in order:
    expect=REGEX   wait until the output (after the last match) matches
    send=TEXT      type TEXT (Python escapes: \\n, \\x03 for Ctrl-C)
    sleep=SECONDS  wait
    signal=NAME    send signal NAME (INT, TERM...) to the command

Each step and the command's exit after the last one must happen within
--timeout seconds (default 20); otherwise the command is killed and the
exit status is 124. Otherwise the exit status is the command's (128 + N
when a signal N ended it). The whole transcript goes to --log; --time-file
gets the seconds between the last step and the command's exit.
"""
import argparse
import os
import pty
import re
import select
import signal
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--log")
    ap.add_argument("--time-file")
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if "--" not in a.rest:
        ap.error("missing -- CMD")
    cut = a.rest.index("--")
    steps, cmd = a.rest[:cut], a.rest[cut + 1:]

    pid, fd = pty.fork()
    if pid == 0:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)

    out = bytearray()
    seen = 0            # output before this offset was matched already
    status = None

    def reap():
        nonlocal status
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st

    def read_some(wait):
        """Reads what the command printed within wait seconds; True if
        anything came."""
        r, _, _ = select.select([fd], [], [], max(wait, 0))
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:      # EIO: the terminal's last user is gone
                data = b""
            if data:
                out.extend(data)
                return True
            reap()
            if status is None:
                time.sleep(0.05)
            return False
        reap()
        return False

    def give_up(why):
        sys.stderr.write("pty_run: %s\n" % why)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        finish(124)

    def finish(code):
        if a.log:
            with open(a.log, "wb") as f:
                f.write(bytes(out))
        sys.exit(code)

    for step in steps:
        kind, _, arg = step.partition("=")
        deadline = time.monotonic() + a.timeout
        if kind == "expect":
            pat = re.compile(arg.encode())
            while True:
                m = pat.search(bytes(out), seen)
                if m:
                    seen = m.end()
                    break
                if time.monotonic() >= deadline:
                    give_up("timed out waiting for %r" % arg)
                if not read_some(0.1) and status is not None:
                    give_up("exited before %r appeared" % arg)
        elif kind == "send":
            os.write(fd, arg.encode().decode("unicode_escape").encode())
        elif kind == "sleep":
            end = time.monotonic() + float(arg)
            while time.monotonic() < end:
                read_some(min(0.1, end - time.monotonic()))
        elif kind == "signal":
            os.kill(pid, getattr(signal, "SIG" + arg))
        else:
            give_up("unknown step %r" % step)

    last = time.monotonic()
    deadline = last + a.timeout
    while status is None:
        if time.monotonic() >= deadline:
            give_up("still running %.0f s after the last step" % a.timeout)
        read_some(0.1)
    took = time.monotonic() - last
    while read_some(0.05):
        pass
    if a.time_file:
        with open(a.time_file, "w") as f:
            f.write("%.2f\n" % took)
    if os.WIFSIGNALED(status):
        finish(128 + os.WTERMSIG(status))
    finish(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
