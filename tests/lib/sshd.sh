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
# sshd_keys, sshd_config_for, ssh_host_for, known_host_for
#                      the pieces, for sshds elsewhere (tests/lib/lab.sh)
#
# Sessions get HOME=$SSHD_HOME and a PATH without ferry-agent, so anything
# an agent bootstrap writes stays in the test's directory.

sshd_stop() {
    if [ -n "${SSHD_PID:-}" ]; then
        kill "$SSHD_PID" 2>/dev/null || true
        SSHD_PID=""
    fi
}

# sshd_keys DIR: a host key, a user key and authorized_keys (that user
# key) made for this run in DIR, so nothing of the machine's own is used.
sshd_keys() {
    mkdir -p "$1"
    chmod 0700 "$1"
    [ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-host -f "$1/host_ed25519"
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-user -f "$1/id_ed25519"
    cp "$1/id_ed25519.pub" "$1/authorized_keys"
}

# sshd_config_for DIR ADDR PORT HOME PIDFILE: on stdout, the config of an
# sshd with DIR's keys (sshd_keys) on ADDR:PORT whose sessions get HOME.
sshd_config_for() {
    cat <<CONF
Port $3
ListenAddress $2
HostKey $1/host_ed25519
PidFile $5
AuthorizedKeysFile $1/authorized_keys
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
SetEnv HOME=$4 PATH=/usr/local/bin:/usr/bin:/bin
${SSHD_EXTRA:-}
CONF
}

# ssh_host_for NAME ADDR PORT DIR: on stdout, a client config block that
# reaches that sshd as NAME with DIR's user key and known_hosts.
ssh_host_for() {
    cat <<CONF
Host $1
    HostName $2
    Port $3
    User $(id -un)
    IdentityFile $4/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $4/known_hosts
    StrictHostKeyChecking yes
    ConnectTimeout 10
CONF
}

# known_host_for ADDR PORT DIR: DIR's host key for ADDR:PORT, a line of
# known_hosts.
known_host_for() {
    printf '[%s]:%s %s\n' "$1" "$2" "$(cut -d' ' -f1,2 "$3/host_ed25519.pub")"
}

sshd_start() {
    SSHD_DIR="$T/sshd"
    SSHD_HOME="$T/home"
    mkdir -p "$SSHD_HOME"
    sshd_keys "$SSHD_DIR"
    SSH_KEY="$SSHD_DIR/id_ed25519"
    SSHD_PORT=$(free_port)
    sshd_config_for "$SSHD_DIR" 127.0.0.1 "$SSHD_PORT" "$SSHD_HOME" \
        "$SSHD_DIR/sshd.pid" >"$SSHD_DIR/sshd_config"
    at_exit sshd_stop
    known_host_for 127.0.0.1 "$SSHD_PORT" "$SSHD_DIR" >"$SSHD_DIR/known_hosts"
    SSH_CONFIG="$SSHD_DIR/ssh_config"
    ssh_host_for ferry-test 127.0.0.1 "$SSHD_PORT" "$SSHD_DIR" >"$SSH_CONFIG"
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
    known_host_for 127.0.0.1 "$port" "$SSHD_DIR" >>"$SSHD_DIR/known_hosts"
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
