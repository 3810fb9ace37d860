# A broken state directory (.ferry a file or a link, .ferry/part a link
# or a file) is refused before anything is written, and every message
# names .ferry, not the file being copied; status and clean say the same.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src" "$T/elsewhere"
echo data >"$T/src/payload"

# check_refused DEST: push, status and clean all stop naming .ferry.
check_refused() {
    expect_rc 3 "$FERRY" push "$T/src/" "local:$1"
    expect_err "$1/.ferry"
    if grep -q "payload" "$T/last.err"; then
        cat "$T/last.err" >&2
        fail "the message blames the file being copied"
    fi
    [ ! -e "$1/payload" ] || fail "wrote through a broken .ferry"
    expect_rc 3 "$FERRY" status "$1"
    expect_err ".ferry"
    expect_rc 3 "$FERRY" clean "$1"
    expect_err ".ferry"
}

mkdir -p "$T/d1"
echo x >"$T/d1/.ferry"
check_refused "$T/d1"
[ "$(cat "$T/d1/.ferry")" = x ] || fail "a .ferry file was changed"

mkdir -p "$T/d2"
ln -s "$T/elsewhere" "$T/d2/.ferry"
check_refused "$T/d2"

mkdir -p "$T/d3/.ferry"
chmod 700 "$T/d3/.ferry"
ln -s "$T/elsewhere" "$T/d3/.ferry/part"
check_refused "$T/d3"

mkdir -p "$T/d4/.ferry"
chmod 700 "$T/d4/.ferry"
echo x >"$T/d4/.ferry/part"
check_refused "$T/d4"
[ "$(cat "$T/d4/.ferry/part")" = x ] || fail "a part file was changed"

[ -z "$(ls -A "$T/elsewhere")" ] || fail "state written through a link"

# status and clean of a destination that is a file, or is missing: the
# same destination problem (exit 3) here as on the agent.
echo x >"$T/afile"
for cmd in status clean; do
    for dest in "$T/afile" "$T/nowhere"; do
        for where in "" local:; do
            expect_rc 3 "$FERRY" $cmd "$where$dest"
            expect_err "$dest"
        done
    done
done
