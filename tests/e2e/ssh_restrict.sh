# A restricted agent as a forced command in authorized_keys:
#   command="ferry-agent serve --restrict ROOT",restrict ssh-ed25519 ...
# The client works unchanged; reads, writes, cleans and shell commands
# outside ROOT are refused, links inside ROOT cannot lead out, and a
# read-only key cannot write.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

root="$T/root"
outside="$T/outside"
mkdir -p "$root/ds" "$outside" "$T/src/tree"
echo secret >"$outside/secret"
echo data >"$T/src/tree/a"
echo more >"$T/src/b"
echo inside >"$root/ds/file"
ln -s "$outside" "$root/esc"

# One key forced to a read-write agent, one to a read-only one.
for kind in rw ro; do
    ssh-keygen -q -t ed25519 -N '' -f "$T/key-$kind"
    extra=""
    [ "$kind" = ro ] && extra=" --read-only"
    printf 'command="%s serve --restrict %s%s",restrict %s\n' \
        "$AGENT" "$root" "$extra" "$(cat "$T/key-$kind.pub")" \
        >>"$SSHD_DIR/authorized_keys"
    cat >>"$SSH_CONFIG" <<CONF
Host box-$kind
    HostName 127.0.0.1
    Port $SSHD_PORT
    User $(id -un)
    IdentityFile $T/key-$kind
    IdentitiesOnly yes
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
CONF
done
opts=(-F "$SSH_CONFIG" --retries 0)

# Relative paths, "~" and absolute paths beneath ROOT all land in ROOT.
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/src/tree" "box-rw:up"
[ "$(cat "$root/up/tree/a")" = data ] || fail "relative push"
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/src/b" "box-rw:~/home-b"
[ "$(cat "$root/home-b")" = more ] || fail "~ is ROOT"
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/src/b" "box-rw:$root/abs-b"
[ "$(cat "$root/abs-b")" = more ] || fail "absolute beneath ROOT"
expect_rc 0 "$FERRY" pull "${opts[@]}" "box-rw:ds/file" "$T/got/"
[ "$(cat "$T/got/file")" = inside ] || fail "pull beneath ROOT"

# Outside ROOT: refused, named, nothing written or read there.
expect_rc 3 "$FERRY" push "${opts[@]}" "$T/src/b" "box-rw:$outside/x"
expect_err "outside the directory this agent serves"
expect_rc 3 "$FERRY" push "${opts[@]}" "$T/src/b" "box-rw:../outside/"
expect_rc 2 "$FERRY" pull "${opts[@]}" "box-rw:/etc/passwd" "$T/got2/"
expect_rc 2 "$FERRY" pull "${opts[@]}" "box-rw:ds/../../outside/secret" \
    "$T/got2/"
[ ! -e "$outside/x" ] && [ ! -e "$T/outside/b" ] || fail "wrote outside"
[ ! -e "$T/got2/passwd" ] && [ ! -e "$T/got2/secret" ] ||
    fail "read outside"

# A symlink beneath ROOT that points out: not a way through, either way.
expect_rc 2 "$FERRY" pull "${opts[@]}" "box-rw:esc/secret" "$T/got3/"
expect_err "symlink"
expect_rc 3 "$FERRY" push "${opts[@]}" "$T/src/b" "box-rw:esc/"
[ ! -e "$outside/b" ] || fail "push through a link"
# A link the client itself pushes (links travel as links) cannot be
# used as a way out afterwards.
ln -s "$outside" "$T/src/mylink"
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/src/mylink" "box-rw:"
[ -L "$root/mylink" ] || fail "link not copied as a link"
expect_rc 3 "$FERRY" push "${opts[@]}" "$T/src/b" "box-rw:mylink/"
expect_rc 2 "$FERRY" pull "${opts[@]}" "box-rw:mylink/" "$T/got4"
[ ! -e "$T/got4/secret" ] || fail "pulled through a pushed link"

# clean outside ROOT is refused; inside works.
mkdir -p "$outside/.ferry/part"
expect_rc 3 "$FERRY" clean "${opts[@]}" "box-rw:$outside"
[ -d "$outside/.ferry" ] || fail "cleaned outside ROOT"
expect_rc 0 "$FERRY" clean "${opts[@]}" "box-rw:up"

# The key runs nothing else: a shell command gets the agent instead.
out=$(ssh -F "$SSH_CONFIG" -o BatchMode=yes box-rw 'cat /etc/passwd' \
    </dev/null 2>/dev/null || true)
case $out in *root:*) fail "a shell command ran" ;; esac

# Read-only: pulls work, pushes and cleans are refused.
expect_rc 0 "$FERRY" pull "${opts[@]}" "box-ro:ds/file" "$T/got5/"
expect_rc 3 "$FERRY" push "${opts[@]}" "$T/src/b" "box-ro:ro-b"
expect_err "only serves reads"
# A refusal from a restricted agent is final: no agent of ours is
# uploaded in its place.
if grep -q uploading "$T/last.err"; then
    fail "uploaded an agent to a restricted key"
fi
[ ! -e "$root/ro-b" ] || fail "read-only agent wrote"
expect_rc 3 "$FERRY" clean "${opts[@]}" "box-ro:ds"
