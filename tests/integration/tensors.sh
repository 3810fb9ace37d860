# The tensor layout of checkpoints made as training code makes them
# (torch.save's zip by Python's zipfile and pickle, safetensors, .npy; a
# tar has none), and each coded against another version of itself (the
# same layout, other data) and against itself, every block rebuilt byte
# for byte (tests/tools/formcheck -t, tests/tools/tensor_rate -f).
. "$(dirname "$0")/../lib/common.sh"

python3 "$TESTS_DIR/lib/ckpt_layouts.py" "$T/a" 2
python3 "$TESTS_DIR/lib/ckpt_layouts.py" "$T/b" 2 8
# name:the first line of formcheck -t:the second (the first tensor)
for f in "torch.pth:torch 4:archive/data/0 346 524288 0" \
    "model.safetensors:safetensors 3:w0 280 699050 2" \
    "arr.npy:npy 1:npy 128 2097152 4" "ckpt.tar:none 0:"; do
    IFS=: read -r name head first <<<"$f"
    "$TOOLS/formcheck" -t "$T/a/$name" >"$T/layout" ||
        fail "$name: formcheck -t failed"
    [ "$(sed -n 1p "$T/layout")" = "$head" ] ||
        fail "$name: '$(sed -n 1p "$T/layout")', want '$head'"
    [ "$(sed -n 2p "$T/layout")" = "$first" ] ||
        fail "$name: '$(sed -n 2p "$T/layout")', want '$first'"
    n=${head#* }
    got=$("$TOOLS/tensor_rate" -f "$T/a/$name" "$T/b/$name") ||
        fail "$name: another version does not rebuild: $got"
    case $got in "tensors $n paired $n coded "*) ;;
        *) fail "$name: '$got', want $n tensors paired" ;; esac
    got=$("$TOOLS/tensor_rate" -f "$T/a/$name" "$T/a/$name") ||
        fail "$name: itself does not rebuild: $got"
    set -- $got
    [ "$n" = 0 ] || [ "$6" -lt $(($8 / 100)) ] ||
        fail "$name: coded against itself to $6 of $8 bytes"
done
# The same torch layout's other version, with a storage grown so that the
# records after it move: the others still pair.
python3 - "$T/a/torch.pth" "$T/c.pth" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as a, \
        zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_STORED) as b:
    for i in a.infolist():
        data = a.read(i.filename)
        if i.filename == "archive/data/1":
            data += b"\0" * 4096
        b.writestr(i.filename, data)
PY
got=$("$TOOLS/tensor_rate" -f "$T/a/torch.pth" "$T/c.pth") ||
    fail "a storage grown: does not rebuild: $got"
case $got in "tensors 4 paired 3 coded "*) ;;
    *) fail "a storage grown: '$got', want 3 of 4 paired" ;; esac

# On the wire: a save pushed and pulled beside the older one it is
# compared with (--basis auto's neighbour), each case of
# tests/lib/ckpt_pair.py, comes out identical, its blocks sent as tensor
# differences, in fewer bytes than with --tensors=never where every
# block changed. Checkpoint blocks start coded where blocks are
# compressed (-z, or a long link) and whole on a short link such as
# local: (docs/DESIGN.md, "When delta is used", 6), so these runs say -z.
pair="$TESTS_DIR/lib/ckpt_pair.py"

# wire_of DIR: the bytes the last command wrote to its transport (a push)
# or read from it (a pull).
wire_of() {
    case $1 in push) json_field bytes_wire ;; *) json_field bytes_wire_in ;;
    esac
}

# run_case CASE DIR OP [FLAGS...]: $T/CASE.src holds step-1000 and
# step-2000, the destination step-1000 alone; OP (push or pull) sends
# the source into DIR. Leaves bytes_tensor and the wire's bytes.
run_case() {
    local c=$1 d=$2 op=$3
    shift 3
    rm -rf "$d"
    mkdir -p "$d"
    cp -p "$T/$c.src/step-1000.safetensors" "$d/"
    if [ "$op" = push ]; then
        expect_rc 0 "$FERRY" push --json "$@" "$T/$c.src/" "local:$d"
    else
        expect_rc 0 "$FERRY" pull --json "$@" "local:$T/$c.src/" "$d"
    fi
    tree_same "$T/$c.src" "$d"
    tensor=$(json_field bytes_tensor)
    wire=$(wire_of "$op")
}

for c in same few perturbed added removed renamed header; do
    mkdir -p "$T/$c.src"
    python3 "$pair" "$T/$c.src/step-1000.safetensors" \
        "$T/$c.src/step-2000.safetensors" "$c" 2
    for op in push pull; do
        run_case "$c" "$T/$c.never" "$op" -z --tensors=never
        [ "$tensor" = 0 ] || fail "$c $op: --tensors=never sent tensors"
        never=$wire
        run_case "$c" "$T/$c.dest" "$op" -z
        [ "$tensor" -gt 0 ] || fail "$c $op: no tensor differences sent"
        # The file's own event says it too (and -v prints it).
        ft=$(grep '"event":"file","path":"step-2000' "$T/last.out" |
            sed -n 's/.*"bytes_tensor":\([0-9]*\).*/\1/p')
        [ "$ft" = "$tensor" ] ||
            fail "$c $op: the file event says ${ft:-no} tensor bytes, the summary $tensor"
        # Where blocks stay the same block delta copies them as well.
        case $c in same|few) ;; *)
            [ "$wire" -lt "$never" ] ||
                fail "$c $op: $wire bytes on the wire, $never with never" ;;
        esac
        note "$c $op: $wire bytes, $never with --tensors=never"
    done
done

# Four streams, and a pull of them, the same.
run_case perturbed "$T/j4" push -z -j 4
[ "$tensor" -gt 0 ] || fail "-j 4: no tensor differences sent"
run_case perturbed "$T/j4" pull -z -j 4
[ "$tensor" -gt 0 ] || fail "pull -j 4: no tensor differences sent"
# Without -z on this short link the blocks start whole, and a save
# smaller than the governor's first two windows goes whole throughout.
run_case perturbed "$T/short" push
[ "$tensor" = 0 ] || fail "a short link: $tensor bytes coded from the start"

# The sender lacks the reference (its step-1000 is gone): planes alone
# would not pay on this short link, so the blocks go as ever.
mkdir -p "$T/lack.src"
cp -p "$T/perturbed.src/step-2000.safetensors" "$T/lack.src/"
mkdir -p "$T/lack.dest"
cp -p "$T/perturbed.src/step-1000.safetensors" "$T/lack.dest/"
expect_rc 0 "$FERRY" push --json "$T/lack.src/" "local:$T/lack.dest"
cmp "$T/lack.src/step-2000.safetensors" \
    "$T/lack.dest/step-2000.safetensors" || fail "no reference: differs"
[ "$(json_field bytes_tensor)" = 0 ] || fail "no reference: tensors sent"
# ... with -z, its planes alone.
rm "$T/lack.dest/step-2000.safetensors"
expect_rc 0 "$FERRY" push --json -z "$T/lack.src/" "local:$T/lack.dest"
cmp "$T/lack.src/step-2000.safetensors" \
    "$T/lack.dest/step-2000.safetensors" || fail "planes alone: differs"
[ "$(json_field bytes_tensor)" -gt 0 ] || fail "-z: no planes sent"

# A checkpoint overwritten in place: the receiver's basis (the same path)
# hashes other than the sender's file of that path, so no reference: its
# planes alone (about 0.7 of it on this pair; with the reference 0.44).
mkdir -p "$T/inplace.src" "$T/inplace.dest"
cp -p "$T/perturbed.src/step-2000.safetensors" "$T/inplace.src/last.safetensors"
cp -p "$T/perturbed.src/step-1000.safetensors" "$T/inplace.dest/last.safetensors"
expect_rc 0 "$FERRY" push --json -z "$T/inplace.src/" "local:$T/inplace.dest"
tree_same "$T/inplace.src" "$T/inplace.dest"
size=$(stat -c %s "$T/inplace.src/last.safetensors")
[ "$(json_field bytes_tensor)" -gt 0 ] || fail "in place: no planes sent"
[ "$(json_field bytes_wire)" -gt $((size * 6 / 10)) ] ||
    fail "in place: $(json_field bytes_wire) of $size bytes: a reference was used"

# A push cut halfway and run again: the blocks that arrived are kept and
# checked, the rest come as tensor differences, and the result is whole.
mkdir -p "$T/cut.src" "$T/cut.dest"
python3 "$pair" "$T/cut.src/step-1000.safetensors" \
    "$T/cut.src/step-2000.safetensors" perturbed 16
cp -p "$T/cut.src/step-1000.safetensors" "$T/cut.dest/"
FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=3000000 "$FERRY" push \
    --agent "$TESTS_DIR/lib/slow_agent.py" "$T/cut.src/" \
    "local:$T/cut.dest" 2>/dev/null &
pid=$!
wait_part_bytes "$T/cut.dest" 6000000
kill -9 $pid
wait $pid 2>/dev/null || true
[ ! -e "$T/cut.dest/step-2000.safetensors" ] ||
    fail "cut: the file is there before its commit"
expect_rc 0 "$FERRY" push --json -z "$T/cut.src/" "local:$T/cut.dest"
tree_same "$T/cut.src" "$T/cut.dest"
[ "$(json_field resumed_bytes)" -gt 0 ] || fail "cut: nothing resumed"
[ "$(json_field bytes_tensor)" -gt 0 ] ||
    fail "cut: the rest not sent as tensor differences"

# A basis ferry wrote in blocks (16 MiB: past the pack threshold) is
# hashed from the block hashes it kept then, not read again: the hash
# still matches the sender's.
mkdir -p "$T/kept.src" "$T/kept.dest"
cp -p "$T/cut.src/step-1000.safetensors" "$T/kept.src/"
expect_rc 0 "$FERRY" push --json "$T/kept.src/" "local:$T/kept.dest"
cp -p "$T/cut.src/step-2000.safetensors" "$T/kept.src/"
expect_rc 0 "$FERRY" push --json -z -vvv "$T/kept.src/" "local:$T/kept.dest"
tree_same "$T/kept.src" "$T/kept.dest"
[ "$(json_field bytes_tensor)" -gt 0 ] || fail "kept: no tensors sent"
grep -q 'hashed from its kept block hashes' "$T/last.err" ||
    fail "kept: the basis was read to hash it"
