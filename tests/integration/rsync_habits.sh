# What rsync and scp users type: grouped flags, -a/-r/-P/--partial (taken
# and explained in one line), options ferry does not have (one line
# saying what it does instead), and help for each command.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src/d"
echo one >"$T/src/d/a"
echo two >"$T/src/b"

expect_rc 0 "$FERRY" push -avzP --no-progress "$T/src/" "local:$T/dst"
tree_same "$T/src" "$T/dst"
[ "$(grep -c 'no need' "$T/last.err")" = 1 ] ||
    fail "-a and -P not explained in exactly one line"
expect_err "-a, -P/--partial: no need"
expect_err "for scp's -P PORT, write -p PORT"
expect_rc 0 "$FERRY" pull -r --partial -q "local:$T/src/" "$T/back"
tree_same "$T/src" "$T/back"
[ ! -s "$T/last.err" ] || fail "-q still explained -r"
# A value flag ends its group: -avj1 is -a -v -j 1 (one stream whatever
# the machine's load), and -avj99 is refused for -j's value.
expect_rc 0 "$FERRY" push -avj1 --json "$T/src/" "local:$T/dst2"
expect_field streams 1
tree_same "$T/src" "$T/dst2"
expect_rc 1 "$FERRY" push -avj99 "$T/src/" "local:$T/dst3"
expect_err "-j 99: want a number from 1 to 16"

# Options of rsync and scp that ferry does not take: exit 1, one line.
for opt in --inplace --append-verify -u --size-only -H -C; do
    expect_rc 1 "$FERRY" push "$opt" "$T/src/" "local:$T/x"
    [ "$(wc -l <"$T/last.err")" = 1 ] || fail "$opt: not one line"
    expect_err "option '$opt' is rsync's or scp's: "
done
expect_rc 1 "$FERRY" push -avzX "$T/src/" "local:$T/x"
expect_err "unknown option '-X'"
expect_rc 1 "$FERRY" push --no-such "$T/src/" "local:$T/x"
expect_err "unknown option '--no-such'"
[ ! -e "$T/x" ] || fail "a refused command made its destination"

# Help: ferry help CMD and ferry CMD --help, on stdout, exit 0.
for cmd in push pull status clean pack unpack; do
    expect_rc 0 "$FERRY" help "$cmd"
    grep -q "^usage: ferry\|^       ferry $cmd " "$T/last.out" &&
        grep -q "ferry $cmd " "$T/last.out" || fail "help $cmd"
    cp "$T/last.out" "$T/help1"
    expect_rc 0 "$FERRY" "$cmd" --help
    cmp -s "$T/help1" "$T/last.out" || fail "$cmd --help differs from help"
done
expect_rc 0 "$FERRY" push -h
grep -q -- "--exclude PATTERN" "$T/last.out" || fail "push -h: no filters"
expect_rc 1 "$FERRY" help frobnicate
expect_err "help: unknown command 'frobnicate'"
expect_rc 0 "$FERRY" help
grep -q "ferry help \[COMMAND\]" "$T/last.out" || fail "ferry help"
