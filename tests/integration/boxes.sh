# Many boxes over local: (no sshd; tests/e2e/ssh_boxes.sh has real
# ones): a push to several destinations, a box refused (exit 10), a dry
# run (each line named by its box), a pull from one host as ever, and
# SIGTERM midway: every box stops with 130, the run exits 130, and the
# same command again completes them (with --progress: one line for all).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

small_files_tree "$T/src" 30
nfiles=$(find "$T/src" -type f | wc -l)

expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/a" "local:$T/b"
tree_same "$T/src" "$T/a"
tree_same "$T/src" "$T/b"
[ "$(grep -c '"event":"box","host":"local:'"$T"'/[ab]","exit_code":0,' \
    "$T/last.out")" -eq 2 ] || { cat "$T/last.out"; fail "box events"; }
expect_field boxes 2
expect_field files_sent $((2 * nfiles))

# One box refused (its DEST under a file): it alone fails, exit 10, and
# its line names it; the other is up to date.
echo file >"$T/afile"
expect_rc 10 "$FERRY" push "$T/src/" "local:$T/a" "local:$T/afile/x"
expect_err "ferry: local:$T/afile/x: failed (exit 3)"
expect_err "ferry: local:$T/a: ok, 0 sent"
expect_err "ferry: 2 boxes: 1 ok, 1 failed"

# A dry run: its lines on stdout named by their box.
echo new >"$T/src/new.txt"
expect_rc 0 "$FERRY" push -n "$T/src/" "local:$T/a" "local:$T/b"
for d in a b; do
    grep -q "^local:$T/$d: send .*new.txt" "$T/last.out" ||
        { cat "$T/last.out"; fail "dry run: no line of box $d"; }
done
[ ! -e "$T/a/new.txt" ] || fail "the dry run wrote"
rm "$T/src/new.txt"

# Sources on one host (local: is one) pull into DEST itself, as ever;
# --boxes-at-once goes with many boxes only.
expect_rc 0 "$FERRY" pull "local:$T/a" "local:$T/b" "$T/back"
tree_same "$T/src" "$T/back/a"
tree_same "$T/src" "$T/back/b"
[ ! -e "$T/back/local" ] || fail "one host pulled into DEST/HOST"
expect_rc 1 "$FERRY" pull --boxes-at-once 2 "local:$T/a" "$T/back2"
expect_err "--boxes-at-once goes with a push or pull of many boxes"

# SIGTERM midway: each box stops as one push would (130), the run says
# so (130), and the same command completes them.
mkdir -p "$T/slow"
head -c 30000000 /dev/urandom >"$T/slow/big"
"$FERRY" push --json --bwlimit 4M "$T/slow/" "local:$T/s1" "local:$T/s2" \
    >"$T/term.out" 2>"$T/term.err" &
pid=$!
wait_part_bytes "$T/s1" 1000000
wait_part_bytes "$T/s2" 1000000
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ "$rc" -eq 130 ] || { cat "$T/term.err"; fail "SIGTERM: exit $rc, not 130"; }
[ "$(grep -c '"event":"box",.*"exit_code":130,' "$T/term.out")" -eq 2 ] ||
    { cat "$T/term.out"; fail "SIGTERM: not both boxes interrupted"; }
grep -q '"event":"summary","ok":false,"exit_code":130,"boxes":2' \
    "$T/term.out" || { cat "$T/term.out"; fail "SIGTERM: the summary"; }
[ ! -e "$T/s1/big" ] || fail "a partial file under its name"
# The re-run, slowed, with --progress: one line for all boxes.
expect_rc 0 "$FERRY" push --progress --bwlimit 16M "$T/slow/" \
    "local:$T/s1" "local:$T/s2"
tree_same "$T/slow" "$T/s1"
tree_same "$T/slow" "$T/s2"
expect_err "ferry: local:$T/s1: ok, 1 sent"
expect_err "ferry: local:$T/s2: ok, 1 sent"
expect_err "0/2 boxes done, 2 moving: "
