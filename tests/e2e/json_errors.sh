# Every row of README's exit status table, with --json: the documented
# status, stdout all JSON lines, an error event, the summary last with
# that exit_code, and exactly one line on stderr for the error. local:
# where it can be; the loopback sshd for connection, authentication,
# host key and a missing agent.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"
fake="$TESTS_DIR/lib/fake_agent.py"

# json_error STATUS CODE CMD...: runs CMD (a ferry command with --json)
# and checks what it printed; CODE is the error event's code, or "" to
# accept any. Set LINES_LIKE to a pattern the stderr line must match
# (default "^ferry: "), SKIP_LINES to a pattern of lines that are not
# ferry's (a test helper's own noise).
json_error() {
    want=$1
    code=$2
    shift 2
    expect_rc "$want" "$@"
    python3 - "$T/last.out" "$want" "$code" <<'PY' ||
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
want, code = int(sys.argv[2]), sys.argv[3]
assert lines, "no JSON at all"
ev = [json.loads(l) for l in lines]          # every line is JSON
s = ev[-1]
assert s["event"] == "summary", "last is not the summary: %r" % s
assert s["exit_code"] == want and s["ok"] is False, s
errs = [e for e in ev if e["event"] == "error"]
assert errs, "no error event"
assert all(e["event"] != "summary" for e in ev[:-1]), "two summaries"
if code:
    assert any(e["code"] == code for e in errs), (code, errs)
fatal = [e for e in errs if e.get("fatal")]
assert all(e["fatal"] is True and e["message"] for e in fatal), fatal
PY
        { cat "$T/last.out"; fail "JSON of: $*"; }
    grep -v "${SKIP_LINES:-^\$^}" "$T/last.err" >"$T/err.lines" || true
    n=$(wc -l <"$T/err.lines")
    [ "$n" -eq 1 ] || { cat "$T/last.err"; fail "$n stderr lines: $*"; }
    grep -q "${LINES_LIKE:-^ferry: }" "$T/err.lines" ||
        { cat "$T/last.err"; fail "stderr line: $*"; }
}

# 1: usage.
json_error 1 USAGE "$FERRY" push --json --bogus "$T/src" "local:$T/d"
json_error 1 USAGE "$FERRY" push --retry-for soon --json "$T/src" "local:$T/d"
json_error 1 USAGE "$FERRY" pull --json "local:$T/src"
json_error 1 USAGE "$FERRY" push --json -F "$T/nope" "$T/src" "ferry-test:d"

# 2: a source missing.
json_error 2 ENOENT "$FERRY" push --json "$T/nope" "local:$T/d"

# 3: the destination is not a directory, is read-only, is not ours.
echo x >"$T/afile"
json_error 3 ENOTDIR "$FERRY" push --json "$T/src" "local:$T/afile/sub"
json_error 3 "" "$FERRY" push --json "$T/src" "local:$T/afile"
mkdir -p "$T/ro"
unshare_args="-m"
[ "$(id -u)" -eq 0 ] || unshare_args="-rm"
json_error 3 EROFS unshare $unshare_args sh -c "
    mount -t tmpfs -o ro tmpfs '$T/ro' &&
    exec '$FERRY' push --json '$T/src' 'local:$T/ro/d'"
locked_dir "$T/locked" "$T/src"
json_error 3 EACCES $as_user "$ferry_bin" push --json "$T/src" \
    "local:$T/locked/d"

# 4: the other side speaks nonsense (a hostile agent).
for mode in banner huge-frame dotdot; do
    FAKE_AGENT_MODE=$mode json_error 4 "" "$FERRY" pull --json \
        --agent "$fake" "local:/srv/wanted.txt" "$T/dest-$mode/"
done

# 5: connection refused; connection closed (an agent that dies at once).
port=$(free_port)
json_error 5 CONNECT "$FERRY" push --json -F "$SSH_CONFIG" -p "$port" \
    "$T/src" "ferry-test:$T/d5"
json_error 5 CLOSED "$FERRY" push --json --agent /bin/false "$T/src" \
    "local:$T/d5"

# 6: authentication.
ssh-keygen -q -t ed25519 -N '' -f "$T/stranger"
cat >"$T/cfg6" <<CONF
Host box
    HostName 127.0.0.1
    Port $SSHD_PORT
    IdentityFile $T/stranger
    IdentitiesOnly yes
    UserKnownHostsFile $SSHD_DIR/known_hosts
CONF
json_error 6 AUTH env -u SSH_AUTH_SOCK "$FERRY" push --json -F "$T/cfg6" \
    --agent "$AGENT" "$T/src" "box:$T/d6"

# 7: host key unknown; changed (after ssh's warning box, one ferry line).
: >"$T/kh"
json_error 7 HOSTKEY "$FERRY" push --json -F "$SSH_CONFIG" \
    -o UserKnownHostsFile="$T/kh" "$T/src" "ferry-test:$T/d7"
ssh-keygen -q -t ed25519 -N '' -f "$T/other_host"
printf '[127.0.0.1]:%s %s\n' "$SSHD_PORT" \
    "$(cut -d' ' -f1,2 "$T/other_host.pub")" >"$T/kh"
SKIP_LINES='^[^f]' json_error 7 HOSTKEY "$FERRY" push --json \
    -F "$SSH_CONFIG" -o UserKnownHostsFile="$T/kh" "$T/src" "ferry-test:$T/d7"

# 8: no agent on the box and no upload allowed; an --agent that is not
# there: one line, not the remote shell's own "sh: ... not found".
json_error 8 AGENT "$FERRY" push --json -F "$SSH_CONFIG" --no-bootstrap \
    "$T/src" "ferry-test:$T/d8"
grep -q -- "--no-bootstrap" "$T/last.err" || fail "8: no advice"
json_error 8 AGENT "$FERRY" push --json -F "$SSH_CONFIG" --no-bootstrap \
    --agent /nonexistent/ferry-agent "$T/src" "ferry-test:$T/d8"
expect_err "/nonexistent/ferry-agent not found"

# 9: a block whose hash is wrong.
FAKE_AGENT_MODE=bad-hash json_error 9 HASH_MISMATCH "$FERRY" pull --json \
    --agent "$fake" "local:/srv/wanted.txt" "$T/d9/"

# 130: interrupted.
head -c 30000000 /dev/urandom >"$T/src/big"
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=5000000
set +e
"$FERRY" push --json --agent "$TESTS_DIR/lib/slow_agent.py" "$T/src" \
    "local:$T/d130" >"$T/int.out" 2>"$T/int.err" &
pid=$!
set -e
wait_part_bytes "$T/d130" 1000000
kill -INT $pid
set +e
wait $pid
echo $? >"$T/int.rc"
set -e
# json_error runs a command: one that replays what ferry printed.
cat >"$T/replay" <<SH
#!/bin/sh
cat "$T/int.out"
cat "$T/int.err" >&2
exit \$(cat "$T/int.rc")
SH
chmod +x "$T/replay"
SKIP_LINES='^slow_agent:' json_error 130 INTERRUPTED "$T/replay"
