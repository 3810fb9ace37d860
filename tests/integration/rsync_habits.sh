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

# rsync's -a spelled out, and its usual subsets: in a group of letters
# each is rsync's (-l was read as ssh's user "ptgoD": exit 6 over SSH),
# said in one line that names each.
for g in -rlptgoD -rltv -rlv; do
    rm -rf "$T/g"
    expect_rc 0 "$FERRY" push "$g" --no-progress "$T/src/" "local:$T/g"
    tree_same "$T/src" "$T/g"
    [ "$(grep -c 'no need' "$T/last.err")" = 1 ] || fail "$g: not one line"
    expect_err "are ssh's"
done
expect_rc 0 "$FERRY" push -rlptgoD -q "$T/src/" "local:$T/g"
[ ! -s "$T/last.err" ] || fail "-q still explained -rlptgoD"
expect_rc 0 "$FERRY" push -rlptgoD --no-progress "$T/src/" "local:$T/g"
expect_err "-r, -l, -p, -t, -g, -o, -D: no need, ferry always copies recursively and keeps symlinks as links, permission bits and mtimes; files belong to the remote user"
# rsync's -F (.rsync-filter files) in a group, and -g alone, are refused.
expect_rc 1 "$FERRY" push -avF "$T/src/" "local:$T/x"
expect_err "write -F FILE alone"
expect_rc 1 "$FERRY" push -g "$T/src/" "local:$T/x"
expect_err "files belong to the remote user"

# The rsync flags whose meaning ferry has: taken, one line.
expect_rc 0 "$FERRY" push -t --times --perms -S --sparse \
    --human-readable --no-progress "$T/src/" "local:$T/h"
tree_same "$T/src" "$T/h"
[ "$(grep -c 'no need' "$T/last.err")" = 1 ] || fail "not one line"
expect_err "-p, -t, -S, -h: no need"
# --mkpath is no habit: it does what rsync's does (dest_parents.sh).
expect_rc 0 "$FERRY" push --mkpath --no-progress "$T/src/" "local:$T/m/k"
! grep -q "no need" "$T/last.err" || fail "--mkpath taken as a habit"
tree_same "$T/src" "$T/m/k"
# -W is rsync's --whole-file: --delta=never. The same content under a new
# mtime costs no data by delta, all of it with -W.
mkdir -p "$T/w"
head -c 2097152 /dev/urandom >"$T/w/big"
expect_rc 0 "$FERRY" push -q --pack-threshold 0 "$T/w/" "local:$T/wd"
touch -d 2001-01-01 "$T/wd/big"
expect_rc 0 "$FERRY" push --json --pack-threshold 0 "$T/w/" "local:$T/wd"
[ "$(json_field bytes_matched)" -eq 2097152 ] || fail "delta: not matched"
touch -d 2001-01-01 "$T/wd/big"
expect_rc 0 "$FERRY" push -W --json --pack-threshold 0 "$T/w/" \
    "local:$T/wd"
[ "$(json_field bytes_matched)" -eq 0 ] || fail "-W: matched"
[ "$(json_field bytes_literal)" -eq 2097152 ] || fail "-W: not all sent"
tree_same "$T/w" "$T/wd"
expect_rc 0 "$FERRY" push -W --no-progress "$T/w/" "local:$T/wd"
expect_err "-W: taken as --delta=never"

# rsync's --timeout points to ferry's; a typo gets the option meant.
expect_rc 1 "$FERRY" push --timeout=60 "$T/src/" "local:$T/x"
expect_err "use --stall-timeout TIME"
expect_rc 1 "$FERRY" push --exlude '*.pyc' "$T/src/" "local:$T/x"
expect_err "unknown option '--exlude': did you mean --exclude?"

# Options before the command, as ssh's go.
expect_rc 0 "$FERRY" -v -F "$T/no-such-config" push "$T/src/" "local:$T/b4"
tree_same "$T/src" "$T/b4"
expect_rc 0 "$FERRY" -q pack "$T/src" "$T/vols"
[ -e "$T/vols/src.manifest" ] || fail "ferry -q pack"
expect_rc 1 "$FERRY" --watch 1m push "$T/src/" "local:$T/x"
expect_err "--watch cannot go with push: it goes with pull"

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
