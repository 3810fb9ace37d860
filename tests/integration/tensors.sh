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
