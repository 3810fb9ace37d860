#!/bin/sh
# Self test for tests/tools/netproxy: integrity, delay, rate, cuts.
#
# Usage: sh tests/integration/netproxy_selftest.sh
# FERRY_TOOLS names the directory holding netproxy (default
# build/release/tests). Needs python3 for the echo server and clients. Only
# kernel-picked ports on 127.0.0.1 are used. Takes about 5 s.

set -u

TOOLS=${FERRY_TOOLS:-build/release/tests}
NP=$TOOLS/netproxy
PIDS=
T=

fail() {
    echo "netproxy_selftest: FAIL: $*" >&2
    for f in "$T"/*.err; do
        [ -s "$f" ] || continue
        echo "--- $f" >&2
        tail -n 5 "$f" >&2
    done
    exit 1
}

cleanup() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null
    done
    for p in $PIDS; do
        wait "$p" 2>/dev/null
    done
    [ -n "$T" ] && rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$NP" ] || { echo "netproxy_selftest: no $NP (run make all)" >&2; exit 1; }
command -v python3 >/dev/null ||
    { echo "netproxy_selftest: needs python3" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/netproxy_selftest.XXXXXX") || exit 1

# The echo server and the clients. Every socket has a timeout, so nothing
# here can hang the test.
cat >"$T/helper.py" <<'EOF'
import os, socket, sys, threading, time

def serve(port_file):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(port_file + ".tmp", port_file)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()

def echo(c):
    c.settimeout(20)
    try:
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        c.close()

def connect(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

# Sends src (then FIN) while writing every echoed byte to out. Prints
# "eof BYTES SECONDS" for a clean end, or "reset BYTES SECONDS". A RST is
# reported to only one of the two threads, so either may notice it.
def stream(port, src, out):
    s = connect(port)
    t0 = time.monotonic()
    send_failed = []
    def sender():
        try:
            with open(src, "rb") as f:
                while True:
                    b = f.read(1 << 16)
                    if not b:
                        break
                    s.sendall(b)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            send_failed.append(1)
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    n, how = 0, "eof"
    with open(out, "wb") as f:
        try:
            while True:
                b = s.recv(1 << 20)
                if not b:
                    break
                f.write(b)
                n += len(b)
        except OSError:
            how = "reset"
    th.join(5)
    if send_failed:
        how = "reset"
    print("%s %d %.3f" % (how, n, time.monotonic() - t0))

# Prints the fastest of three 1-byte request/response round trips in ms.
def rtt(port):
    s = connect(port)
    best = None
    for _ in range(3):
        t0 = time.monotonic()
        s.sendall(b"x")
        if s.recv(1) != b"x":
            sys.exit("rtt: bad echo")
        dt = (time.monotonic() - t0) * 1000
        best = dt if best is None else min(best, dt)
    print("%.1f" % best)

if __name__ == "__main__":
    {"serve": serve, "stream": stream, "rtt": rtt}[sys.argv[1]](*sys.argv[2:])
EOF

# wait_file PATH: waits up to 5 s for PATH to exist.
wait_file() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1))
        [ "$i" -gt 100 ] && return 1
        sleep 0.05
    done
}

# start_proxy NAME ARGS...: starts netproxy in front of the echo server and
# sets PORT and PID.
start_proxy() {
    name=$1
    shift
    "$NP" --port-file "$T/$name.port" --lifetime 60 "$@" \
        "127.0.0.1:$SRV_PORT" 2>"$T/$name.err" &
    PID=$!
    PIDS="$PIDS $PID"
    wait_file "$T/$name.port" || fail "$name: netproxy did not start"
    PORT=$(cat "$T/$name.port")
}

# stop_proxy NAME: SIGTERM, then checks the exit status.
stop_proxy() {
    kill "$PID" 2>/dev/null
    wait "$PID"
    st=$?
    [ "$st" -eq 0 ] || fail "$1: netproxy exited with $st after SIGTERM"
}

# field N TEXT: prints word N of TEXT.
field() {
    echo "$2" | cut -d' ' -f"$1"
}

python3 "$T/helper.py" serve "$T/srv.port" 2>"$T/srv.err" &
PIDS="$PIDS $!"
wait_file "$T/srv.port" || fail "echo server did not start"
SRV_PORT=$(cat "$T/srv.port")

python3 -c 'import os, sys; sys.stdout.buffer.write(os.urandom(4 << 20))' \
    >"$T/4m" || fail "cannot make test data"
head -c 1000000 "$T/4m" >"$T/1m"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(20 << 20))' \
    >"$T/20m" || fail "cannot make test data"

# 1. Integrity, with port 0 printed on stdout and a pid file.
"$NP" --pid-file "$T/np.pid" --lifetime 60 "127.0.0.1:$SRV_PORT" \
    >"$T/stdout.port" 2>"$T/integrity.err" &
PID=$!
PIDS="$PIDS $PID"
wait_file "$T/stdout.port" || fail "integrity: no port on stdout"
PORT=$(cat "$T/stdout.port")
case $PORT in
*[!0-9]* | "") fail "integrity: stdout is not a port: '$PORT'" ;;
esac
[ "$(cat "$T/np.pid")" = "$PID" ] || fail "integrity: wrong pid file"
res=$(python3 "$T/helper.py" stream "$PORT" "$T/4m" "$T/4m.out") ||
    fail "integrity: client failed"
[ "$(field 1 "$res")" = eof ] || fail "integrity: connection ended: $res"
a=$(sha256sum <"$T/4m")
b=$(sha256sum <"$T/4m.out")
[ "$a" = "$b" ] || fail "integrity: echoed data differs ($res)"
stop_proxy integrity
[ ! -e "$T/np.pid" ] || fail "integrity: pid file left after SIGTERM"
echo "netproxy_selftest: ok: 4 MiB echoed intact ($res)"

# 2. --idle-exit: started now, checked at the end (the test takes > 1 s).
"$NP" --idle-exit 1 --port-file "$T/idle.port" "127.0.0.1:$SRV_PORT" \
    2>"$T/idle.err" &
IDLE_PID=$!
PIDS="$PIDS $IDLE_PID"

# 3. Delay: 100 ms each way, so a round trip takes at least 200 ms.
start_proxy delay --delay-ms 100
ms=$(python3 "$T/helper.py" rtt "$PORT") || fail "delay: client failed"
awk -v m="$ms" 'BEGIN { exit !(m >= 200 && m < 600) }' ||
    fail "delay: round trip took $ms ms, expected 200..600"
stop_proxy delay
echo "netproxy_selftest: ok: --delay-ms 100 round trip $ms ms"

# 4. Rate: 20 MB each way at 80 Mbit/s (10 MB/s) takes about 2 s.
start_proxy rate --rate 80
res=$(python3 "$T/helper.py" stream "$PORT" "$T/20m" "$T/20m.out") ||
    fail "rate: client failed"
[ "$(field 1 "$res")" = eof ] || fail "rate: connection ended: $res"
[ "$(field 2 "$res")" -eq $((20 << 20)) ] || fail "rate: short echo: $res"
s=$(field 3 "$res")
awk -v s="$s" 'BEGIN { exit !(s >= 1.8 && s < 6) }' ||
    fail "rate: 20 MiB took $s s, expected 1.8..6"
stop_proxy rate
echo "netproxy_selftest: ok: --rate 80 moved 20 MiB in $s s"

# 5. Cut: the client gets the first 100000 echoed bytes, then a reset.
start_proxy cut --cut-after 100000 --cut-dir down
res=$(python3 "$T/helper.py" stream "$PORT" "$T/1m" "$T/cut.out") ||
    fail "cut: client failed"
n=$(field 2 "$res")
[ "$(field 1 "$res")" = reset ] || fail "cut: expected a reset: $res"
[ "$n" -ge 90000 ] && [ "$n" -le 100000 ] ||
    fail "cut: client saw $n bytes before the cut, expected ~100000"
head -c "$n" "$T/1m" | cmp -s - "$T/cut.out" ||
    fail "cut: bytes before the cut differ"
grep -q '^netproxy: conn 1 cut after 100000 bytes$' "$T/cut.err" ||
    fail "cut: no 'conn 1 cut after 100000 bytes' line on stderr"
stop_proxy cut
echo "netproxy_selftest: ok: --cut-after 100000: client saw $n bytes, reset"

# 6. Cut rounds: the first connection is cut, the second goes through.
start_proxy rounds --cut-after 100000 --cut-rounds 1
res=$(python3 "$T/helper.py" stream "$PORT" "$T/1m" "$T/r1.out") ||
    fail "rounds: first client failed"
[ "$(field 1 "$res")" = reset ] || fail "rounds: first not cut: $res"
n=$(field 2 "$res")
[ "$n" -lt 100000 ] || fail "rounds: first saw $n bytes (cut counts both ways)"
res=$(python3 "$T/helper.py" stream "$PORT" "$T/1m" "$T/r2.out") ||
    fail "rounds: second client failed"
[ "$(field 1 "$res")" = eof ] || fail "rounds: second was cut: $res"
cmp -s "$T/1m" "$T/r2.out" || fail "rounds: second echo differs"
[ "$(grep -c 'cut after' "$T/rounds.err")" -eq 1 ] ||
    fail "rounds: expected exactly one cut"
stop_proxy rounds
echo "netproxy_selftest: ok: --cut-rounds 1: first cut at $n, second intact"

# 2, continued.
i=0
while kill -0 "$IDLE_PID" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -gt 40 ] && fail "idle-exit: still running after 1 s idle"
    sleep 0.05
done
wait "$IDLE_PID"
st=$?
[ "$st" -eq 0 ] || fail "idle-exit: exit status $st"
[ ! -e "$T/idle.port" ] || fail "idle-exit: port file left behind"
echo "netproxy_selftest: ok: --idle-exit 1 exited by itself"

echo "netproxy_selftest: all passed"
