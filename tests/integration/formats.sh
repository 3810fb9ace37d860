# The formats a watch judges whole or cut short (engine/formcheck.c), made
# as training code makes them (torch.save's zip layout with Python's
# zipfile and pickle, safetensors, .npy, tar) and as ferry pack makes a
# volume set (a volume, its manifest): each whole file is whole,
# and cut at every 1 MiB boundary (and a byte short of its end) it is
# torn, never whole. (A tar cut a byte short of its end still holds every
# member and its end-of-archive blocks: tar pads to 10 KiB records, and
# the padding is not needed; it is cut before those blocks instead.)
. "$(dirname "$0")/../lib/common.sh"

python3 "$TESTS_DIR/lib/ckpt_layouts.py" "$T/c" 5
mkdir -p "$T/set/run"
head -c 3000000 /dev/urandom >"$T/set/run/noise.bin"
seq 1 300000 >"$T/set/run/steps.txt"
"$FERRY" pack -q --name vol "$T/set/run" "$T/c"
for f in torch.pth:zip model.safetensors:safetensors arr.npy:npy \
    ckpt.tar:tar vol.00001.tar.zst:volume vol.manifest:volume-manifest; do
    name=${f%%:*}
    form=${f#*:}
    got=$("$TOOLS/formcheck" "$T/c/$name")
    [ "$got" = "$form whole" ] || fail "$name: '$got', want '$form whole'"
    size=$(stat -c %s "$T/c/$name")
    cuts="$((size - 1))"
    [ "$form" != tar ] || cuts="$((size - 10240))"
    for ((m = 1; m * 1048576 < size; m++)); do
        cuts="$cuts $((m * 1048576))"
    done
    for n in $cuts; do
        head -c "$n" "$T/c/$name" >"$T/cut"
        got=$("$TOOLS/formcheck" "$T/cut")
        [ "$got" = "$form torn" ] ||
            fail "$name cut to $n of $size: '$got', want '$form torn'"
    done
done
# Not a format: judged by neither.
head -c 100000 /dev/urandom >"$T/c/random.bin"
[ "$("$TOOLS/formcheck" "$T/c/random.bin")" = unknown ] ||
    fail "random bytes taken for a format"
