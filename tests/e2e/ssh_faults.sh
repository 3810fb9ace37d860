# A flaky link: a proxy cuts the TCP connection after a random number of
# bytes, several times in one transfer. ferry reconnects by itself,
# resumes, and the tree comes out identical. Also: a dead link is noticed
# within ServerAliveInterval x ServerAliveCountMax, and ConnectTimeout
# bounds a connect that hangs.
# run.sh: alone (the link is judged by a loopback key exchange's time)
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

mkdir -p "$T/src"
head -c 100000000 /dev/urandom >"$T/src/shard.bin"
small_files_tree "$T/src/small" 200
opts=(-F "$SSH_CONFIG" --agent "$AGENT" --retry-wait 1 --json)

# Push: cuts at random points of the first 3 connections, one stream at a
# time (on a machine slow enough for loopback to look like a long link,
# the width would open more at once, and a cut one might carry less
# than the 20 MB before its cut).
proxy_start --cut-random 20m:40m --cut-rounds 3 --seed 11 --max-inflight 1m
expect_rc 0 "$FERRY" push "${opts[@]}" -j 1 "$T/src/" "ferry-proxy:$T/d1"
tree_same "$T/src" "$T/d1"
retries=$(grep -c '"event":"retry"' "$T/last.out" || true)
[ "$retries" -ge 2 ] || fail "push: $retries retries, want 2 or 3"
[ "$(grep -c 'cut after' "$T/proxy.log")" -ge 2 ] || fail "proxy did not cut"
# Each reconnect resumes the file: what was sent again is only what a
# cut connection still held in flight (< 16 MB each), not the 20-40 MB
# of the shard it had delivered.
total=$(du -sb --apparent-size "$T/src" | cut -f1)
literal=$(json_field bytes_literal)
[ "$literal" -lt $((total + 3 * 16000000)) ] ||
    fail "push sent $literal bytes for $total: reconnects did not resume"
[ "$(json_field files_sent)" -eq 201 ] || fail "push: files counted wrong"

# Pull, the same: its connection 1 is libssh2's login on this short link,
# the ssh program's come after.
: >"$T/proxy.log"
proxy_start --cut-random 20m:40m --cut-rounds 4 --seed 12 --max-inflight 1m
expect_rc 0 "$FERRY" pull "${opts[@]}" "ferry-proxy:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
retries=$(grep -c '"event":"retry"' "$T/last.out" || true)
[ "$retries" -ge 2 ] || fail "pull: $retries retries, want 2 or 3"
[ "$(json_field files_sent)" -eq 201 ] || fail "pull: files counted wrong"
literal=$(json_field bytes_literal)
[ "$literal" -lt $((total + 3 * 16000000)) ] ||
    fail "pull sent $literal bytes for $total: reconnects did not resume"

# A link that goes silent (the proxy frozen): found dead after about
# 1 s x 2, not after TCP's minutes. Retries off to see the error.
proxy_start --rate 20
start=$(date +%s)
"$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --retries 0 \
    -o ServerAliveInterval=1 -o ServerAliveCountMax=2 \
    "$T/src/shard.bin" "ferry-proxy:$T/d3/" 2>"$T/last.err" &
pid=$!
sleep 1.5
kill -STOP "$PROXY_PID"
set +e
wait $pid
rc=$?
set -e
took=$(( $(date +%s) - start ))
kill -CONT "$PROXY_PID"
[ "$rc" -eq 5 ] || { cat "$T/last.err"; fail "dead link: exit $rc"; }
expect_err "connection lost"
[ "$took" -le 12 ] || fail "dead link noticed after $took s"
[ ! -e "$T/d3/shard.bin" ] || fail "partial file under its final name"

# A server that accepts the TCP connection and then says nothing.
silent_start
start=$(date +%s)
expect_rc 5 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --retries 0 \
    -o ConnectTimeout=2 -p "$SILENT_PORT" "$T/src/shard.bin" \
    "ferry-test:$T/d4/"
took=$(( $(date +%s) - start ))
[ "$took" -le 8 ] || fail "ConnectTimeout=2 took $took s"
