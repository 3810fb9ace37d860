# The same source named twice is one source, sent once: "a a", "a a//",
# or the same remote path twice in a pull. "a" and "a/" stay two sources
# (the trailing-slash rule gives them different names).
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src/a/sub"
echo one >"$T/src/a/one"
echo two >"$T/src/a/sub/two"
echo f >"$T/src/f"
cd "$T/src"

expect_rc 0 "$FERRY" push --json a a "local:$T/d1"
tree_same "$T/src/a" "$T/d1/a"
expect_field files_total 2
expect_rc 0 "$FERRY" push --json f a//sub//two f a/sub/two "local:$T/d2"
expect_field files_total 2
[ -f "$T/d2/f" ] && [ -f "$T/d2/two" ] || fail "push of repeated sources"

# Two different sources by the naming rule: both are sent.
expect_rc 0 "$FERRY" push --json a a/ "local:$T/d3"
[ -f "$T/d3/a/one" ] && [ -f "$T/d3/one" ] || fail "a and a/ merged"

# A pull of the same remote path twice.
expect_rc 0 "$FERRY" pull --json "local:$T/src/f" "local:$T/src//f" \
    "local:$T/src/a" "$T/d4"
expect_field files_total 3
[ -f "$T/d4/f" ] && [ -f "$T/d4/a/sub/two" ] || fail "pull of repeats"
