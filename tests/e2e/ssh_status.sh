# ferry status and clean over SSH: an interrupted push leaves a partial
# file that status lists (done/total, age), the same push resumes it, and
# clean removes what is left.
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

# A destination that does not exist: a clear error.
expect_rc 3 "$FERRY" status "${opts[@]}" "ferry-test:$T/nowhere"
expect_err "No such file or directory"
