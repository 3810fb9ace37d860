# A server that comes back during a long pause between reconnects is
# found by the pause's probes: the transfer goes on within seconds, not
# at the end of the pause. The proxy in front of sshd is the network: it
# is stopped (connects refused) and started again on the same port while
# ferry waits out a 16 s pause.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

mkdir -p "$T/src"
head -c 12000000 /dev/urandom >"$T/src/data.bin"
proxy_start --rate 16
port=$PROXY_PORT

start=$(date +%s)
"$FERRY" push --json -F "$SSH_CONFIG" --agent "$AGENT" "$T/src/" \
    "ferry-proxy:$T/d1" >"$T/last.out" 2>"$T/last.err" &
pid=$!
for _ in $(seq 1 300); do
    [ -n "$(find "$T/d1/.ferry/part" -name '*.part' -size +1M \
        2>/dev/null)" ] && break
    sleep 0.05
done
proxy_stop
# Tries at about 1, 3, 7 and 15 s fail; the pause after the fourth is
# 16 s. The network is back in the middle of it.
for _ in $(seq 1 400); do
    [ "$(grep -c '"event":"retry"' "$T/last.out")" -ge 5 ] && break
    sleep 0.05
done
[ "$(grep -c '"event":"retry"' "$T/last.out")" -ge 5 ] ||
    { cat "$T/last.err"; fail "no 16 s pause"; }
grep '"event":"retry"' "$T/last.out" | tail -n 1 | grep -q '"delay_s":16' ||
    fail "the fifth pause is not 16 s: $(tail -n 1 "$T/last.out")"
sleep 2
back=$(date +%s)
"$TOOLS/netproxy" -p "$port" --lifetime 120 "127.0.0.1:$SSHD_PORT" \
    2>>"$T/proxy.log" &
PROXY_PID=$!
set +e
wait $pid
rc=$?
set -e
done_at=$(date +%s)
[ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "exit $rc"; }
tree_same "$T/src" "$T/d1"
# Without the probes the next try would come 14 s after the network.
[ $((done_at - back)) -le 9 ] ||
    fail "reconnected $((done_at - back)) s after the server was back"
