# A user whose only key the server accepts is RSA: libssh2 1.10 signs RSA
# with SHA-1, which OpenSSH refuses, so ferry runs that host through the
# ssh program (as it does ProxyJump hosts), saying so in one line.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start
unset SSH_AUTH_SOCK

ssh-keygen -q -t rsa -b 2048 -N '' -C ferry-rsa -f "$T/id_rsa"
# The server takes the RSA key only.
cp "$T/id_rsa.pub" "$SSHD_DIR/authorized_keys"
sed -e 's/^Host ferry-test/Host ferry-rsa/' \
    -e "s|IdentityFile .*|IdentityFile $T/id_rsa|" "$SSH_CONFIG" \
    >"$T/rsa_config"

mkdir -p "$T/src/d"
echo one >"$T/src/d/a"
head -c 3000000 /dev/urandom >"$T/src/big"
expect_rc 0 "$FERRY" push -F "$T/rsa_config" --agent "$AGENT" "$T/src/" \
    "ferry-rsa:$T/dst"
tree_same "$T/src" "$T/dst"
[ "$(grep -c 'RSA keys are left to try' "$T/last.err")" = 1 ] ||
    fail "the fallback was not said in one line: $(cat "$T/last.err")"
expect_err "running it through ssh"
# A pull too.
expect_rc 0 "$FERRY" pull -q -F "$T/rsa_config" --agent "$AGENT" \
    "ferry-rsa:$T/dst/" "$T/back"
tree_same "$T/src" "$T/back"

# An RSA key the server does not take either: still an authentication
# error (exit 6), after ssh said why.
: >"$SSHD_DIR/authorized_keys"
expect_rc 6 "$FERRY" push -F "$T/rsa_config" --agent "$AGENT" "$T/src/" \
    "ferry-rsa:$T/dst2"
expect_err "ferry-rsa: authentication failed through ssh as well"
[ ! -e "$T/dst2" ] || fail "a refused login made the destination"
# Without RSA keys: the error of before, exit 6, and no fallback.
expect_rc 6 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" "$T/src/" \
    "ferry-test:$T/dst2"
! grep -q 'RSA keys are left' "$T/last.err" || fail "fallback without RSA"
