# Push an awkward tree over local:, pull it back, and compare names, types,
# modes, mtimes, link targets and contents at each step.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

awkward_tree "$T/src"

expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/dst"
tree_same "$T/src" "$T/dst"
expect_field ok true
expect_field files_failed 0
expect_field files_sent "$(find "$T/src" -type f -printf x | wc -c)"
[ ! -e "$T/dst/.ferry" ] || fail "state directory left after a clean push"
# Holes stay holes: the 4 GiB file takes next to no disk.
used=$(du -k "$T/dst/big.sparse" | cut -f1)
[ "$used" -lt 65536 ] || fail "big.sparse uses $used KiB, not sparse"
# Symlinks arrive as links and are never followed on the receiving side.
[ "$(readlink "$T/dst/link-absolute")" = /etc/passwd ] || fail "link target"
[ ! -e "$T/outside" ] || fail "something was written outside the tree"

expect_rc 0 "$FERRY" pull --json "local:$T/dst/" "$T/back"
tree_same "$T/src" "$T/back"
expect_field files_failed 0

# The directory form: "src" lands as dst2/src.
expect_rc 0 "$FERRY" push "$T/src" "local:$T/dst2"
tree_same "$T/src" "$T/dst2/src"
