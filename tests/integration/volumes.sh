# Small files travel packed in volumes inside push and pull (over
# local: agents): trees of many small files and some big ones identical
# both ways and over three streams; a file exactly at the threshold goes
# in blocks, one byte less in a volume; a tree just over one volume makes
# two; a push cut in the middle resumes without sending finished volumes
# again; a hostile agent's volumes are refused with nothing written.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

# vol_files FILE ACTION: files in the volume events of that action.
vol_files() {
    grep "\"event\":\"volume\".*\"action\":\"$2\"" "$1" |
        sed 's/.*"files":\([0-9]*\).*/\1/' |
        awk '{ s += $1 } END { print s + 0 }'
}
vol_count() {
    grep -c "\"event\":\"volume\".*\"action\":\"$2\"" "$1" || true
}

mkdir -p "$T/src/text"
small_files_tree "$T/src/small" 600
head -c 3000000 /dev/urandom >"$T/src/big1"
head -c 9000000 /dev/urandom >"$T/src/big2"
for i in $(seq 1 20); do seq 1 $((i * 500)) >"$T/src/text/t$i.txt"; done
: >"$T/src/empty"
ln -s small "$T/src/link"
nsmall=$(find "$T/src" -type f -size -8388608c | wc -l)

# 1. Push and pull, default settings: the small files in volumes.
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"
[ "$(vol_files "$T/last.out" sent)" -eq "$nsmall" ] ||
    fail "push: $(vol_files "$T/last.out" sent) files in volumes, not $nsmall"
[ "$(json_field files_sent)" -eq "$(find "$T/src" -type f | wc -l)" ] ||
    fail "push: files_sent"
# The text files shrink in their volume: counted as saved.
[ "$(json_field bytes_compressed_saved)" -gt 0 ] || fail "push: nothing saved"
expect_rc 0 "$FERRY" pull --json "local:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
[ "$(vol_files "$T/last.out" committed)" -eq "$nsmall" ] ||
    fail "pull: $(vol_files "$T/last.out" committed) files committed in volumes"
[ "$(json_field bytes_compressed_saved)" -gt 0 ] || fail "pull: nothing saved"
# Nothing of the volumes' staging is left behind.
[ -z "$(find "$T/d1" "$T/d2" -name '.ferry*')" ] || fail "staging left"

# A run again sends nothing: every file is up to date.
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d1"
[ "$(vol_count "$T/last.out" sent)" -eq 0 ] || fail "re-run sent volumes"

# 2. Three streams, and no volumes at all: the same tree.
expect_rc 0 "$FERRY" push --json -j 3 "$T/src/" "local:$T/d3"
tree_same "$T/src" "$T/d3"
expect_rc 0 "$FERRY" push --json --pack-threshold 0 "$T/src/" "local:$T/d4"
tree_same "$T/src" "$T/d4"
[ "$(vol_count "$T/last.out" sent)" -eq 0 ] || fail "threshold 0 packed"

# 3. The threshold is exclusive: a file of exactly that size goes in
# blocks, one a byte shorter in a volume.
mkdir -p "$T/edge"
head -c 4096 /dev/urandom >"$T/edge/at"
head -c 4095 /dev/urandom >"$T/edge/below"
expect_rc 0 "$FERRY" push --json --pack-threshold 4K "$T/edge/" \
    "local:$T/d5"
tree_same "$T/edge" "$T/d5"
[ "$(vol_files "$T/last.out" sent)" -eq 1 ] || fail "threshold: packed"

# 4. Just over one volume: 64K volumes (which take files below 4K) and
# 70,000 bytes of incompressible files make two volumes, none over 64K.
mkdir -p "$T/over"
for i in $(seq 1 20); do head -c 3500 /dev/urandom >"$T/over/f$i"; done
expect_rc 0 "$FERRY" push --json --volume-size 64K --pack-threshold 4K \
    "$T/over/" "local:$T/d6"
tree_same "$T/over" "$T/d6"
[ "$(vol_count "$T/last.out" sent)" -eq 2 ] || fail "over: not two volumes"
grep '"event":"volume"' "$T/last.out" | sed 's/.*"bytes":\([0-9]*\).*/\1/' |
    while read -r b; do [ "$b" -le 65536 ] || fail "a volume of $b bytes"; done
expect_rc 0 "$FERRY" pull --json --volume-size 64K --pack-threshold 4K \
    "local:$T/over/" "$T/d7"
tree_same "$T/over" "$T/d7"
[ "$(vol_count "$T/last.out" committed)" -eq 2 ] || fail "pull over: volumes"

# 5. Compression settings: never and a fixed level give the same tree.
expect_rc 0 "$FERRY" push --json --compress=never "$T/src/" "local:$T/d8"
tree_same "$T/src" "$T/d8"
expect_rc 0 "$FERRY" push --json --compress=9 "$T/src/" "local:$T/d9"
tree_same "$T/src" "$T/d9"
expect_rc 1 "$FERRY" push --compress=fast "$T/src/" "local:$T/dx"
expect_err "want auto, never or a level"
expect_rc 1 "$FERRY" push --volume-size 1K "$T/src/" "local:$T/dx"
expect_err "want 64K to 1T"

# 6. Cut in the middle: the agent is killed once files from volumes are
# in place; the client reconnects, and volumes whose files were all
# committed are not sent again.
mkdir -p "$T/many"
small_files_tree "$T/many" 3000
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=2000000
export SLOW_AGENT_PIDFILE="$T/agent.pid"
"$FERRY" push --json --volume-size 1M --retry-wait 1 \
    --agent "$TESTS_DIR/lib/slow_agent.py" "$T/many/" "local:$T/d10" \
    >"$T/cut.out" 2>"$T/cut.err" &
pid=$!
for _ in $(seq 1 1000); do
    n=$(find "$T/d10" -name 'f*.bin' 2>/dev/null | wc -l)
    [ "$n" -ge 600 ] && break
    sleep 0.02
done
[ "$n" -ge 600 ] || fail "cut: nothing arrived"
kill -9 "$(cat "$T/agent.pid")"
wait $pid || { cat "$T/cut.err"; fail "cut: exit $?"; }
unset SLOW_AGENT_PIDFILE
tree_same "$T/many" "$T/d10"
grep -q '"event":"retry"' "$T/cut.out" || fail "cut: no reconnect"
# After the reconnect only what was not in place goes again: files
# committed are skipped, even those whose volume's end was lost.
sed -n '/"event":"retry"/,$p' "$T/cut.out" >"$T/cut2.out"
sent=$(vol_files "$T/cut2.out" sent)
[ "$sent" -le $((3000 - n)) ] || fail "cut: $sent files sent again"

# 7. A hostile agent's volumes (pull): each refused, nothing written.
mkdir -p "$T/outside" "$T/hd"
export FAKE_AGENT_OUTSIDE="$T/outside"
for mode in vol-dotdot vol-absolute vol-symlink vol-short; do
    FAKE_AGENT_MODE=$mode expect_rc 4 "$FERRY" pull \
        --agent "$TESTS_DIR/lib/fake_agent.py" "local:/srv/wanted.txt" \
        "$T/hd/"
    expect_err "refused from the sender: volume 1"
    [ -z "$(ls -A "$T/outside")" ] || fail "$mode wrote outside"
    [ -z "$(ls -A "$T/hd")" ] || { ls -laR "$T/hd"; fail "$mode left files"; }
done
[ ! -e "$T/escape" ] || fail "dotdot escaped"
