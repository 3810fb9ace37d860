# The agents' rendezvous under attack (docs/SECURITY.md, "A restricted key
# and the same user's other keys"): a client that knows a running
# transfer's id, and even its key, cannot join it from an agent of
# another scope (a forced command's --restrict, --read-only or
# --write-only), cannot join it without the key, cannot stop it with an
# OPEN of the same id, and cannot read the id or key off the box's
# /proc/net/unix. The same client with the whole ticket still joins.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/root" "$T/outside"
head -c 3000000 /dev/urandom >"$T/outside/secret.bin"
python3 "$TESTS_DIR/lib/rendezvous_attack.py" "$AGENT" "$T/root" \
    "$T/outside/secret.bin" "$T/outside/dest" >"$T/out" 2>"$T/err" ||
    { cat "$T/out" "$T/err" >&2; fail "the attack script did not finish"; }
cat "$T/out" >&2

want() {
    grep -qxF -- "$1" "$T/out" || fail "expected the line '$1'"
}
want "proc: id hidden"
want "proc: key hidden"
want "pull: restricted write-only, id and key: ERROR"
want "pull: restricted, id and key: ERROR"
want "pull: id without key: ERROR"
want "pull: restricted open of its id: OPEN_OK"
want "pull: victim alive"
want "pull: unrestricted, id and key: JOIN_OK"
want "push: restricted read-only, id and key: ERROR"
want "push: unrestricted, id and key: JOIN_OK"
# Nothing of the restricted tries landed outside their root.
[ ! -e "$T/outside/up" ] || fail "a restricted OPEN wrote outside its root"
