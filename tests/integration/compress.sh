# -z: blocks that shrink travel zstd-compressed, both ways; data that does
# not compress goes raw; the result is the same either way. Files in
# blocks (--pack-threshold 0): volumes are compressed with or without -z
# (tests/integration/volumes.sh).
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
python3 - "$T/src/data.jsonl" <<'PY'
import random, sys
r = random.Random(7)
words = ["".join(r.choice("abcdefghij") for _ in range(r.randint(3, 9)))
         for _ in range(300)]
with open(sys.argv[1], "w") as f:
    for i in range(60000):
        f.write('{"id": %d, "text": "%s"}\n'
                % (i, " ".join(r.choice(words) for _ in range(10))))
PY
head -c 3000000 /dev/urandom >"$T/src/random.bin"
text=$(stat -c %s "$T/src/data.jsonl")

expect_rc 0 "$FERRY" push -z --json --pack-threshold 0 "$T/src/" "local:$T/d1"
tree_same "$T/src" "$T/d1"
wire=$(json_field bytes_wire)
saved=$(json_field bytes_compressed_saved)
[ "$saved" -gt $((text / 2)) ] || fail "push -z saved only $saved bytes"
[ "$wire" -lt $((text / 2 + 3200000)) ] || fail "push -z wire $wire"

expect_rc 0 "$FERRY" pull -z --json --pack-threshold 0 "local:$T/src/" "$T/d2"
tree_same "$T/src" "$T/d2"
[ "$(json_field bytes_wire_in)" -lt $((text / 2 + 3200000)) ] ||
    fail "pull -z was not compressed"

# Without -z nothing is compressed.
expect_rc 0 "$FERRY" push --json --pack-threshold 0 "$T/src/" "local:$T/d3"
expect_field bytes_compressed_saved 0
