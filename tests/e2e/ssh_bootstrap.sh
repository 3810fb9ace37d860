# The agent bootstrap: with no ferry-agent on the remote PATH, or one that
# speaks another protocol version, the client uploads its own agent to
# ~/.cache/ferry (checked by hash) and runs it; --no-bootstrap refuses.
# Also: the uploaded agent needs nothing from the box (static binary).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"
cache="$SSHD_HOME/.cache/ferry"

# No agent on the session's PATH and no upload allowed: exit 8, advice.
expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" --no-bootstrap "$T/src" \
    "ferry-test:$T/d0"
expect_err "ferry-agent not found"
[ ! -e "$cache" ] || fail "--no-bootstrap uploaded anyway"

# Bootstrap: uploaded once, named by its hash, then reused.
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" "$T/src" "ferry-test:$T/d1"
expect_err "uploading"
[ -f "$T/d1/src/f" ] || fail "bootstrap push"
up=$(ls "$cache"/ferry-agent-* 2>/dev/null | head -n 1)
[ -x "$up" ] || fail "no uploaded agent in $cache"
want=$(sha256sum "$AGENT" | cut -c1-16)
[ "$(basename "$up")" = "ferry-agent-$want" ] || fail "agent not named by hash"
cmp -s "$up" "$AGENT" || fail "uploaded agent differs"
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" "$T/src" "ferry-test:$T/d2"
grep -q uploading "$T/last.err" && fail "uploaded a second time"

# An agent of another protocol version is replaced by the upload. (The
# environment does not cross ssh: a wrapper sets the fake agent's mode.)
rm -rf "$cache"
old="$T/old-agent"
printf '#!/bin/sh\nFAKE_AGENT_MODE=version exec python3 %s "$@"\n' \
    "$TESTS_DIR/lib/fake_agent.py" >"$old"
chmod +x "$old"
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$old" "$T/src" \
    "ferry-test:$T/d3"
expect_err "uploading"
[ -f "$T/d3/src/f" ] || fail "bootstrap after version mismatch"
# ... and without bootstrap, that is exit 8 with both versions named.
expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" --no-bootstrap --agent "$old" \
    "$T/src" "ferry-test:$T/d4"
expect_err "protocol 9-9"

# The agent runs where no library at all is present: an empty root with
# only the binary in it (what a bare container offers is more than that).
if readelf -d "$AGENT" 2>/dev/null | grep -q NEEDED; then
    fail "ferry-agent is dynamically linked"
fi
if [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$T/root/tmp"
    cp "$AGENT" "$T/root/ferry-agent"
    printf '#!/bin/sh\nexec chroot %s /ferry-agent "$@"\n' "$T/root" \
        >"$T/chroot-agent"
    chmod +x "$T/chroot-agent"
    expect_rc 0 "$FERRY" push --agent "$T/chroot-agent" "$T/src" \
        "local:/tmp/inside"
    [ -f "$T/root/tmp/inside/src/f" ] || fail "chrooted agent"
else
    env -i "$AGENT" --version >/dev/null || fail "agent needs its env"
fi
