# push --adopt DIR: files staged under DEST/DIR, laid out as DEST, are
# moved into place when their content hash matches the source's; corrupt
# or short copies stay where they are and the file is sent; without
# --adopt nothing is taken. DIR outside the destination is refused.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

small_files_tree "$T/src" 40
stage=.ferry-swarm/t1
files=$(cd "$T/src" && find . -type f | sed 's|^\./||' | sort)

# Stage every other file; of those, corrupt two (same size, one byte
# flipped) and cut one short. Staged copies get their own mode and
# mtime: adopting sets the source's.
mkdir -p "$T/dst/$stage"
good=0
i=0
for f in $files; do
    i=$((i + 1))
    [ $((i % 2)) -eq 0 ] || continue
    mkdir -p "$T/dst/$stage/$(dirname "$f")"
    cp "$T/src/$f" "$T/dst/$stage/$f"
    chmod 0600 "$T/dst/$stage/$f"
    touch -d '2001-01-01' "$T/dst/$stage/$f"
    case $i in
    2 | 4)
        printf 'X' | dd of="$T/dst/$stage/$f" bs=1 seek=3 conv=notrunc \
            status=none
        echo "$f" >>"$T/corrupt"
        ;;
    6)
        truncate -s -1 "$T/dst/$stage/$f"
        echo "$f" >>"$T/corrupt"
        ;;
    *)
        good=$((good + 1))
        echo "$f" >>"$T/good"
        ;;
    esac
done
total=$(echo "$files" | wc -l)
[ "$good" -gt 5 ] || fail "test setup: too few staged files ($good)"
cp -r "$T/dst/$stage" "$T/staged0"

# Without --adopt: every file is sent, the staged copies untouched.
mkdir -p "$T/plain/$stage" && cp -rp "$T/staged0/." "$T/plain/$stage/"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/plain"
expect_field files_sent "$total"
expect_field files_adopted 0
diff -r "$T/staged0" "$T/plain/$stage" >/dev/null ||
    fail "a push without --adopt touched the staging folder"

# With it: the good copies are adopted, the rest received.
expect_rc 0 "$FERRY" push --json --adopt "$stage/" "$T/src/" "local:$T/dst"
summary_check files_adopted="$good" files_skipped="$good" \
    files_sent=$((total - good)) files_failed=0
[ "$(grep -c '"action":"adopted"' "$T/last.out")" -eq "$good" ] ||
    fail "one adopted file event per adopted file"
rm -rf "$T/dst.stage" && mv "$T/dst/.ferry-swarm" "$T/dst.stage"
tree_same "$T/src" "$T/dst"
while read -r f; do
    [ ! -e "$T/dst.stage/t1/$f" ] || fail "$f: adopted, yet still staged"
done <"$T/good"
while read -r f; do
    cmp -s "$T/staged0/$f" "$T/dst.stage/t1/$f" ||
        fail "$f: a staged copy that did not match was touched"
done <"$T/corrupt"

# Again: everything is current, nothing adopted nor sent.
mkdir -p "$T/dst/$stage" && cp -rp "$T/staged0/." "$T/dst/$stage/"
expect_rc 0 "$FERRY" push --json --adopt "$stage" "$T/src/" "local:$T/dst"
expect_field files_sent 0
expect_field files_adopted 0
expect_field files_skipped "$total"

# DIR beneath the destination only: a usage error, nothing moved.
for bad in /tmp ../x a/../../x .ferry; do
    expect_rc 1 "$FERRY" push --adopt "$bad" "$T/src/" "local:$T/dst"
    expect_err "--adopt $bad"
done
