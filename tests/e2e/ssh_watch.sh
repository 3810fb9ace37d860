# pull --watch over SSH: a checkpoint that appears on the box is pulled
# once it is complete, a newer one is built by delta from the older one
# (--basis auto), a checkpoint whose writer pauses halfway with the file
# open is not pulled until it is closed (the agent, logged in over SSH,
# asks the kernel), and Ctrl-C ends the watch with exit 130
# (integration/watch.sh and watch_ckpt.sh have the rest over local:).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

R=$T/box
L=$T/here
mkdir -p "$R"
opts=(-F "$SSH_CONFIG" --agent "$AGENT")

stop_watch() {
    if [ -n "${wpid:-}" ]; then
        kill -INT "$wpid" 2>/dev/null || true
        wait "$wpid" 2>/dev/null || true
    fi
}
at_exit stop_watch

"$FERRY" pull "${opts[@]}" --watch 1 --basis auto --json \
    "ferry-test:$R/" "$L" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!

head -c 4000000 /dev/urandom >"$R/step-1000.pt"
wait_exists "$L/step-1000.pt"
cmp "$R/step-1000.pt" "$L/step-1000.pt" || fail "step-1000.pt differs"

# The next checkpoint differs from it in one place.
cp "$R/step-1000.pt" "$T/next"
printf 'CHANGED' | dd of="$T/next" bs=1 seek=2000000 conv=notrunc status=none
mv "$T/next" "$R/step-2000.pt"
wait_exists "$L/step-2000.pt"
cmp "$R/step-2000.pt" "$L/step-2000.pt" || fail "step-2000.pt differs"
# Its event follows the commit that made the file appear: wait for it
# before the Ctrl-C, which would otherwise race it.
for _ in $(seq 1 300); do
    [ "$(grep -c '"action":"pulled"' "$T/watch.out" || true)" -ge 2 ] && break
    sleep 0.1
done

# A writer that pauses halfway, the file open for three looks.
python3 "$TESTS_DIR/lib/ckpt_writer.py" pause "$R/step-3000.pth" 3 &
writer=$!
while kill -0 $writer 2>/dev/null; do
    [ ! -e "$L/step-3000.pth" ] ||
        fail "step-3000.pth pulled while its writer held it"
    sleep 0.05
done
wait $writer
wait_exists "$L/step-3000.pth"
cmp "$R/step-3000.pth" "$L/step-3000.pth" || fail "step-3000.pth differs"
for _ in $(seq 1 300); do
    [ "$(grep -c '"action":"pulled"' "$T/watch.out" || true)" -ge 3 ] && break
    sleep 0.1
done

kill -INT $wpid
set +e
wait $wpid
rc=$?
set -e
wpid=""
[ "$rc" -eq 130 ] || { cat "$T/watch.err"; fail "watch ended with $rc"; }
python3 - "$T/watch.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
w = [e.get("path") for e in ev
     if e["event"] == "watch" and e["action"] == "pulled"]
assert w == ["step-1000.pt", "step-2000.pt", "step-3000.pth"], w
# The second pull reused most of the first (delta from the basis).
s = [e for e in ev if e["event"] == "summary"]
# The pulls' summaries, then the watch's own, last: units pulled.
pulls = [e for e in s if e["bytes_wire"] > 0]
assert len(pulls) >= 2 and pulls[1]["bytes_matched"] >= 3000000, pulls
assert s[-1]["exit_code"] == 130 and s[-1]["files_sent"] == 3, s[-1]
PY
