# Resume: an interrupted transfer continues from what arrived. Re-runs
# send only what is missing (bytes_literal, bytes_wire), a lost agent is
# replaced by an automatic retry, a source changed between runs restarts
# its file, and progress counts what was already there.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
head -c 60000000 /dev/urandom >"$T/src/big"
echo small >"$T/src/small"
export FERRY_AGENT_REAL="$AGENT"
export SLOW_AGENT_RATE=30000000
slow="$TESTS_DIR/lib/slow_agent.py"
size=60000000

# 1. kill -9 of the client at about half, then the same command again.
"$FERRY" push --agent "$slow" "$T/src/" "local:$T/d1" 2>/dev/null &
pid=$!
wait_part_bytes "$T/d1" 30000000
kill -9 $pid
wait $pid 2>/dev/null || true
sleep 0.3
[ ! -e "$T/d1/big" ] || fail "partial data under the final name"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"
resumed=$(json_field resumed_bytes)
literal=$(json_field bytes_literal)
[ "$resumed" -ge 20000000 ] || fail "resumed only $resumed bytes"
# "small" (6 bytes, in a volume) may have been committed by the first
# run already: then it is skipped now.
small=6
[ "$(json_field files_skipped)" -eq 1 ] && small=0
[ $((resumed + literal)) -eq $((size + small)) ] ||
    fail "resumed $resumed + sent $literal != $size + $small"
[ ! -e "$T/d1/.ferry" ] || fail "state left after the resumed run"
# The agent read back all it kept (to check it before trusting it) and
# the client says what that cost.
readback=$(json_field readback_bytes)
[ "$readback" -ge "$resumed" ] && [ "$readback" -le "$size" ] ||
    fail "read back $readback bytes for $resumed resumed"
awk -v s="$(json_field readback_s)" 'BEGIN { exit !(s > 0 && s < 60) }' ||
    fail "readback_s $(json_field readback_s)"

# 2. The same for a pull, with the client killed.
# One stream, so that the file takes four seconds at the rate given here
# (each further stream's wrapper would add its own): a slow receiver
# (ASan) is then still at it when its first journal record is looked for.
SLOW_AGENT_RATE=15000000 SLOW_AGENT_DIR=down "$FERRY" pull -j 1 \
    --agent "$slow" "local:$T/src/" "$T/d2" 2>/dev/null &
pid=$!
# The receiver itself dies here: what it journaled (synced every second)
# is what survives. Wait until the journal holds a record past its
# header (JOURNAL_HEADER_FIXED 42 + the path "big").
wait_part_bytes "$T/d2" 45000000
for _ in $(seq 1 500); do
    jnl=$(find "$T/d2/.ferry/part" -name '*.jnl' -size +$((42 + 3))c \
        2>/dev/null | head -n 1)
    [ -n "$jnl" ] && break
    sleep 0.01
done
[ -n "$jnl" ] || fail "pull: nothing journaled"
kill -9 $pid
wait $pid 2>/dev/null || true
[ ! -e "$T/d2/big" ] || fail "pull: partial data under the final name"
expect_rc 0 "$FERRY" pull "local:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
# The summary line: what was resumed, and what checking it cost.
grep -Eq 'received \([0-9.]+ MiB: [0-9.]+ MiB new, [0-9.]+ MiB resumed\).*; [0-9.]+ MiB kept checked in [0-9.]+ s$' \
    "$T/last.err" || { cat "$T/last.err"; fail "pull did not resume"; }

# 3. kill -9 of the agent: the client reconnects by itself and resumes.
agent_killed_midway "$T/d3" 45000000 \
    "$FERRY" push --json --agent "$slow" "$T/src/" "local:$T/d3"
expect_err "retrying in"
tree_same "$T/src" "$T/d3"
# The new connection resumes the file: far less than all of it twice.
literal=$(json_field bytes_literal)
[ "$literal" -lt $((size + 30000000)) ] ||
    fail "retry sent $literal bytes of $size: it did not resume"
[ "$(json_field files_sent)" -eq 2 ] || fail "files counted twice"

# 4. The source changes between runs (same size, new mtime): the file
# starts over and the result is the new version, never a mix.
"$FERRY" push --agent "$slow" "$T/src/" "local:$T/d4" 2>/dev/null &
pid=$!
wait_part_bytes "$T/d4" 30000000
kill -9 $pid
wait $pid 2>/dev/null || true
printf 'CHANGED' | dd of="$T/src/big" bs=1 seek=100 conv=notrunc status=none
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d4"
tree_same "$T/src" "$T/d4"
expect_field resumed_bytes 0

# 5. Same size and mtime but other content in the part that arrived:
# the sender compares each block the receiver holds with its own, keeps
# those that agree and sends the one that differs; the result is the
# source as it is now (tree_same: the changed bytes arrived; exit 0: the
# whole-file hash agreed).
touch -d '2021-01-01' "$T/src/big"
"$FERRY" push --agent "$slow" "$T/src/" "local:$T/d5" 2>/dev/null &
pid=$!
wait_part_bytes "$T/d5" 30000000
kill -9 $pid
wait $pid 2>/dev/null || true
printf 'AGAIN' | dd of="$T/src/big" bs=1 seek=200 conv=notrunc status=none
touch -d '2021-01-01' "$T/src/big"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d5"
tree_same "$T/src" "$T/d5"
resumed=$(json_field resumed_bytes)
literal=$(json_field bytes_literal)
[ "$resumed" -ge 10000000 ] || fail "held blocks not kept: $resumed"
small=6
[ "$(json_field files_skipped)" -eq 1 ] && small=0
[ $((resumed + literal)) -eq $((size + small)) ] ||
    fail "resumed $resumed + sent $literal != $size + $small"
