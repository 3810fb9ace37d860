# A push or pull with --force sends while its scan goes on (the scan is slowed
# down by FERRY_TEST_SCAN_DELAY_US so the overlap is sure): files arrive
# before the scan ends, the totals come right at the end, Ctrl-C during
# the scan keeps what arrived and the same command completes it; with
# the space check the scan ends first.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src/a" "$T/src/b"
for i in $(seq -w 1 200); do
    echo "file $i" >"$T/src/a/f$i"
    head -c $((10#$i * 300)) /dev/urandom >"$T/src/b/g$i"
done
head -c 3000000 /dev/urandom >"$T/src/b/zbig"
nfiles=$(find "$T/src" -type f | wc -l)
nbytes=$(find "$T/src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

# first_file DEST: waits up to 2.5 s for the tree's first file in DEST.
first_file() {
    for _ in $(seq 1 250); do
        [ -e "$1/src/a/f001" ] && return 0
        sleep 0.01
    done
    return 1
}

# live_run DEST CMD...: runs a transfer into DEST (a scan of about 3 s
# after the first hundred entries) and checks that the first file of the
# tree is committed while the last is still to be scanned, then that
# the whole tree and its totals came.
live_run() {
    dest=$1
    shift
    FERRY_TEST_SCAN_DELAY_US=10000 "$@" --force --json -vv >"$T/live.out" \
        2>"$T/live.err" &
    pid=$!
    first_file "$dest" || fail "$1: nothing arrived in the first 2.5 s"
    kill -0 $pid 2>/dev/null || fail "$1 ended before its scan could have"
    [ ! -e "$dest/src/b/zbig" ] || fail "$1: the last entry arrived already"
    wait $pid || fail "live $1 failed: $(tail -n 5 "$T/live.err")"
    grep -q "scan: sending as it goes on" "$T/live.err" || fail "$1 not live"
    tree_same "$T/src" "$dest/src"
    cp "$T/live.out" "$T/last.out"
    expect_field files_total "$nfiles"
    expect_field files_sent "$nfiles"
    expect_field bytes_total "$nbytes"
    expect_field ok true
    # The small files of the slow scan share a few volumes: each stays
    # open a little (at most a second) for more, not one a trickle.
    vols=$(grep -c '"event":"volume"' "$T/last.out" || true)
    [ "$vols" -ge 1 ] && [ "$vols" -le 20 ] ||
        fail "$1: $vols volumes for a 3 s scan"
}

# 1. A push.
live_run "$T/d1" "$FERRY" push "$T/src" "local:$T/d1"

# 2. Ctrl-C while the scan goes on: exit 130, nothing partial under a
# final name; the same command then sends the rest.
export FERRY_TEST_SCAN_DELAY_US=10000
"$FERRY" push --force "$T/src" "local:$T/d2" 2>"$T/int.err" &
pid=$!
first_file "$T/d2" || true
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
[ "$rc" -eq 130 ] || fail "interrupted live push: exit $rc, want 130"
grep -q "interrupted" "$T/int.err" || fail "no interrupted line"
[ ! -e "$T/d2/src/b/zbig" ] || fail "sent all before the interrupt"
no_partial_names "$T/d2" "$T/src/.." || fail "partial file under a final name"
unset FERRY_TEST_SCAN_DELAY_US
expect_rc 0 "$FERRY" push --force --json "$T/src" "local:$T/d2"
tree_same "$T/src" "$T/d2/src"
expect_field ok true

# 2b. The agent killed while the scan goes on: the push reconnects, its
# new PLAN is live again (or carries the totals, if the scan ended), and
# every file is counted once.
export FERRY_TEST_SCAN_DELAY_US=10000
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_PIDFILE="$T/agent.pid"
"$FERRY" push --force --json --agent "$TESTS_DIR/lib/slow_agent.py" \
    "$T/src" "local:$T/d6" >"$T/cut.out" 2>"$T/cut.err" &
pid=$!
first_file "$T/d6" || true
kill -9 "$(cat "$T/agent.pid")"
wait $pid || fail "push cut mid-scan failed: $(tail -n 5 "$T/cut.err")"
grep -q "retrying" "$T/cut.err" || fail "no reconnect"
tree_same "$T/src" "$T/d6/src"
cp "$T/cut.out" "$T/last.out"
expect_field files_sent "$nfiles"
expect_field files_total "$nfiles"
unset SLOW_AGENT_PIDFILE FERRY_TEST_SCAN_DELAY_US

# 3. With the space check (no --force) the scan ends before PLAN.
FERRY_TEST_SCAN_DELAY_US=1000 expect_rc 0 "$FERRY" push -vv "$T/src" \
    "local:$T/d3"
tree_same "$T/src" "$T/d3/src"
if grep -q "scan: sending as it goes on" "$T/last.err"; then
    fail "live with the space check"
fi

# 4. A pull: the agent sends while it scans.
live_run "$T/d4" "$FERRY" pull "local:$T/src" "$T/d4"

# 5. A pull with the space check: the agent's scan ends first (its total
# is what the check needs).
FERRY_TEST_SCAN_DELAY_US=1000 expect_rc 0 "$FERRY" pull -vv "local:$T/src" \
    "$T/d5"
tree_same "$T/src" "$T/d5/src"
if grep -q "scan: sending as it goes on" "$T/last.err"; then
    fail "pull live with the space check"
fi
