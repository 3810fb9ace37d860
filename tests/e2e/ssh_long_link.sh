# What a long link changes by default, through the WAN emulator
# (netproxy: 60 ms round trips, so the first SSH handshake takes well over
# ATTEMPT_LONG_CONNECT_MS): blocks of files too big to pack are sent
# compressed when they shrink (--compress=auto), both ways, and not with
# --compress=never nor on the loopback sshd (a short link); data that
# does not compress goes raw; and a file of 40 MiB, which one stream's
# window would hold back, gets the streams its round trip asks for, no
# more than one per 8 MiB (client/width.h: five), where one of 20 MiB
# keeps one. A server slow to start on a short link does not
# make it long.
# run.sh: alone (the link is judged by a loopback key exchange's time)
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/netproxy.sh"
sshd_start

# 24 MiB of lines drawn from 1,024 random ones: one file above the pack
# threshold (8 MiB), so it travels in blocks.
mkdir -p "$T/text" "$T/rand40" "$T/rand20"
python3 - "$T/text/corpus.txt" <<'PY'
import os, random, sys
rng = random.Random(7)
pool = [os.urandom(32).hex() + "\n" for _ in range(1024)]
with open(sys.argv[1], "w") as f:
    f.write("".join(rng.choices(pool, k=(24 << 20) // 65)))
PY
head -c $((40 << 20)) /dev/urandom >"$T/rand40/r.bin"
head -c $((20 << 20)) /dev/urandom >"$T/rand20/r.bin"
size=$(stat -c %s "$T/text/corpus.txt")
opts=(-F "$SSH_CONFIG" --agent "$AGENT" --json)
saved() { json_field bytes_compressed_saved; }

proxy_start --delay-ms 30 --rate 400

# 1. Compressible blocks: compressed by default on the long link, push
# and pull; the bytes on the wire show it.
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/text/" "ferry-proxy:$T/up"
cmp "$T/text/corpus.txt" "$T/up/corpus.txt" || fail "push: copy differs"
[ "$(saved)" -gt $((size / 2)) ] ||
    fail "push on a long link: $(saved) of $size bytes saved"
[ "$(json_field bytes_wire)" -lt $((size / 2)) ] ||
    fail "push on a long link: $(json_field bytes_wire) bytes on the wire"
expect_rc 0 "$FERRY" pull "${opts[@]}" "ferry-proxy:$T/text/" "$T/down"
cmp "$T/text/corpus.txt" "$T/down/corpus.txt" || fail "pull: copy differs"
[ "$(saved)" -gt $((size / 2)) ] ||
    fail "pull on a long link: $(saved) of $size bytes saved"

# 2. --compress=never sends them raw; so does the short link.
expect_rc 0 "$FERRY" push "${opts[@]}" --compress=never "$T/text/" \
    "ferry-proxy:$T/never"
cmp "$T/text/corpus.txt" "$T/never/corpus.txt" || fail "never: copy differs"
[ "$(saved)" -eq 0 ] || fail "--compress=never saved $(saved) bytes"
[ "$(json_field bytes_wire)" -gt "$size" ] ||
    fail "--compress=never: $(json_field bytes_wire) bytes on the wire"
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/text/" "ferry-test:$T/short"
cmp "$T/text/corpus.txt" "$T/short/corpus.txt" || fail "short: copy differs"
[ "$(saved)" -eq 0 ] || fail "a short link compressed blocks: $(saved)"

# 3. Random data is tried and sent raw: every byte crosses.
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/rand40/" "ferry-proxy:$T/r40"
cmp "$T/rand40/r.bin" "$T/r40/r.bin" || fail "rand40: copy differs"
[ "$(saved)" -eq 0 ] || fail "random data saved $(saved) bytes"
[ "$(json_field bytes_wire)" -gt $((40 << 20)) ] ||
    fail "random data: $(json_field bytes_wire) bytes on the wire"

# 4. Streams on a long link: 40 MiB gets windows for the link (at 60 ms,
# five of sshd's 2 MiB) but no more than its 8 MiB shares, 20 MiB one.
[ "$(json_field streams)" -eq 5 ] ||
    fail "40 MiB on a long link used $(json_field streams) streams, want 5"
expect_rc 0 "$FERRY" push "${opts[@]}" "$T/rand20/" "ferry-proxy:$T/r20"
cmp "$T/rand20/r.bin" "$T/r20/r.bin" || fail "rand20: copy differs"
[ "$(json_field streams)" -eq 1 ] ||
    fail "20 MiB on a long link used $(json_field streams) streams, want 1"

# 5. A server slow to start on a short link (sshd's first bytes held 300
# ms, the round trips after them as short as loopback's): the login takes
# long, its authentication does not, and the link is judged short, so
# blocks go raw (ssh_login_link), and the three streams its long key
# exchange started for 40 MiB are closed: one stream, as on loopback.
proxy_start --start-delay-ms 300
expect_rc 0 "$FERRY" push -vvv "${opts[@]}" "$T/text/" \
    "ferry-proxy:$T/slowstart"
cmp "$T/text/corpus.txt" "$T/slowstart/corpus.txt" ||
    fail "slow start: copy differs"
login=$(sed -n 's/.*the first login took \([0-9]*\) ms.*/\1/p' "$T/last.err")
[ "${login:-0}" -ge 300 ] || fail "slow start: the login took ${login:-?} ms"
[ "$(saved)" -eq 0 ] ||
    fail "a server slow to start made a short link long: $(saved) saved"
expect_rc 0 "$FERRY" push -vvv "${opts[@]}" "$T/rand40/" \
    "ferry-proxy:$T/slowstart40"
cmp "$T/rand40/r.bin" "$T/slowstart40/r.bin" || fail "slow start 40: differs"
grep -q "started beside it are closed" "$T/last.err" ||
    fail "slow start: no streams were started beside the login"
[ "$(json_field streams)" -eq 1 ] ||
    fail "slow start: 40 MiB used $(json_field streams) streams, want 1"

# 6. A push that adopts what the far side holds (each box's transfer
# after a swarm): its size says little of what will cross, so no streams
# are opened ahead; the staged 40 MiB is adopted and one stream serves.
proxy_start --delay-ms 30 --rate 400
mkdir -p "$T/adopt40/.stage"
cp "$T/rand40/r.bin" "$T/adopt40/.stage/r.bin"
expect_rc 0 "$FERRY" push "${opts[@]}" --adopt .stage "$T/rand40/" \
    "ferry-proxy:$T/adopt40"
cmp "$T/rand40/r.bin" "$T/adopt40/r.bin" || fail "adopt40: copy differs"
[ "$(json_field files_adopted)" -eq 1 ] ||
    fail "adopt40: $(json_field files_adopted) files adopted, want 1"
[ "$(json_field streams)" -eq 1 ] ||
    fail "adopt40: $(json_field streams) streams for an adopted file, want 1"
