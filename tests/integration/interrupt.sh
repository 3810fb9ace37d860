# kill -9 of either side, or Ctrl-C, in the middle of a file: no partial
# data ever appears under a final name, and running the command again
# completes the transfer.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
head -c 40000000 /dev/urandom >"$T/src/big"
echo small >"$T/src/small"
export FERRY_AGENT_REAL="$AGENT"
export SLOW_AGENT_RATE=20000000
slow="$TESTS_DIR/lib/slow_agent.py"

# wait_for_partial DIR: until a part file has some data.
wait_for_partial() {
    for _ in $(seq 1 300); do
        if [ -n "$(find "$1/.ferry/part" -name '*.part' -size +1M \
            2>/dev/null)" ]; then
            return 0
        fi
        sleep 0.02
    done
    fail "transfer never started"
}

check_no_partial() {
    [ ! -e "$1/big" ] || cmp -s "$T/src/big" "$1/big" ||
        fail "partial data under the final name $1/big"
}

# 1. kill -9 of the client.
"$FERRY" push --agent "$slow" "$T/src/" "local:$T/d1" 2>/dev/null &
pid=$!
wait_for_partial "$T/d1"
kill -9 $pid
wait $pid 2>/dev/null || true
check_no_partial "$T/d1"
sleep 0.5
check_no_partial "$T/d1"
expect_rc 0 "$FERRY" push "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"

# 2. kill -9 of the agent, retries off: the client reports the lost
# connection. (With retries, see resume.sh.)
export SLOW_AGENT_PIDFILE="$T/agent.pid"
set +e
"$FERRY" push --retries 0 --agent "$slow" "$T/src/" "local:$T/d2" \
    2>"$T/last.err" &
pid=$!
set -e
wait_for_partial "$T/d2"
kill -9 "$(cat "$T/agent.pid")"
set +e
wait $pid
rc=$?
set -e
[ "$rc" -eq 5 ] || fail "agent killed: exit $rc, want 5"
expect_err "connection closed"
check_no_partial "$T/d2"
unset SLOW_AGENT_PIDFILE
expect_rc 0 "$FERRY" push "$T/src/" "local:$T/d2"
tree_same "$T/src" "$T/d2"

# 3. Ctrl-C: exit 130 with a note; nothing partial under a final name.
set +e
"$FERRY" push --agent "$slow" "$T/src/" "local:$T/d3" 2>"$T/last.err" &
pid=$!
set -e
wait_for_partial "$T/d3"
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
[ "$rc" -eq 130 ] || fail "SIGINT: exit $rc, want 130"
expect_err "interrupted"
sleep 0.3
check_no_partial "$T/d3"

# 4. Pull, client killed: the local destination has no partial file.
export SLOW_AGENT_DIR=down
"$FERRY" pull --agent "$slow" "local:$T/src/" "$T/d4" 2>/dev/null &
pid=$!
wait_for_partial "$T/d4"
kill -9 $pid
wait $pid 2>/dev/null || true
check_no_partial "$T/d4"
expect_rc 0 "$FERRY" pull "local:$T/src/" "$T/d4"
tree_same "$T/src" "$T/d4"
