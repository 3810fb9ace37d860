# Unchanged files are skipped by size + mtime; --checksum compares content.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

small_files_tree "$T/src" 300
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/dst"
expect_field files_sent 300
expect_field files_skipped 0

expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/dst"
expect_field files_sent 0
expect_field files_skipped 300
expect_field bytes_literal 0

# A changed file (new size) is sent, the rest skipped.
echo "appended" >>"$T/src/d00/e00/f000000.bin"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/dst"
expect_field files_sent 1
expect_field files_skipped 299
tree_same "$T/src" "$T/dst"

# Same size and mtime, different content: skipped by default (like
# rsync), found with --checksum.
f=d01/e01/f000001.bin
cp -p "$T/src/$f" "$T/orig"
printf 'X' | dd of="$T/src/$f" bs=1 seek=0 conv=notrunc status=none
touch -r "$T/orig" "$T/src/$f"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/dst"
expect_field files_sent 0
cmp -s "$T/src/$f" "$T/dst/$f" && fail "test setup: content should differ"
expect_rc 0 "$FERRY" push --json --checksum "$T/src/" "local:$T/dst"
expect_field files_sent 1
expect_field files_skipped 299
tree_same "$T/src" "$T/dst"

# A mode change alone is applied without sending data.
chmod 0600 "$T/src/d02/e02/f000002.bin"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/dst"
expect_field files_sent 0
tree_same "$T/src" "$T/dst"
