# Many boxes: three sshds on 127.0.0.1, each a box of its own (its port,
# its HOME, its own uploaded agent). A push to three explicit
# destinations and to a range, each box sent everything (--no-swarm:
# e2e/ssh_swarm has the shared push); a box whose path is refused, then one
# whose sshd is dead: the others finish, exit 10, one line names the box,
# and the same command again completes it; a pull from the three into
# DEST/HOST/, one of them down, then up.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start
for b in box1 box2 box3; do
    sshd_box "$b"
done

small_files_tree "$T/src" 60
head -c 3000000 /dev/urandom >"$T/src/big.bin"
nfiles=$(find "$T/src" -type f | wc -l)
P=("$FERRY" push -F "$SSH_CONFIG" --no-swarm)
L=("$FERRY" pull -F "$SSH_CONFIG")

# box_events [HOST=CODE:SENT...]: the last run's box events, one per box
# and no other, each with its exit code and files sent ("-" for any
# count), then a summary of all with the boxes' count.
box_events() {
    python3 - "$T/last.out" "$@" <<'PY' || { cat "$T/last.out"; fail "box events"; }
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
want = dict(a.split("=") for a in sys.argv[2:])
boxes = {e["host"]: e for e in events if e["event"] == "box"}
bad = []
if sorted(boxes) != sorted(want):
    bad.append("box events for %s, not %s" % (sorted(boxes), sorted(want)))
for host, w in want.items():
    code, sent = w.split(":")
    e = boxes.get(host, {})
    if e.get("exit_code") != int(code):
        bad.append("%s: exit_code %s, not %s" % (host, e.get("exit_code"),
                                                 code))
    if sent != "-" and e.get("files_sent") != int(sent):
        bad.append("%s: files_sent %s, not %s" % (host, e.get("files_sent"),
                                                  sent))
    # Its own events carry its host, and end in its own summary.
    own = [x for x in events if x.get("host") == host and x["event"] != "box"]
    if not own or own[-1]["event"] != "summary":
        bad.append("%s: its events do not end in its summary" % host)
last = events[-1]
if last["event"] != "summary" or last.get("boxes") != len(want) or \
        last.get("boxes_failed") != sum(1 for w in want.values()
                                        if not w.startswith("0:")):
    bad.append("the last event is not the summary of all: %s" % last)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

# Three explicit destinations, one path each.
expect_rc 0 "${P[@]}" --json "$T/src/" "box1:$T/e1" "box2:$T/e2" "box3:$T/e3"
for i in 1 2 3; do
    tree_same "$T/src" "$T/e$i"
done
box_events "box1=0:$nfiles" "box2=0:$nfiles" "box3=0:$nfiles"
expect_field exit_code 0
expect_field files_sent $((3 * nfiles))
# Fresh boxes: each uploaded an agent of its own, to its own HOME.
for b in box1 box2 box3; do
    ls "$T/home-$b/.cache/ferry/"ferry-agent-* >/dev/null 2>&1 ||
        fail "$b: no agent uploaded to its HOME"
done

# The range form: one path, three boxes, each into its own HOME; lines
# named by their box, and a line per box at the end.
expect_rc 0 "${P[@]}" -v --boxes-at-once 2 "$T/src/" 'box[1-3]:~/data'
for b in box1 box2 box3; do
    tree_same "$T/src" "$T/home-$b/data"
    expect_err "ferry: $b: ok, $nfiles sent"
    grep -q "^ferry: $b: .*big.bin" "$T/last.err" ||
        { cat "$T/last.err"; fail "$b: no -v line named by the box"; }
done
expect_err "ferry: 3 boxes: 3 ok, 0 failed"
! grep -v '^ferry: box[1-3]: \|^ferry: 3 boxes: ' "$T/last.err" ||
    fail "a line on stderr not named by its box"

# A box whose path is refused: on box2, ~/ro is a file (root may write
# anywhere, so no mode would do). The others finish; exit 10; the box is
# named on one line.
echo "not a directory" >"$T/home-box2/ro"
expect_rc 10 "${P[@]}" --json "$T/src/" 'box[1-3]:~/ro/data' --mkpath
box_events "box1=0:$nfiles" "box2=3:0" "box3=0:$nfiles"
expect_field exit_code 10
tree_same "$T/src" "$T/home-box1/ro/data"
tree_same "$T/src" "$T/home-box3/ro/data"
[ "$(grep -c 'box2' "$T/last.err")" -eq 1 ] ||
    { cat "$T/last.err"; fail "box2's failure: not one line"; }
expect_err "ferry: box2: "
# Fixed, the same command completes it and finds the others up to date.
rm "$T/home-box2/ro"
expect_rc 0 "${P[@]}" --json "$T/src/" 'box[1-3]:~/ro/data' --mkpath
box_events "box1=0:0" "box2=0:$nfiles" "box3=0:0"
tree_same "$T/src" "$T/home-box2/ro/data"

# A dead box: box3's sshd is down. Human output: its line, then the
# table and the hint.
echo changed >"$T/src/new.txt"
sshd_box_stop box3
expect_rc 10 "${P[@]}" --retry-for 0 "$T/src/" 'box[1-3]:~/data'
grep -q '^ferry: box3: .*\(refused\|connect\)' "$T/last.err" ||
    { cat "$T/last.err"; fail "box3's connection: no line naming it"; }
expect_err "ferry: box3: failed (exit 5)"
expect_err "ferry: box1: ok, 1 sent"
expect_err "ferry: 3 boxes: 2 ok, 1 failed"
expect_err "the same command again completes them"
cmp -s "$T/src/new.txt" "$T/home-box2/data/new.txt" || fail "box2 not done"
sshd_box_start box3
expect_rc 0 "${P[@]}" --retry-for 0 "$T/src/" 'box[1-3]:~/data'
expect_err "ferry: box3: ok, 1 sent"
expect_err "ferry: box1: ok, 0 sent"
tree_same "$T/src" "$T/home-box3/data"

# Pull from many: each box into DEST/HOST/ (DEST made), in parallel.
expect_rc 0 "${L[@]}" --json 'box[1-3]:~/data' "$T/back"
box_events "box1=0:-" "box2=0:-" "box3=0:-"
for b in box1 box2 box3; do
    tree_same "$T/src" "$T/back/$b/data"
done
# A box that cannot be reached: the others land, exit 10; then the same
# command brings it too.
sshd_box_stop box3
expect_rc 10 "${L[@]}" --retry-for 0 'box[1-3]:~/data' "$T/back2"
tree_same "$T/src" "$T/back2/box1/data"
tree_same "$T/src" "$T/back2/box2/data"
expect_err "ferry: box3: failed (exit 5)"
sshd_box_start box3
expect_rc 0 "${L[@]}" --retry-for 0 'box[1-3]:~/data' "$T/back2"
tree_same "$T/src" "$T/back2/box3/data"
expect_err "ferry: box1: ok, 0 received"
# A pull from one box is as it always was: into DEST itself.
expect_rc 0 "${L[@]}" 'box2:~/data/' "$T/one"
tree_same "$T/src" "$T/one"
# DEST's parent missing: refused before any box, as one pull's is.
expect_rc 3 "${L[@]}" 'box[1-3]:~/data' "$T/no/such"
expect_err "its parent is missing; --mkpath makes it"
[ ! -e "$T/no" ] || fail "made a missing parent of DEST"
