# Parallel streams over real parts: each stream its own SSH connection to
# the loopback sshd, through the WAN emulator (netproxy: delay, a rate cap,
# and faults aimed at one connection). A tree of big and small files with
# 8 streams, push and pull; one stream's TCP connection cut in the middle
# (the others finish its work: nothing lost or doubled, no reconnect of
# the whole transfer); one that stalls without closing (retired after
# --stall-timeout, replaced); Ctrl-C and a re-run with another number of
# streams. Identical trees at the end of each.
#
# Connections are numbered by the proxy in the order they come: stream 0
# is connection 1 of a push or pull, and the further streams follow it
# (they start once stream 0 has connected: beside its login or after
# it), so stream k > 0 is one of connections 2 and up. Faults aim at one
# of those.
# run.sh: alone (the link is judged by a loopback key exchange's time)
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

mkdir -p "$T/src/shards"
head -c 40000000 /dev/urandom >"$T/src/shards/big1"
head -c 24000000 /dev/urandom >"$T/src/shards/big2"
head -c 9000000 /dev/urandom >"$T/src/mid"
small_files_tree "$T/src/small" 300
total=$(find "$T/src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
nfiles=$(find "$T/src" -type f | wc -l)
opts=(-F "$SSH_CONFIG" --agent "$AGENT" --json)

added() { grep -c '"action":"added"' "$T/last.out" || true; }
retired() { grep -c '"action":"retired"' "$T/last.out" || true; }
no_retry() {
    ! grep -q '"event":"retry"' "$T/last.out" ||
        fail "$1: the whole transfer reconnected"
}
# Nothing doubled: every file counted once, and its bytes once.
counted_once() {
    [ "$(json_field files_sent)" -eq "$nfiles" ] ||
        fail "$1: $(json_field files_sent) files sent, want $nfiles"
    [ "$(json_field bytes_payload)" -eq "$total" ] ||
        fail "$1: payload $(json_field bytes_payload), want $total"
}
# 1. 8 streams through a 10 ms RTT link, push then pull: all of them
# carry data, and every byte goes once.
proxy_start --delay-ms 5 --rate 400
expect_rc 0 "$FERRY" push "${opts[@]}" -j 8 "$T/src/" "ferry-proxy:$T/d1"
tree_same "$T/src" "$T/d1"
[ "$(json_field streams)" -eq 8 ] || fail "push used $(json_field streams)"
[ "$(added)" -eq 7 ] || fail "push: $(added) streams added, want 7"
counted_once push
[ "$(json_field bytes_literal)" -eq "$total" ] || fail "push: bytes doubled"
expect_rc 0 "$FERRY" pull "${opts[@]}" -j 8 "ferry-proxy:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
[ "$(json_field streams)" -eq 8 ] || fail "pull used $(json_field streams)"
counted_once pull
[ "$(json_field bytes_literal)" -eq "$total" ] || fail "pull: bytes doubled"

# run_dir DIR ARGS... OUT: a push (DIR up) or a pull (down) of the source
# to OUT with ARGS, expecting success and the same tree.
run_dir() {
    dir=$1 out=${*: -1}
    set -- "${@:2:$#-2}"
    if [ "$dir" = up ]; then
        expect_rc 0 "$FERRY" push "${opts[@]}" "$@" "$T/src/" "ferry-proxy:$out"
    else
        expect_rc 0 "$FERRY" pull "${opts[@]}" "$@" "ferry-proxy:$T/src/" "$out"
    fi
    tree_same "$T/src" "$out"
}

# conn_of DIR STREAM: the proxy's number for that stream's connection.
conn_of() { echo $(($2 + 1)); }

# 2. The TCP connection of stream 2 reset after 3 MiB went through (up
# for a push, down for a pull): that stream is retired, the others send
# its runs, and the transfer finishes in the same attempt.
for dir in up down; do
    : >"$T/proxy.log"
    c=$(conn_of $dir 2)
    proxy_start -v --delay-ms 5 --rate 200 --cut-after 3m --cut-dir $dir \
        --fault-conn "$c"
    run_dir $dir -j 4 "$T/cut-$dir"
    grep -q "conn $c cut after" "$T/proxy.log" ||
        { grep "conn [0-9]* closed" "$T/proxy.log" >&2
          fail "cut $dir: the proxy did not cut"; }
    [ "$(retired)" -ge 1 ] || fail "cut $dir: no stream retired"
    no_retry "cut $dir"
    counted_once "cut $dir"
done

# 3. Stream 1 hangs after 2 MiB without closing: TCP and the SSH session
# stay up, no data moves. Retired after the stall timeout while the
# others move data, replaced, and the transfer ends in the same attempt.
for dir in up down; do
    : >"$T/proxy.log"
    c=$(conn_of $dir 1)
    proxy_start --delay-ms 5 --rate 200 --stall-after 2m --cut-dir $dir \
        --fault-conn "$c"
    run_dir $dir -j 3 --stall-timeout 1s "$T/stall-$dir"
    grep -q "conn $c stalled after" "$T/proxy.log" ||
        fail "stall $dir: the proxy did not stall the stream"
    grep -q '"why":"it stalled"' "$T/last.out" ||
        fail "stall $dir: no stream retired as stalled"
    no_retry "stall $dir"
    counted_once "stall $dir"
done

# interrupted DIR BYTES CMD...: runs CMD, sends it SIGINT once a part
# file under DIR holds BYTES, and expects exit 130 within 30 s.
interrupted() {
    dir=$1 bytes=$2
    shift 2
    "$@" 2>"$T/last.err" &
    pid=$!
    wait_part_bytes "$dir" "$bytes"
    kill -INT $pid
    set +e
    timeout 30 tail --pid=$pid -f /dev/null
    wait $pid
    rc=$?
    set -e
    [ "$rc" -eq 130 ] || { cat "$T/last.err"; fail "Ctrl-C: exit $rc"; }
}

# 4. Ctrl-C of an 8-stream push in the middle, then the same transfer
# with 3 streams: what arrived over any stream is kept, the rest is sent,
# the same tree.
proxy_start --delay-ms 5 --rate 100
interrupted "$T/d7" 24000000 "$FERRY" push -F "$SSH_CONFIG" \
    --agent "$AGENT" -j 8 "$T/src/" "ferry-proxy:$T/d7"
expect_rc 0 "$FERRY" push "${opts[@]}" -j 3 "$T/src/" "ferry-proxy:$T/d7"
tree_same "$T/src" "$T/d7"
[ "$(json_field streams)" -eq 3 ] || fail "re-run used $(json_field streams)"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "nothing resumed"
[ "$(json_field bytes_literal)" -lt "$total" ] ||
    fail "the re-run sent everything again"
payload=$(json_field bytes_payload)
sum=$(( $(json_field bytes_literal) + $(json_field resumed_bytes) +
    $(json_field bytes_sparse) + $(json_field bytes_matched) ))
[ "$sum" -eq "$payload" ] || fail "counters: $sum != $payload"
# And a pull interrupted with 2 streams, finished with 8.
proxy_start --delay-ms 5 --rate 100
interrupted "$T/d8" 16000000 "$FERRY" pull -F "$SSH_CONFIG" \
    --agent "$AGENT" -j 2 "ferry-proxy:$T/src/" "$T/d8"
expect_rc 0 "$FERRY" pull "${opts[@]}" -j 8 "ferry-proxy:$T/src/" "$T/d8"
tree_same "$T/src" "$T/d8"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "pull: nothing resumed"

# 5. Stream 0 refused (a destination the agent cannot make) while the
# further streams, opened beside its login, wait parked with their agents
# running: the run ends at once with the agent's line, not waiting on
# them.
echo blocker >"$T/blocker"
start=$(date +%s)
expect_rc 3 timeout 30 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" \
    -j 3 "$T/src/mid" "ferry-test:$T/blocker/sub"
expect_err "Not a directory"
[ $(($(date +%s) - start)) -le 10 ] ||
    fail "refused stream 0: the run took $(($(date +%s) - start)) s"
