# --ssh-cmd: OpenSSH itself as the transport (ProxyJump, certificates,
# FIDO keys, ControlMaster): push, pull, and the bootstrap through it.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src/sub"
echo one >"$T/src/one"
head -c 2000000 /dev/urandom >"$T/src/sub/two"

expect_rc 0 "$FERRY" push --ssh-cmd "ssh -F $SSH_CONFIG" --agent "$AGENT" \
    --json "$T/src" "ferry-test:$T/d1"
tree_same "$T/src" "$T/d1/src"
expect_rc 0 "$FERRY" pull --ssh-cmd "ssh -F $SSH_CONFIG" --agent "$AGENT" \
    "ferry-test:$T/d1/src/" "$T/back"
tree_same "$T/src" "$T/back"
# Bootstrap through ssh.
expect_rc 0 "$FERRY" push -e "ssh -F $SSH_CONFIG" "$T/src" "ferry-test:$T/d2"
expect_err "uploading"
tree_same "$T/src" "$T/d2/src"
# A ProxyJump host is reached through ssh without --ssh-cmd.
cat >"$T/cfg" <<CONF
Host hop
    HostName 127.0.0.1
    Port $SSHD_PORT
    IdentityFile $SSH_KEY
    UserKnownHostsFile $SSHD_DIR/known_hosts
Host behind
    HostName 127.0.0.1
    Port $SSHD_PORT
    ProxyJump hop
    IdentityFile $SSH_KEY
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
CONF
expect_rc 0 "$FERRY" push -F "$T/cfg" --agent "$AGENT" "$T/src" \
    "behind:$T/d3"
tree_same "$T/src" "$T/d3/src"
