# Two transfers into one destination at once: the second fails with a
# clear line before it sends any data, and the first completes.
# `ferry clean` refuses to remove the state of a live transfer.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
head -c 40000000 /dev/urandom >"$T/src/big"
export FERRY_AGENT_REAL="$AGENT"
export SLOW_AGENT_RATE=2500000
slow="$TESTS_DIR/lib/slow_agent.py"

# first_ok: waits for the first push ($first), which must succeed.
first_ok() {
    local rc=0
    wait "$first" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/first.err"; fail "the first push: exit $rc"; }
}

"$FERRY" push --json --agent "$slow" "$T/src/" "local:$T/d" \
    >"$T/first.out" 2>"$T/first.err" &
first=$!
wait_part_bytes "$T/d" 1000000

# The second waits a while for the lock, then gives up, naming why.
start=$(date +%s)
expect_rc 3 "$FERRY" push --json "$T/src/" "local:$T/d"
expect_err "another ferry transfer is writing here"
[ "$(json_field bytes_literal)" = 0 ] || fail "the second one sent data"
took=$(( $(date +%s) - start ))
[ "$took" -le 20 ] || fail "the second one took $took s to give up"

# clean does not touch a live transfer's state.
expect_rc 3 "$FERRY" clean "$T/d"
expect_err "running"
[ -d "$T/d/.ferry/part" ] || fail "clean removed a live transfer's state"

first_ok
tree_same "$T/src" "$T/d"

# A second transfer that waits while the first ends: the first tidies
# its state directory away as it goes (lock, then directory), and the
# second goes on with a new one, not with the lock of a directory that
# is gone ("DEST/.ferry: No such file or directory" until 2026-12-05).
rm -rf "$T/d2"
head -c 10000000 /dev/urandom >"$T/src/big"  # blocks, not a volume
"$FERRY" push -q --agent "$slow" "$T/src/" "local:$T/d2" 2>"$T/first.err" &
first=$!
wait_part_bytes "$T/d2" 500000
expect_rc 0 "$FERRY" push -q "$T/src/" "local:$T/d2"
first_ok
tree_same "$T/src" "$T/d2"
