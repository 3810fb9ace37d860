# The agent ends under a running push: killed (kill -9), or out of disk.
# ferry must end within a bounded time (no thread spinning on a channel
# that will never take data again), with the status README gives: 5 and
# one line naming the cause for a killed agent without retries; a retry
# that completes with them; 3 and the agent's own "No space left on
# device" for a full disk.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

mkdir -p "$T/src"
head -c 60000000 /dev/urandom >"$T/src/big.bin"
small_files_tree "$T/src/small" 50
# The agent, through a wrapper that records the pid of each agent that
# serves (the start script also asks it for --version first).
cat >"$T/wrap" <<EOF
#!/bin/sh
[ "\$1" = serve ] && echo \$\$ >>"$T/agent.pids"
exec "$AGENT" "\$@"
EOF
chmod +x "$T/wrap"
# Every file in blocks: in volumes the 50 small ones are committed before
# the big one is under way, and a summary line would follow the cause.
opts=(-F "$SSH_CONFIG" --agent "$T/wrap" --no-bootstrap --pack-threshold 0)

# run_bounded SECONDS CMD...: runs CMD in the background (pid in $run_pid,
# stderr in $T/last.err, stdout in $T/last.out).
run_bounded() {
    limit=$1
    shift
    : >"$T/agent.pids"
    timeout -s KILL "$limit" "$@" >"$T/last.out" 2>"$T/last.err" &
    run_pid=$!
    run_start=$(date +%s)
}

# kill_first_agent: kill -9 of the first agent once it has received some
# of the data.
kill_first_agent() {
    for _ in $(seq 1 200); do
        [ -s "$T/agent.pids" ] && break
        sleep 0.05
    done
    [ -s "$T/agent.pids" ] || fail "no agent started"
    sleep 1
    kill -9 "$(head -n 1 "$T/agent.pids")"
}

# wait_bounded: waits for the command; sets rc and took.
wait_bounded() {
    set +e
    wait "$run_pid"
    rc=$?
    set -e
    took=$(( $(date +%s) - run_start ))
    [ "$rc" -ne 137 ] ||
        { cat "$T/last.err"; fail "still running after $limit s"; }
}

# killed_once CMD LINK WORDS [OPTS...]: the agent killed under a push or
# a pull, no retries: exit 5, one error line with WORDS, then the summary
# and how to resume.
killed_once() {
    local cmd=$1 link=$2 words=$3
    shift 3
    if [ "$cmd" = push ]; then
        run_bounded 20 "$FERRY" push "${opts[@]}" --retries 0 "$@" \
            "$T/src/" "ferry-proxy:$T/d1-$link"
    else
        run_bounded 20 "$FERRY" pull "${opts[@]}" --retries 0 "$@" \
            "ferry-proxy:$T/src/" "$T/d1-$link"
    fi
    kill_first_agent
    wait_bounded
    [ "$rc" -eq 5 ] || { cat "$T/last.err"; fail "killed agent: exit $rc"; }
    expect_err "$words"
    [ "$(error_lines)" -eq 1 ] ||
        { cat "$T/last.err"; fail "killed agent: more than one error line"; }
    expect_err "run the same command again to resume"
    no_partial_names "$T/d1-$link" "$T/src" ||
        fail "partial file under its name"
}
# A slow link, so that the transfer is in full flow when the agent dies.
# libssh2 carries stream 0 and hears the signal; through the ssh program
# (--ssh-cmd), which only ends with 255, the words are less sure.
proxy_start --rate 160 --max-inflight 1m
killed_once push short "the agent was killed"
killed_once pull short "the agent was killed"
killed_once pull cmd "connection lost, or the agent killed" --ssh-cmd ssh

# Killed, with retries: a new agent finishes the job.
run_bounded 60 "$FERRY" push "${opts[@]}" --retry-wait 1 --json "$T/src/" \
    "ferry-proxy:$T/d2"
kill_first_agent
wait_bounded
[ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "retry after kill: exit $rc"; }
grep -q '"event":"retry"' "$T/last.out" || fail "no retry after the kill"
[ "$(wc -l <"$T/agent.pids")" -ge 2 ] || fail "no second agent"
tree_same "$T/src" "$T/d2"
proxy_stop

# A full disk: a 20 MB tmpfs takes part of the 60 MB file, and the agent
# says why it stopped (--force: past the space check, which would refuse
# it before any data moved).
mkdir -p "$T/full"
if ! mount -t tmpfs -o size=20m ferry-test "$T/full" 2>"$T/mount.err"; then
    echo "NOTE: ssh_agent_death: cannot mount a tmpfs here" \
        "($(cat "$T/mount.err")); the disk-full case was not run" >&2
    exit 0
fi
unmount_full() { umount -l "$T/full" 2>/dev/null || true; }
at_exit unmount_full
run_bounded 20 "$FERRY" push "${opts[@]}" --force "$T/src/big.bin" \
    "ferry-test:$T/full/d3/"
wait_bounded
[ "$rc" -eq 3 ] || { cat "$T/last.err"; fail "disk full: exit $rc"; }
expect_err "No space left on device"
[ ! -e "$T/full/d3/big.bin" ] || fail "partial file under its final name"
