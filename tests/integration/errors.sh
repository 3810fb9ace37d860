# Bad input gets one clear line naming the path or host, a documented exit
# status, and nothing half-written under a final name.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src/sub" "$T/dst"
echo one >"$T/src/one"
echo two >"$T/src/sub/two"

# A missing source: exit 2, its name in the message, nothing sent.
expect_rc 2 "$FERRY" push "$T/nope" "local:$T/dst"
expect_err "$T/nope: No such file or directory"
# One missing among others: the others still go, exit 2.
expect_rc 2 "$FERRY" push "$T/nope" "$T/src" "local:$T/dst"
[ -f "$T/dst/src/sub/two" ] || fail "present source not sent"
# Two sources of one name (a/x and b/x would both be DEST/x): refused
# before anything is sent, naming both (exit 1); a push, a pull, a pull's
# glob (the agent sees its matches), pack. "./a/x" and "a/x" are one.
mkdir -p "$T/twin/a/x" "$T/twin/b/x"
echo 1 >"$T/twin/a/x/f"
echo 2 >"$T/twin/b/x/f"
twin="'$T/twin/a/x' and '$T/twin/b/x' would both be x in the destination"
expect_rc 1 "$FERRY" push "$T/twin/a/x" "$T/twin/b/x" "local:$T/twin-p/"
expect_err "$twin"
expect_rc 1 "$FERRY" pull "local:$T/twin/a/x" "local:$T/twin/b/x" \
    "$T/twin-l"
expect_err "$twin"
expect_rc 1 "$FERRY" pull "local:$T/twin/*/x" "$T/twin-g"
expect_err "$twin"
expect_rc 1 "$FERRY" pack "$T/twin/a/x" "$T/twin/b/x" "$T/twin-k"
expect_err "$twin"
for d in twin-p twin-l twin-g twin-k; do
    [ ! -e "$T/$d" ] || fail "$d: made with two sources of one name"
done
expect_rc 0 "$FERRY" push -q "$T/twin/a/x" "$T/twin/./a//x" \
    "$T/twin/b/x/" "local:$T/twin-ok/"
[ -f "$T/twin-ok/x/f" ] && [ -f "$T/twin-ok/f" ] || fail "twin-ok"
# A pull of a missing source fails before any file: it makes no DEST,
# nor the parents --mkpath would have made; a DEST that was there stays.
expect_rc 2 "$FERRY" pull "local:$T/nope" "$T/pulled"
expect_err "$T/nope: No such file or directory"
[ ! -e "$T/pulled" ] || fail "a failed pull made its DEST"
expect_rc 2 "$FERRY" pull --mkpath "local:$T/nope/" "$T/pa/pb/pulled"
[ ! -e "$T/pa" ] || fail "a failed pull made DEST's parents"
mkdir "$T/was-there"
expect_rc 2 "$FERRY" pull "local:$T/nope" "$T/was-there"
[ -d "$T/was-there" ] || fail "a failed pull removed a DEST it did not make"
# ... but one that moved a file, and an empty directory's pull, make it.
expect_rc 2 "$FERRY" pull "local:$T/nope" "local:$T/src" "$T/pulled2"
[ -f "$T/pulled2/src/sub/two" ] || fail "present source not pulled"
mkdir "$T/empty"
expect_rc 0 "$FERRY" pull "local:$T/empty/" "$T/pulled3"
[ -d "$T/pulled3" ] || fail "an empty directory's pull made no DEST"

# The destination is a file where a directory is needed: exit 3.
echo x >"$T/afile"
expect_rc 3 "$FERRY" push "$T/src" "local:$T/afile"
expect_err "$T/afile"
expect_err "Not a directory"

# An unwritable destination: exit 3 naming it. Root may write anywhere,
# so as root the test runs ferry as nobody.
locked_dir "$T/locked" "$T/src"
expect_rc 3 $as_user "$ferry_bin" push "$T/src" "local:$T/locked"
expect_err "$T/locked: Permission denied"
[ -z "$(ls -A "$T/locked")" ] || fail "something was written to locked"

# A full disk, past the space check (--force): exit 3, and no partial
# file under its final name. A 1 MiB
# tmpfs in a private mount namespace where we may mount one; where we may
# not (an unprivileged container), a file size limit on the agent makes
# writes fail the same way (EFBIG).
head -c 3000000 /dev/urandom >"$T/src/big"
unshare_args="-m"
[ "$(id -u)" -eq 0 ] || unshare_args="-rm"
if unshare $unshare_args sh -c "mount -t tmpfs -o size=1m tmpfs '$T/dst'" \
    2>/dev/null; then
    expect_rc 3 unshare $unshare_args sh -c "
        mount -t tmpfs -o size=1m tmpfs '$T/dst' &&
        '$FERRY' push --force '$T/src/' 'local:$T/dst'; rc=\$?
        ls -A '$T/dst' >'$T/full.ls'
        exit \$rc"
    expect_err "No space left on device"
else
    printf '#!/bin/sh\nulimit -f 1024\nexec %s "$@"\n' "$AGENT" \
        >"$T/small-agent"
    chmod +x "$T/small-agent"
    expect_rc 3 "$FERRY" push --agent "$T/small-agent" "$T/src/" \
        "local:$T/dst"
    expect_err "File too large"
    ls -A "$T/dst" >"$T/full.ls"
fi
! grep -qx big "$T/full.ls" || fail "partial 'big' under its final name"

# What a full disk leaves in place is said to be there: a file committed
# as the transfer ends has its `ready` event (the sender heard of it
# before the error), so a job that waits for those events, or the next
# run's summary, is not told less than the disk holds.
mkdir -p "$T/two"
head -c 1000000 /dev/urandom >"$T/two/a"
head -c 3000000 /dev/urandom >"$T/two/b"
if unshare $unshare_args sh -c "mount -t tmpfs -o size=2m tmpfs '$T/dst'" \
    2>/dev/null; then
    expect_rc 3 unshare $unshare_args sh -c "
        mount -t tmpfs -o size=2m tmpfs '$T/dst' &&
        '$FERRY' push --json --force --pack-threshold 0 '$T/two/' \
            'local:$T/dst'; rc=\$?
        ls '$T/dst' >'$T/full.ls'
        exit \$rc"
    expect_err "No space left on device"
    grep -qx a "$T/full.ls" || fail "a did not land"
    for f in $(cat "$T/full.ls"); do
        grep -q "\"event\":\"ready\",\"path\":\"$f\"" "$T/last.out" ||
            fail "$f is in place with no ready event"
    done
fi

# The same with small files, which travel in volumes and are written and
# committed behind the reader (engine/volume/volstage.c): the failure still ends
# the push with exit 3 and the destination's reason (not the sender's),
# the first batch of 512 files (2 MiB of pages) is in place and whole,
# and no file after it landed.
if unshare $unshare_args sh -c "mount -t tmpfs -o size=3m tmpfs '$T/dst'" \
    2>/dev/null; then
    mkdir -p "$T/many"
    for i in $(seq 1000 2199); do
        head -c 3000 /dev/urandom >"$T/many/f$i"
    done
    expect_rc 3 unshare $unshare_args sh -c "
        mount -t tmpfs -o size=3m tmpfs '$T/dst' &&
        '$FERRY' push --force '$T/many/' 'local:$T/dst'; rc=\$?
        mkdir -p '$T/landed'
        for f in \$(ls '$T/dst'); do
            [ -f '$T/dst/'\$f ] && cp '$T/dst/'\$f '$T/landed/'\$f
        done
        exit \$rc"
    expect_err "No space left on device"
    ! grep -q "refused from the sender" "$T/last.err" ||
        fail "a full destination was blamed on the sender"
    [ "$(ls "$T/landed" | wc -l)" -ge 512 ] ||
        fail "the first batch did not land"
    for f in $(ls "$T/landed"); do
        cmp -s "$T/many/$f" "$T/landed/$f" || fail "partial '$f' landed"
    done
fi

# A full disk under --keep-volumes, again and again: the agent says why
# and exits while the client is still writing volumes to it. The client's
# write fails first as often as not, and what the agent said is read
# after it all the same (engine/conn.c, conn_write_failed): exit 3 and
# the reason every time, never "connection closed" (exit 5).
mkdir -p "$T/rnd"
for i in 1 2 3; do head -c 1000000 /dev/urandom >"$T/rnd/r$i"; done
if unshare $unshare_args sh -c "mount -t tmpfs -o size=2m tmpfs '$T/dst'" \
    2>/dev/null; then
    expect_rc 0 unshare $unshare_args sh -c "
        mount -t tmpfs -o size=2m tmpfs '$T/dst' || exit 1
        for i in 1 2 3 4 5 6; do
            '$FERRY' push -q --force --keep-volumes --volume-size 256K \
                '$T/rnd' 'local:$T/dst/kv/'
            echo rc=\$?
        done"
    [ "$(grep -c '^rc=3$' "$T/last.out")" -eq 6 ] ||
        fail "full disk under --keep-volumes: $(tr '\n' ' ' <"$T/last.out")"
    [ "$(grep -c "$T/dst/kv/.rnd.*: No space left on device" \
        "$T/last.err")" -eq 6 ] || { cat "$T/last.err"; fail "the reason"; }
fi

# The agent cannot be found: exit 8 naming it.
expect_rc 8 "$FERRY" push --agent "$T/no-agent" "$T/src" "local:$T/dst"
expect_err "$T/no-agent"

# A file that changes while it is read: exit 2, the file is not
# committed, the rest is. b is read after the big file a, and changes
# while a is on its way (b in blocks: a small file in a volume is read
# at once, see tests/unit/test_volsend.c for that case).
change_while_read "$T/chgdst" push --json --block-size 64K \
    --pack-threshold 0 "$T/chg/" "local:$T/chgdst"
[ "$rc" -eq 2 ] || { cat "$T/last.err"; fail "changed file: exit $rc, want 2"; }
expect_err "$T/chg/b: file changed while being read"
[ ! -e "$T/chgdst/b" ] || fail "changed file was committed"
cmp -s "$T/chg/a" "$T/chgdst/a" || fail "the unchanged file was not sent"
