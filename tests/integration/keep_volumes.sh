# push --keep-volumes: the far side gets exactly what `ferry pack` would
# make there (volumes, manifest, SHA256SUMS), which sha256sum -c, ferry
# unpack, GNU tar and bsdtar read; a cut run resumes without sending the
# finished volumes again; a re-run after a change sends from the first
# volume that differs; options that make no sense are refused.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"

command -v bsdtar >/dev/null || fail "bsdtar missing (make deps installs libarchive-tools)"
export LC_ALL=C.UTF-8
VS=262144

src=$T/src/data
small_files_tree "$src/small" 300
head -c $((VS * 5 / 2)) /dev/urandom >"$src/big.bin"   # split in three
printf 'ünïcödé\n' >"$src/ünï-cödé €.txt"
long=$(printf 'd%.0s' $(seq 1 200))
mkdir -p "$src/$long"
echo deep >"$src/$long/$(printf 'f%.0s' $(seq 1 240))"
ln -s small "$src/link"
# Other sets' lines in SHA256SUMS are kept.
mkdir -p "$T/far"
echo "0000000000000000000000000000000000000000000000000000000000000000  other.manifest" >"$T/far/SHA256SUMS"

expect_rc 0 "$FERRY" push --keep-volumes --volume-size 256K --json \
    "$src" "local:$T/far"
n=$(json_field volumes)
[ "$n" -ge 4 ] || fail "only $n volumes"
expect_field volumes_sent "$n"
expect_field volumes_kept 0
[ "$(grep -c '"event":"volume","action":"sent"' "$T/last.out")" = "$n" ] ||
    fail "a volume event per volume sent"
# What ferry pack makes of the same sources, byte for byte.
expect_rc 0 "$FERRY" pack --volume-size 256K "$src" "$T/packed"
for f in "$T/packed"/data.*; do
    cmp -s "$f" "$T/far/$(basename "$f")" || fail "$(basename "$f") differs from ferry pack's"
done
[ "$(ls "$T/far" | grep -c '^data\.')" = "$(ls "$T/packed" | grep -c '^data\.')" ] ||
    fail "not the files ferry pack makes"
grep -q '  other.manifest$' "$T/far/SHA256SUMS" || fail "another set's line was lost"
# Nothing hidden but ferry's record of the volumes it stored.
[ -z "$(ls -A "$T/far" | grep '^\.' | grep -vx '\.ferry')" ] ||
    fail "temporary files left"
[ -s "$T/far/.ferry/owned" ] || fail "the volumes stored were not recorded"
grep -q '"path":"data/big.bin","index":3,' "$T/far/data.manifest" ||
    fail "big.bin not split in three pieces"
for v in "$T/far"/data.*.tar.zst; do
    [ "$(stat -c %s "$v")" -le $VS ] || fail "$v over the volume size"
done
(cd "$T/far" && grep data SHA256SUMS | sha256sum -c --quiet) || fail "sha256sum -c"
expect_rc 0 "$FERRY" unpack "$T/far" "$T/back"
tree_same "$src" "$T/back/data"
mkdir -p "$T/gnu"
for v in "$T/far"/data.*.tar.zst; do tar --zstd -xf "$v" -C "$T/gnu"; done
cat "$T/gnu/data/big.bin.ferry-piece-"* | cmp -s - "$src/big.bin" || fail "GNU tar: big.bin"
cmp -s "$T/gnu/data/ünï-cödé €.txt" "$src/ünï-cödé €.txt" || fail "GNU tar: UTF-8 name"
mkdir -p "$T/bsd"
for v in "$T/far"/data.*.tar.zst; do bsdtar -xf "$v" -C "$T/bsd" || fail "bsdtar $v"; done
cat "$T/bsd/data/big.bin.ferry-piece-"* | cmp -s - "$src/big.bin" || fail "bsdtar: big.bin"
diff -r "$T/gnu" "$T/bsd" >/dev/null || fail "GNU tar and bsdtar extract different trees"

# The same command again: every volume is the one there, none is sent.
expect_rc 0 "$FERRY" push --keep-volumes --volume-size 256K --json \
    "$src" "local:$T/far"
expect_field volumes_sent 0
expect_field volumes_kept "$n"

# A cut: a slow link, the client killed once some volumes are stored.
# 12 MB at 2 MB/s: what the queues hold ahead of the limit (a few MiB)
# cannot finish the set before the kill.
src2=$T/src/cut
mkdir -p "$src2"
for i in $(seq 10 57); do head -c 250000 /dev/urandom >"$src2/r$i"; done
"$FERRY" push --keep-volumes --volume-size 256K --bwlimit 2M -q \
    "$src2" "local:$T/far" &
pid=$!
wait_exists "$T/far/cut.00004.tar.zst"
kill -9 $pid
wait $pid 2>/dev/null || true
expect_rc 0 "$FERRY" pack --volume-size 256K "$src2" "$T/packed"
# The agent (its client gone) removes its temporary files; the volumes
# are counted once it has: until then it may still put one in place.
for _ in $(seq 1 100); do
    [ -z "$(ls -A "$T/far" | grep '^\.cut')" ] && break
    sleep 0.1
done
[ -z "$(ls -A "$T/far" | grep '^\.cut')" ] || fail "temporary files left after the cut"
# No partial file under a final name: each volume there is whole.
done_before=0
for v in "$T/far"/cut.*.tar.zst; do
    cmp -s "$v" "$T/packed/$(basename "$v")" || fail "partial $(basename "$v")"
    done_before=$((done_before + 1))
done
[ ! -e "$T/far/cut.manifest" ] || fail "a manifest before the set was whole"
total=$(ls "$T/packed"/cut.*.tar.zst | wc -l)
expect_rc 0 "$FERRY" push --keep-volumes --volume-size 256K --json \
    "$src2" "local:$T/far"
expect_field volumes_kept "$done_before"
expect_field volumes_sent $((total - done_before))
for f in "$T/packed"/cut.*; do
    cmp -s "$f" "$T/far/$(basename "$f")" || fail "after the resume: $(basename "$f")"
done
(cd "$T/far" && grep -v other SHA256SUMS | sha256sum -c --quiet) ||
    fail "sha256sum -c after the resume"

# A change in the last files (rewritten in place, so their directory's
# mtime, in volume 1, stays): the volumes before them are kept, and a set
# that shrank loses its volumes past the new last one.
for i in 54 55 56 57; do head -c 10 /dev/urandom >"$src2/r$i"; done
expect_rc 0 "$FERRY" push --keep-volumes --volume-size 256K --json \
    "$src2" "local:$T/far"
total2=$(json_field volumes)
[ "$total2" -lt "$total" ] || fail "the set did not shrink"
[ ! -e "$T/far/cut.$(printf %05d "$total").tar.zst" ] || fail "a stale volume was left"
[ "$(json_field volumes_kept)" -ge 1 ] || fail "no volume kept after a change at the end"
rm -rf "$T/back2"
expect_rc 0 "$FERRY" unpack --name cut "$T/far" "$T/back2"
tree_same "$src2" "$T/back2/cut"

# --name, and what --keep-volumes refuses.
expect_rc 0 "$FERRY" push --keep-volumes --name other2 -q "$src/small" "local:$T/far"
[ -e "$T/far/other2.manifest" ] || fail "--name"
for bad in --delete --checksum -z "--delta=always" "--basis=old.bin" "--exclude=x" -n; do
    expect_rc 1 "$FERRY" push --keep-volumes $bad "$src" "local:$T/far2"
    expect_err "--keep-volumes cannot go with"
done
expect_rc 1 "$FERRY" pull --keep-volumes "local:$T/far" "$T/x"
expect_err "--keep-volumes cannot go with pull"
expect_rc 1 "$FERRY" push --name x "$src" "local:$T/far2"
expect_err "--name goes with push --keep-volumes"
[ ! -e "$T/far2" ] || fail "a refused push made its destination"
exit 0
