# A transfer that does not go to plan still counts every file once:
# sent + up to date + failed + left = total, in the summary line and its
# event; each failed file has its `failed` event; the summary comes on
# every exit of a transfer that got under way, followed by what the
# destination keeps and how to resume it or free it. (A run that gives
# up reconnecting: retry_budget.sh.)
if [ "$(id -u)" -ne 0 ] && [ -z "${FERRY_SPACE_NS:-}" ]; then
    FERRY_SPACE_NS=1 exec unshare -rm bash "$0" "$@"
fi
. "$(dirname "$0")/../lib/common.sh"

small=$T/small
mkdir -p "$small" "$T/src"
mount -t tmpfs -o size=20m tmpfs "$small" || fail "cannot mount a tmpfs"
unmount_small() { umount "$small" 2>/dev/null || true; }
at_exit unmount_small
for i in $(seq 100 599); do head -c 20000 /dev/urandom >"$T/src/f$i"; done

# 1. 500 files are there; the 501st, 12 MB, meets a full disk: it is the
# one failed (its event, the error line once), and what arrived of it is
# kept, said after the summary.
expect_rc 0 "$FERRY" push -q --force "$T/src/" "local:$small/p/"
head -c 12000000 /dev/urandom >"$T/src/zz_big"
expect_rc 3 "$FERRY" push --json --force "$T/src/" "local:$small/p/"
summary_check files_total=501 files_skipped=500 files_failed=1 files_left=0 \
    kept_files=1
grep -q '"event":"file","path":"zz_big","action":"failed"' "$T/last.out" ||
    fail "no failed event for zz_big"
expect_rc 3 "$FERRY" push --force "$T/src/" "local:$small/p/"
expect_err "0 sent (0 B), 500 up to date, 1 failed, in"
expect_err "of 1 unfinished file kept in local:$small/p/.ferry: run the same command again to resume, or \`ferry clean local:$small/p/\` to free it"
[ "$(grep -c 'No space left on device' "$T/last.err")" -eq 1 ] ||
    { cat "$T/last.err"; fail "the full disk said more than once"; }
rm -rf "$small/p"

# 2. The same for a pull: the receiver is here.
mv "$T/src/zz_big" "$T/zz_big"
expect_rc 0 "$FERRY" pull -q --force "local:$T/src/" "$small/q/"
mv "$T/zz_big" "$T/src/zz_big"
expect_rc 3 "$FERRY" pull --json --force "local:$T/src/" "$small/q/"
summary_check files_total=501 files_skipped=500 files_failed=1 files_left=0 \
    kept_files=1
expect_rc 3 "$FERRY" pull --force "local:$T/src/" "$small/q/"
expect_err "0 received (0 B), 500 up to date, 1 failed, in"
expect_err "of 1 unfinished file kept in $small/q/.ferry: run the same command again to resume, or \`ferry clean $small/q\` to free it"
rm -rf "$small/q"
rm -f "$T/src/zz_big"
