# Host keys: strict by default; accept-new adds an unknown host (hashed);
# a changed key is refused with the file and line to fix (exit 7).
# run.sh: alone (the link is judged by a loopback key exchange's time)
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"
kh="$T/known_hosts"
common=(-F "$SSH_CONFIG" --agent "$AGENT" -o "UserKnownHostsFile=$kh")

# Unknown host under StrictHostKeyChecking=yes: refused.
: >"$kh"
expect_rc 7 "$FERRY" push "${common[@]}" -o StrictHostKeyChecking=yes \
    "$T/src" "ferry-test:$T/d1"
expect_err "not known"
expect_err "SHA256:"
[ ! -e "$T/d1" ] || fail "connected to an unknown host"

# accept-new: added, hashed; then strict mode accepts it.
expect_rc 0 "$FERRY" push "${common[@]}" \
    -o StrictHostKeyChecking=accept-new "$T/src" "ferry-test:$T/d2"
expect_err "Permanently added"
grep -q '^|1|' "$kh" || fail "known_hosts entry not hashed"
ssh-keygen -F "[127.0.0.1]:$SSHD_PORT" -f "$kh" >/dev/null ||
    fail "ssh-keygen cannot find the added entry"
expect_rc 0 "$FERRY" push "${common[@]}" -o StrictHostKeyChecking=yes \
    "$T/src" "ferry-test:$T/d3"

# A changed key: refused even with accept-new; names file and line.
ssh-keygen -q -t ed25519 -N '' -f "$T/other_host"
{
    echo "# a comment"
    printf '[127.0.0.1]:%s %s\n' "$SSHD_PORT" \
        "$(cut -d' ' -f1,2 "$T/other_host.pub")"
} >"$kh"
expect_rc 7 "$FERRY" push "${common[@]}" \
    -o StrictHostKeyChecking=accept-new "$T/src" "ferry-test:$T/d4"
expect_err "HAS CHANGED"
expect_err "$kh:2"
expect_err "ssh-keygen -f '$kh' -R '[127.0.0.1]:$SSHD_PORT'"
[ ! -e "$T/d4" ] || fail "connected despite a changed key"

# Either way: libssh2 times its key exchange, checks the host key and
# logs in first, and its session carries stream 0; on a short link a
# push's or pull's further streams go through ssh, on a long one (here
# 60 ms a round trip) libssh2 carries them too. A pull kept to one
# stream (-j 1) on a short link stops after the login, and the ssh
# program carries its bytes (two connections). The proxy counts.
. "$TESTS_DIR/lib/netproxy.sh"
pcommon=(-F "$SSH_CONFIG" --agent "$AGENT" -j 1 -o "UserKnownHostsFile=$kh")
conns() { grep -c "conn [0-9]* open" "$T/proxy.log" || true; }
known_proxy() {
    printf '[127.0.0.1]:%s %s\n' "$PROXY_PORT" \
        "$(cut -d' ' -f1,2 "$SSHD_DIR/host_ed25519.pub")" >"$kh"
}
# over CMD LINK CONNS: a push or pull with a known key arrives over
# CONNS connections, through ssh only on a short link.
over() {
    known_proxy
    : >"$T/proxy.log"
    if [ "$1" = pull ]; then
        expect_rc 0 "$FERRY" pull "${pcommon[@]}" -vv "ferry-proxy:$T/src/" \
            "$T/p-$2"
        [ -f "$T/p-$2/f" ] || fail "pull over a $2 link: nothing arrived"
    else
        expect_rc 0 "$FERRY" push "${pcommon[@]}" -vv "$T/src/" \
            "ferry-proxy:$T/u-$2"
        [ -f "$T/u-$2/f" ] || fail "push over a $2 link: nothing arrived"
    fi
    [ "$(conns)" -eq "$3" ] ||
        fail "a $1 over a $2 link made $(conns) connections, want $3"
    if [ "$2.$1" = short.pull ]; then grep -q "go through ssh" "$T/last.err"
    else ! grep -q "go through ssh" "$T/last.err"; fi ||
        fail "a $1 over a $2 link: the wrong program carried it"
}
proxy_start -v --delay-ms 30
over pull long 1
over push long 1
proxy_start -v
over pull short 2
over push short 1
# On a short link only a push's further streams go through ssh (opened
# ahead, so even this small push has its second stream).
: >"$T/proxy.log"
expect_rc 0 "$FERRY" push "${pcommon[@]}" -vv -j 2 "$T/src/" \
    "ferry-proxy:$T/u-j2"
[ "$(conns)" -eq 2 ] || fail "a push with -j 2 made $(conns) connections"
grep -q "stream 1 goes through ssh" "$T/last.err" ||
    fail "a push's stream 1 on a short link did not go through ssh"

# Unknown: refused with our line (exit 7), and nothing pulled.
: >"$kh"
expect_rc 7 "$FERRY" pull "${pcommon[@]}" "ferry-proxy:$T/src/" "$T/p2"
expect_err "not known"
[ ! -e "$T/p2/f" ] || fail "pulled from an unknown host"

# Changed: refused, naming the line, even where the config would
# accept new keys.
{
    echo "# a comment"
    printf '[127.0.0.1]:%s %s\n' "$PROXY_PORT" \
        "$(cut -d' ' -f1,2 "$T/other_host.pub")"
} >"$kh"
sed -i 's/^\( *StrictHostKeyChecking \)yes$/\1accept-new/' "$SSH_CONFIG"
expect_rc 7 "$FERRY" pull "${pcommon[@]}" "ferry-proxy:$T/src/" "$T/p3"
expect_err "HAS CHANGED"
expect_err "$kh:2"
[ ! -e "$T/p3/f" ] || fail "pulled despite a changed key"

# accept-new in the config: the unknown key is added by our check, and
# the pull goes on.
: >"$kh"
expect_rc 0 "$FERRY" pull "${pcommon[@]}" "ferry-proxy:$T/src/" "$T/p4"
expect_err "Permanently added"
[ -f "$T/p4/f" ] || fail "accept-new pull: nothing arrived"

# -o StrictHostKeyChecking=no on the command line: a changed key is
# still refused (ours checks before ssh runs).
{
    echo "# a comment"
    printf '[127.0.0.1]:%s %s\n' "$PROXY_PORT" \
        "$(cut -d' ' -f1,2 "$T/other_host.pub")"
} >"$kh"
expect_rc 7 "$FERRY" pull "${pcommon[@]}" -o StrictHostKeyChecking=no \
    "ferry-proxy:$T/src/" "$T/p5"
expect_err "HAS CHANGED"
[ ! -e "$T/p5/f" ] || fail "pulled despite a changed key (-o no)"
