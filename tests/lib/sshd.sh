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
# sshd_box NAME        another sshd, a box of its own (Host NAME, HOME
#                      $T/home-NAME); sshd_box_stop/sshd_box_start NAME
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

# sshd_box NAME: another sshd on 127.0.0.1 (after sshd_start), a box of
# its own: its own port and HOME ($T/home-NAME, where its sessions land
# and its agent is uploaded), the same keys, and "Host NAME" in
# $SSH_CONFIG. Stopped at exit; sshd_box_stop NAME and sshd_box_start
# NAME stop and start it again (a box whose sshd died).
sshd_box() {
    local name=$1 port
    port=$(free_port)
    mkdir -p "$T/home-$name"
    sed -e "s|^Port .*|Port $port|" \
        -e "s|^PidFile .*|PidFile $SSHD_DIR/sshd-$name.pid|" \
        -e "s|^SetEnv HOME=[^ ]*|SetEnv HOME=$T/home-$name|" \
        "$SSHD_DIR/sshd_config" >"$SSHD_DIR/sshd_config-$name"
    printf '[127.0.0.1]:%s %s\n' "$port" \
        "$(cut -d' ' -f1,2 "$SSHD_DIR/host_ed25519.pub")" \
        >>"$SSHD_DIR/known_hosts"
    # sshd_start's Host block, as it was, is each box's pattern.
    [ -e "$SSHD_DIR/ssh_config.one" ] ||
        cp "$SSH_CONFIG" "$SSHD_DIR/ssh_config.one"
    sed -e "s|^Host ferry-test$|Host $name|" \
        -e "s|^    Port .*|    Port $port|" \
        "$SSHD_DIR/ssh_config.one" >>"$SSH_CONFIG"
    sshd_box_start "$name"
}

sshd_box_start() {
    local name=$1 pid
    /usr/sbin/sshd -D -f "$SSHD_DIR/sshd_config-$name" \
        -E "$SSHD_DIR/sshd-$name.log" &
    pid=$!
    eval "SSHD_BOX_PID_$name=$pid"
    case " ${SSHD_BOX_NAMES:-} " in
    *" $name "*) ;;
    *) SSHD_BOX_NAMES="${SSHD_BOX_NAMES:-} $name" ;;
    esac
    if [ -z "${SSHD_BOX_HOOKED:-}" ]; then
        at_exit sshd_boxes_stop
        SSHD_BOX_HOOKED=1
    fi
    for _ in $(seq 1 100); do
        if ssh -F "$SSH_CONFIG" -o BatchMode=yes "$name" true \
            2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    cat "$SSHD_DIR/sshd-$name.log" >&2
    fail "sshd of $name did not start"
}

sshd_box_stop() {
    local pid
    eval "pid=\${SSHD_BOX_PID_$1:-}"
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        eval "SSHD_BOX_PID_$1="
    fi
}

sshd_boxes_stop() {
    local n
    for n in ${SSHD_BOX_NAMES:-}; do
        sshd_box_stop "$n"
    done
}
