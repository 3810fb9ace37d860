#!/bin/bash
# Drives build/spike/swarm_spike on loopback only (127.0.0.2-8, all on lo):
#   1. a per-transfer CA and a certificate per box (openssl), a second
#      "rogue" CA, a private v2-only torrent carrying the CA as ssl_cert;
#   2. swarm: one seed fed by add_piece at a limited rate, three boxes
#      downloading from it and from each other, and three intruders trying
#      to join: a cert of the right CA for another torrent name, a cert of
#      a rogue CA, no cert; checks cmp, who served whom, that downloads
#      started before the seed had everything, that the intruders got
#      nothing, and SNI routing with openssl s_client;
#      then a striped feed: piece p to box p%3, no seed;
#   3. bench (unless SPIKE_BENCH=0): SPIKE_MB MiB (256) to three boxes from
#      a full seed (SSL, plain), an add_piece seed (SSL), and striped (SSL,
#      plain); wall time and CPU per box.
# Usage: tests/spike/swarm_spike.sh [BINARY]   (make spike-swarm builds it)
set -u
BIN=${1:-build/spike/swarm_spike}
BIN=$(readlink -f "$BIN")
MB=${SPIKE_MB:-256}
W=$(mktemp -d /tmp/swarm-spike.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ "${SPIKE_KEEP:-0}" = 1 ] && echo "kept $W" || rm -rf "$W"
}
trap cleanup EXIT
cd "$W" || exit 1
FAILS=0
PASSES=0
ok()   { echo "ok: $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# ------------------------------------------------------------- certificates
NAME=tree          # the torrent's name: each box cert carries it as a SAN
mkca() { # DIR
    mkdir -p "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$1/ca.key" -out "$1/ca.pem" -days 2 -subj "/CN=ferry transfer $1" \
        -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign 2>/dev/null
}
mkcert() { # CADIR BOX
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$1/$2.key" -out "$1/$2.csr" -subj "/CN=$2" 2>/dev/null
    openssl x509 -req -in "$1/$2.csr" -CA "$1/ca.pem" -CAkey "$1/ca.key" \
        -CAcreateserial -out "$1/$2.pem" -days 2 \
        -extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$NAME") \
        2>/dev/null
}
t0=$(date +%s.%N)
mkca ca
for b in b0 b1 b2 b3 b4 b5 b6; do mkcert ca $b; done
mkca rogue
mkcert rogue r
NAME=other mkcert ca w     # the right CA, but for a torrent named "other"
# DH parameters for set_ssl_certificate (only used by DHE suites; TLS 1.3
# and ECDHE need none). -dsaparam makes them in well under a second.
openssl dhparam -dsaparam -out dh.pem 2048 2>/dev/null
echo "certs: CA, 7 box certs, rogue CA + cert, DH in $(echo "$(date +%s.%N) - $t0" | bc) s"

# ------------------------------------------------------------------ box run
# box N ROLE-ARGS...: box N listens on 127.0.0.$((N+2)):7001
box() {
    local n=$1; shift
    "$BIN" box --name "box$n" --ip "127.0.0.$((n + 2))" --port 7001 "$@" \
        >"$RUN/box$n.log" 2>&1 &
    PIDS+=($!)
    eval "PID$n=$!"
}
ep() { echo "127.0.0.$(($1 + 2)):7001"; }
wait_files() { # TIMEOUT FILE...
    local t=$1; shift
    local end=$((SECONDS + t))
    while [ $SECONDS -lt $end ]; do
        local all=1
        for f in "$@"; do [ -e "$f" ] || all=0; done
        [ $all = 1 ] && return 0
        sleep 0.1
    done
    return 1
}
field() { # LOG KEY -> value of KEY=... on the RESULT line
    grep ' RESULT ' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
ms_of() { grep " $2" "$1" | head -1 | cut -d' ' -f1; }

# ------------------------------------------------------------ 2. swarm test
echo "== swarm: add_piece seed + 3 boxes, rogue-CA box, no-cert box"
mkdir -p src/$NAME/sub src/$NAME/empty.d
head -c $((20 * 1024 * 1024 + 12345)) /dev/urandom >src/$NAME/big.bin
for i in 1 2 3 4 5; do head -c $((i * 7777)) /dev/urandom >src/$NAME/sub/small$i.bin; done
: >src/$NAME/empty.d/zero
"$BIN" make src/$NAME t.torrent --ca ca/ca.pem --piece-size 262144 | tee make.log
grep -q 'v1=0 v2=1 private=1' make.log && ok "v2-only private torrent with ssl_cert" \
    || fail "torrent is not v2-only private: $(cat make.log)"

RUN=$W/run1; mkdir -p "$RUN"
for n in 0 1 2 3 4 5 6; do mkdir -p "$RUN/s$n"; done
common=(--torrent t.torrent --dh dh.pem --stop-file "$RUN/stop" --timeout 60)
# box0: the seed, fed by add_piece at 4 MB/s (as if from the client's link)
# once the three boxes are connected to it, its upload held to 6 MB/s (1.5
# times what it is fed) so that the boxes must pass pieces on among
# themselves. Each box dials only the boxes
# numbered below it (one connection per pair).
box 0 "${common[@]}" --save "$RUN/s0" --cert ca/b0.pem --key ca/b0.key \
    --feed src --feed-rate 4 --feed-wait-peers 3 --upload-limit 6 --ready-file "$RUN/ready"
wait_files 10 "$RUN/ready" || fail "seed not listening in 10 s"
for n in 1 2 3; do
    peers=(); for m in $(seq 0 $((n - 1))); do peers+=(--peer "$(ep $m)"); done
    box $n "${common[@]}" --save "$RUN/s$n" --cert ca/b$n.pem --key ca/b$n.key \
        --recheck --done-file "$RUN/done$n" "${peers[@]}"
done
# box4: the transfer's CA, but a certificate naming another torrent;
# box5: a certificate from another CA; box6: no certificate at all. Each
# dials every legitimate box.
all=(--peer "$(ep 0)" --peer "$(ep 1)" --peer "$(ep 2)" --peer "$(ep 3)")
box 4 --torrent t.torrent --dh dh.pem --timeout 15 --save "$RUN/s4" \
    --cert ca/w.pem --key ca/w.key "${all[@]}"
box 5 --torrent t.torrent --dh dh.pem --timeout 15 --save "$RUN/s5" \
    --cert rogue/r.pem --key rogue/r.key "${all[@]}"
box 6 --torrent t.torrent --dh dh.pem --timeout 15 --save "$RUN/s6" "${all[@]}"
wait_files 60 "$RUN/done1" "$RUN/done2" "$RUN/done3" || fail "swarm did not finish in 60 s"
wait "$PID4"; rc4=$?
wait "$PID5"; rc5=$?
wait "$PID6"; rc6=$?
# SNI: libtorrent routes an incoming SSL connection to a torrent by the
# first 40 hex digits of the server name, which for a v2 torrent is its
# SHA-256 info-hash truncated to 20 bytes. Probe box1 with openssl s_client.
v2=$(sed -n 's/^info-hash v2 \([0-9a-f]*\).*/\1/p' make.log)
probe() { # SERVERNAME -> prints "accepted" or the failure
    local out
    out=$(timeout 10 openssl s_client -connect "$(ep 1)" -servername "$1" \
        -cert ca/b0.pem -key ca/b0.key -CAfile ca/ca.pem -verify_return_error </dev/null 2>&1)
    if echo "$out" | grep -q '^subject=' && echo "$out" | grep -q 'Verify return code: 0 (ok)'; then
        echo "accepted: $(echo "$out" | grep -m1 '^subject='), $(echo "$out" | grep -m1 -o 'TLSv1.3, Cipher is [A-Z0-9_]*')"
    else
        echo "refused: $(echo "$out" | grep -m1 -oE 'tlsv1[0-9]* [a-z ]+|alert [a-z ]+|errno=[0-9]+|verify error:[^ ]*')"
    fi
}
p_trunc=$(probe "${v2:0:40}"); p_full=$(probe "$v2"); p_other=$(probe "$(printf '%040d' 0)")
echo "s_client SNI=first 40 hex of v2 info-hash: $p_trunc"
echo "s_client SNI=all 64 hex:                   $p_full"
echo "s_client SNI=another 40 hex:               $p_other"
case $p_trunc in accepted*) ok "SNI = truncated v2 info-hash selects the torrent";;
    *) fail "SNI with the truncated v2 info-hash: $p_trunc";; esac
case $p_other in refused*) ok "an unknown SNI is refused";; *) fail "unknown SNI: $p_other";; esac
touch "$RUN/stop"
rcs=()
for n in 0 1 2 3; do eval "wait \$PID$n"; rcs+=($?); done
echo "exit codes: box0-3 ${rcs[*]}, wrong name $rc4, rogue CA $rc5, no cert $rc6"
for n in 0 1 2 3; do grep -E ' (START|FEED|FIRST_BLOCK|FINISHED|RECHECK|RESULT|TIMES|CPU) ' "$RUN/box$n.log"; done

for n in 1 2 3; do
    if [ "${rcs[$n]}" = 0 ] && diff -r src/$NAME "$RUN/s$n/$NAME" >/dev/null; then
        ok "box$n complete, rechecked, identical (diff -r)"
    else
        fail "box$n rc=${rcs[$n]} or differs"
    fi
done
# every file compared byte for byte too (empty ones included)
bad=0
for f in $(cd src && find $NAME -type f); do
    for n in 1 2 3; do cmp -s "src/$f" "$RUN/s$n/$f" || bad=1; done
done
[ $bad = 0 ] && ok "cmp: every file identical on the 3 boxes" || fail "cmp found a difference"

fed_all=$(ms_of "$RUN/box0.log" "box0 FEED all")
for n in 1 2 3; do
    fb=$(ms_of "$RUN/box$n.log" "box$n FIRST_BLOCK")
    if [ -n "$fb" ] && [ -n "$fed_all" ] && [ "$fb" -lt "$fed_all" ]; then
        ok "box$n got its first block $((fed_all - fb)) ms before the seed had every piece"
    else
        fail "box$n first block ($fb) not before the seed's last add_piece ($fed_all)"
    fi
done
peer_blocks=0; seed_blocks=0
for n in 1 2 3; do
    line=$(grep ' RESULT ' "$RUN/box$n.log")
    s=$(echo "$line" | tr ' ' '\n' | sed -n "s/^127\.0\.0\.2=//p")
    p=$(echo "$line" | tr ' ' '\n' | grep -E '^127\.0\.0\.[345]=' | cut -d= -f2 | paste -sd+ | bc)
    seed_blocks=$((seed_blocks + ${s:-0})); peer_blocks=$((peer_blocks + ${p:-0}))
done
echo "blocks (16 KiB) received by box1-3: from the seed $seed_blocks, from each other $peer_blocks"
[ "$peer_blocks" -gt 0 ] && ok "boxes served each other ($peer_blocks blocks)" \
    || fail "no block went box to box"

for n in 4 5 6; do
    case $n in
    4) what="box with a cert for another torrent name"; rc=$rc4 ;;
    5) what="rogue-CA box"; rc=$rc5 ;;
    *) what="no-cert box"; rc=$rc6 ;;
    esac
    if [ "$rc" = 2 ] && grep -q ' RESULT rc=2 pieces=0/.* blocks_from: none' "$RUN/box$n.log"; then
        ok "$what refused: no data in 15 s"
    else
        fail "$what: rc=$rc $(grep ' RESULT ' "$RUN/box$n.log")"
    fi
    grep -E 'PEER_(ERROR|DISCONNECT)' "$RUN/box$n.log" | cut -d' ' -f3- | sort | uniq -c | head -3
done
echo "what the legitimate boxes logged about the intruders:"
cat "$RUN"/box[0-3].log | grep -E 'PEER_(ERROR|DISCONNECT) 127\.0\.0\.[678] ' \
    | cut -d' ' -f3- | sort | uniq -c | head -6
if grep -qE ' PEER_CONNECT 127\.0\.0\.[678]$' "$RUN"/box[0-3].log \
    && grep -E 'blocks_from:.*127\.0\.0\.[678]=' "$RUN"/box[0-3].log; then
    fail "an intruder exchanged data"
else
    ok "no legitimate box exchanged data with an intruder"
fi
if [ "${SPIKE_KEEP:-0}" = 1 ]; then :; else rm -rf "$RUN"/s[0-9]; fi

echo "== striped: the client feeds piece p to box p%3 (4 MB/s in all), no seed"
RUN=$W/run2; mkdir -p "$RUN"
for n in 1 2 3; do
    mkdir -p "$RUN/s$n"
    peers=(); for m in $(seq 1 $((n - 1))); do peers+=(--peer "$(ep $m)"); done
    box $n --torrent t.torrent --dh dh.pem --stop-file "$RUN/stop" --timeout 60 \
        --save "$RUN/s$n" --cert ca/b$n.pem --key ca/b$n.key \
        --recheck --done-file "$RUN/done$n" "${peers[@]}" \
        --feed src --feed-stripe $((n - 1))/3 --feed-rate 1.333 --feed-wait-peers 2
done
wait_files 60 "$RUN/done1" "$RUN/done2" "$RUN/done3" || fail "striped swarm did not finish in 60 s"
touch "$RUN/stop"
rcs=(x)
for n in 1 2 3; do eval "wait \$PID$n"; rcs+=($?); done
for n in 1 2 3; do grep -E ' (FEED all|RECHECK|RESULT|TIMES) ' "$RUN/box$n.log"; done
peer_blocks=0
for n in 1 2 3; do
    if [ "${rcs[$n]}" = 0 ] && diff -r src/$NAME "$RUN/s$n/$NAME" >/dev/null; then
        ok "striped box$n complete, rechecked, identical"
    else
        fail "striped box$n rc=${rcs[$n]} or differs"
    fi
    p=$(grep ' RESULT ' "$RUN/box$n.log" | tr ' ' '\n' | grep -E '^127\.0\.0\.[345]=' | cut -d= -f2 | paste -sd+ | bc)
    peer_blocks=$((peer_blocks + ${p:-0}))
done
last_feed=$(for n in 1 2 3; do ms_of "$RUN/box$n.log" "box$n FEED all"; done | sort -n | tail -1)
last_done=$(for n in 1 2 3; do ms_of "$RUN/box$n.log" "box$n FINISHED"; done | sort -n | tail -1)
echo "striped: blocks box to box $peer_blocks (each box is fed 1/3 and gets 2/3 from the others);" \
    "last box whole $((last_done - last_feed)) ms after the client's last piece"
[ "$peer_blocks" -gt 0 ] && ok "striped: boxes completed each other" || fail "striped: no exchange"
if [ "${SPIKE_KEEP:-0}" = 1 ]; then :; else rm -rf "$RUN"/s[0-9]; fi

# ---------------------------------------------------------------- 3. bench
bench() { # LABEL TORRENT MODE(ssl|plain) SEED(full|feed|stripe)
    local label=$1 tor=$2 mode=$3 seed=$4
    RUN=$W/bench-$label; mkdir -p "$RUN"
    local extra=() s0
    [ "$mode" = plain ] && extra=(--plain)
    certargs() { # BOX -> CERT=(the box's certificate options, none in plain mode)
        CERT=()
        if [ "$mode" = ssl ]; then CERT=(--cert "ca/b$1.pem" --key "ca/b$1.key" --dh dh.pem); fi
    }
    if [ "$seed" = stripe ]; then
        # no seed: box n is fed stripe n-1 of 3 by add_piece, as fast as it goes
        local t0; t0=$(date +%s%N)
        for n in 1 2 3; do
            mkdir -p "$RUN/s$n"
            peers=(); for m in $(seq 1 $((n - 1))); do peers+=(--peer "$(ep $m)"); done
            certargs $n
            box $n --torrent "$tor" --save "$RUN/s$n" "${CERT[@]}" "${extra[@]}" \
                --stop-file "$RUN/stop" --done-file "$RUN/done$n" --timeout 300 "${peers[@]}" \
                --feed bsrc --feed-stripe $((n - 1))/3 --feed-wait-peers 2
        done
        bench_end "$t0"
        return
    fi
    if [ "$seed" = full ]; then
        s0=$W/bsrc  # the seed already holds the files: checked, then seeds
        certargs 0
        box 0 --torrent "$tor" --save "$s0" "${CERT[@]}" "${extra[@]}" \
            --stop-file "$RUN/stop" --ready-file "$RUN/ready" --timeout 600
    else
        mkdir -p "$RUN/s0"
        certargs 0
        box 0 --torrent "$tor" --save "$RUN/s0" "${CERT[@]}" "${extra[@]}" \
            --stop-file "$RUN/stop" --ready-file "$RUN/ready" --timeout 600 --feed bsrc \
            --feed-wait-peers 3
    fi
    wait_files 120 "$RUN/ready" || { fail "bench $label: seed not ready"; return; }
    local t0; t0=$(date +%s%N)
    for n in 1 2 3; do
        mkdir -p "$RUN/s$n"
        peers=(); for m in $(seq 0 $((n - 1))); do peers+=(--peer "$(ep $m)"); done
        certargs $n
        box $n --torrent "$tor" --save "$RUN/s$n" "${CERT[@]}" "${extra[@]}" \
            --stop-file "$RUN/stop" --done-file "$RUN/done$n" --timeout 300 "${peers[@]}"
    done
    bench_end "$t0"
}
bench_end() { # T0 (uses label, RUN, MB from bench)
    local t0=$1
    wait_files 300 "$RUN/done1" "$RUN/done2" "$RUN/done3" || fail "bench $label: not done"
    local t1; t1=$(date +%s%N)
    touch "$RUN/stop"
    local boxes=(1 2 3)
    [ -e "$RUN/box0.log" ] && boxes=(0 1 2 3)
    for n in "${boxes[@]}"; do eval "wait \$PID$n"; done
    local secs; secs=$(echo "scale=2; ($t1 - $t0) / 1000000000" | bc)
    local good=1
    for n in 1 2 3; do cmp -s "bsrc/big/data.bin" "$RUN/s$n/big/data.bin" || good=0; done
    local cpu=""
    for n in "${boxes[@]}"; do
        cpu+=" box$n:$(grep ' CPU ' "$RUN/box$n.log" | sed 's/.*user=\([0-9.]*\)s sys=\([0-9.]*\)s.*/\1+\2/')"
    done
    local total; total=$(echo "$cpu" | tr ' ' '\n' | sed 's/^box[0-9]://' | grep . | paste -sd+ | bc)
    local p2p=0
    for n in 1 2 3; do
        p=$(grep ' RESULT ' "$RUN/box$n.log" | tr ' ' '\n' | grep -E '^127\.0\.0\.[345]=' | cut -d= -f2 | paste -sd+ | bc)
        p2p=$((p2p + ${p:-0}))
    done
    printf 'bench %-10s %s MiB to 3 boxes: %6s s wall, %6.1f MB/s per box, cmp=%s, CPU s (user+sys)%s = %s, blocks box-to-box %s\n' \
        "$label" "$MB" "$secs" "$(echo "$MB * 1.048576 / $secs" | bc -l)" \
        "$([ $good = 1 ] && echo ok || echo BAD)" "$cpu" "$total" "$p2p" | tee -a bench.txt
    [ $good = 1 ] && ok "bench $label: identical" || fail "bench $label: files differ"
    rm -rf "$RUN"/s[0-9]
}
if [ "${SPIKE_BENCH:-1}" != 0 ]; then
    echo "== bench: $MB MiB, one seed, 3 downloading boxes, loopback"
    mkdir -p bsrc/big
    head -c $((MB * 1024 * 1024)) /dev/urandom >bsrc/big/data.bin
    # a second file: a folder holding one file makes a single-file torrent,
    # named after the file and saved at the save path's top (docs/SWARM.md)
    echo "$MB MiB of random bytes" >bsrc/big/README
    "$BIN" make bsrc/big big-ssl.torrent --ca ca/ca.pem >/dev/null
    "$BIN" make bsrc/big big-plain.torrent >/dev/null
    # the box certs name the torrent "tree"; the bench torrent is "big"
    NAME=big
    for b in b0 b1 b2 b3; do mkcert ca $b; done
    bench ssl big-ssl.torrent ssl full
    bench plain big-plain.torrent plain full
    bench ssl-feed big-ssl.torrent ssl feed
    bench ssl-stripe big-ssl.torrent ssl stripe
    bench plain-stripe big-plain.torrent plain stripe
fi

echo "swarm_spike: $PASSES passed, $FAILS failed"
[ $FAILS = 0 ]
