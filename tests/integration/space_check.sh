# The space check: onto a 10 MiB tmpfs the test mounts (as root, or in a
# user and mount namespace of its own otherwise), a push or pull that
# would leave less than 20% free is refused before anything is written,
# with what it needs, what is free and the margin; --margin and --force
# change that; files already there need no room.
if [ "$(id -u)" -ne 0 ] && [ -z "${FERRY_SPACE_NS:-}" ]; then
    FERRY_SPACE_NS=1 exec unshare -rm bash "$0" "$@"
fi
. "$(dirname "$0")/../lib/common.sh"

small=$T/small
mkdir -p "$small"
mount -t tmpfs -o size=10m tmpfs "$small" || fail "cannot mount a tmpfs"
unmount_small() { umount "$small" 2>/dev/null || true; }
at_exit unmount_small

head -c 7000000 /dev/urandom >"$T/seven.bin"
head -c 2000000 /dev/urandom >"$T/two.bin"

# 7 MB leaves 30% free: fine. It is there now.
expect_rc 0 "$FERRY" push -q "$T/seven.bin" "local:$small/"
# Sent again: up to date, needs no room though it would not fit. The
# comparison is made inside the one push: its agent, then the listings
# of the destination and of what it keeps; a push started again after
# the comparison would be a fourth.
printf '#!/bin/sh\necho start >>"%s"\nexec "%s" "$@"\n' "$T/agent_starts" \
    "$AGENT" >"$T/counting_agent"
chmod +x "$T/counting_agent"
expect_rc 0 "$FERRY" push --json --agent "$T/counting_agent" "$T/seven.bin" \
    "local:$small/"
expect_field files_skipped 1
[ "$(wc -l <"$T/agent_starts")" = 3 ] || fail "a push that fits after" \
    "the comparison started $(wc -l <"$T/agent_starts") agents, not 3"
# A comparison that outlasts --stall-timeout is the check's wait, not a
# stalled link: the push is not tried again (a fourth agent). Its
# listings' agents take 2.5 s each to start; 2 s stalls a run after 4.
: >"$T/slow_starts"
printf '#!/bin/sh\nn=$(wc -l <"%s")\necho start >>"%s"\n[ "$n" -ge 1 ] &&
    sleep 2.5\nexec "%s" "$@"\n' "$T/slow_starts" "$T/slow_starts" \
    "$AGENT" >"$T/slow_list_agent"
chmod +x "$T/slow_list_agent"
expect_rc 0 "$FERRY" push --json --stall-timeout 2s \
    --agent "$T/slow_list_agent" "$T/seven.bin" "local:$small/"
expect_field files_skipped 1
[ "$(wc -l <"$T/slow_starts")" = 3 ] || fail "a slow comparison:" \
    "$(wc -l <"$T/slow_starts") agents, not 3"
# 2 MB more would leave 14%: refused, one line, nothing written.
expect_rc 3 "$FERRY" push "$T/two.bin" "local:$small/"
expect_err "local:$small/: not enough space: 1.91 MiB to write, 3."
expect_err "ferry keeps 20% free (--margin PCT to change it, --force to go on)"
[ "$(wc -l <"$T/last.err")" = 1 ] || fail "refusal: not one line"
[ "$(ls -A "$small")" = seven.bin ] || fail "a refused push wrote: $(ls -A "$small")"
expect_rc 3 "$FERRY" push --json "$T/two.bin" "local:$small/"
grep -q '"code":"ENOSPC"' "$T/last.out" || fail "no ENOSPC event"
# --margin 10 lets it through; so would --force.
expect_rc 0 "$FERRY" push -q --margin 10 "$T/two.bin" "local:$small/x/"
rm -rf "$small/x"
expect_rc 0 "$FERRY" push -q --force "$T/two.bin" "local:$small/"
cmp -s "$T/two.bin" "$small/two.bin" || fail "--force"
rm -f "$small/two.bin"

# A pull into the small file system is checked here, the same way.
mkdir -p "$T/box"
cp "$T/two.bin" "$T/box/"
expect_rc 3 "$FERRY" pull "local:$T/box/two.bin" "$small/pulled/"
expect_err "$small/pulled/: not enough space: 1.91 MiB to write"
[ ! -e "$small/pulled" ] || fail "a refused pull made its destination"
expect_rc 0 "$FERRY" pull -q --force "local:$T/box/two.bin" "$small/pulled/"
cmp -s "$T/two.bin" "$small/pulled/two.bin" || fail "pull --force"
# With --dry-run nothing is checked or written.
expect_rc 0 "$FERRY" pull -n "local:$T/box/two.bin" "$small/again/"
[ ! -e "$small/again" ] || fail "a dry run made its destination"

# A resume needs room only for what is still to write: of each file, its
# size less what an earlier run kept of it in DEST/.ferry/part. 48 MB
# onto 64 MiB fits; cut at 40 MB, the first look (every byte offered)
# does not, and the second counts what the destination keeps.
mid=$T/mid
mkdir -p "$mid" "$T/src" "$T/other"
mount -t tmpfs -o size=64m tmpfs "$mid" || fail "cannot mount a tmpfs"
unmount_mid() { umount "$mid" 2>/dev/null || true; }
at_exit unmount_mid
head -c 48000000 /dev/urandom >"$T/src/big"
head -c 48000000 /dev/urandom >"$T/other/big2"
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=20000000
slow="$TESTS_DIR/lib/slow_agent.py"
# wait_unlocked DEST: until no transfer holds DEST's state (the agent of
# a killed client has kept what arrived and gone).
wait_unlocked() {
    for _ in $(seq 1 500); do
        flock -n "$1/.ferry/lock" true 2>/dev/null && return 0
        sleep 0.02
    done
    fail "$1 is still locked"
}
# resume_after_cut CMD DEST KILL [SRC_PREFIX]: CMD (push or pull) of big
# into DEST cut at 40 MB by KILL, then other's big2 (refused: what is
# kept is another file's), then the same command again (resumed).
resume_after_cut() {
    cmd=$1 dest=$2 sig=$3 from=${4:-}
    "$FERRY" $cmd -j 1 --agent "$slow" "$from$T/src/big" "$dest/" \
        2>/dev/null &
    pid=$!
    wait_part_bytes "${dest#local:}" 40000000
    kill "-$sig" $pid
    wait $pid 2>/dev/null || true
    wait_unlocked "${dest#local:}"
    expect_rc 3 "$FERRY" $cmd "$from$T/other/big2" "$dest/"
    expect_err "not enough space: 45.8 MiB to write"
    expect_rc 0 "$FERRY" $cmd --json "$from$T/src/big" "$dest/"
    cmp -s "$T/src/big" "${dest#local:}/big" || fail "$cmd: not resumed"
    [ "$(json_field resumed_bytes)" -ge 30000000 ] ||
        fail "$cmd did not resume"
    rm -rf "${dest#local:}"
}
# A push's agent keeps what arrived when its client is killed; a pull
# keeps it here on Ctrl-C.
resume_after_cut push "local:$mid/d" KILL
SLOW_AGENT_DIR=down resume_after_cut pull "$mid/p" INT local:

# A reconnect after the agent died is not checked again: what the run
# wrote since its check is part of what that check counted.
agent_killed_midway "$mid/r" 30000000 \
    "$FERRY" push --json --agent "$slow" "$T/src/big" "local:$mid/r/"
cmp -s "$T/src/big" "$mid/r/big" || fail "retried push"
