# Delta through a real sshd on 127.0.0.1: random edits over many seeds
# pushed and pulled over old copies, with three streams; the wire carries
# about what changed.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

edits="$TESTS_DIR/lib/delta_edits.py"
mkdir -p "$T/old" "$T/new"
python3 "$edits" "$T/old" "$T/new" 5000 40 >/dev/null
# and one big file rewritten in place at three spots
head -c 30000000 /dev/urandom >"$T/old/ckpt"
cp "$T/old/ckpt" "$T/new/ckpt"
for off in 10 15000000 29000000; do
    printf 'changed' | dd of="$T/new/ckpt" bs=1 seek=$off conv=notrunc \
        2>/dev/null
done

cp -a "$T/old" "$T/remote"
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --delta=always -j 3 "$T/new/" "ferry-test:$T/remote"
tree_same "$T/new" "$T/remote"
wire=$(json_field bytes_wire)
[ "$wire" -lt 10000000 ] || fail "push: $wire bytes on the wire"
[ "$(json_field bytes_matched)" -ge 29000000 ] || fail "push: matched"

cp -a "$T/old" "$T/local"
expect_rc 0 "$FERRY" pull -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --delta=always "ferry-test:$T/new/" "$T/local"
tree_same "$T/new" "$T/local"
wire_in=$(json_field bytes_wire_in)
[ "$wire_in" -lt 10000000 ] || fail "pull: $wire_in bytes on the wire"
