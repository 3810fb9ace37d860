# Parallel streams over local: agents (each stream its own agent process,
# handed to the one that opened the transfer). A tree of big and small
# files with 8 streams, push and pull; one stream's connection cut in the
# middle (the others finish its work: nothing lost or doubled); one that
# stalls without closing (retired after --stall-timeout and replaced);
# Ctrl-C and a re-run with another number of streams; a stream that
# stalls with a volume of small files in flight; stream 0 that stalls
# once the others have nothing left to send (a reconnect after one stall
# timeout). Identical trees at the end of each.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

mkdir -p "$T/src"
head -c 48000000 /dev/urandom >"$T/src/big1"
head -c 20000000 /dev/urandom >"$T/src/big2"
small_files_tree "$T/src/small" 300
total=$(find "$T/src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
export FERRY_AGENT_REAL="$AGENT"
export SLOW_AGENT_RATE=12000000
slow="$TESTS_DIR/lib/slow_agent.py"

# stream_events FILE: the streams added, retired.
added() { grep -c '"action":"added"' "$1" || true; }
retired() { grep -c '"action":"retired"' "$1" || true; }

# 1. Push and pull with 8 streams: all of them carry data.
expect_rc 0 "$FERRY" push --json -j 8 --agent "$slow" "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"
[ "$(json_field streams)" -eq 8 ] || fail "push used $(json_field streams) streams"
[ "$(json_field files_sent)" -eq 302 ] || fail "push: files counted wrong"
[ "$(json_field bytes_literal)" -eq "$total" ] || fail "push: bytes doubled"
[ "$(added "$T/last.out")" -eq 7 ] || fail "stream events"
export SLOW_AGENT_DIR=down
expect_rc 0 "$FERRY" pull --json -j 8 --agent "$slow" "local:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
[ "$(json_field streams)" -eq 8 ] || fail "pull used $(json_field streams) streams"
[ "$(json_field bytes_literal)" -eq "$total" ] || fail "pull: bytes doubled"
unset SLOW_AGENT_DIR

# 2. One stream's connection cut mid-transfer: retired, the others take
# its work, no reconnect of the whole transfer.
export SLOW_AGENT_PIDS="$T/pids3"
"$FERRY" push --json -j 4 --agent "$slow" "$T/src/" "local:$T/d3" \
    >"$T/last.out" 2>"$T/last.err" &
pid=$!
wait_part_bytes "$T/d3" 8000000
for _ in $(seq 1 100); do
    [ "$(wc -l <"$T/pids3")" -ge 3 ] && break
    sleep 0.05
done
kill -9 "$(sed -n 2p "$T/pids3")"
wait $pid || { cat "$T/last.err"; fail "cut stream: exit $?"; }
tree_same "$T/src" "$T/d3"
[ "$(retired "$T/last.out")" -ge 1 ] || fail "no stream retired"
grep -q '"event":"retry"' "$T/last.out" && fail "the whole transfer reconnected"
[ "$(json_field bytes_payload)" -eq "$total" ] || fail "cut: payload"

# stalled_push SRC DEST WHEN [N]: a push of SRC into DEST over 3 streams
# whose stream N (default 1) stalls without closing (its pipe to the
# agent frozen) once the function WHEN returns; the push must complete.
frozen=""
thaw() { [ -z "$frozen" ] || kill -CONT "$frozen" 2>/dev/null || true; }
at_exit thaw
streams_up() {
    for _ in $(seq 1 200); do
        [ "$(wc -l <"$SLOW_AGENT_PIDS")" -ge "$1" ] && break
        sleep 0.05
    done
}
stalled_push() {
    export SLOW_AGENT_PIDS="$T/pids.${2##*/}"
    : >"$SLOW_AGENT_PIDS"
    "$FERRY" push --json -j 3 --stall-timeout 2s --agent "$slow" "$1/" \
        "local:$2" >"$T/last.out" 2>"$T/last.err" &
    pid=$!
    "$3"
    frozen_index=${4:-1}
    frozen=$(sed -n "$((frozen_index + 1))p" "$SLOW_AGENT_PIDS")
    kill -STOP "$frozen"
    set +e
    timeout 60 tail --pid=$pid -f /dev/null
    wait $pid
    rc=$?
    set -e
    thaw
    unset SLOW_AGENT_PIDS
    [ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "stalled stream: exit $rc"; }
    tree_same "$1" "$2"
}
# The stalled further stream was retired after the stall timeout, and
# replaced.
stream_retired() {
    grep -q '"why":"it stalled"' "$T/last.out" || {
        grep -E '"event":"(stream|retry)"' "$T/last.out"
        fail "no stall was seen (stream $frozen_index frozen)"
    }
}

# 3. One stream stalls in the middle of the big files.
mid_blocks() { wait_part_bytes "$T/d4" 8000000; streams_up 2; }
stalled_push "$T/src" "$T/d4" mid_blocks
stream_retired

# 4. Ctrl-C with 4 streams, then the same transfer with 2: resumed, the
# same tree.
"$FERRY" push -j 4 --agent "$slow" "$T/src/" "local:$T/d5" 2>/dev/null &
pid=$!
wait_part_bytes "$T/d5" 20000000
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
[ "$rc" -eq 130 ] || fail "Ctrl-C: exit $rc"
expect_rc 0 "$FERRY" push --json -j 2 "$T/src/" "local:$T/d5"
tree_same "$T/src" "$T/d5"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "nothing resumed"
payload=$(json_field bytes_payload)
sum=$(( $(json_field bytes_literal) + $(json_field resumed_bytes) +
    $(json_field bytes_sparse) + $(json_field bytes_matched) ))
[ "$sum" -eq "$payload" ] || fail "counters: $sum != $payload"

# 5. A stream stalls while it carries a volume of small files: the client
# gives it up and sends the files of its volume in blocks on the others,
# which reach the agent before the stalled stream's end does (the agent
# then takes that stream as lost: its volume, still in flight, is not
# taken as a second copy), and the transfer completes.
python3 - "$T/vsrc" <<'PY'
import os, random, sys
rng = random.Random(7)
os.makedirs(sys.argv[1])
for i in range(3000):
    with open(os.path.join(sys.argv[1], "f%04d" % i), "wb") as f:
        f.write(rng.randbytes(20000))
PY
mid_volumes() { streams_up 3; sleep 0.4; }
stalled_push "$T/vsrc" "$T/d6" mid_volumes
stream_retired
[ "$(json_field files_sent)" -eq 3000 ] || fail "files counted wrong"

# 6. Stream 0 stalls: the others finish what they were given and then
# have nothing left to send (what is left is stream 0's, and the offers
# of the rest travel on it). Its silence is its link's after one stall
# timeout, not two, and the run reconnects and completes.
mid_blocks0() { wait_part_bytes "$T/d7" 8000000; streams_up 3; }
stalled_push "$T/src" "$T/d7" mid_blocks0 0
grep -q '"event":"retry".*"error":"local: stream 0 moved no data for 2 s while the other streams had nothing left to send (stalled)"' \
    "$T/last.out" || { grep retry "$T/last.out"; fail "stream 0: no retry after one stall timeout"; }
