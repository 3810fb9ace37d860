# pull --watch: a checkpoint written slowly on the box is pulled only once
# complete, then a newer one, and --keep 1 removes the older after that;
# the box going away is said and survived; a directory of shards appears
# all at once when its --ready-marker is there, and a file's marker is
# never pulled; Ctrl-C ends the watch with exit 130, and SIGTERM does too
# while a listing of 200,000 names comes or is looked at.
. "$(dirname "$0")/../lib/common.sh"

R=$T/box
L=$T/here
mkdir -p "$R"

# A checkpoint written in 12 pieces 0.25 s apart (about 3 s).
slow_write() {
    python3 - "$1" "$2" <<'PY'
import random, sys, time
rnd = random.Random(int(sys.argv[2]))
with open(sys.argv[1], "wb") as f:
    for _ in range(12):
        f.write(rnd.randbytes(200000))
        f.flush()
        time.sleep(0.25)
PY
}

at_exit stop_watch

# The agent, through a wrapper that fails while $T/down exists.
printf '#!/bin/sh\n[ -e "%s/down" ] && exit 1\nexec "%s" "$@"\n' "$T" \
    "$AGENT" >"$T/agent"
chmod +x "$T/agent"

"$FERRY" pull --watch 1 --keep 1 --json --retry-for 0 --agent "$T/agent" \
    "local:$R/" "$L" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!

# 1. Nothing of a checkpoint arrives while it is being written.
slow_write "$R/step-1.pt" 1 &
writer=$!
while kill -0 $writer 2>/dev/null; do
    [ ! -e "$L/step-1.pt" ] || fail "step-1.pt pulled while being written"
    sleep 0.05
done
wait $writer
wait_exists "$L/step-1.pt"
cmp "$R/step-1.pt" "$L/step-1.pt" || fail "step-1.pt differs"

# 2. A newer one comes; with --keep 1 the older copy goes after it.
slow_write "$R/step-2.pt" 2
wait_exists "$L/step-2.pt"
cmp "$R/step-2.pt" "$L/step-2.pt" || fail "step-2.pt differs"
wait_absent "$L/step-1.pt"
[ -e "$R/step-1.pt" ] || fail "the box's copy was removed"

# 3. The box goes away: the watch says so and goes on; when it is back
# the next checkpoint comes.
touch "$T/down"
sleep 2.5
cp "$R/step-2.pt" "$R/step-3.pt"
touch -d '+1 min' "$R/step-3.pt"
sleep 2.5
[ ! -e "$L/step-3.pt" ] || fail "pulled while the box was away"
grep -q '"action":"unreachable"' "$T/watch.out" ||
    { cat "$T/watch.out"; fail "the watch did not say the box was away"; }
rm "$T/down"
wait_exists "$L/step-3.pt"
wait_absent "$L/step-2.pt"
# The events follow what made those files appear and go: wait for the
# last one before the Ctrl-C, which would otherwise race it.
for _ in $(seq 1 300); do
    grep '"action":"removed"' "$T/watch.out" | grep -q 'step-2\.pt' && break
    sleep 0.1
done

# 4. Ctrl-C ends it: exit 130, within a few seconds.
kill -INT $wpid
for _ in $(seq 1 50); do
    kill -0 $wpid 2>/dev/null || break
    sleep 0.1
done
kill -0 $wpid 2>/dev/null &&
    { cat "$T/watch.err"; fail "Ctrl-C did not end the watch within 5 s"; }
set +e
wait $wpid
rc=$?
set -e
wpid=""
[ "$rc" -eq 130 ] || { cat "$T/watch.err"; fail "watch ended with $rc"; }
python3 - "$T/watch.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
w = [(e["action"], e.get("path")) for e in ev if e["event"] == "watch"]
for want in [("pulled", "step-1.pt"), ("pulled", "step-2.pt"),
             ("removed", "step-1.pt"), ("pulled", "step-3.pt"),
             ("removed", "step-2.pt")]:
    assert want in w, (want, w)
assert w.count(("pulled", "step-1.pt")) == 1, w
PY

# 5. --ready-marker: a directory of shards appears all at once when its
# marker is there; a file waits for its sibling marker, which stays on
# the box.
R2=$T/box2
L2=$T/here2
mkdir -p "$R2/ck-1"
"$FERRY" pull --watch 1 --ready-marker .done --agent "$AGENT" \
    "local:$R2/" "$L2" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
head -c 300000 /dev/urandom >"$R2/ck-1/shard0"
head -c 300000 /dev/urandom >"$R2/ck-1/shard1"
head -c 1000 /dev/urandom >"$R2/m.pt"
sleep 3
[ ! -e "$L2/ck-1" ] || fail "ck-1 pulled before its marker"
[ ! -e "$L2/m.pt" ] || fail "m.pt pulled before its marker"
touch "$R2/ck-1/.done" "$R2/m.pt.done"
for _ in $(seq 1 500); do
    if [ -e "$L2/ck-1" ]; then
        # The first time it is there, all of it is.
        cmp "$R2/ck-1/shard0" "$L2/ck-1/shard0" &&
            cmp "$R2/ck-1/shard1" "$L2/ck-1/shard1" &&
            [ -e "$L2/ck-1/.done" ] || fail "ck-1 appeared in part"
        break
    fi
    sleep 0.02
done
wait_exists "$L2/ck-1"
wait_exists "$L2/m.pt"
cmp "$R2/m.pt" "$L2/m.pt" || fail "m.pt differs"
[ ! -e "$L2/m.pt.done" ] || fail "a marker was pulled"
[ -z "$(ls -A "$L2" | grep ferry-watch)" ] || fail "staging left behind"
stop_watch || fail "Ctrl-C did not end the --ready-marker watch"

# 6. A checkpoint replaced by rename while it is being pulled: the pull
# under way ends with the version it opened, whole, and the next look
# brings the new one.
R3=$T/box3
L3=$T/here3
mkdir -p "$R3"
head -c 12000000 /dev/urandom >"$T/v1"
cp "$T/v1" "$R3/last.pt"
FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=4000000 SLOW_AGENT_DIR=down \
    "$FERRY" pull --watch 1 --agent "$TESTS_DIR/lib/slow_agent.py" \
    "local:$R3/" "$L3" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
wait_part_bytes "$L3" 2000000
head -c 12000000 /dev/urandom >"$T/v2"
cp "$T/v2" "$R3/.next"
mv "$R3/.next" "$R3/last.pt"
wait_exists "$L3/last.pt"
cmp "$T/v1" "$L3/last.pt" || fail "the pull under way mixed versions"
for _ in $(seq 1 300); do
    cmp -s "$T/v2" "$L3/last.pt" && break
    sleep 0.1
done
cmp "$T/v2" "$L3/last.pt" || fail "the new version never came"
stop_watch || fail "Ctrl-C did not end the watch of a replaced checkpoint"

# 7. A listing of 200,000 names (a huge or hostile directory): SIGTERM
# while it comes, and once it came (while the watch looks at it), ends
# the watch with 130 at once, with nothing under a final name.
fake="$TESTS_DIR/lib/fake_agent.py"
L4=$T/here4

# term_watch WHEN: SIGTERM to the watch; it must end within 5 s.
term_watch() {
    kill -TERM "$wpid"
    for _ in $(seq 1 50); do
        kill -0 "$wpid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$wpid" 2>/dev/null &&
        { cat "$T/watch.err"; fail "SIGTERM did not end the watch $1"; }
    set +e
    wait "$wpid"
    rc=$?
    set -e
    wpid=""
    [ "$rc" -eq 130 ] ||
        { cat "$T/watch.err"; fail "SIGTERM $1: the watch ended with $rc"; }
    [ -z "$(ls -A "$L4")" ] || fail "SIGTERM $1 left $(ls -A "$L4")"
}

FAKE_AGENT_MODE=list-many FAKE_AGENT_PAUSE=0.2 "$FERRY" pull --watch 1 \
    --agent "$fake" "local:/srv/box/" "$L4" >"$T/watch.out" \
    2>"$T/watch.err" &
wpid=$!
sleep 1
term_watch "while the listing came"

FAKE_AGENT_MODE=list-many FAKE_AGENT_LISTED="$T/listed" "$FERRY" pull \
    --watch 1 --agent "$fake" "local:/srv/box/" "$L4" >"$T/watch.out" \
    2>"$T/watch.err" &
wpid=$!
wait_exists "$T/listed"
# (The watch notices the agent is gone a moment later; then it looks.)
sleep 0.5
term_watch "once the listing came"

# 8. A directory of shards is pulled into a staging directory of its own,
# where no shard has a basis beside it: each is built from the shard at
# the same path in the last unit here (ck-1), so only what changed
# crosses; with --basis none everything does.
R5=$T/box5
mkdir -p "$R5/ck-1/sub"
python3 - "$R5" <<'PY'
import os, random, sys
r = random.Random(5)
for name in ("a.bin", "sub/b.bin"):
    data = bytearray(r.randbytes(3 << 20))
    open(os.path.join(sys.argv[1], "ck-1", name), "wb").write(data)
    data[1 << 20:(1 << 20) + 65536] = r.randbytes(65536)
    os.makedirs(os.path.dirname(os.path.join(sys.argv[1], "ck-2", name)),
                exist_ok=True)
    open(os.path.join(sys.argv[1], "ck-2", name), "wb").write(data)
PY
touch -d '2024-01-01 00:00:00' "$R5/ck-1" "$R5/ck-1/a.bin" "$R5/ck-1/sub/b.bin"
mv "$R5/ck-2" "$T/ck-2"
for basis in auto none; do
    L5=$T/here5-$basis
    "$FERRY" pull --watch 1 --ready-marker .done --json --basis "$basis" \
        --agent "$AGENT" "local:$R5/" "$L5" >"$T/watch.out" \
        2>"$T/watch.err" &
    wpid=$!
    touch "$R5/ck-1/.done"
    wait_exists "$L5/ck-1"
    [ -e "$R5/ck-2" ] || { mv "$T/ck-2" "$R5/ck-2"; touch "$R5/ck-2/.done"; }
    wait_exists "$L5/ck-2"
    stop_watch || fail "Ctrl-C did not end the watch of shards"
    for f in a.bin sub/b.bin; do
        cmp "$R5/ck-2/$f" "$L5/ck-2/$f" || fail "ck-2/$f differs"
    done
    python3 - "$T/watch.out" "$basis" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
# The pulls' summaries (the watch's own, last, moved nothing itself; a
# look that Ctrl-C cut has one, not ok).
sums = [e for e in ev if e["event"] == "summary" and e["ok"] and
        e["bytes_wire"] > 0]
assert len(sums) == 2, sums
last = sums[-1]
if sys.argv[2] == "auto":
    assert last["bytes_matched"] >= 5 << 20, last
    assert last["bytes_literal"] <= 1 << 20, last
else:
    assert last["bytes_matched"] == 0, last
PY
done
