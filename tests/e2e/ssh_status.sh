# ferry status and clean over SSH: an interrupted push leaves a partial
# file that status lists (done/total, age), the same push resumes it, and
# clean removes what is left. Status also names the agent and probes the
# link: through an emulated 50 ms, 80 Mbit/s link it finds that.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start
proxy_start --rate 80

mkdir -p "$T/src"
head -c 40000000 /dev/urandom >"$T/src/ckpt.bin"
opts=(-F "$SSH_CONFIG" --agent "$AGENT")

interrupted_push() {
    "$FERRY" push "${opts[@]}" "$T/src/" "ferry-proxy:$T/d" 2>/dev/null &
    pid=$!
    wait_part_bytes "$T/d" 15000000
    sleep 1.2   # past a journal sync
    kill -9 $pid
    wait $pid 2>/dev/null || true
    sleep 0.5
}

interrupted_push
expect_rc 0 "$FERRY" status "${opts[@]}" "ferry-test:$T/d"
grep -q 'ckpt.bin' "$T/last.out" || fail "status does not list the file"
expect_err "1 unfinished file"
expect_err " free of "
expect_err ": agent ferry "
grep -Eq ': round trip [0-9.]+ ms; one stream moves [0-9.]+ [KMG]?i?B/s down, [0-9.]+ [KMG]?i?B/s up$' \
    "$T/last.err" || { cat "$T/last.err"; fail "no probe line"; }
expect_rc 0 "$FERRY" status "${opts[@]}" --json "ferry-test:$T/d"
python3 - "$T/last.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
p = [e for e in ev if e["event"] == "partial"]
assert len(p) == 1 and p[0]["path"] == "ckpt.bin", p
assert p[0]["size"] == 40000000 and 0 < p[0]["done"] < 40000000, p
s = [e for e in ev if e["event"] == "space"]
assert len(s) == 1 and 0 < s[0]["avail"] <= s[0]["size"], s
PY

# The same push resumes it; then nothing is left to list.
expect_rc 0 "$FERRY" push "${opts[@]}" --json "$T/src/" "ferry-test:$T/d"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "push did not resume"
tree_same "$T/src" "$T/d"
expect_rc 0 "$FERRY" status "${opts[@]}" "ferry-test:$T/d"
expect_err "0 unfinished files"

# clean removes an interrupted transfer's state.
rm -rf "$T/d"
interrupted_push
expect_rc 0 "$FERRY" clean "${opts[@]}" "ferry-test:$T/d"
expect_err "1 unfinished file removed"
[ ! -e "$T/d/.ferry" ] || fail "clean left the state directory"
[ ! -e "$T/d/ckpt.bin" ] || fail "partial data under the final name"

# The probe through a link of known round trip and rate.
proxy_start --delay-ms 25 --rate 80
expect_rc 0 "$FERRY" status "${opts[@]}" --json "ferry-proxy:$T"
python3 - "$T/last.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
a = [e for e in ev if e["event"] == "agent"]
assert len(a) == 1 and a[0]["software"].startswith("ferry "), a
p = [e for e in ev if e["event"] == "probe"]
assert len(p) == 1, ev
p = p[0]
assert 50000 <= p["rtt_us"] < 1000000, p
for d in ("down", "up"):
    # 80 Mbit/s is 10^7 bytes/s; a round trip is left out of the time.
    assert p[d + "_bytes"] >= 256 << 10, p
    assert 3e6 < p[d + "_bytes_per_s"] < 13e6, p
PY
# clean does not probe.
expect_rc 0 "$FERRY" clean "${opts[@]}" --json "ferry-test:$T/d"
! grep -q '"event":"probe"' "$T/last.out" || fail "clean probed"

# A destination that does not exist: a clear error.
expect_rc 3 "$FERRY" status "${opts[@]}" "ferry-test:$T/nowhere"
expect_err "No such file or directory"
