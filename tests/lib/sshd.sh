# A throwaway OpenSSH server on 127.0.0.1 for end-to-end tests and
# benchmarks (bash; source after common.sh). Never touches the machine's
# own ~/.ssh, host keys or port 22: everything lives in $SSHD_DIR.
#
# sshd_start           starts sshd on a free port ($SSHD_EXTRA, if set, is
#                      added to its config); sets SSHD_PORT, SSHD_DIR,
#                      SSH_CONFIG (a client config with Host ferry-test),
#                      SSH_KEY (the user key), SSHD_HOME (the session's HOME)
# sshd_stop            stops it (registered with at_exit by sshd_start)
# sshd_launch          (re)starts it from $SSHD_DIR/sshd_config and waits
#                      until it accepts connections
#
# Sessions get HOME=$SSHD_HOME and a PATH without ferry-agent, so anything
# an agent bootstrap writes stays in the test's directory.

sshd_stop() {
    if [ -n "${SSHD_PID:-}" ]; then
        kill "$SSHD_PID" 2>/dev/null || true
        SSHD_PID=""
    fi
}

sshd_start() {
    SSHD_DIR="$T/sshd"
    SSHD_HOME="$T/home"
    mkdir -p "$SSHD_DIR" "$SSHD_HOME"
    chmod 0700 "$SSHD_DIR"
    [ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-host \
        -f "$SSHD_DIR/host_ed25519"
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-user \
        -f "$SSHD_DIR/id_ed25519"
    cp "$SSHD_DIR/id_ed25519.pub" "$SSHD_DIR/authorized_keys"
    SSH_KEY="$SSHD_DIR/id_ed25519"
    SSHD_PORT=$(free_port)
    cat >"$SSHD_DIR/sshd_config" <<CONF
Port $SSHD_PORT
ListenAddress 127.0.0.1
HostKey $SSHD_DIR/host_ed25519
PidFile $SSHD_DIR/sshd.pid
AuthorizedKeysFile $SSHD_DIR/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
MaxStartups 64:30:128
MaxSessions 32
LogLevel ERROR
Subsystem sftp internal-sftp
SetEnv HOME=$SSHD_HOME PATH=/usr/local/bin:/usr/bin:/bin
${SSHD_EXTRA:-}
CONF
    at_exit sshd_stop
    printf '[127.0.0.1]:%s %s\n' "$SSHD_PORT" \
        "$(cut -d' ' -f1,2 "$SSHD_DIR/host_ed25519.pub")" \
        >"$SSHD_DIR/known_hosts"
    SSH_CONFIG="$SSHD_DIR/ssh_config"
    cat >"$SSH_CONFIG" <<CONF
Host ferry-test
    HostName 127.0.0.1
    Port $SSHD_PORT
    User $(id -un)
    IdentityFile $SSH_KEY
    IdentitiesOnly yes
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
    ConnectTimeout 10
CONF
    sshd_launch
}

sshd_launch() {
    /usr/sbin/sshd -D -f "$SSHD_DIR/sshd_config" -E "$SSHD_DIR/sshd.log" &
    SSHD_PID=$!
    for _ in $(seq 1 100); do
        if ssh -F "$SSH_CONFIG" -o BatchMode=yes ferry-test true \
            2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    cat "$SSHD_DIR/sshd.log" >&2
    fail "sshd did not start"
}
