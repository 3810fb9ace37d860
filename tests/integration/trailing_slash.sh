# rsync's naming rules: "dir" copies the directory, "dir/" its contents; a
# single file may be renamed by a destination that is not a directory.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/data/sub"
echo a >"$T/data/a"
echo b >"$T/data/sub/b"
echo single >"$T/one.txt"

expect_rc 0 "$FERRY" push "$T/data" "local:$T/d1"
[ -f "$T/d1/data/a" ] && [ -f "$T/d1/data/sub/b" ] || fail "dir form"
expect_rc 0 "$FERRY" push "$T/data/" "local:$T/d2"
[ -f "$T/d2/a" ] && [ -f "$T/d2/sub/b" ] || fail "contents form"

# A file to a name that does not exist: the file gets that name (in a
# directory that is there: dest_parents.sh).
mkdir "$T/d3"
expect_rc 0 "$FERRY" push "$T/one.txt" "local:$T/d3/renamed.txt"
[ "$(cat "$T/d3/renamed.txt")" = single ] || fail "rename"
# ... to an existing directory: it goes inside.
expect_rc 0 "$FERRY" push "$T/one.txt" "local:$T/d1"
[ -f "$T/d1/one.txt" ] || fail "into existing dir"
# ... to a name with a trailing slash: a directory is made.
expect_rc 0 "$FERRY" push "$T/one.txt" "local:$T/d4/"
[ -f "$T/d4/one.txt" ] || fail "trailing slash dest"
# Several sources always go into a directory.
expect_rc 0 "$FERRY" push "$T/one.txt" "$T/data" "local:$T/d5"
[ -f "$T/d5/one.txt" ] && [ -f "$T/d5/data/a" ] || fail "several sources"
# Pull follows the same rules.
expect_rc 0 "$FERRY" pull "local:$T/one.txt" "$T/p1.txt"
[ "$(cat "$T/p1.txt")" = single ] || fail "pull rename"
expect_rc 0 "$FERRY" pull "local:$T/data/" "local:$T/one.txt" "$T/p2"
[ -f "$T/p2/a" ] && [ -f "$T/p2/one.txt" ] || fail "pull several"
