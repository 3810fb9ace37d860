# How many streams a default push opens on loopback: the far end shares
# this machine's cores, so one ssh stream per two cores beside the
# libssh2 stream 0 (at least one), not one per core (client/attempt_grow.c,
# attempt_auto_max). A --bwlimit keeps the push going long enough for
# every stream that would come to come.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
head -c $((160 * 1048576)) /dev/urandom >"$T/src/big"
cores=$(nproc)
streams_want=$(( (cores < 4 ? 1 : cores / 2) + 1 ))
[ "$streams_want" -le 8 ] || streams_want=8

expect_rc 0 "$FERRY" push --json -F "$SSH_CONFIG" --agent "$AGENT" \
    --bwlimit 80M "$T/src/" "ferry-test:$T/dst"
cmp "$T/src/big" "$T/dst/big" || fail "copy differs"
[ "$(json_field streams)" -eq "$streams_want" ] ||
    fail "a default push on loopback used $(json_field streams) streams, want $streams_want ($cores cores)"
