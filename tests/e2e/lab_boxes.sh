# Many boxes in the lab (tests/lib/lab.sh): three boxes, each a network
# namespace with its own sshd, HOME, workspace ($LAB_WS, one path, a
# folder of its own on each box) and disk, behind a 100 Mbit/s uplink.
# A first contact uploads an agent into each box's own HOME; a push to
# the three lands whole on each, and the uplink's counter shows the data
# once per box for per-box sends, and once in all for the swarm (the
# default); a box on a slow port holds back only itself (the others'
# transfers end before the swarm does); unless the boxes cannot reach
# each other (bridge ports isolated: the probe sends each everything); a
# pull from the three comes back through the shaped uplink as much. A box
# whose sshd is dead: the others finish, exit 10, and the same command
# again, the box back, completes it.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/lab.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "lab_boxes: network namespaces need root; not run" >&2
    exit 0
fi
lab_up 3 100mbit 1gbit
LAB_CMD_TIMEOUT=120

small_files_tree "$T/src" 300
head -c 3000000 /dev/urandom >"$T/src/big1.bin"
head -c 2500000 /dev/urandom >"$T/src/d01/big2.bin"
size=$(find "$T/src" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')
nfiles=$(find "$T/src" -type f | wc -l)
P=(lab_client "$FERRY" push -F "$LAB_SSH_CONFIG")
# Sends to each box in full, the case whose bytes are known here.
read -r -a per_box <<<"$(lab_per_box)"

# uplink_delta WHICH BEFORE: bytes the uplink moved since BEFORE (a
# lab_uplink_bytes), sent (tx) or received (rx).
uplink_delta() {
    local now
    now=$(lab_uplink_bytes)
    case $1 in
    tx) echo $((${now% *} - ${2% *})) ;;
    rx) echo $((${now#* } - ${2#* })) ;;
    esac
}

# plausible WHAT GOT: GOT bytes carry the data three times over (each
# box's full copy), with framing and headers, and not much more.
plausible() {
    note "$1: $2 bytes on the uplink for 3 x $size of data"
    [ "$2" -ge $((3 * size)) ] &&
        [ "$2" -le $((3 * size * 5 / 4 + 1048576)) ] ||
        fail "$1: $2 bytes on the uplink for 3 x $size of data"
}

# The lab reaches nothing but itself: no default route, no IPv6.
for ns in "${LAB}c" "${LAB}b1"; do
    [ -z "$(ip -n "$ns" route show default)" ] || fail "$ns: a default route"
    [ -z "$(ip -n "$ns" -6 addr show)" ] || fail "$ns: IPv6 addresses"
done

# First contact: each box gets an agent of its own, in its own HOME.
echo hello >"$T/hello"
expect_rc 0 "${P[@]}" "$T/hello" 'box[1-3]:~/hello'
for k in 1 2 3; do
    ls "$(lab_home "$k")/.cache/ferry/"ferry-agent-* >/dev/null 2>&1 ||
        fail "box$k: no agent uploaded to its HOME"
    cmp -s "$T/hello" "$(lab_home "$k")/hello" || fail "box$k: hello"
done

before=$(lab_uplink_bytes)
expect_rc 0 "${P[@]}" --json "${per_box[@]}" "$T/src/" \
    "box1:$LAB_WS/data" "box2:$LAB_WS/data" "box3:$LAB_WS/data"
for k in 1 2 3; do
    tree_same "$T/src" "$(lab_ws "$k")/data"
done
expect_field exit_code 0
expect_field files_sent $((3 * nfiles))
plausible push "$(uplink_delta tx "$before")"

# The swarm, the default: each piece crosses the uplink once, and the
# boxes copy the rest among themselves at their own ports' rate. Its
# first contact uploads the helper to each box; the next push is timed.
mkdir "$T/warm"
head -c 1500000 /dev/urandom >"$T/warm/w.bin"
expect_rc 0 "${P[@]}" "$T/warm/" "box[1-3]:$LAB_WS/warm"
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked"
before=$(lab_uplink_bytes)
expect_rc 0 "${P[@]}" "$T/src/" "box[1-3]:$LAB_WS/swarm"
for k in 1 2 3; do
    tree_same "$T/src" "$(lab_ws "$k")/swarm"
done
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked"
sent=$(uplink_delta tx "$before")
note "swarm: $sent bytes on the uplink for $size of data"
[ "$sent" -ge "$size" ] && [ "$sent" -le $((size * 23 / 20 + 2097152)) ] ||
    { cat "$T/last.err"; fail "swarm: $sent bytes on the uplink for $size of data"; }

# A straggler: box3 receives at 5 Mbit/s (it sends at its port's rate, so
# that the pieces only it was put reach the others at once). Each of the
# others commits as soon as its own helper is done, while the swarm goes
# on for box3: their transfers end (adopting every file, with their
# helpers still seeding from the staged names) before the swarm's end is
# said, which waits for box3. No helper is lost on the way.
lab_rate_box_in 3 5mbit
expect_rc 0 "${P[@]}" "$T/src/" "box[1-3]:$LAB_WS/strag"
lab_rate_box 3 1gbit
for k in 1 2 3; do
    tree_same "$T/src" "$(lab_ws "$k")/strag"
    [ ! -e "$(lab_ws "$k")/strag/.ferry-swarm" ] ||
        fail "box$k: staging folder left"
done
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked"
! grep -q "ferry: box[1-3]: swarm: " "$T/last.err" ||
    { cat "$T/last.err"; fail "a box left the swarm"; }
# Each box's own summary line comes as its transfer ends.
end_at=$(grep -n "ferry: swarm: 3 of 3 boxes hold" "$T/last.err" | cut -d: -f1)
nbytes=$(find "$T/src" -type f -size +0 | wc -l)
for k in 1 2; do
    ok_at=$(grep -nE "^ferry: box$k: [0-9]+ sent \\(.*\\($nbytes adopted\\)" \
        "$T/last.err" | cut -d: -f1)
    [ -n "$ok_at" ] || { cat "$T/last.err"; fail "box$k: not all adopted"; }
    [ "$ok_at" -lt "$end_at" ] ||
        { cat "$T/last.err"; fail "box$k waited for the straggler"; }
done

# Boxes that cannot reach each other: the probe finds it, says so, and
# each box is sent everything.
lab_isolate on
before=$(lab_uplink_bytes)
expect_rc 0 "${P[@]}" "$T/src/" "box[1-3]:$LAB_WS/apart"
expect_err "the boxes cannot reach each other"
for k in 1 2 3; do
    tree_same "$T/src" "$(lab_ws "$k")/apart"
done
plausible apart "$(uplink_delta tx "$before")"
lab_isolate off

before=$(lab_uplink_bytes)
expect_rc 0 lab_client "$FERRY" pull -F "$LAB_SSH_CONFIG" \
    "box[1-3]:$LAB_WS/data" "$T/back"
for k in 1 2 3; do
    tree_same "$T/src" "$T/back/box$k/data"
done
plausible pull "$(uplink_delta rx "$before")"

# box2 dead: the others take the change, box2 is named, exit 10.
echo changed >"$T/src/new.txt"
lab_box_kill 2
expect_rc 10 "${P[@]}" --retry-for 0 "$T/src/" "box[1-3]:$LAB_WS/data"
expect_err "ferry: box2: failed (exit 5)"
expect_err "ferry: 3 boxes: 2 ok, 1 failed"
tree_same "$T/src" "$(lab_ws 1)/data"
tree_same "$T/src" "$(lab_ws 3)/data"
[ ! -e "$(lab_ws 2)/data/new.txt" ] || fail "box2 took the change dead"
# Back: the same command completes it and finds the others up to date.
lab_box_start 2
expect_rc 0 "${P[@]}" --retry-for 0 "$T/src/" "box[1-3]:$LAB_WS/data"
expect_err "ferry: box2: ok, 1 sent"
expect_err "ferry: box1: ok, 0 sent"
tree_same "$T/src" "$(lab_ws 2)/data"
