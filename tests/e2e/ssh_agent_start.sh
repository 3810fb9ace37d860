# Starting the agent on the box fails with one clear line from ferry, and
# nothing of the remote shell's own ("sh: 1: exec: ...: not found"):
# an --agent that is not there or cannot run, and an uploaded agent that
# cannot run because ~/.cache is on a noexec mount (which used to say to
# "leave out --no-bootstrap", never given).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"

# no_shell_noise: the last stderr has none of the remote shell's lines.
no_shell_noise() {
    grep -Eq '^(sh|bash|dash): |exec: ' "$T/last.err" &&
        { cat "$T/last.err"; fail "the remote shell's error got through"; }
    return 0
}

for via in libssh2 ssh-program; do
    extra=()
    [ "$via" = ssh-program ] && extra=(--ssh-cmd "ssh -F $SSH_CONFIG")
    # Not there.
    expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" "${extra[@]}" --no-bootstrap \
        --agent /nonexistent/ferry-agent "$T/src" "ferry-test:$T/d1"
    no_shell_noise
    expect_err "/nonexistent/ferry-agent not found on the remote side"
    [ "$(wc -l <"$T/last.err")" -eq 1 ] || { cat "$T/last.err";
        fail "$via: more than one line"; }
    # There, but not executable.
    cp "$AGENT" "$T/noexec-agent"
    chmod 0644 "$T/noexec-agent"
    expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" "${extra[@]}" --no-bootstrap \
        --agent "$T/noexec-agent" "$T/src" "ferry-test:$T/d2"
    no_shell_noise
    expect_err "$T/noexec-agent is there but cannot run"
    [ "$(wc -l <"$T/last.err")" -eq 1 ] || { cat "$T/last.err";
        fail "$via: more than one line"; }
done

# ~/.cache on a noexec mount: the upload works, the agent cannot run.
# Mounting needs root (as CI runs); the session's home is the test's.
if [ "$(id -u)" -ne 0 ]; then
    echo "ssh_agent_start: the noexec case needs root; not run" >&2
    exit 0
fi
mkdir -p "$SSHD_HOME/.cache"
mount -t tmpfs -o noexec tmpfs "$SSHD_HOME/.cache"
unmount_cache() { umount "$SSHD_HOME/.cache" 2>/dev/null || true; }
at_exit unmount_cache
expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" "$T/src" "ferry-test:$T/d3"
no_shell_noise
expect_err "uploading"
expect_err "cannot run there (is ~/.cache on a noexec mount?)"
grep -q -- "--no-bootstrap" "$T/last.err" &&
    { cat "$T/last.err"; fail "advice about --no-bootstrap"; }
[ "$(wc -l <"$T/last.err")" -eq 2 ] || { cat "$T/last.err";
    fail "noexec: more lines than the upload note and the error"; }
[ -z "$(ls -A "$SSHD_HOME/.cache/ferry")" ] ||
    fail "an agent that cannot run was left in the cache"
