# Retries are budgeted in time: an agent that stays unavailable for longer
# than the old budget of 8 tries is waited for, and the transfer ends
# well; --retry-for, --retries and --retry-for 0 each end the retrying.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
head -c 40000000 /dev/urandom >"$T/src/big"
echo small >"$T/src/small"
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=10000000
export SLOW_AGENT_PIDFILE="$T/agent.pid"
# The agent: unavailable (fails at once, as one on a box that cannot be
# reached would) while $T/down exists.
cat >"$T/flaky-agent" <<SH
#!/bin/sh
[ -e "$T/down" ] && exit 1
exec python3 "$TESTS_DIR/lib/slow_agent.py" "\$@"
SH
chmod +x "$T/flaky-agent"

# start_then_break DEST ARGS...: starts a push (with --json unless TEXT
# is set, even to nothing), and once it is under way makes the agent unavailable and
# kills the running one.
start_then_break() {
    dest=$1
    shift
    rm -f "$T/down" "$T/agent.pid"
    "$FERRY" push ${TEXT---json} --agent "$T/flaky-agent" --retry-wait 1 \
        "$@" "$T/src/" "local:$dest" >"$T/last.out" 2>"$T/last.err" &
    pid=$!
    wait_part_bytes "$dest" 5000000
    touch "$T/down"
    kill -9 "$(cat "$T/agent.pid")"
}

finish() {
    set +e
    wait $pid
    rc=$?
    set -e
    took=$(( $(date +%s) - start ))
}

retries() { grep -c '"event":"retry"' "$T/last.out" || true; }

# 1. Unavailable for 12 s: with pauses of 1 s that is more tries than the
# old limit of 8, and the default (15 minutes) keeps going.
start_then_break "$T/d1"
start=$(date +%s)
sleep 12
rm -f "$T/down"
finish
[ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "gave up: exit $rc"; }
[ "$(retries)" -gt 8 ] || fail "only $(retries) retries in 12 s"
tree_same "$T/src" "$T/d1"
python3 - "$T/last.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
r = [e for e in ev if e["event"] == "retry"]
# No count limit by default: the event says how long is left instead.
assert all("retries" not in e and 0 < e["give_up_in_s"] <= 900 for e in r), r
assert ev[-1]["event"] == "summary" and ev[-1]["ok"] is True
PY
expect_err "giving up in 15 min without progress"

# 2. --retry-for: gives up when the time without progress is spent.
start_then_break "$T/d2" --retry-for 3s
start=$(date +%s)
finish
[ "$rc" -eq 5 ] || { cat "$T/last.err"; fail "--retry-for 3s: exit $rc"; }
[ "$took" -ge 2 ] && [ "$took" -le 8 ] || fail "--retry-for 3s took $took s"
expect_field exit_code 5
# What it never got to is counted as left: small went, big did not.
summary_check files_total=2 files_sent=1 files_failed=0 files_left=1

# 2b. The same on a terminal: the last error says it gave up, then the
# summary, then that the same command resumes and where what arrived is.
TEXT= start_then_break "$T/d2b" --retry-for 2s
finish
[ "$rc" -eq 5 ] || { cat "$T/last.err"; fail "gave up: exit $rc"; }
expect_err "tries without progress)"
expect_err "1 sent (6 B), 0 up to date, 0 failed, 1 left, in"
expect_err "run the same command again to resume; what arrived of unfinished files is kept in local:$T/d2b/.ferry"

# 3. --retries still limits the tries, whichever comes first.
start_then_break "$T/d3" --retries 2
start=$(date +%s)
finish
[ "$rc" -eq 5 ] || fail "--retries 2: exit $rc"
[ "$(retries)" -eq 2 ] || fail "--retries 2: $(retries) retries"
expect_err "(2/2,"

# 4. --retry-for 0: no retry at all.
start_then_break "$T/d4" --retry-for 0
start=$(date +%s)
finish
[ "$rc" -eq 5 ] || fail "--retry-for 0: exit $rc"
[ "$(retries)" -eq 0 ] || fail "--retry-for 0 retried"
[ "$took" -le 3 ] || fail "--retry-for 0 took $took s"
