# DEST's missing parents, as rsync: its last component is made, a missing
# parent (a mistyped one) is an error that names it and makes nothing,
# and --mkpath makes them. A push's DEST (and --keep-volumes') and a
# pull's alike.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/data/sub" "$T/ws"
echo a >"$T/data/a"
echo b >"$T/data/sub/b"
echo single >"$T/one.txt"

# The last component is made.
expect_rc 0 "$FERRY" push -q "$T/data/" "local:$T/ws/datasets"
tree_same "$T/data" "$T/ws/datasets"

# A mistyped parent: one line naming it, exit 3, nothing made.
for dest in "$T/ws/wrkspace/datasets/" "$T/ws/wrkspace/a/b"; do
    expect_rc 3 "$FERRY" push "$T/data/" "local:$dest"
    expect_err "$T/ws/wrkspace: no such directory (a parent of the destination; --mkpath makes it)"
    [ "$(grep -vc " up to date, " "$T/last.err")" = 1 ] || fail "not one line (beside the summary)"
    [ ! -e "$T/ws/wrkspace" ] || fail "push made $T/ws/wrkspace"
done
# The same as a JSON error event.
expect_rc 3 "$FERRY" push --json "$T/data/" "local:$T/ws/wrkspace/datasets/"
grep -q '"event":"error","code":"ENOENT","message":"[^"]*/ws/wrkspace: no such directory' \
    "$T/last.out" || fail "no error event naming the parent"
# A single file renamed: its name is DEST's last component, so nothing
# is made; with a trailing '/' DEST is its directory.
expect_rc 3 "$FERRY" push "$T/one.txt" "local:$T/ws/ckpt/renamed.txt"
expect_err "$T/ws/ckpt: no such directory"
expect_rc 3 "$FERRY" push "$T/one.txt" "local:$T/ws/ckpt/sub/"
expect_err "$T/ws/ckpt: no such directory"
[ ! -e "$T/ws/ckpt" ] || fail "a single file's push made ckpt"
expect_rc 0 "$FERRY" push -q "$T/one.txt" "local:$T/ws/ckpt/"
[ -f "$T/ws/ckpt/one.txt" ] || fail "DEST/ of a single file not made"

# --mkpath makes them, as rsync's does.
expect_rc 0 "$FERRY" push -q --mkpath "$T/data/" "local:$T/ws/wrkspace/a/b"
tree_same "$T/data" "$T/ws/wrkspace/a/b"
expect_rc 0 "$FERRY" push -q --mkpath "$T/one.txt" "local:$T/ws/x/y/renamed.txt"
[ "$(cat "$T/ws/x/y/renamed.txt")" = single ] || fail "--mkpath rename"

# --keep-volumes: the set's directory is a push's DEST too.
expect_rc 3 "$FERRY" push --keep-volumes "$T/data/" "local:$T/ws/sets/typo/kv"
expect_err "$T/ws/sets: no such directory (a parent of the destination; --mkpath makes it)"
[ ! -e "$T/ws/sets" ] || fail "--keep-volumes made sets"
expect_rc 0 "$FERRY" push -q --keep-volumes --mkpath "$T/data/" \
    "local:$T/ws/sets/typo/kv"
ls "$T/ws/sets/typo/kv" | grep -q '\.manifest$' || fail "no set kept"

# A pull's DEST: the same rule, on this side.
mkdir "$T/here"
expect_rc 0 "$FERRY" pull -q "local:$T/data/" "$T/here/new"
tree_same "$T/data" "$T/here/new"
expect_rc 3 "$FERRY" pull "local:$T/data/" "$T/here/typo/new"
expect_err "$T/here/typo: no such directory (a parent of the destination; --mkpath makes it)"
[ ! -e "$T/here/typo" ] || fail "pull made typo"
expect_rc 3 "$FERRY" pull "local:$T/one.txt" "$T/here/typo/renamed.txt"
expect_err "$T/here/typo: no such directory"
expect_rc 0 "$FERRY" pull -q --mkpath "local:$T/data/" "$T/here/typo/new"
tree_same "$T/data" "$T/here/typo/new"
# A watch's LOCAL is a pull's DEST.
expect_rc 3 "$FERRY" pull --watch 1s "local:$T/data/" "$T/here/nope/w"
expect_err "$T/here/nope: no such directory"
