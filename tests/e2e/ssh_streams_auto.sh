# How many streams a default push opens on loopback: the far end shares
# this machine's cores, so one ssh stream per two cores beside the
# libssh2 stream 0 (at least one), not one per core (client/attempt_grow.c,
# attempt_auto_max). A --bwlimit keeps the push going long enough for
# every stream that would come to come.
# run.sh: alone (the link is judged by a loopback key exchange's time)
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

mkdir -p "$T/src"
head -c $((160 * 1048576)) /dev/urandom >"$T/src/big"
cores=$(nproc)
streams_want=$(( (cores < 4 ? 1 : cores / 2) + 1 ))
[ "$streams_want" -le 8 ] || streams_want=8

expect_rc 0 "$FERRY" push --json -F "$SSH_CONFIG" --agent "$AGENT" \
    --bwlimit 80M "$T/src/" "ferry-test:$T/dst"
cmp "$T/src/big" "$T/dst/big" || fail "copy differs"
[ "$(json_field streams)" -eq "$streams_want" ] ||
    fail "a default push on loopback used $(json_field streams) streams, want $streams_want ($cores cores)"

# A tree that compresses: what its volumes carry crosses in far less
# than 128 MiB even at zstd's fastest level, which one more login does not
# pay for (client/attempt_grow.c, attempt_tune): one stream. 160 MiB
# of lines drawn from 1,024 random ones, in files of 4 MiB (below the
# pack threshold).
python3 - "$T/text" <<'PY'
import os, random, sys
root = sys.argv[1]
os.makedirs(root)
rng = random.Random(7)
pool = [os.urandom(32).hex() + "\n" for _ in range(1024)]
for i in range(40):
    with open(os.path.join(root, "part-%02d.txt" % i), "w") as f:
        f.write("".join(rng.choices(pool, k=(4 << 20) // 65)))
PY
expect_rc 0 "$FERRY" push --json -F "$SSH_CONFIG" --agent "$AGENT" \
    --bwlimit 10M "$T/text/" "ferry-test:$T/dst2"
tree_same "$T/text" "$T/dst2"
[ "$(json_field bytes_compressed_saved)" -gt $((64 << 20)) ] ||
    fail "the tree did not compress: $(json_field bytes_compressed_saved) saved"
[ "$(json_field streams)" -eq 1 ] ||
    fail "a compressible tree used $(json_field streams) streams, want 1"

# The same files' bytes that do not compress: judged by what crosses,
# they are worth the streams a big file is.
mkdir -p "$T/rand"
for i in $(seq 1 40); do
    head -c $((4 * 1048576)) /dev/urandom >"$T/rand/part-$i.bin"
done
expect_rc 0 "$FERRY" push --json -F "$SSH_CONFIG" --agent "$AGENT" \
    --bwlimit 80M "$T/rand/" "ferry-test:$T/dst3"
tree_same "$T/rand" "$T/dst3"
[ "$(json_field streams)" -eq "$streams_want" ] ||
    fail "an incompressible tree of small files used $(json_field streams) streams, want $streams_want"
