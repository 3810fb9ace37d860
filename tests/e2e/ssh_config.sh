# The ssh config decides host, port, user and key, as for ssh; -p, -l, -i
# and -o override it.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"
run() { expect_rc "$1" "$FERRY" push --agent "$AGENT" "${@:2}"; }

# An alias with a wrong port, fixed on the command line with -p and -o.
cat >"$T/cfg" <<CONF
Host gpu-box
    HostName 127.0.0.1
    Port 1
    User $(id -un)
    IdentityFile $T/missing_key
    IdentitiesOnly yes
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
    ConnectTimeout 5
Host *.box
    HostName 127.0.0.1
    Port $SSHD_PORT
    IdentityFile $SSH_KEY
    UserKnownHostsFile $SSHD_DIR/known_hosts
CONF
unset SSH_AUTH_SOCK
run 5 -F "$T/cfg" "$T/src" "gpu-box:$T/d0"
expect_err "gpu-box"
# Right port, but the configured key does not exist: -i supplies one.
run 6 -F "$T/cfg" -p "$SSHD_PORT" "$T/src" "gpu-box:$T/d1"
run 0 -F "$T/cfg" -p "$SSHD_PORT" -i "$SSH_KEY" "$T/src" "gpu-box:$T/d1"
[ -f "$T/d1/src/f" ] || fail "-p override"
run 0 -F "$T/cfg" -o "Port=$SSHD_PORT" -i "$SSH_KEY" "$T/src" \
    "gpu-box:$T/d2"
[ -f "$T/d2/src/f" ] || fail "-o override"
# A wildcard Host pattern, and user@ in the destination.
run 0 -F "$T/cfg" "$T/src" "$(id -un)@train.box:$T/d3"
[ -f "$T/d3/src/f" ] || fail "wildcard host"
# -l overrides the user: an unknown user cannot log in.
run 6 -F "$T/cfg" -l nosuchuser "$T/src" "train.box:$T/d4"
# A broken config is reported as such.
printf 'Host x\n    NoSuchOption yes\n' >"$T/badcfg"
run 1 -F "$T/badcfg" "$T/src" "x:$T/d5"
expect_err "ssh config"
