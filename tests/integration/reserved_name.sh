# A top-level .ferry in a source (a destination's state, or anything else
# of that name: the name is ferry's at a destination's top) is left out
# everywhere: a push, a pull, a dry run's listing, ferry pack (so that
# unpack does not refuse the set); one deeper in the tree is data.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src/.ferry/part" "$T/src/sub/.ferry"
echo a >"$T/src/a"
echo x >"$T/src/.ferry/part/x"
echo deep >"$T/src/sub/.ferry/kept"
# What arrives: the tree without its top-level .ferry.
mkdir -p "$T/want"
cp -a "$T/src/." "$T/want/"
rm -rf "$T/want/.ferry"

for form in contents dir; do
    s="$T/src/"
    sub=""
    [ $form = contents ] || { s="$T/src"; sub=/src; }
    expect_rc 0 "$FERRY" push -n "$s" "local:$T/p-$form"
    ! grep -q '\.ferry/part' "$T/last.out" || fail "$form: push -n lists .ferry"
    grep -q 'sub/\.ferry/kept' "$T/last.out" || fail "$form: push -n: sub/.ferry"
    expect_rc 0 "$FERRY" push -q "$s" "local:$T/p-$form"
    tree_same "$T/want" "$T/p-$form$sub"
    expect_rc 0 "$FERRY" pull -q "local:$s" "$T/l-$form"
    tree_same "$T/want" "$T/l-$form$sub"
    expect_rc 0 "$FERRY" pack -q "$s" "$T/set-$form"
    expect_rc 0 "$FERRY" unpack -q "$T/set-$form" "$T/u-$form"
    tree_same "$T/want" "$T/u-$form$sub"
done
# A file of that name at the top is left out too.
rm -rf "$T/src/.ferry"
echo f >"$T/src/.ferry"
expect_rc 0 "$FERRY" push -q "$T/src/" "local:$T/p-file"
tree_same "$T/want" "$T/p-file"
