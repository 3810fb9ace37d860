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

# Slow enough (32 s) to outlive the status calls, the second push's wait
# for the lock (DEST_LOCK_WAIT_MS) and the clean below, even under ASan.
SLOW_AGENT_RATE=1250000 "$FERRY" push --json --agent "$slow" "$T/src/" \
    "local:$T/d" >"$T/first.out" 2>"$T/first.err" &
first=$!
wait_part_bytes "$T/d" 1000000

# status says a transfer is running there, not that running it again
# resumes its files: through the agent, and here.
pid_re="a transfer is running there (pid [0-9]*, transfer [0-9a-f]*)"
for where in "local:$T/d" "$T/d"; do
    expect_rc 0 "$FERRY" status "$where"
    grep -q "^ferry: $where: 1 unfinished file; $pid_re\$" "$T/last.err" ||
        { cat "$T/last.err"; fail "status of $where: no running transfer"; }
    expect_rc 0 "$FERRY" status --json "$where"
    grep -q '"event":"busy","path":"[^"]*","holder":"pid [0-9]' \
        "$T/last.out" || fail "status --json of $where: no busy event"
done

# The second waits a while for the lock, saying so once, then gives up,
# naming why. A pull into it meanwhile (the receiver is here) says the
# same.
"$FERRY" pull "local:$T/src/" "$T/d" >/dev/null 2>"$T/pull.err" &
pull=$!
start=$(date +%s)
expect_rc 3 "$FERRY" push --json "$T/src/" "local:$T/d"
expect_err "another ferry transfer is writing here"
[ "$(grep -c "waiting for the transfer holding local:$T/d (pid [0-9]*, transfer" \
    "$T/last.err")" -eq 1 ] || { cat "$T/last.err"; fail "no word of the wait"; }
grep -q '"event":"busy"' "$T/last.out" || fail "no busy event"
[ "$(json_field bytes_literal)" = 0 ] || fail "the second one sent data"
took=$(( $(date +%s) - start ))
[ "$took" -le 20 ] || fail "the second one took $took s to give up"
wait $pull || true
grep -q "^ferry: waiting for the transfer holding $T/d (pid [0-9]*, transfer" \
    "$T/pull.err" || { cat "$T/pull.err"; fail "pull: no word of the wait"; }

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
