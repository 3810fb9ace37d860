# The swarm helper travels like the agent (docs/SWARM.md, "Portability of
# the helper"): a push to two boxes, one of them a Debian 11 root (glibc
# 2.31, no libtorrent; tests/lib/oldroot.sh) whose own sshd runs chrooted
# in it. Both the agent and bin/ferry-swarm are uploaded there by hash,
# and the helper runs and shares: the old box gathers what the client put
# into the other box, adopts every file, and the uplink carries the data
# once. A helper linked against this machine's shared libraries needs
# glibc 2.36 and libtorrent there: that box would be left out with a
# line, and the checks below on the summary would fail.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/oldroot.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "swarm_oldroot: chroot and mount need root; not run" >&2
    exit 0
fi
sshd_start
sshd_box box1
oldroot_box old
R=$OLDROOT_DIR

# The premise: the old root's C library is older than this machine's,
# and it has no libtorrent.
chroot "$R" ldd --version 2>&1 | head -n 1 | grep -q ' 2\.31$' ||
    fail "the old root's glibc is not 2.31: $(chroot "$R" ldd --version | head -n 1)"
! ls "$R"/usr/lib/x86_64-linux-gnu/libtorrent* >/dev/null 2>&1 ||
    fail "the old root has libtorrent"
# Without gzip there, the helper crosses as it is; box1 takes it through
# gzip, in less than half the bytes.
rm -f "$R/bin/gzip" "$R/usr/bin/gzip"

small_files_tree "$T/src" 20
head -c 3000000 /dev/urandom >"$T/src/big.bin"
head -c 2000001 /dev/urandom >"$T/src/ckpt.pt"
data_mib=$(find "$T/src" -type f -printf '%s\n' |
    awk '{s += $1} END {print s / 1048576}')
n=$(find "$T/src" -type f -size +0 | wc -l)

expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --retry-for 0 --mkpath \
    "$T/src/" "box1:$T/e1" old:/data/e2
tree_same "$T/src" "$T/e1"
tree_same "$T/src" "$R/data/e2"
expect_err "ferry: swarm: 2 of 2 boxes hold what they lacked"
! grep -q "the boxes do not share\|old: swarm:" "$T/last.err" ||
    { cat "$T/last.err"; fail "the old box was left out of the swarm"; }
# Its transfer took every file from what its helper gathered.
grep -qE "^ferry: old: [0-9]+ sent \(0 B\), [0-9]+ up to date \($n adopted\)" \
    "$T/last.err" || { cat "$T/last.err"; fail "old: not all $n adopted"; }
up=$(sed -n 's/.*boxes hold what they lacked (\([0-9.]*\) MiB over the.*/\1/p' \
    "$T/last.err" | tail -n 1)
python3 -c "import sys; u, d = float('$up'), float('$data_mib');
sys.exit(0 if d * 0.9 <= u <= d * 1.05 else 1)" ||
    fail "the uplink carried $up MiB of $data_mib"
raw=$(stat -c %s "$FERRY_BIN/ferry-swarm")
gz=$(stat -c %s "$FERRY_BIN/ferry-swarm.gz")
mib() { python3 -c "print('%.1f' % ($1 / 1048576))"; }
expect_err "ferry: old: no swarm helper there; uploading this one (x86_64, $(mib "$raw") MiB) to"
expect_err "ferry: box1: no swarm helper there; uploading this one (x86_64, $(mib "$gz") MiB through gzip) to"
[ "$gz" -lt $((raw / 2)) ] || fail "the helper's gzip copy is $gz bytes of $raw"
ls "$R"/root/.cache/ferry/ferry-swarm-* >/dev/null 2>&1 ||
    fail "no helper uploaded into the old root's HOME"
ls "$R"/root/.cache/ferry/ferry-agent-* >/dev/null 2>&1 ||
    fail "no agent uploaded into the old root's HOME"
[ ! -e "$R/data/e2/.ferry-swarm" ] || fail "old: staging folder left"
