# ferry unpack against hostile volumes (made by tests/lib/evil_tar.py with
# Python's tarfile): each is refused with a clear error, and nothing
# outside the destination changes.
. "$(dirname "$0")/../lib/common.sh"

outside=$T/outside
mkdir -p "$outside"
echo keep >"$outside/secret"
snapshot() { (cd "$T" && find . -mindepth 1 -path ./dest -prune -o -path ./last.out \
    -prune -o -path ./last.err -prune -o -printf '%p %s %T@\n' | sort); }

# kind, expected exit status, text the error names
while read -r kind rc text; do
    python3 "$TESTS_DIR/lib/evil_tar.py" "$kind" "$T/$kind.tar.zst" \
        "$outside" || fail "making $kind"
    before=$(snapshot)
    rm -rf "$T/dest"
    expect_rc "$rc" "$FERRY" unpack "$T/$kind.tar.zst" "$T/dest/x"
    expect_err "$text"
    [ "$(snapshot)" = "$before" ] || fail "$kind: something outside changed"
    [ "$(cat "$outside/secret")" = keep ] || fail "$kind: secret changed"
    [ ! -e /tmp/ferry-evil-absolute.txt ] || fail "$kind: absolute path"
    # Nothing but what is allowed (the symlink itself) is left in DEST,
    # and no staging directory.
    left=$(ls -A "$T/dest/x" | grep -v '^link$' || true)
    [ -z "$left" ] || fail "$kind: left in DEST: $left"
done <<'LIST'
dotdot 4 path with '..' refused
absolute 4 absolute path refused
symlink-then-file 4 a symlink or a file is in its way
hardlink 4 hard link refused
device 4 device file or FIFO refused
fifo 4 device file or FIFO refused
huge-pax 4 extended header too large
dotferry 4 reserved name refused
size-too-large 4 archive truncated
truncated 9 truncated
corrupt-zstd 9 damaged
LIST
echo "pack_hostile: ok"
