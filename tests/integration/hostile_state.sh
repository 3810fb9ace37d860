# Hostile local state in a destination's .ferry: a hard link to a file
# outside planted as a part file, a tampered or truncated part file, a
# journal claiming what was never written, a FIFO where the journal goes,
# and a .ferry that is a link, another user's or world-writable. Each run
# either completes with a byte-identical file or fails naming .ferry, and
# nothing outside the destination changes.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src" "$T/outside"
head -c 30000000 /dev/urandom >"$T/src/big"
echo small >"$T/src/small"
echo precious >"$T/outside/precious"
export FERRY_AGENT_REAL="$AGENT"
export SLOW_AGENT_RATE=5000000
slow="$TESTS_DIR/lib/slow_agent.py"

# interrupted DIR: a push into DIR killed halfway, its partial kept.
interrupted() {
    "$FERRY" push --agent "$slow" "$T/src/" "local:$1" 2>/dev/null &
    pid=$!
    wait_part_bytes "$1" 12000000
    sleep 1.2   # past a journal sync
    kill -9 $pid
    wait $pid 2>/dev/null || true
    sleep 0.3
    part=$(find "$1/.ferry/part" -name '*.part' | head -n 1)
    jnl=${part%.part}.jnl
    [ -f "$part" ] && [ -f "$jnl" ] || fail "no partial in $1"
}

outside_intact() {
    [ "$(cat "$T/outside/precious")" = precious ] ||
        fail "a file outside the destination changed"
    [ "$(stat -c %h "$T/outside/precious")" -eq 1 ] || true
}

# 1. The part file replaced by a hard link to a file outside.
interrupted "$T/d1"
rm -f "$part"
ln "$T/outside/precious" "$part"
expect_rc 0 "$FERRY" push "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"
outside_intact

# 2. A byte flipped inside a block the journal claims, and the part file
# cut short: the blocks that no longer read back right are sent again.
interrupted "$T/d2"
printf 'X' | dd of="$part" bs=1 seek=1000 conv=notrunc status=none
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d2"
tree_same "$T/src" "$T/d2"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "nothing was resumed"
interrupted "$T/d3"
truncate -s 5000000 "$part"
expect_rc 0 "$FERRY" push "$T/src/" "local:$T/d3"
tree_same "$T/src" "$T/d3"

# 3. A journal that claims blocks never written (the part file emptied
# to holes): all of them are sent again.
interrupted "$T/d4"
size=$(stat -c %s "$part")
truncate -s 0 "$part"
truncate -s "$size" "$part"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d4"
tree_same "$T/src" "$T/d4"
expect_field resumed_bytes 0

# 4. A FIFO where the journal goes: status, clean and a transfer go on.
interrupted "$T/d5"
rm -f "$jnl"
mkfifo "$jnl"
expect_rc 0 timeout 20 "$FERRY" status "$T/d5"
expect_rc 0 timeout 30 "$FERRY" push "$T/src/" "local:$T/d5"
tree_same "$T/src" "$T/d5"
mkdir -p "$T/d5/.ferry/part"
mkfifo "$T/d5/.ferry/part/0123456789abcdef.jnl"
expect_rc 0 timeout 20 "$FERRY" clean "$T/d5"
[ ! -e "$T/d5/.ferry" ] || fail "clean left the state directory"

# 5. A .ferry that is not ours to use: a link, world-writable, another
# owner's. The transfer stops at once, naming .ferry; nothing is written
# through it.
mkdir -p "$T/d6" "$T/elsewhere"
ln -s "$T/elsewhere" "$T/d6/.ferry"
expect_rc 3 "$FERRY" push "$T/src/" "local:$T/d6"
expect_err ".ferry"
[ -z "$(ls -A "$T/elsewhere")" ] || fail "state written through a link"
mkdir -p "$T/d7/.ferry"
chmod 0777 "$T/d7/.ferry"
expect_rc 3 "$FERRY" push "$T/src/" "local:$T/d7"
expect_err ".ferry"
if [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$T/d8/.ferry"
    chown nobody "$T/d8/.ferry"
    expect_rc 3 "$FERRY" push "$T/src/" "local:$T/d8"
    expect_err "not a private directory"
fi
outside_intact
