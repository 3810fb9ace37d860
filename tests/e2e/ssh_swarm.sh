# One push to three boxes, shared among them (docs/SWARM.md): three sshds
# on 127.0.0.1, each a box with its own HOME. Each piece crosses the
# client's link once; the boxes' helpers (bin/ferry-swarm, uploaded by
# hash) gather the rest from each other into a staging folder, and each
# box's own transfer adopts the files from it. Then: a re-run finds
# everything in place and shares nothing; a changed file is the only one
# shared; a dead box is reported while the others finish (exit 10), and
# the same command then completes it from the others, with almost
# nothing over the client's link; the client stopped while it spreads
# leaves what the boxes hold for the next run; a box killed mid-swarm
# is reported while the others finish, and the same command completes it
# from them; --no-swarm sends each box everything.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start
for b in box1 box2 box3; do
    sshd_box "$b"
done

small_files_tree "$T/src" 40
mkdir -p "$T/src/ckpt"
head -c 3000000 /dev/urandom >"$T/src/big.bin"
head -c 2500001 /dev/urandom >"$T/src/ckpt/step-1.pt"
: >"$T/src/empty"
ln -s big.bin "$T/src/link"
P=("$FERRY" push -F "$SSH_CONFIG" --retry-for 0)
data_mib=$(find "$T/src" -type f -printf '%s\n' |
    awk '{s += $1} END {print s / 1048576}')

# adopted_all BOX: the box's transfer adopted every file with bytes and
# sent no bytes itself.
adopted_all() {
    local n
    n=$(find "$T/src" -type f -size +0 | wc -l)
    grep -qE "^ferry: $1: [0-9]+ sent \(0 B\), [0-9]+ up to date \($n adopted\)" \
        "$T/last.err" || { cat "$T/last.err"; fail "$1: not all $n adopted"; }
}

# uplink_mib: the MiB the last run's swarm put over the client's link.
uplink_mib() {
    sed -n 's/.*boxes hold what they lacked (\([0-9.]*\) MiB over the.*/\1/p' \
        "$T/last.err" | tail -n 1
}

# A fresh push: the trees match, each piece went once, nothing staged is
# left, each box got the helper in its own HOME.
expect_rc 0 "${P[@]}" "$T/src/" "box1:$T/e1" "box2:$T/e2" "box3:$T/e3"
for i in 1 2 3; do
    tree_same "$T/src" "$T/e$i"
    [ ! -e "$T/e$i/.ferry-swarm" ] || fail "box$i: staging folder left"
    # Each box's own transfer took every file of bytes from the swarm,
    # after its check, and sent none (only the empty ones, as entries).
    adopted_all "box$i"
done
expect_err "ferry: spreading "
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked"
up=$(uplink_mib)
[ -n "$up" ] || { cat "$T/last.err"; fail "no swarm summary"; }
python3 -c "import sys; u, d = float('$up'), float('$data_mib');
sys.exit(0 if d * 0.9 <= u <= d * 1.05 else 1)" ||
    fail "the uplink carried $up MiB of $data_mib"
for b in box1 box2 box3; do
    ls "$T/home-$b/.cache/ferry/"ferry-swarm-* >/dev/null 2>&1 ||
        fail "$b: no helper uploaded to its HOME"
done

# Again: every box holds everything; nothing is shared.
expect_rc 0 "${P[@]}" "$T/src/" "box1:$T/e1" "box2:$T/e2" "box3:$T/e3"
! grep -q "spreading" "$T/last.err" || fail "shared what every box holds"

# One file changed: only it is shared. Box 1 holds staging folders of
# other transfers: one untouched for 8 days goes with its own, one of
# today stays.
mkdir -p "$T/e1/.ferry-swarm/old/files" "$T/e1/.ferry-swarm/new"
touch -d '8 days ago' "$T/e1/.ferry-swarm/old"
head -c 2000000 /dev/urandom >"$T/src/big.bin"
expect_rc 0 "${P[@]}" "$T/src/" "box1:$T/e1" "box2:$T/e2" "box3:$T/e3"
[ ! -e "$T/e1/.ferry-swarm/old" ] || fail "a staging folder 8 days old stayed"
[ -d "$T/e1/.ferry-swarm/new" ] || fail "a staging folder of today went"
[ "$(ls -A "$T/e1/.ferry-swarm")" = new ] ||
    fail "box1's own staging folder stayed: $(ls -A "$T/e1/.ferry-swarm")"
rm -rf "$T/e1/.ferry-swarm"
expect_err "ferry: spreading 1.9 MiB among 3 boxes"
for i in 1 2 3; do
    tree_same "$T/src" "$T/e$i"
    expect_err "ferry: box$i: 0 sent (0 B), $(find "$T/src" -type f | wc -l) up to date (1 adopted)"
done

# A box whose copy is damaged but looks current (same size and mtime)
# keeps it, by the transfer's own rule, but serves none of it: box 3,
# missing the file, gets it whole from box 2 (libtorrent checks every
# block against the client's torrent), with nothing over the link.
printf 'XXXX' | dd of="$T/e1/big.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
touch -r "$T/src/big.bin" "$T/e1/big.bin"
rm "$T/e3/big.bin"
expect_rc 0 "${P[@]}" "$T/src/" "box1:$T/e1" "box2:$T/e2" "box3:$T/e3"
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked (0.0 MiB over"
cmp -s "$T/src/big.bin" "$T/e3/big.bin" || fail "box3 took a damaged copy"
expect_err "ferry: box3: 0 sent (0 B)"

# A dead box: the other two share and finish; exit 10, a line for it.
head -c 3000000 /dev/urandom >"$T/src/ckpt/step-2.pt"
sshd_box_stop box3
expect_rc 10 "${P[@]}" "$T/src/" 'box[1-3]:~/data' --mkpath
tree_same "$T/src" "$T/home-box1/data"
tree_same "$T/src" "$T/home-box2/data"
expect_err "ferry: box3: swarm: "
expect_err "ferry: swarm: 2 of 3 boxes hold what they lacked"
expect_err "ferry: box3: failed (exit 5)"
# Back up: the same command completes it from the other two, which hold
# everything: the client's link carries (almost) none of it.
sshd_box_start box3
expect_rc 0 "${P[@]}" "$T/src/" 'box[1-3]:~/data' --mkpath
tree_same "$T/src" "$T/home-box3/data"
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked (0.0 MiB over"
adopted_all box3

# The client stopped (Ctrl-C) while it spreads, held to 2 MiB/s
# (--bwlimit caps the pieces' rate too): every box keeps its staging
# folder, and the same command again sends only what no box holds.
head -c 12000000 /dev/urandom >"$T/src/ckpt/step-3.pt"
"${P[@]}" --bwlimit 2M "$T/src/" 'box[1-3]:~/data' >"$T/int.out" \
    2>"$T/int.err" &
pid=$!
staged() {
    find "$T"/home-box*/data/.ferry-swarm -type f -size +0 \
        -printf '%b\n' 2>/dev/null | awk '{s += $1 * 512} END {print s + 0}'
}
# About 6 MiB put at 2 MiB/s, whatever the boxes copied among them.
for _ in $(seq 1 200); do
    grep -q "spreading" "$T/int.err" && break
    sleep 0.05
done
sleep 3
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || { cat "$T/int.err"; fail "interrupted: exit $rc"; }
held=$(staged)
[ "$held" -gt 4000000 ] || { cat "$T/int.err"; fail "staged $held bytes"; }
expect_rc 0 "${P[@]}" "$T/src/" 'box[1-3]:~/data'
for b in box1 box2 box3; do
    tree_same "$T/src" "$T/home-$b/data"
done
up=$(uplink_mib)
python3 -c "import sys; sys.exit(0 if float('$up') < 12000000 / 1048576 - 3.5
    else 1)" || { cat "$T/last.err"; fail "resumed with $up MiB over the link"; }

# A box killed mid-swarm (its helper and its sshd, while the client puts
# the pieces at 2 MiB/s): the others finish, exit 10, a line for it; the
# same command, the box back, completes it from what the live boxes
# hold, with nothing over the client's link.
head -c 12000000 /dev/urandom >"$T/src/ckpt/step-4.pt"
"${P[@]}" --bwlimit 2M "$T/src/" 'box[1-3]:~/data' >"$T/kill.out" \
    2>"$T/kill.err" &
pid=$!
for _ in $(seq 1 200); do
    grep -q "spreading" "$T/kill.err" && break
    sleep 0.05
done
sleep 2
sshd_box_stop box3
pkill -KILL -f "$T/home-box3/.cache/ferry/ferry-swarm-" ||
    { cat "$T/kill.err"; fail "no helper ran on box3"; }
rc=0
wait "$pid" || rc=$?
[ "$rc" = 10 ] || { cat "$T/kill.err"; fail "a box killed mid-swarm: exit $rc"; }
grep -q "^ferry: box3: swarm: " "$T/kill.err" ||
    { cat "$T/kill.err"; fail "no line for the box lost mid-swarm"; }
grep -q "^ferry: box3: failed" "$T/kill.err" ||
    { cat "$T/kill.err"; fail "box3 not reported failed"; }
tree_same "$T/src" "$T/home-box1/data"
tree_same "$T/src" "$T/home-box2/data"
sshd_box_start box3
expect_rc 0 "${P[@]}" "$T/src/" 'box[1-3]:~/data'
tree_same "$T/src" "$T/home-box3/data"
expect_err "ferry: swarm: 3 of 3 boxes hold what they lacked (0.0 MiB over"

# --no-swarm: as before, each box is sent what it lacks.
echo new >"$T/src/new.txt"
head -c 2000000 /dev/urandom >"$T/src/big.bin"
expect_rc 0 "${P[@]}" --no-swarm "$T/src/" 'box[1-3]:~/data'
! grep -q "spreading" "$T/last.err" || fail "--no-swarm shared"
for b in box1 box2 box3; do
    tree_same "$T/src" "$T/home-$b/data"
done
