# A child that ignores SIGTERM (an agent wrapper, an --ssh-cmd that traps
# it) does not hang ferry: after the grace period it gets SIGKILL.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
echo data >"$T/src/f"

# An agent that does its job, then stays, deaf to SIGTERM.
cat >"$T/deaf-agent" <<SH
#!/bin/sh
trap '' TERM
"$AGENT" "\$@"
exec sleep 120
SH
chmod +x "$T/deaf-agent"

# ferry_bounded ARGS...: runs ferry for at most 30 s; sets rc and took.
ferry_bounded() {
    start=$(date +%s)
    set +e
    timeout -k 1 30 "$FERRY" "$@" >"$T/last.out" 2>"$T/last.err"
    rc=$?
    set -e
    took=$(( $(date +%s) - start ))
}

# local: (the 3 s the agent gets to exit on EOF, then 2 s after SIGTERM).
ferry_bounded push --agent "$T/deaf-agent" "$T/src" "local:$T/d1"
[ "$took" -lt 30 ] || fail "local: ferry hung on an agent that ignores TERM"
[ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "local: exit $rc"; }
[ "$took" -le 10 ] || fail "local: took $took s"
[ -f "$T/d1/src/f" ] || fail "local: not transferred"

# --ssh-cmd: a stand-in for ssh that runs the remote command here and
# then lingers, ignoring SIGTERM.
cat >"$T/deaf-ssh" <<'SH'
#!/bin/bash
trap '' TERM
for last; do :; done
sh -c "$last"
exec sleep 120
SH
chmod +x "$T/deaf-ssh"
ferry_bounded push --ssh-cmd "$T/deaf-ssh" --agent "$AGENT" "$T/src" \
    "somehost:$T/d2"
[ "$took" -lt 30 ] || fail "--ssh-cmd: ferry hung on a child ignoring TERM"
[ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "--ssh-cmd: exit $rc"; }
[ "$took" -le 10 ] || fail "--ssh-cmd: took $took s"
[ -f "$T/d2/src/f" ] || fail "--ssh-cmd: not transferred"
