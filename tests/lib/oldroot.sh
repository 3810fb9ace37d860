# A box on an older system: a Debian 11 root (glibc 2.31, OpenSSH 8.4,
# no libtorrent), made by debootstrap, whose own sshd runs chrooted in it
# on 127.0.0.1 (bash; source after common.sh and sshd.sh, as root). What
# ferry uploads there, the agent and the swarm helper, must run on it.
#
# oldroot_box NAME     unpacks a fresh copy of the root into $T/root-NAME
#                      (OLDROOT_DIR), starts its sshd as "Host NAME" in
#                      $SSH_CONFIG (after sshd_start) and stops it at exit.
#                      Sessions log in as root, HOME /root in the root.
#
# The root is made once per machine and kept as a tarball in
# $FERRY_BUILD_CACHE (~/.cache/ferry-build), as the static libtorrent is:
# about a minute from the Debian mirror apt here uses (OLDROOT_MIRROR
# overrides it).

OLDROOT_SUITE=bullseye
OLDROOT_TAR=${FERRY_BUILD_CACHE:-$HOME/.cache/ferry-build}/$OLDROOT_SUITE-sshd.tar.gz

# The Debian mirror apt here uses (deb822 or one-line sources).
oldroot_mirror() {
    local m
    m=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources \
        2>/dev/null | grep -v security | head -n 1)
    [ -n "$m" ] || m=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' \
        /etc/apt/sources.list 2>/dev/null)
    echo "${m:-http://deb.debian.org/debian}"
}

oldroot_make() {
    local w
    [ -e "$OLDROOT_TAR" ] && return 0
    command -v debootstrap >/dev/null || fail "debootstrap is missing: run 'make deps'"
    mkdir -p "$(dirname "$OLDROOT_TAR")"
    w=$(mktemp -d "$(dirname "$OLDROOT_TAR")/oldroot.XXXXXX")
    debootstrap --variant=minbase --include=openssh-server "$OLDROOT_SUITE" \
        "$w/root" "${OLDROOT_MIRROR:-$(oldroot_mirror)}" >"$w/log" 2>&1 || {
        tail -n 20 "$w/log" >&2
        rm -rf "$w"
        fail "debootstrap $OLDROOT_SUITE failed"
    }
    tar -C "$w/root" -czf "$w/root.tar.gz" . &&
        mv "$w/root.tar.gz" "$OLDROOT_TAR"
    rm -rf "$w"
}

oldroot_box() {
    local name=$1 r port pid
    oldroot_make
    r=$T/root-$name
    OLDROOT_DIR=$r
    mkdir -p "$r"
    tar -C "$r" -xzf "$OLDROOT_TAR"
    mkdir -p "$r/etc/ferry-test" "$r/run/sshd" "$r/root"
    cp "$SSHD_DIR/host_ed25519" "$SSHD_DIR/authorized_keys" "$r/etc/ferry-test/"
    port=$(free_port)
    # OpenSSH 8.4's words only (no SetEnv, no KbdInteractiveAuthentication).
    cat >"$r/etc/ferry-test/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey /etc/ferry-test/host_ed25519
PidFile /run/sshd-ferry.pid
AuthorizedKeysFile /etc/ferry-test/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
ChallengeResponseAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
LogLevel ERROR
CONF
    known_host_for 127.0.0.1 "$port" "$SSHD_DIR" >>"$SSHD_DIR/known_hosts"
    [ -e "$SSHD_DIR/ssh_config.one" ] ||
        cp "$SSH_CONFIG" "$SSHD_DIR/ssh_config.one"
    sed -e "s|^Host ferry-test$|Host $name|" \
        -e "s|^    Port .*|    Port $port|" \
        -e "s|^    User .*|    User root|" \
        "$SSHD_DIR/ssh_config.one" >>"$SSH_CONFIG"
    # /proc and /dev in a mount namespace of the sshd's own: they go when
    # it ends, however the test ends.
    unshare --mount --propagation private sh -c '
        mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" &&
        exec chroot "$1" /usr/sbin/sshd -D -f /etc/ferry-test/sshd_config \
            -E /var/log/sshd-ferry.log' sh "$r" &
    pid=$!
    eval "OLDROOT_PID_$name=$pid"
    at_exit "oldroot_stop_$name"
    eval "oldroot_stop_$name() { kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; }"
    for _ in $(seq 1 100); do
        if ssh -F "$SSH_CONFIG" -o BatchMode=yes "$name" true 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    cat "$r/var/log/sshd-ferry.log" >&2
    fail "the sshd of $name ($OLDROOT_SUITE root) did not start"
}
