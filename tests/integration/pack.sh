# ferry pack and unpack: volumes that round-trip, that GNU tar and bsdtar
# read, volumes GNU tar, bsdtar and Python make that ferry reads (with and
# without a manifest), names at the ustar limits, split files, and damage
# caught by SHA-256 and XXH3.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

command -v bsdtar >/dev/null || fail "bsdtar missing (make deps installs libarchive-tools)"
VS=262144   # 256 KiB volumes: small enough to split files in tests
# bsdtar converts pax names to the locale's charset: use UTF-8.
export LC_ALL=C.UTF-8

src=$T/src/data
awkward_tree "$src"
# Its 4 GiB sparse file would make thousands of 256 KiB volumes of zeros:
# a piece is sized for the worst case (see DESIGN.md, Volumes).
rm -f "$src/big.sparse"
# More files than one commit batch (512).
small_files_tree "$src/small" 700
# ustar's limits: a 100-byte name, a 155-byte prefix with a 100-byte name,
# and past both (pax).
n100=$(printf 'n%.0s' $(seq 1 100))
p150=$(printf 'p%.0s' $(seq 1 150))
mkdir -p "$src/$p150" "$src/long/$(printf 'd%.0s' $(seq 1 200))"
echo a >"$src/$n100"
echo b >"$src/$p150/$n100"
echo c >"$src/long/$(printf 'd%.0s' $(seq 1 200))/$(printf 'f%.0s' $(seq 1 240))"
ln -s "$(printf 't%.0s' $(seq 1 150))" "$src/long-link"
printf 'ünïcödé\n' >"$src/ünï-cödé €.txt"
# A file exactly the volume size, one just over a volume and one that
# spans three.
head -c $VS /dev/urandom >"$src/exact.bin"
head -c $((VS + 1000)) /dev/urandom >"$src/over.bin"
head -c $((VS * 5 / 2)) /dev/urandom >"$src/three.bin"
# Compressible text, to see volumes end below the limit.
seq 1 200000 >"$src/numbers.txt"

expect_rc 0 "$FERRY" pack --volume-size 256K "$src" "$T/out"
ls "$T/out" >"$T/listing"
grep -qx 'data.manifest' "$T/listing" || fail "no manifest"
grep -qx 'SHA256SUMS' "$T/listing" || fail "no SHA256SUMS"
nvol=$(ls "$T/out"/data.*.tar.zst | wc -l)
[ "$nvol" -ge 5 ] || fail "only $nvol volumes"
for v in "$T/out"/data.*.tar.zst; do
    size=$(stat -c %s "$v")
    [ "$size" -le $VS ] || fail "$v is $size bytes, over $VS"
done
(cd "$T/out" && sha256sum -c --quiet SHA256SUMS) || fail "sha256sum -c"
grep -q '"path":"data/three.bin","index":3,' "$T/out/data.manifest" ||
    fail "three.bin not in three pieces"
grep -q '"path":"data/exact.bin","index":2,' "$T/out/data.manifest" ||
    fail "exact.bin should need two pieces (headers do not fit beside it)"
# Memory-light and streaming: no temporary files left behind.
[ -z "$(ls -A "$T/out" | grep '^\.')" ] || fail "temporary files left"

# Round trip: the same tree, modes and mtimes (ns) included.
expect_rc 0 "$FERRY" unpack "$T/out" "$T/back"
tree_same "$src" "$T/back/data"
[ -z "$(ls -A "$T/back" | grep -v '^data$')" ] || fail "staging left in DEST"

# Stock tools, one volume at a time, then the pieces joined with cat.
join_pieces() {
    find "$1" -name '*.ferry-piece-00001' | while IFS= read -r first; do
        base=${first%.ferry-piece-00001}
        cat "$base".ferry-piece-* >"$base"
        rm -f "$base".ferry-piece-*
    done
}
mkdir -p "$T/gnu" "$T/bsd" "$T/cat"
for v in "$T/out"/data.*.tar.zst; do
    tar --zstd -xf "$v" -C "$T/gnu" || fail "GNU tar on $v"
    bsdtar -xf "$v" -C "$T/bsd" || fail "bsdtar on $v"
done
ls "$T/gnu/data" | grep -q 'three.bin.ferry-piece-00003' || fail "piece names"
join_pieces "$T/gnu"
join_pieces "$T/bsd"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/gnu/data" ||
    fail "GNU tar's extraction differs"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/bsd/data" ||
    fail "bsdtar's extraction differs"
# All volumes as one stream (GNU tar -i reads past each end of archive).
cat "$T/out"/data.*.tar.zst | zstd -dc | tar -xif - -C "$T/cat" ||
    fail "cat | zstd -dc | tar -xi"
join_pieces "$T/cat"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/cat/data" ||
    fail "the concatenated stream differs"

# --json: one volume event per volume, then the summary.
expect_rc 0 "$FERRY" pack --json --volume-size 256K --name j "$src" "$T/outj"
[ "$(grep -c '"event":"volume"' "$T/last.out")" -eq "$nvol" ] ||
    fail "volume events"
expect_field ok true
expect_field volumes "$nvol"
expect_rc 0 "$FERRY" unpack --json "$T/outj" "$T/backj"
[ "$(grep -c '"event":"volume","action":"read"' "$T/last.out")" -eq "$nvol" ] ||
    fail "read events"
tree_same "$src" "$T/backj/data"

# A set of that name is there already: refused, nothing touched.
expect_rc 3 "$FERRY" pack --volume-size 256K "$src" "$T/out"
expect_err "another --name"
(cd "$T/out" && sha256sum -c --quiet SHA256SUMS) || fail "old set changed"
# Two sets share one SHA256SUMS.
mkdir -p "$T/small"
echo small >"$T/small/x"
expect_rc 0 "$FERRY" pack "$T/small" "$T/out"
(cd "$T/out" && sha256sum -c --quiet SHA256SUMS) || fail "merged sums"
expect_rc 0 "$FERRY" unpack --name small "$T/out" "$T/back-small"
[ "$(cat "$T/back-small/small/x")" = small ] || fail "second set"

# Theirs: GNU tar (its default format: GNU long names), bsdtar (pax) and
# Python (pax) archives unpack without a manifest.
mkdir -p "$T/theirs"
tar --zstd -cf "$T/theirs/gnu.tar.zst" -C "$T/src" data
expect_rc 0 "$FERRY" unpack "$T/theirs/gnu.tar.zst" "$T/from-gnu"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/from-gnu/data" ||
    fail "GNU tar's archive"
bsdtar --zstd -cf "$T/theirs/bsd.tar.zst" -C "$T/src" data
expect_rc 0 "$FERRY" unpack "$T/theirs/bsd.tar.zst" "$T/from-bsd"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/from-bsd/data" ||
    fail "bsdtar's archive"
python3 -c 'import sys, tarfile
with tarfile.open(sys.argv[1], "w") as t: t.add(sys.argv[2], "data")' \
    "$T/py.tar" "$src"
zstd -q "$T/py.tar" -o "$T/theirs/py.tar.zst"
expect_rc 0 "$FERRY" unpack "$T/theirs/py.tar.zst" "$T/from-py"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/from-py/data" ||
    fail "Python's archive"
# A directory of them, read in name order.
expect_rc 0 "$FERRY" unpack "$T/theirs" "$T/from-all"

# Theirs with our manifest: our volumes remade by GNU tar (pax, the same
# members in the same order), SHA256SUMS made again by sha256sum.
mkdir -p "$T/remade" "$T/x"
for v in "$T/out"/data.*.tar.zst; do
    rm -rf "$T/x" && mkdir "$T/x"
    tar --zstd -xf "$v" -C "$T/x"
    tar --zstd -tf "$v" >"$T/members"
    tar --zstd --format=pax --no-recursion -cf "$T/remade/$(basename "$v")" \
        -C "$T/x" -T "$T/members"
done
cp "$T/out/data.manifest" "$T/remade/"
(cd "$T/remade" && sha256sum data.* >SHA256SUMS)
expect_rc 0 "$FERRY" unpack --name data "$T/remade" "$T/from-remade"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/from-remade/data" ||
    fail "GNU tar's remade volumes"

# Damage: a flipped byte in a volume is caught by its SHA-256 before
# anything of it is written...
cp -r "$T/out" "$T/bad"
v3=$T/bad/data.00003.tar.zst
# (Its bits inverted: a fixed byte written there is already there once
# in 256 runs of this random data.)
python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(2000); b = f.read(1)[0]
f.seek(2000); f.write(bytes([b ^ 0xff]))' "$v3"
expect_rc 9 "$FERRY" unpack --name data "$T/bad" "$T/back-bad"
expect_err "SHA-256 does not match"
# ... and without SHA256SUMS by zstd's checksum or the file's XXH3.
rm "$T/bad/SHA256SUMS"
expect_rc 9 "$FERRY" unpack --name data "$T/bad" "$T/back-bad2"
no_partial_names "$T/back-bad2" "$src/.." || fail "partial file under its name"
# A truncated volume, without a manifest.
head -c 5000 "$T/out/data.00001.tar.zst" >"$T/trunc.tar.zst"
expect_rc 9 "$FERRY" unpack "$T/trunc.tar.zst" "$T/back-trunc"
expect_err "truncated"
# A missing volume: the manifest names it, so the unpack stops before
# anything is written (exit 2), with or without its SHA256SUMS line.
cp -r "$T/out" "$T/gap"
rm "$T/gap/data.00002.tar.zst"
expect_rc 2 "$FERRY" unpack --name data "$T/gap" "$T/back-gap"
expect_err "data.00002.tar.zst: named by data.manifest, not here: a volume of the set is missing"
[ ! -e "$T/back-gap" ] || fail "a set with a volume missing was unpacked"
sed -i '/data.00002.tar.zst/d' "$T/gap/SHA256SUMS"
expect_rc 2 "$FERRY" unpack --name data "$T/gap" "$T/back-gap"
[ ! -e "$T/back-gap" ] || fail "a set with a volume missing was unpacked"
# Without the manifest the directory is the set: a volume SHA256SUMS lists
# (another set's lines there too) and the directory lacks stops it before
# anything is written; with no SHA256SUMS either, a note says what cannot
# be checked.
cp -r "$T/out" "$T/gap2"
rm "$T/gap2/data.manifest" "$T/gap2/data.00002.tar.zst"
expect_rc 2 "$FERRY" unpack --name data "$T/gap2" "$T/back-gap2"
expect_err "data.00002.tar.zst: listed in SHA256SUMS, not here"
[ ! -e "$T/back-gap2" ] || fail "a set with a volume missing was unpacked"
rm "$T/gap2/SHA256SUMS"
cp "$T/out/data.00002.tar.zst" "$T/gap2/"
expect_rc 0 "$FERRY" unpack --name data "$T/gap2" "$T/back-gap2"
expect_err "a volume missing from the set cannot be noticed"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$src" "$T/back-gap2/data" ||
    fail "the set without its manifest and sums"
echo "pack: ok"
