# Small files in volumes through a real sshd on 127.0.0.1: a tree of many
# small files and some big ones pushed and pulled identical, over one
# stream and three, with volumes small enough that there are several;
# then a push whose SSH connection is cut (netproxy) while volumes are on
# the wire resumes and completes.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

vol_count() {
    grep -c "\"event\":\"volume\".*\"action\":\"$2\"" "$1" || true
}

small_files_tree "$T/src/small" 2000
head -c 5000000 /dev/urandom >"$T/src/big"
for i in $(seq 1 30); do seq 1 $((i * 300)) >"$T/src/t$i.txt"; done

expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --volume-size 1M "$T/src/" "ferry-test:$T/d1"
tree_same "$T/src" "$T/d1"
[ "$(vol_count "$T/last.out" sent)" -ge 4 ] || fail "push: volumes"
expect_rc 0 "$FERRY" pull -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --volume-size 1M "ferry-test:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
[ "$(vol_count "$T/last.out" committed)" -ge 4 ] || fail "pull: volumes"
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json -j 3 \
    --volume-size 1M "$T/src/" "ferry-test:$T/d3"
tree_same "$T/src" "$T/d3"
expect_rc 0 "$FERRY" pull -F "$SSH_CONFIG" --agent "$AGENT" --json -j 3 \
    --volume-size 1M "ferry-test:$T/src/" "$T/d4"
tree_same "$T/src" "$T/d4"

# The connection is reset once 4 MiB went up (volumes on the wire, the
# big file not yet whole): the client reconnects, and what was committed
# is not sent again.
. "$TESTS_DIR/lib/netproxy.sh"
proxy_start --cut-after 4m --cut-dir up --cut-rounds 1
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --retry-wait 1 --volume-size 1M "$T/src/" "ferry-proxy:$T/d5"
tree_same "$T/src" "$T/d5"
grep -q '"event":"retry"' "$T/last.out" || fail "cut: no reconnect"
sed -n '/"event":"retry"/,$p' "$T/last.out" >"$T/after"
again=$(grep '"event":"volume".*"action":"sent"' "$T/after" |
    sed 's/.*"files":\([0-9]*\).*/\1/' | awk '{ s += $1 } END { print s + 0 }')
[ "$again" -lt 2000 ] || fail "cut: $again files sent again in volumes"
