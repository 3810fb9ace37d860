# An unpack holds at most DEST_WRITE_BATCH_FILES (512) staged names before
# it commits them: a volume set of more files than two batches comes back
# whole, in every directory, with nothing left staged.
. "$(dirname "$0")/../lib/common.sh"

src="$T/src"
mkdir -p "$src/a" "$src/b"
i=0
while [ $i -lt 1100 ]; do
    d=a
    [ $((i % 3)) -eq 0 ] && d=b
    echo "file $i" >"$src/$d/f$i"
    i=$((i + 1))
done
expect_rc 0 "$FERRY" pack --volume-size 256K "$src" "$T/out"
expect_rc 0 "$FERRY" unpack "$T/out" "$T/back"
tree_same "$src" "$T/back/src"
[ "$(find "$T/back" -type f | wc -l)" -eq 1100 ] ||
    fail "not every file came back"
[ -z "$(ls -A "$T/back" | grep -v '^src$')" ] || fail "staging left in DEST"
