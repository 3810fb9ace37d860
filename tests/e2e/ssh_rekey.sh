# Key re-exchange in the middle of a transfer: sshd rekeys every 1-4 GB
# by default and libssh2 1.10 has had writes stuck in EAGAIN when a rekey
# starts with a packet pending. Here sshd rekeys every 16 MB, so a 200 MB
# push and pull go through a dozen rekeys each.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
SSHD_EXTRA="RekeyLimit 16M"
sshd_start

mkdir -p "$T/src"
head -c 200000000 /dev/urandom >"$T/src/ckpt.bin"
expect_rc 0 timeout 120 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" \
    "$T/src/" "ferry-test:$T/d1"
tree_same "$T/src" "$T/d1"
expect_rc 0 timeout 120 "$FERRY" pull -F "$SSH_CONFIG" --agent "$AGENT" \
    "ferry-test:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
