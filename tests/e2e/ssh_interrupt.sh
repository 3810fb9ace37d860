# Ctrl-C and SIGTERM over SSH end the run within a couple of seconds with
# exit 130, whatever the connection is doing: in the middle of the
# handshake with a server that says nothing, on a link gone silent (no
# RST, no FIN: the keepalive would take minutes to give up), and in the
# middle of a healthy transfer, which then resumes.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

mkdir -p "$T/src"
head -c 100000000 /dev/urandom >"$T/src/shard.bin"
opts=(-F "$SSH_CONFIG" --agent "$AGENT")

# start_bg CMD...: starts CMD in the background (stopped after 30 s at
# the latest), stdout and stderr in $T/last.out and $T/last.err.
start_bg() {
    timeout -s KILL 30 "$@" >"$T/last.out" 2>"$T/last.err" &
    bg_pid=$!
}

# signal_wait SIG: sends SIG to that command and waits for it; sets rc,
# and took (milliseconds after the signal).
signal_wait() {
    # timeout's child is the command itself.
    kill "-$1" "$(pgrep -P "$bg_pid")"
    t0=$(date +%s%N)
    set +e
    wait "$bg_pid"
    rc=$?
    set -e
    took=$(( ($(date +%s%N) - t0) / 1000000 ))
}

# expect_quick_130 WHAT: exit 130 within 3 s of the signal, and the one
# error line ferry prints for an interrupt.
expect_quick_130() {
    [ "$rc" -eq 130 ] || { cat "$T/last.err"; fail "$1: exit $rc"; }
    [ "$took" -le 3000 ] || fail "$1: took $took ms after the signal"
    grep -q "^ferry: interrupted" "$T/last.err" ||
        { cat "$T/last.err"; fail "$1: no 'interrupted' line"; }
}

# A server that accepts the TCP connection and then says nothing: the
# handshake waits (ConnectTimeout 20 s) until Ctrl-C or SIGTERM.
silent_start
for sig in INT TERM; do
    start_bg "$FERRY" push "${opts[@]}" --retries 0 -o ConnectTimeout=20 \
        -p "$SILENT_PORT" "$T/src/shard.bin" "ferry-test:$T/d0/"
    sleep 1
    signal_wait "$sig"
    expect_quick_130 "SIG$sig in the handshake"
    [ "$(wc -l <"$T/last.err")" -eq 1 ] ||
        { cat "$T/last.err"; fail "SIG$sig in the handshake: not one line"; }
done
# The same from the keyboard: Ctrl-C on a terminal.
set +e
python3 "$TESTS_DIR/lib/pty_run.py" --timeout 5 --log "$T/tty.out" \
    --time-file "$T/tty.time" sleep=1 send='\x03' -- \
    "$FERRY" push "${opts[@]}" --retries 0 -o ConnectTimeout=20 \
    -p "$SILENT_PORT" "$T/src/shard.bin" "ferry-test:$T/d0/"
rc=$?
set -e
[ "$rc" -eq 130 ] ||
    { cat "$T/tty.out"; fail "Ctrl-C in the handshake: exit $rc"; }
# (The terminal echoes ^C before the line.)
tail -n 1 "$T/tty.out" | tr -d '\r' | grep -qxE '(\^C)?ferry: interrupted' ||
    { cat "$T/tty.out"; fail "Ctrl-C in the handshake: last line"; }

# A link that goes silent under a push, with the keepalive settings of a
# patient user: SIGTERM does not wait for the keepalive to give up.
proxy_start --rate 160 --max-inflight 1m
start_bg "$FERRY" push "${opts[@]}" \
    -o ServerAliveInterval=60 -o ServerAliveCountMax=5 \
    "$T/src/shard.bin" "ferry-proxy:$T/d1/"
sleep 1.5
kill -STOP "$PROXY_PID"
sleep 1
signal_wait TERM
kill -CONT "$PROXY_PID"
expect_quick_130 "SIGTERM on a silent link"
[ ! -e "$T/d1/shard.bin" ] || fail "partial file under its final name"
proxy_stop

# Ctrl-C (SIGINT) in the middle of a healthy push; the same command then
# completes what was started.
proxy_start --rate 160 --max-inflight 1m
start_bg "$FERRY" push "${opts[@]}" "$T/src/" "ferry-proxy:$T/d2"
sleep 1.5
signal_wait INT
expect_quick_130 "SIGINT in a push"
[ ! -e "$T/d2/shard.bin" ] || fail "partial file under its final name"
proxy_stop
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/src/" "ferry-test:$T/d2"
tree_same "$T/src" "$T/d2"
