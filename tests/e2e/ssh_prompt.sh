# Prompts on the terminal, driven through a pseudo-terminal: the host key
# question asks again on an answer it does not take, as ssh does; Ctrl-C
# at either prompt ends the run at once (exit 130, "ferry: interrupted");
# and a passphrase is asked for once per run, also when a lost connection
# makes ferry log in again.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

mkdir -p "$T/src"
echo data >"$T/src/f"
kh="$T/known_hosts"
ask=(-F "$SSH_CONFIG" --agent "$AGENT" -o "UserKnownHostsFile=$kh"
    -o StrictHostKeyChecking=ask)
pty() { python3 "$TESTS_DIR/lib/pty_run.py" --log "$T/tty.out" \
    --time-file "$T/tty.time" "$@"; }
question='continue connecting \(yes/no(/\[fingerprint\])?\)\? '
again="Please type 'yes', 'no' or the fingerprint: "

# expect_pty STATUS: the last pty run exited STATUS.
expect_pty() {
    [ "$rc" -eq "$1" ] || { cat "$T/tty.out"; fail "exit $rc, expected $1"; }
}
# quick: the command ended within 3 s of the last step.
quick() {
    awk '{ exit !($1 <= 3) }' "$T/tty.time" ||
        fail "took $(cat "$T/tty.time") s to end after the last step"
}

# asked_once TEXT WHAT: the last pty run showed TEXT once.
asked_once() {
    n=$(grep -c "$1" "$T/tty.out" || true)
    [ "$n" -eq 1 ] || { cat "$T/tty.out"; fail "asked $n times $2"; }
}

# interrupted_line: after the prompt, the one line "ferry: interrupted".
interrupted_line() {
    tail -n 1 "$T/tty.out" | tr -d '\r' | grep -qx "ferry: interrupted" ||
        { cat "$T/tty.out"; fail "the last line is not 'ferry: interrupted'"; }
}

# The host key question: an empty answer and a wrong word are asked
# again; "yes" connects and adds the key.
: >"$kh"
set +e
pty expect="$question" send='\n' expect="$again" send='maybe\n' \
    expect="$again" send='yes\n' -- \
    "$FERRY" push "${ask[@]}" "$T/src" "ferry-test:$T/d1"
rc=$?
set -e
expect_pty 0
grep -q "Permanently added" "$T/tty.out" || fail "key not added"
[ -f "$T/d1/src/f" ] || fail "nothing arrived after yes"

# The fingerprint itself is a yes.
: >"$kh"
fp=$(ssh-keygen -lf "$SSHD_DIR/host_ed25519.pub" | cut -d' ' -f2)
set +e
pty expect="$question" send="$fp\\n" -- \
    "$FERRY" push "${ask[@]}" "$T/src" "ferry-test:$T/d2"
rc=$?
set -e
expect_pty 0
[ -f "$T/d2/src/f" ] || fail "the fingerprint was not taken as yes"

# Ctrl-C at the host key question.
: >"$kh"
set +e
pty --timeout 5 expect="$question" send='\x03' -- \
    "$FERRY" push "${ask[@]}" "$T/src" "ferry-test:$T/d3"
rc=$?
set -e
expect_pty 130
quick
interrupted_line
! grep -q "verification failed" "$T/tty.out" || fail "Ctrl-C taken as no"
[ ! -e "$T/d3" ] || fail "connected after Ctrl-C"
[ ! -s "$kh" ] || fail "key added after Ctrl-C"

# A key with a passphrase, no ssh-agent.
ssh-keygen -q -t ed25519 -N secret -f "$T/locked"
cat "$T/locked.pub" >>"$SSHD_DIR/authorized_keys"
locked=(-F "$SSH_CONFIG" --agent "$AGENT" -i "$T/locked"
    -o IdentitiesOnly=yes -o "IdentityFile=$T/locked")

# Ctrl-C at the passphrase prompt ends the run, without waiting for a
# line to take as the passphrase.
set +e
pty --timeout 5 expect="Enter passphrase for key '$T/locked': " \
    send='\x03' -- \
    env -u SSH_AUTH_SOCK "$FERRY" push "${locked[@]}" "$T/src" \
    "ferry-test:$T/d4"
rc=$?
set -e
expect_pty 130
quick
interrupted_line
[ ! -e "$T/d4" ] || fail "logged in after Ctrl-C"

# Asked once per run: a cut connection is retried without asking again
# (an unanswered second prompt would hold the run until the timeout).
head -c 30000000 /dev/urandom >"$T/src/big.bin"
proxy_start --cut-after 8m --cut-rounds 1 --max-inflight 1m
set +e
pty --timeout 60 expect="Enter passphrase for key '$T/locked': " \
    send='secret\n' -- \
    env -u SSH_AUTH_SOCK "$FERRY" push "${locked[@]}" --retry-wait 1 \
    "$T/src/" "ferry-proxy:$T/d5"
rc=$?
set -e
expect_pty 0
asked_once "Enter passphrase" "for the passphrase"
grep -q "retrying" "$T/tty.out" || fail "the connection was not cut"
tree_same "$T/src" "$T/d5"

# Streams started during the first login (-j, or a long link) wait for
# it: the host key question and the passphrase are asked once, by stream
# 0, and the others then check the key it added and log in with the
# passphrase it was given. The answers come late, as a person's do; the
# rate limit keeps the transfer going until both have joined.
: >"$kh"
set +e
pty --timeout 60 expect="$question" sleep=1 send='yes\n' \
    expect="Enter passphrase for key '$T/locked': " sleep=1 \
    send='secret\n' -- \
    env -u SSH_AUTH_SOCK "$FERRY" push "${locked[@]}" -vv -j 3 \
    --bwlimit 10M -o "UserKnownHostsFile=$kh" \
    -o StrictHostKeyChecking=ask "$T/src/" "ferry-test:$T/d6"
rc=$?
set -e
expect_pty 0
grep -q "2 more started beside the login" "$T/tty.out" ||
    { cat "$T/tty.out"; fail "no streams started beside the login"; }
! grep -q "started early, it failed" "$T/tty.out" ||
    { cat "$T/tty.out"; fail "an early stream did not wait for the login"; }
asked_once "Enter passphrase" "for the passphrase"
asked_once "continue connecting" "about the host key"
n=$(grep -c "stream [12] added" "$T/tty.out" || true)
[ "$n" -eq 2 ] ||
    { cat "$T/tty.out"; fail "$n of the 2 early streams joined"; }
tree_same "$T/src" "$T/d6"

# A pull whose config says ask: ssh, told to be strict, refuses the
# unknown key; ours asks once, adds it, and ssh then finds it.
sed 's/^\( *StrictHostKeyChecking \)yes$/\1ask/' "$SSH_CONFIG" \
    >"$T/ask_config"
: >"$kh"
set +e
pty expect="$question" send='yes\n' -- \
    "$FERRY" pull -F "$T/ask_config" --agent "$AGENT" \
    -o "UserKnownHostsFile=$kh" "ferry-test:$T/src/f" "$T/d7"
rc=$?
set -e
expect_pty 0
asked_once "continue connecting" "about the host key"
! grep -q "verification failed" "$T/tty.out" ||
    { cat "$T/tty.out"; fail "ssh's refusal was shown"; }
cmp -s "$T/src/f" "$T/d7" || fail "the pull after yes did not arrive"
