# Boxes with aarch64 CPUs in the swarm: the client uploads the helper
# built for the box's `uname -m` (bin/ferry-swarm-aarch64, cross-built
# statically, run here under qemu-user-static through a wrapper, as
# e2e/ssh_aarch64 runs the agent), and x86_64 and aarch64 boxes share
# alike. A client without an aarch64 helper leaves such a box out of the
# swarm with a line that says what is missing; it gets its data directly.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"

H64="$FERRY_BIN/ferry-swarm-aarch64"
# The sanitizer builds do not build the helpers: use the release ones.
[ -x "$H64" ] || H64=$(pwd)/bin/ferry-swarm-aarch64
HX=$(dirname "$H64")/ferry-swarm
QEMU=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static missing"
readelf -h "$H64" | grep -q 'Machine:.*AArch64' || fail "$H64 is not aarch64"
readelf -d "$H64" 2>/dev/null | grep -q NEEDED && fail "$H64 is not static"

sshd_start
sshd_box box1
sshd_box box2
# box2 says it is aarch64: a uname on its PATH.
mkdir -p "$T/shim" "$T/bundle"
printf '#!/bin/sh\n[ "$1" = -m ] && { echo aarch64; exit 0; }\nexec /bin/uname "$@"\n' \
    >"$T/shim/uname"
chmod +x "$T/shim/uname"
sshd_box_stop box2
sed -i "s|^SetEnv HOME=\(.*\) PATH=|SetEnv HOME=\1 PATH=$T/shim:|" \
    "$SSHD_DIR/sshd_config-box2"
sshd_box_start box2
# The client's builds, each aarch64 one a wrapper that runs the real one
# in qemu.
wrap() { printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "$1" >"$2"; chmod +x "$2"; }
cp "$AGENT" "$T/bundle/ferry-agent"
wrap "$AGENT-aarch64" "$T/bundle/ferry-agent-aarch64"
cp "$HX" "$HX.gz" "$T/bundle/"
wrap "$H64" "$T/bundle/ferry-swarm-aarch64"
export FERRY_AGENT="$T/bundle/ferry-agent"

small_files_tree "$T/src" 20
head -c 2500000 /dev/urandom >"$T/src/big.bin"
n=$(find "$T/src" -type f -size +0 | wc -l)
P=("$FERRY" push -F "$SSH_CONFIG" --retry-for 0)

expect_rc 0 "${P[@]}" "$T/src/" "box1:$T/e1" "box2:$T/e2"
tree_same "$T/src" "$T/e1"
tree_same "$T/src" "$T/e2"
expect_err "ferry: swarm: 2 of 2 boxes hold what they lacked"
expect_err "ferry: box2: no swarm helper there; uploading this one (aarch64, "
expect_err "ferry: box1: no swarm helper there; uploading this one (x86_64, "
grep -qE "^ferry: box2: [0-9]+ sent \(0 B\), [0-9]+ up to date \($n adopted\)" \
    "$T/last.err" || { cat "$T/last.err"; fail "box2: not all $n adopted"; }
a64=$(sha256sum "$T/bundle/ferry-swarm-aarch64" | cut -c1-16)
x86=$(sha256sum "$HX" | cut -c1-16)
[ -x "$T/home-box2/.cache/ferry/ferry-swarm-$a64" ] ||
    fail "box2 did not get the aarch64 helper"
[ ! -e "$T/home-box2/.cache/ferry/ferry-swarm-$x86" ] ||
    fail "box2 got the x86_64 helper"
[ -x "$T/home-box1/.cache/ferry/ferry-swarm-$x86" ] ||
    fail "box1 did not get the x86_64 helper"

# Without an aarch64 helper: box2 is left out, with a line saying what
# is missing, and is sent its data; the push succeeds.
rm "$T/bundle/ferry-swarm-aarch64" "$T"/home-box2/.cache/ferry/ferry-swarm-*
head -c 2000000 /dev/urandom >"$T/src/big.bin"
expect_rc 0 "${P[@]}" "$T/src/" "box1:$T/e1" "box2:$T/e2"
tree_same "$T/src" "$T/e1"
tree_same "$T/src" "$T/e2"
expect_err "ferry: box2: swarm: this ferry has no swarm helper for aarch64 (ferry-swarm-aarch64 beside ferry-agent); its data goes to it directly"
# With --json the same is a warning event of box2 (nothing on stderr
# names it): a box sent its data directly is seen in either output.
rm -rf "$T/e2"
expect_rc 0 "${P[@]}" --json "$T/src/" "box1:$T/e1" "box2:$T/e2"
tree_same "$T/src" "$T/e2"
grep -qF '{"event":"warning","host":"box2","side":"dest","code":"WARNING","message":"swarm: this ferry has no swarm helper for aarch64' \
    "$T/last.out" || { cat "$T/last.out" >&2; fail "--json: no warning event for box2"; }
! grep -q "swarm helper" "$T/last.err" || fail "--json: the warning went to stderr"
