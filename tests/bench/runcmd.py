#!/usr/bin/env python3
"""runcmd.py: run one benchmark command and measure it.

Usage: runcmd.py --result FILE [--timeout S] [--stdout F] [--stderr F]
                 -- CMD...

Runs CMD in its own process group with stdin from /dev/null, and writes
FILE as JSON: {"rc", "wall_s", "rss_kib", "timed_out"}.

wall_s is measured with the monotonic clock from just before the fork to
just after the wait, so Python's own start-up is not counted. rss_kib is
GNU time's %M: the peak resident set of the largest single process in the
command's tree that was waited for (a pipeline run by a shell counts its
biggest member, not their sum). getrusage() here would not do: a child
forked from Python carries Python's ~14 MiB into its maximum before exec. On timeout the whole
process group is killed with SIGKILL and rc is 124, as with timeout(1);
so it is when runcmd.py itself gets SIGINT, SIGTERM or SIGHUP.
Exits 0 whatever the command did; the caller reads FILE.
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time


def main(argv):
    opts = {"--timeout": "300", "--stdout": os.devnull,
            "--stderr": os.devnull, "--result": None}
    i = 1
    while i < len(argv) and argv[i] != "--":
        if argv[i] not in opts or i + 1 >= len(argv):
            print("runcmd.py: bad option %r" % argv[i], file=sys.stderr)
            return 2
        opts[argv[i]] = argv[i + 1]
        i += 2
    cmd = argv[i + 1:]
    if not cmd or opts["--result"] is None:
        print(__doc__, file=sys.stderr)
        return 2
    timeout = float(opts["--timeout"])
    fd, rss_file = tempfile.mkstemp(prefix="runcmd-rss.")
    os.close(fd)
    timed = []
    if os.access("/usr/bin/time", os.X_OK):
        timed = ["/usr/bin/time", "-o", rss_file, "-f", "%M"]
    timed_out = False
    with open(opts["--stdout"], "wb") as out, \
            open(opts["--stderr"], "wb") as err, \
            open(os.devnull, "rb") as null:
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(timed + cmd, stdin=null, stdout=out, stderr=err,
                                 start_new_session=True)
        except OSError as e:
            err.write(("runcmd.py: %s: %s\n" % (cmd[0], e)).encode())
            rc, wall = 127, 0.0
        else:
            # The command has its own session, so a Ctrl-C or a kill of
            # the benchmark must be passed on, or the command would stay.
            def stop(signum, frame):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                sys.exit(128 + signum)
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, stop)

            # Popen.wait(timeout) polls with sleeps of up to 50 ms, which
            # would round every wall time; block in waitpid instead and
            # let an alarm kill the group on timeout.
            def expire(signum, frame):
                nonlocal timed_out
                timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            _, status = os.waitpid(p.pid, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            rc = 124 if timed_out else p.returncode
            wall = time.monotonic() - t0
            if rc < 0:
                rc = 128 - rc
    rss = None
    with open(rss_file) as f:
        for line in f:
            if line.strip().isdigit():
                rss = int(line)
    os.unlink(rss_file)
    if not timed:
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(opts["--result"], "w") as f:
        json.dump({"rc": rc, "wall_s": round(wall, 4), "rss_kib": rss,
                   "timed_out": timed_out}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
