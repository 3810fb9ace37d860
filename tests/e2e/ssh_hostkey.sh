# Host keys: strict by default; accept-new adds an unknown host (hashed);
# a changed key is refused with the file and line to fix (exit 7).
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
