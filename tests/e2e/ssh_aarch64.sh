# Boxes with aarch64 CPUs: the cross-built static agent runs there (here
# under qemu-user-static), and the bootstrap uploads the build that fits
# the box's `uname -m`, then finds it again by hash.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"

A64="$FERRY_BIN/ferry-agent-aarch64"
QEMU=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static missing"
readelf -h "$A64" | grep -q 'Machine:.*AArch64' || fail "$A64 is not aarch64"
readelf -d "$A64" 2>/dev/null | grep -q NEEDED && fail "$A64 is not static"

# The aarch64 agent itself, as the other side of a push and a pull.
small_files_tree "$T/src" 40
head -c 3000000 /dev/urandom >"$T/src/big.bin"
printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "$A64" >"$T/a64-agent"
chmod +x "$T/a64-agent"
expect_rc 0 "$FERRY" push --agent "$T/a64-agent" "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"
expect_rc 0 "$FERRY" pull --agent "$T/a64-agent" "local:$T/d1/" "$T/d2"
tree_same "$T/src" "$T/d2"

# A box that says it is aarch64 (a uname on its PATH), reached by ssh
# with no agent there. The client's builds: ferry-agent and, beside it,
# ferry-agent-aarch64 (here the wrapper that runs the real one in qemu).
sshd_start
mkdir -p "$T/shim" "$T/bundle"
printf '#!/bin/sh\n[ "$1" = -m ] && { cat %s; exit 0; }\nexec /bin/uname "$@"\n' \
    "$T/arch" >"$T/shim/uname"
chmod +x "$T/shim/uname"
echo aarch64 >"$T/arch"
sshd_stop
sed -i "s|^SetEnv HOME=\(.*\) PATH=|SetEnv HOME=\1 PATH=$T/shim:|" \
    "$SSHD_DIR/sshd_config"
sshd_launch
cp "$AGENT" "$T/bundle/ferry-agent"
cp "$T/a64-agent" "$T/bundle/ferry-agent-aarch64"
export FERRY_AGENT="$T/bundle/ferry-agent"
cache="$SSHD_HOME/.cache/ferry"

expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" "$T/src/" "ferry-test:$T/d3"
expect_err "uploading"
tree_same "$T/src" "$T/d3"
want=$(sha256sum "$T/bundle/ferry-agent-aarch64" | cut -c1-16)
cmp -s "$cache/ferry-agent-$want" "$T/bundle/ferry-agent-aarch64" ||
    fail "the aarch64 build was not the one uploaded"
x86=$(sha256sum "$AGENT" | cut -c1-16)
[ ! -e "$cache/ferry-agent-$x86" ] || fail "the x86_64 build was uploaded"
# The next run finds it by the box's machine type and hash.
expect_rc 0 "$FERRY" pull -F "$SSH_CONFIG" "ferry-test:$T/d3/" "$T/d4"
grep -q uploading "$T/last.err" && fail "uploaded a second time"
tree_same "$T/src" "$T/d4"

# A client without an aarch64 build says so, and what to do.
rm -rf "$cache" "$T/bundle/ferry-agent-aarch64"
expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" "$T/src/" "ferry-test:$T/d5"
expect_err "is aarch64 and this ferry has no agent for it"

# A machine type ferry has no agent for at all.
echo riscv64 >"$T/arch"
expect_rc 8 "$FERRY" push -F "$SSH_CONFIG" "$T/src/" "ferry-test:$T/d6"
expect_err "neither x86_64 nor aarch64"
[ ! -e "$T/d6" ] || fail "a destination was made without an agent"
