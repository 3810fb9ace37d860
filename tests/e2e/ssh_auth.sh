# Authentication: ssh-agent first, then identity files; failures say what
# was tried, and RSA keys get advice (exit 6).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"
cfg="$T/cfg"
cat >"$cfg" <<CONF
Host box
    HostName 127.0.0.1
    Port $SSHD_PORT
    User $(id -un)
    IdentityFile $T/nokey
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
CONF

# ssh_agent_start SOCKET: a new ssh-agent for the commands that follow.
# Each agent started is killed at exit, by the pid it had when it started
# (SSH_AGENT_PID names only the last one).
agent_pids=""
stop_agents() {
    for p in $agent_pids; do kill "$p" 2>/dev/null || true; done
}
at_exit stop_agents
ssh_agent_start() {
    eval "$(ssh-agent -a "$1" -s)" >/dev/null
    agent_pids="$agent_pids $SSH_AGENT_PID"
}

# No usable key at all.
env -u SSH_AUTH_SOCK "$FERRY" push -F "$cfg" --agent "$AGENT" \
    "$T/src" "box:$T/d0" 2>"$T/last.err" && fail "auth should fail"
expect_err "authentication failed"

# Through ssh-agent, with the key only in the agent.
ssh_agent_start "$T/agent.sock"
ssh-add -q "$SSH_KEY" 2>/dev/null
expect_rc 0 "$FERRY" push -F "$cfg" --agent "$AGENT" "$T/src" "box:$T/d1"
[ -f "$T/d1/src/f" ] || fail "agent auth"
ssh-add -q -D 2>/dev/null

# An identity file the server does not accept: exit 6, file named.
ssh-keygen -q -t ed25519 -N '' -f "$T/stranger"
expect_rc 6 "$FERRY" push -F "$cfg" --agent "$AGENT" -i "$T/stranger" \
    "$T/src" "box:$T/d2"
expect_err "$T/stranger"

# An RSA key, even an authorized one, cannot sign through libssh2 in a
# way OpenSSH 8.8+ accepts: the host is run through the ssh program
# instead, which can (more in ssh_rsa_fallback.sh).
ssh-keygen -q -t rsa -b 2048 -N '' -f "$T/rsa"
cat "$T/rsa.pub" >>"$SSHD_DIR/authorized_keys"
expect_rc 0 "$FERRY" push -F "$cfg" --agent "$AGENT" -i "$T/rsa" \
    "$T/src" "box:$T/d3"
expect_err "RSA keys are left to try, which this SSH library signs only with SHA-1"

# An ecdsa key works as well as ed25519.
ssh-keygen -q -t ecdsa -b 256 -N '' -f "$T/ecdsa"
cat "$T/ecdsa.pub" >>"$SSHD_DIR/authorized_keys"
expect_rc 0 env -u SSH_AUTH_SOCK "$FERRY" push -F "$cfg" --agent "$AGENT" \
    -i "$T/ecdsa" "$T/src" "box:$T/d4"
[ -f "$T/d4/src/f" ] || fail "ecdsa key"

# A key with a passphrase: asked for on the terminal; with no terminal it
# is not tried (and the error says what was).
ssh-keygen -q -t ed25519 -N 'open sesame' -f "$T/locked"
cat "$T/locked.pub" >>"$SSHD_DIR/authorized_keys"
expect_rc 6 env -u SSH_AUTH_SOCK "$FERRY" push -F "$cfg" --agent "$AGENT" \
    -i "$T/locked" "$T/src" "box:$T/d5" </dev/null
printf 'open sesame\n' | script -q -e -c "env -u SSH_AUTH_SOCK '$FERRY' \
    push -F '$cfg' --agent '$AGENT' -i '$T/locked' '$T/src' 'box:$T/d5'" \
    /dev/null >"$T/tty.out" 2>&1 ||
    { cat "$T/tty.out"; fail "passphrase key over a terminal"; }
grep -q "Enter passphrase for key '$T/locked'" "$T/tty.out" ||
    fail "no passphrase prompt"
[ -f "$T/d5/src/f" ] || fail "passphrase key"

# IdentitiesOnly with a passphrase key that ssh-agent holds: the agent's
# copy of that configured key is used, without asking (as ssh does), and
# other agent keys are not offered.
ssh_agent_start "$T/agent2.sock"
printf '#!/bin/sh\necho "open sesame"\n' >"$T/askpass"
chmod +x "$T/askpass"
SSH_ASKPASS="$T/askpass" SSH_ASKPASS_REQUIRE=force ssh-add "$T/locked" \
    </dev/null >/dev/null 2>&1
ssh-add -l >/dev/null || fail "could not load the key into ssh-agent"
cat >"$T/cfg-only" <<CONF
Host box
    HostName 127.0.0.1
    Port $SSHD_PORT
    User $(id -un)
    IdentityFile $T/locked
    IdentitiesOnly yes
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
CONF
expect_rc 0 "$FERRY" push -F "$T/cfg-only" --agent "$AGENT" "$T/src" \
    "box:$T/d6" </dev/null
[ -f "$T/d6/src/f" ] || fail "IdentitiesOnly with the key in ssh-agent"
