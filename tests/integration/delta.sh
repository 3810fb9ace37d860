# Delta: files pushed and pulled over an older copy come out identical,
# whatever the edits (tests/lib/delta_edits.py: overwrite, insert, delete,
# truncate, extend, all new, empty, the same content with a new mtime),
# over many seeds, in one stream and spread over several, with small and
# default blocks. Only what changed crosses the wire, the old file is
# untouched until the new one is committed, and --delta=never sends all.
# A file ferry wrote is signed from what it kept then, not read again,
# while it is exactly as written.
. "$(dirname "$0")/../lib/common.sh"

edits="$TESTS_DIR/lib/delta_edits.py"
seeds=${DELTA_SEEDS:-120}

# make_pair NAME FIRST COUNT: $T/NAME.old and $T/NAME.new
make_pair() {
    mkdir -p "$T/$1.old" "$T/$1.new"
    python3 "$edits" "$T/$1.old" "$T/$1.new" "$2" "$3" >"$T/$1.log"
}

# sum of the summary's payload parts must be the payload
check_counts() {
    payload=$(json_field bytes_payload)
    parts=$(( $(json_field bytes_literal) + $(json_field bytes_matched) +
        $(json_field bytes_sparse) + $(json_field resumed_bytes) ))
    [ "$payload" -eq "$parts" ] ||
        fail "$1: payload $payload != literal+matched+sparse+resumed $parts"
}

# 1. Push over old copies: every seed, 64 KiB blocks (many boundaries),
#    delta on every file that has a basis.
make_pair a 1 "$seeds"
cp -a "$T/a.old" "$T/d1"
expect_rc 0 "$FERRY" push --json --delta=always --block-size 64K \
    "$T/a.new/" "local:$T/d1"
tree_same "$T/a.new" "$T/d1"
check_counts "push"
[ "$(json_field bytes_matched)" -gt 0 ] || fail "push: nothing matched"

# 2. Pull over old copies, other seeds, default blocks, three streams.
make_pair b 1000 "$seeds"
cp -a "$T/b.old" "$T/d2"
expect_rc 0 "$FERRY" pull --json --delta=always -j 3 \
    "local:$T/b.new/" "$T/d2"
tree_same "$T/b.new" "$T/d2"
check_counts "pull"
[ "$(json_field bytes_matched)" -gt 0 ] || fail "pull: nothing matched"

# 3. A big file rewritten in place at a few spots, and one with data
#    inserted at the start: only about the changes cross the wire.
mkdir -p "$T/c.old" "$T/c.new" "$T/d3"
head -c 20000000 /dev/urandom >"$T/c.old/ckpt"
cp "$T/c.old/ckpt" "$T/c.new/ckpt"
for off in 100 7000000 19000000; do
    printf 'rewritten' | dd of="$T/c.new/ckpt" bs=1 seek=$off conv=notrunc \
        2>/dev/null
done
{ head -c 4096 /dev/urandom; cat "$T/c.old/ckpt"; } >"$T/c.new/shifted"
cp "$T/c.old/ckpt" "$T/c.old/shifted"
cp -a "$T/c.old/." "$T/d3/"
ino=$(stat -c %i "$T/d3/ckpt")
expect_rc 0 "$FERRY" push --json "$T/c.new/" "local:$T/d3"
tree_same "$T/c.new" "$T/d3"
check_counts "checkpoint"
literal=$(json_field bytes_literal)
[ "$literal" -le 300000 ] || fail "checkpoint: $literal bytes sent"
[ "$(json_field bytes_matched)" -ge 39000000 ] || fail "checkpoint: matched"
[ "$(stat -c %i "$T/d3/ckpt")" != "$ino" ] ||
    fail "the old file was written in place"

# 4. The same content with a new mtime costs no data.
touch -d '2001-01-01' "$T/d3/ckpt"
expect_rc 0 "$FERRY" push --json "$T/c.new/ckpt" "local:$T/d3/ckpt"
[ "$(json_field bytes_literal)" -eq 0 ] || fail "same content: data sent"
[ "$(json_field bytes_matched)" -eq 20000000 ] || fail "same content"
tree_same "$T/c.new" "$T/d3"

# 5. --delta=never sends everything; auto leaves small files alone.
touch -d '2001-01-01' "$T/d3/ckpt"
expect_rc 0 "$FERRY" push --json --delta=never "$T/c.new/ckpt" \
    "local:$T/d3/ckpt"
[ "$(json_field bytes_literal)" -eq 20000000 ] || fail "never: not all sent"
mkdir -p "$T/e.new" "$T/d5"
head -c 100000 /dev/urandom >"$T/e.new/small"
head -c 100000 /dev/urandom >"$T/d5/small"
expect_rc 0 "$FERRY" push --json "$T/e.new/" "local:$T/d5"
[ "$(json_field bytes_matched)" -eq 0 ] || fail "auto: small file delta"
expect_rc 1 "$FERRY" push --delta=sometimes "$T/e.new/" "local:$T/d5"
expect_err "want auto, always or never"

# 6. --basis auto (the default): a new file is built from the most
#    similar one beside it (same extension, closest size and name); the
#    basis is untouched.
mkdir -p "$T/f.new" "$T/d6"
python3 - "$T/d6/step-1000.bin" "$T/f.new/step-2000.bin" <<'PY'
import random, sys
r = random.Random(7)
region = 1 << 20
old = [r.getrandbits(8 * region).to_bytes(region, "little") for _ in range(10)]
new = [b if i % 5 < 3 else r.getrandbits(8 * region).to_bytes(region, "little")
       for i, b in enumerate(old)]
open(sys.argv[1], "wb").write(b"".join(old))
open(sys.argv[2], "wb").write(b"".join(new))
PY
head -c 10485760 /dev/urandom >"$T/d6/step-1000.txt"
head -c 3000000 /dev/urandom >"$T/d6/other.bin"
sum_before=$(md5sum <"$T/d6/step-1000.bin")
expect_rc 0 "$FERRY" push --json "$T/f.new/" "local:$T/d6"
cmp "$T/f.new/step-2000.bin" "$T/d6/step-2000.bin" || fail "basis auto: differs"
[ "$(md5sum <"$T/d6/step-1000.bin")" = "$sum_before" ] ||
    fail "basis auto: the basis changed"
literal=$(json_field bytes_literal)
[ "$literal" -le 4300000 ] || fail "basis auto: $literal bytes sent"
[ "$(json_field bytes_matched)" -ge 6000000 ] || fail "basis auto: matched"
# With --basis none, a new file is sent whole.
rm "$T/d6/step-2000.bin"
expect_rc 0 "$FERRY" push --json --basis none "$T/f.new/" "local:$T/d6"
[ "$(json_field bytes_matched)" -eq 0 ] || fail "--basis none: matched"
expect_rc 1 "$FERRY" push --basis /etc/passwd "$T/f.new/" "local:$T/d6"
expect_err "want auto, none, or a file's path"

# 7. An interrupted delta resumes: the blocks built before the cut are
#    kept, the rest is built again from the basis.
mkdir -p "$T/g.new" "$T/d7"
head -c 60000000 /dev/urandom >"$T/d7/big"
python3 - "$T/d7/big" "$T/g.new/big" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
# Every other 64 KiB rewritten: half of it is literal data.
for off in range(0, len(data), 131072):
    data[off:off + 65536] = bytes((b + 1) & 255 for b in data[off:off + 65536])
open(sys.argv[2], "wb").write(data)
PY
cp "$T/d7/big" "$T/g.old"
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=20000000
"$FERRY" push --agent "$TESTS_DIR/lib/slow_agent.py" "$T/g.new/" \
    "local:$T/d7" 2>/dev/null &
pid=$!
wait_part_bytes "$T/d7" 30000000
kill -9 $pid
wait $pid 2>/dev/null || true
cmp "$T/g.old" "$T/d7/big" || fail "the basis changed before the commit"
unset SLOW_AGENT_RATE
expect_rc 0 "$FERRY" push --json "$T/g.new/" "local:$T/d7"
cmp "$T/g.new/big" "$T/d7/big" || fail "resumed delta: differs"
check_counts "resumed delta"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "the delta did not resume"
[ "$(json_field bytes_matched)" -gt 0 ] || fail "resumed without delta"

# 8. A sparse file past 4 GiB: offsets above 2^32 in signatures and
#    copies, holes kept as holes.
mkdir -p "$T/h.new" "$T/d8"
big=$((4 * 1024 * 1024 * 1024 + 12345))
truncate -s $big "$T/d8/sparse"
for off in 0 2147483648 4294967296; do
    head -c 3000000 /dev/urandom |
        dd of="$T/d8/sparse" bs=1M seek=$((off / 1048576)) conv=notrunc \
        2>/dev/null
done
cp --sparse=always "$T/d8/sparse" "$T/h.new/sparse"
printf 'edited past 4 GiB' | dd of="$T/h.new/sparse" bs=1 \
    seek=$((4294967296 + 1000)) conv=notrunc 2>/dev/null
printf 'tail' >>"$T/h.new/sparse"
expect_rc 0 "$FERRY" push --json "$T/h.new/" "local:$T/d8"
cmp "$T/h.new/sparse" "$T/d8/sparse" || fail "sparse: differs"
[ "$(json_field bytes_literal)" -le 2000000 ] ||
    fail "sparse: $(json_field bytes_literal) bytes sent"
[ "$(du -k "$T/d8/sparse" | cut -f1)" -lt 100000 ] ||
    fail "sparse: the holes were filled"

# 9. --basis FILE names the basis, relative to the destination, in push
#    and pull; a path out of the destination is refused.
mkdir -p "$T/d9/sub" "$T/d9b/sub"
cp "$T/d6/step-1000.bin" "$T/d9/sub/older.bin"
cp "$T/d6/step-1000.bin" "$T/d9b/sub/older.bin"
expect_rc 0 "$FERRY" push --json --basis sub/older.bin \
    "$T/f.new/step-2000.bin" "local:$T/d9/"
cmp "$T/f.new/step-2000.bin" "$T/d9/step-2000.bin" || fail "basis FILE push"
[ "$(json_field bytes_matched)" -ge 6000000 ] || fail "basis FILE: matched"
expect_rc 0 "$FERRY" pull --json --basis sub/older.bin \
    "local:$T/f.new/step-2000.bin" "$T/d9b/"
cmp "$T/f.new/step-2000.bin" "$T/d9b/step-2000.bin" || fail "basis FILE pull"
[ "$(json_field bytes_matched)" -ge 6000000 ] || fail "basis FILE pull: matched"
expect_rc 1 "$FERRY" push --basis ../outside "$T/f.new/" "local:$T/d9"
expect_err "relative to the destination"

# 10. Kept signatures: a file this receiver wrote is not read to sign it
#     while it is as written; touched in any way, it is read as before.
#     (Files under --pack-threshold travel in volumes, and keep none.)
export XDG_CACHE_HOME="$T/cache10"
kept="$XDG_CACHE_HOME/ferry/sig"
mkdir -p "$T/k.src" "$T/k.box"
head -c 10000000 /dev/urandom >"$T/k.src/ckpt.bin"
expect_rc 0 "$FERRY" push "$T/k.src/" "local:$T/k.box"
[ "$(ls "$kept" | wc -l)" -eq 1 ] || fail "kept: nothing kept by the push"
expect_rc 0 "$FERRY" pull "local:$T/k.box/" "$T/k.here"
[ "$(ls "$kept" | wc -l)" -eq 2 ] || fail "kept: nothing kept by the pull"
printf 'changed' | dd of="$T/k.src/ckpt.bin" bs=1 seek=1500000 \
    conv=notrunc 2>/dev/null
expect_rc 0 "$FERRY" push --json "$T/k.src/" "local:$T/k.box"
[ "$(json_field bytes_matched)" -ge 9000000 ] || fail "kept: push matched"
# The new version's kept, the replaced one's gone.
[ "$(ls "$kept" | wc -l)" -eq 2 ] || fail "kept: $(ls "$kept" | wc -l) kept"
expect_rc 0 "$FERRY" pull -v --json "local:$T/k.box/" "$T/k.here"
expect_err "signatures were kept when it was written"
cmp "$T/k.src/ckpt.bin" "$T/k.here/ckpt.bin" || fail "kept: pull differs"
[ "$(json_field bytes_matched)" -ge 9000000 ] || fail "kept: pull matched"
# Its content changed under the same size and mtime: the ctime says so.
printf 'local edit' | dd of="$T/k.here/ckpt.bin" bs=1 seek=10 \
    conv=notrunc 2>/dev/null
touch -r "$T/k.src/ckpt.bin" "$T/k.here/ckpt.bin"
printf 'again' | dd of="$T/k.src/ckpt.bin" bs=1 seek=2500000 \
    conv=notrunc 2>/dev/null
expect_rc 0 "$FERRY" push "$T/k.src/" "local:$T/k.box"
expect_rc 0 "$FERRY" pull -v --json "local:$T/k.box/" "$T/k.here"
grep -q "signatures were kept" "$T/last.err" &&
    fail "kept: signatures of a file changed since were used"
cmp "$T/k.src/ckpt.bin" "$T/k.here/ckpt.bin" || fail "kept: stale pull differs"

# 11. The kept signatures of a version built by delta, where the pieces
#     copied whole take the basis's own, are those a read of it gives:
#     for an edit in place, an insert (no piece where it was), a shorter
#     and a longer version (the last piece).
kept_body() {  # the signatures of the file at $1, without header and trailer
    set -- "$kept/$(printf '%x-%x' $(stat -c '%d %i' "$1"))"
    [ -f "$1" ] || fail "kept: none for $1"
    tail -c +77 "$1" | head -c -16
}
for edit in inplace insert shorter longer; do
    rm -rf "$T/kb.src" "$T/kb.box" "$T/kb.fresh"
    mkdir -p "$T/kb.src"
    head -c 10000000 /dev/urandom >"$T/kb.src/c.bin"
    expect_rc 0 "$FERRY" push "$T/kb.src/" "local:$T/kb.box"
    f=$T/kb.src/c.bin
    case $edit in
    inplace) printf 'edit' | dd of="$f" bs=1 seek=2000000 conv=notrunc \
        2>/dev/null ;;
    insert) { printf 'ins'; cat "$f"; } >"$f.t" && mv "$f.t" "$f" ;;
    shorter) truncate -s 9999000 "$f" ;;
    longer) head -c 5000 /dev/urandom >>"$f" ;;
    esac
    touch -d '2024-01-01 00:00:00' "$f"
    expect_rc 0 "$FERRY" push --json "$T/kb.src/" "local:$T/kb.box"
    [ "$(json_field bytes_matched)" -ge 8000000 ] || fail "kept $edit: matched"
    expect_rc 0 "$FERRY" push "$T/kb.src/" "local:$T/kb.fresh"
    cmp "$T/kb.src/c.bin" "$T/kb.box/c.bin" || fail "kept $edit: differs"
    [ "$(kept_body "$T/kb.box/c.bin" | sha256sum)" = \
        "$(kept_body "$T/kb.fresh/c.bin" | sha256sum)" ] ||
        fail "kept $edit: the built version's signatures are not its own"
done
