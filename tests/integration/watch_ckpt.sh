# pull --watch hands over no checkpoint its writer is not done with
# (docs/DESIGN.md, "Watching"): a torch.save-layout file whose writer
# pauses halfway for several looks with the file open is never under its
# final name here (looked at every 50 ms) and has no `pulled` event until
# it is closed; one whose writer died halfway is never pulled and is said
# once as `incomplete`; a file written under a temporary name and renamed
# is pulled under its name only; a file rewritten after its pull is
# pulled again and said as `changed`; a torch.distributed.checkpoint
# directory waits for its .metadata.
. "$(dirname "$0")/../lib/common.sh"

R=$T/box
L=$T/here
mkdir -p "$R"
W="$TESTS_DIR/lib/ckpt_writer.py"

"$FERRY" pull --watch 1 --json --agent "$AGENT" "local:$R/" "$L" \
    >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
at_exit stop_watch

# 1. Paused halfway for 4 s (four looks), the file held open.
python3 "$W" pause "$R/ep1.pth" 4 &
writer=$!
while kill -0 $writer 2>/dev/null; do
    [ ! -e "$L/ep1.pth" ] || fail "ep1.pth pulled while its writer held it"
    sleep 0.05
done
wait $writer
wait_exists "$L/ep1.pth"
cmp "$R/ep1.pth" "$L/ep1.pth" || fail "ep1.pth differs"

# 2. The writer dies halfway: the file stays cut short on the box.
python3 "$W" die "$R/ep2.pth" 0.5 || true
# 3. Written as ep3.pth.tmp, renamed when done.
python3 "$W" tmp "$R/ep3.pth" 2
wait_exists "$L/ep3.pth"
cmp "$R/ep3.pth" "$L/ep3.pth" || fail "ep3.pth differs"
# 4. A DCP directory: shards first, .metadata last.
mkdir -p "$R/step4"
head -c 200000 /dev/urandom >"$R/step4/__0_0.distcp"
head -c 200000 /dev/urandom >"$R/step4/__1_0.distcp"
sleep 3
[ ! -e "$L/step4" ] || fail "a DCP directory pulled before its .metadata"
echo meta >"$R/step4/.metadata"
wait_exists "$L/step4/.metadata"
# 5. ep1.pth rewritten after its pull: pulled again, said as changed.
python3 "$W" pause "$R/ep1.pth.new" 0.1
mv "$R/ep1.pth.new" "$R/ep1.pth"
for _ in $(seq 1 200); do
    cmp -s "$R/ep1.pth" "$L/ep1.pth" && break
    sleep 0.1
done
cmp "$R/ep1.pth" "$L/ep1.pth" || fail "the rewritten ep1.pth was not pulled"
sleep 2
[ ! -e "$L/ep2.pth" ] || fail "a checkpoint cut short was pulled"
[ ! -e "$L/ep3.pth.tmp" ] || fail "a temporary name was pulled"
stop_watch || fail "Ctrl-C did not end the watch"

python3 - "$T/watch.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
w = [(e["action"], e.get("path")) for e in ev if e["event"] == "watch"]
assert w.count(("incomplete", "ep2.pth")) == 1, w
assert ("pulled", "ep1.pth") in w and ("changed", "ep1.pth") in w, w
assert w.index(("pulled", "ep1.pth")) < w.index(("changed", "ep1.pth")), w
assert not any(p and p.endswith(".tmp") for _, p in w), w
assert not any(p == "ep2.pth" and a in ("pulled", "changed") for a, p in w), w
PY
