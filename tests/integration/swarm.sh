#!/bin/bash
# The swarm data plane on loopback: bin/ferry-swarm driven over its line
# protocol as the agent will drive it (docs/SWARM.md), with a torrent made
# by client/torrent.c (tests/tools/torrent_make).
#   - a per-transfer CA and box certificates made by client/swarm_ca.c
#     (tests/tools/swarm_ca_make), as the client makes them: CN and SAN
#     "*", the CA's key never written;
#   - three boxes, each on its own 127.0.41.x; the client's scatter is
#     played by feeding piece p only to box p mod 3, from the source files:
#     boxes 1 and 3 by `piece` lines naming the file, box 2 by `put`, the
#     piece's bytes streamed inline after the line; every box ends whole
#     and identical to the source (cmp);
#   - box 3 downloads slowly and is killed midway, once the others are
#     whole; restarted on the same folder, it keeps what it had and
#     completes from the others;
#   - intruders dial every box throughout and get nothing: one with a
#     certificate of another CA from a box's own address (the address
#     filter lets it through, the TLS handshake does not), one with a
#     certificate of the transfer's CA from an address no box was told
#     of (the filter drops it), one with a certificate of the transfer's
#     CA that names another torrent, from a box's own address (the
#     handshake refuses it);
#   - a piece whose bytes do not match the torrent is refused (by `piece`
#     and by `put`), and so are a torrent without a CA and lines out of
#     order; a `put` header refused (a bad length, a piece of another
#     length than the torrent's) ends the helper with `fatal`, exit 1;
#   - a box that serves blocks that do not match (its copy overwritten
#     after its check) is banned by the box that got them, which keeps
#     none of them and completes from another box;
#   - malformed lines get one error line each; stop and EOF end a box.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/swarm_box.sh"

SWARM=$FERRY_BIN/ferry-swarm
# The sanitizer builds do not build the helper: use the release one.
[ -x "$SWARM" ] || SWARM=$(pwd)/bin/ferry-swarm
[ -x "$SWARM" ] || fail "no ferry-swarm: run make swarm (make deps installs libtorrent)"
MAKE_T=$TOOLS/torrent_make
[ -x "$MAKE_T" ] || fail "no $MAKE_T"
MAKE_CA=$TOOLS/swarm_ca_make
[ -x "$MAKE_CA" ] || fail "no $MAKE_CA"
command -v openssl >/dev/null || fail "no openssl"

PIDS=""
stop_all() {
    for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
}
at_exit stop_all

# ---- certificates: the transfer's CA and one per box (boxN.pem and
# boxN.key, N 1-5: box 5 is an intruder's), made as the client makes
# them, and one of that CA that names another torrent (zz.pem, zz.key);
# another CA, made with openssl, for the intruder of box 1's address
"$MAKE_CA" "$T/ca" 5 zz || fail "swarm_ca_make"
# The only keys written are the boxes' (the helper reads them from files).
want=""
for k in 1 2 3 4 5; do want="$want$T/ca/box$k.key "; done
want="$want$T/ca/zz.key "
[ "$(grep -l 'PRIVATE KEY' "$T"/ca/* | sort | tr '\n' ' ')" = "$want" ] ||
    fail "swarm_ca_make wrote other keys: $(ls "$T/ca")"
mkca() { # DIR
    mkdir -p "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
        -nodes -keyout "$1/ca.key" -out "$1/ca.pem" -days 1 \
        -subj "/CN=ferry transfer" \
        -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign 2>/dev/null || fail "openssl CA"
}
mkcert() { # CADIR BOX
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$1/$2.key" -out "$1/$2.csr" -subj "/CN=$2" 2>/dev/null &&
        openssl x509 -req -in "$1/$2.csr" -CA "$1/ca.pem" -CAkey "$1/ca.key" \
            -CAcreateserial -out "$1/$2.pem" -days 1 -extfile <(printf \
            'subjectAltName=DNS:*\nextendedKeyUsage=serverAuth,clientAuth\n') \
            2>/dev/null || fail "openssl cert $2"
}
mkca "$T/rogue"
mkcert "$T/rogue" r

# ---- the data: a big file off every boundary, small ones, an empty one
S=$T/src/data
mkdir -p "$S/sub/deep" "$S/e"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$S/big.bin"
for i in 1 2 3 4 5; do head -c $((i * 9999)) /dev/urandom >"$S/sub/s$i"; done
head -c 65536 /dev/urandom >"$S/sub/deep/exact"
: >"$S/e/empty"
PIECE=65536
"$MAKE_T" -p $PIECE -c "$T/ca/ca.pem" "$S" "$T/t.torrent" "$T/map" \
    >"$T/hash" || fail "torrent_make"
NP=$(wc -l <"$T/map")
[ "$NP" -gt 50 ] || fail "only $NP pieces"

# ---- what the helper refuses before it starts: each line gets one error
# line, and the helper goes on to the stop
"$MAKE_T" -p $PIECE "$S" "$T/plain.torrent" "$T/plain.map" >/dev/null ||
    fail "torrent_make without a CA"
printf '%s\n' "start" "torrent $T/plain.torrent" "torrent $T/nothing" \
    "save $T/nothing" "peer 127.0.41.9:1" "listen localhost:1" "stop" |
    timeout 15 "$SWARM" >"$T/refuse.out" 2>"$T/refuse.err" ||
    fail "helper exit $? on refused lines: $(cat "$T/refuse.err")"
printf '%s\n' "hello 2" "error start: no torrent" \
    "error torrent: no ssl-cert: the swarm runs over SSL only" \
    "error torrent: No such file or directory" "error save: not a folder" \
    "error peer: before start" "error bad address:port" "stopped" \
    >"$T/refuse.want"
diff "$T/refuse.want" "$T/refuse.out" >&2 || fail "refusals differ"

# A put header refused: the bytes after it cannot be told from lines, so
# the helper says why and ends, exit 1, reading none of them as a line.
# Before start, by the parser (LEN 0)...
rc=0
printf 'put 1 0\nstop\n' | timeout 15 "$SWARM" >"$T/put0.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "put 1 0: exit $rc: $(cat "$T/put0.out")"
printf '%s\n' "hello 2" "error empty put" \
    "fatal put: the input after a refused put cannot be framed" >"$T/put0.want"
diff "$T/put0.want" "$T/put0.out" >&2 || fail "put 1 0 answered otherwise"
# ...and after it, by the helper: a length other than the torrent's for
# the piece, with bytes after it that would be a line.
mkdir -p "$T/s6"
rc=0
printf '%s\n' "torrent $T/t.torrent" "cert $T/ca/box1.pem" "key $T/ca/box1.key" \
    "save $T/s6" "listen 127.0.41.6:0" "start" "put 0 5" "stop" "bogus" |
    timeout 15 "$SWARM" >"$T/putlen.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "put 0 5: exit $rc: $(cat "$T/putlen.out")"
grep -qx 'error put 0: 5 bytes, the piece holds 65536' "$T/putlen.out" &&
    [ "$(tail -n 1 "$T/putlen.out")" = \
        "fatal put: the input after a refused put cannot be framed" ] &&
    ! grep -q '^stopped\|^error bogus\|^error unknown' "$T/putlen.out" ||
    fail "put 0 5 answered: $(cat "$T/putlen.out")"

# ---- boxes: box N reads commands from the fifo $T/bN.in (fd 10+N) and
# writes events to $T/bN.out.
ip_of() { echo "127.0.41.$1"; }
box_start() { # N CERTDIR CERTNAME [IP]
    local n=$1 ip=${4:-$(ip_of "$1")}
    mkdir -p "$T/s$n"
    rm -f "$T/b$n.in"
    mkfifo "$T/b$n.in"
    "$SWARM" <"$T/b$n.in" >>"$T/b$n.out" 2>>"$T/b$n.err" &
    eval "PID$n=$!"
    PIDS="$PIDS $!"
    eval "exec $((10 + n))>\"\$T/b\$n.in\""
    say "$n" "torrent $T/t.torrent"
    say "$n" "cert $2/$3.pem"
    say "$n" "key $2/$3.key"
    say "$n" "save $T/s$n"
    say "$n" "listen $ip:0"
    say "$n" "start"
}
# put N PIECE OFFSET FILE: piece PIECE to box N inline, as the agent
# streams it: its length is the torrent's (a v2 piece ends at its file's
# end), then exactly that many bytes of FILE from OFFSET.
put() {
    local len=$(($(stat -c %s "$4") - $3))
    [ "$len" -gt $PIECE ] && len=$PIECE
    {
        printf 'put %d %d\n' "$2" "$len"
        dd if="$4" bs=64K iflag=skip_bytes,count_bytes skip="$3" \
            count="$len" status=none
    } >&$((10 + $1))
}
port_of() { sed -n 's/^listening [^ ]* \([0-9]*\)$/\1/p' "$T/b$1.out" | tail -n 1; }
last_progress() { grep '^progress ' "$T/b$1.out" | tail -n 1; }

# Boxes 1-3 and the intruders: 4 has another CA's certificate and box
# 1's address, 5 the transfer's CA and an address of its own, 6 the
# transfer's CA, box 2's address and a certificate that names neither
# this torrent ("data") nor "*". Each pair
# of boxes is dialled from one side: box N dials the boxes below it and
# allows those above.
for n in 1 2 3; do box_start $n "$T/ca" box$n; done
box_start 4 "$T/rogue" r "$(ip_of 1)"
box_start 5 "$T/ca" box5
box_start 6 "$T/ca" zz "$(ip_of 2)"
for n in 1 2 3 4 5 6; do wait_line $n '^listening ' 10; done
say 3 "limit 0 400000"
peers_of() { # N: the peer and allow lines of box N
    local m
    for m in 1 2 3; do
        [ "$m" -lt "$1" ] && say "$1" "peer $(ip_of $m):$(port_of $m)"
        [ "$m" -gt "$1" ] && say "$1" "allow $(ip_of $m)"
    done
    return 0
}
for n in 1 2 3; do peers_of $n; done
for n in 4 5 6; do
    for m in 1 2 3; do say $n "peer $(ip_of $m):$(port_of $m)"; done
done

# Malformed lines: one error line each, and the box goes on.
say 1 "bogus"
say 1 "piece 1x 0 /x"
say 1 "peer 127.0.0.1"
say 1 "piece $NP 0 $S/big.bin"
wait_line 1 '^error piece: no piece' 5
[ "$(grep -c '^error ' "$T/b1.out")" = 4 ] ||
    fail "malformed lines: $(grep '^error' "$T/b1.out")"

# A piece whose bytes are not the torrent's is refused, and the right
# bytes are taken after it.
for n in 1 2 3; do wait_line $n '^checked 0$' 10; done
head -c $PIECE /dev/urandom >"$T/corrupt"
say 1 "piece 0 0 $T/corrupt"
wait_line 1 '^bad 0$' 10
# The same by put, on box 2 (piece 1 is of its stripe): the box goes on
# reading lines after the bytes, and takes the right ones later.
put 2 1 0 "$T/corrupt"
wait_line 2 '^bad 1$' 10

# ---- scatter: piece p to box p mod 3 + 1 only; box 2 by put
while read -r p off path; do
    n=$((p % 3 + 1))
    if [ $n = 2 ]; then
        put $n "$p" "$off" "$S/$path"
    else
        say $n "piece $p $off $S/$path"
    fi
done <"$T/map"
wait_line 1 '^done$' 30
wait_line 2 '^done$' 30
for n in 1 2; do
    fed=$(grep -c '^fed ' "$T/b$n.out")
    [ "$fed" -ge $((NP / 3)) ] || fail "box $n: $fed pieces fed"
done

# ---- box 3 is slow; kill it midway, once it holds more than its stripe
stripe3=$(awk '$1 % 3 == 2' "$T/map" | wc -l)
end=$((SECONDS + 20))
while :; do
    have=$(last_progress 3 | cut -d' ' -f2)
    [ "${have:-0}" -gt $((stripe3 + 2)) ] && break
    [ $SECONDS -lt $end ] || fail "box 3 made no progress: $(last_progress 3)"
    sleep 0.05
done
grep -q '^done$' "$T/b3.out" && fail "box 3 was whole before the kill"
kill -9 "$PID3"
wait "$PID3" 2>/dev/null || true
eval "exec 13>&-"
mv "$T/b3.out" "$T/b3.first"
box_start 3 "$T/ca" box3
wait_line 3 '^listening ' 10
peers_of 3
wait_line 3 '^checked ' 10
kept=$(sed -n 's/^checked //p' "$T/b3.out")
[ "$kept" -gt "$stripe3" ] ||
    fail "box 3 restarted with $kept pieces, had more than $stripe3"
wait_line 3 '^done$' 30
note "box 3 restarted holding $kept of $NP pieces"

# ---- every box whole and identical
(cd "$S" && find . -type f) | while read -r f; do
    for n in 1 2 3; do
        cmp -s "$S/$f" "$T/s$n/data/$f" || fail "box $n: $f differs"
    done
done || exit 1
for n in 1 2 3; do
    [ "$(find "$T/s$n/data" -type f | wc -l)" = "$(find "$S" -type f | wc -l)" ] ||
        fail "box $n: other files than the source's"
done
# Boxes 1 and 2 got from the others what they were not fed.
for n in 1 2; do
    down=$(last_progress $n | cut -d' ' -f6)
    [ "$down" -gt 0 ] || fail "box $n downloaded nothing: $(last_progress $n)"
done

# ---- a lying box: box 1's copy of big.bin is overwritten on disk after
# it was checked, so box 1 serves blocks that do not match the torrent.
# Box 7, new, reaches only box 1 at first: it bans box 1 at the first bad
# block (v2 hashes name the block's sender), keeps none of its bad
# bytes, and completes from box 2 once told of it.
head -c "$(stat -c %s "$S/big.bin")" /dev/urandom >"$T/lie"
dd if="$T/lie" of="$T/s1/data/big.bin" conv=notrunc status=none
box_start 7 "$T/ca" box4
wait_line 7 '^listening ' 10
say 1 "allow $(ip_of 7)"
say 7 "peer $(ip_of 1):$(port_of 1)"
wait_line 7 '^banned 127\.0\.41\.1$' 20
grep -q '^done$' "$T/b7.out" && fail "box 7 was whole from the lying box"
say 2 "allow $(ip_of 7)"
say 7 "peer $(ip_of 2):$(port_of 2)"
wait_line 7 '^done$' 30
(cd "$S" && find . -type f) | while read -r f; do
    cmp -s "$S/$f" "$T/s7/data/$f" || fail "box 7: $f differs"
done || exit 1

# ---- the intruders got nothing; the boxes refused the first's
# certificate and the third's name (the second never got as far as the
# handshake)
for n in 4 5 6; do
    p=$(last_progress $n)
    case $p in
    "progress 0 $NP "*" 0") ;;
    *) fail "intruder $n: $p" ;;
    esac
    grep -q '^done' "$T/b$n.out" && fail "intruder $n done"
done
grep -qE '^peer-error 127\.0\.41\.1 ssl_handshake: certificate verify failed' \
    "$T/b2.out" "$T/b3.first" || fail "no box logged the refused certificate"
grep -qE '^peer-error 127\.0\.41\.2 ssl_handshake: certificate verify failed' \
    "$T/b1.out" "$T/b3.first" "$T/b3.out" ||
    fail "no box logged the refused name"
grep -q '^peer-error 127\.0\.41\.5 ' "$T"/b[123].out &&
    fail "a box let the stranger's address as far as a handshake"

# ---- stop: a stop line, or the end of input, ends a box within 15 s
say 1 "stop"
for n in 2 3 4 5 6 7; do eval "exec $((10 + n))>&-"; done
for n in 1 2 3 4 5 6 7; do wait_line $n '^stopped$' 15; done
eval "exec 11>&-"
note "swarm: $NP pieces to 3 boxes, hash $(cat "$T/hash")"
echo "swarm: ok"
