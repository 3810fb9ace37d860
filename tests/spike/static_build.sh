#!/bin/bash
# Builds libtorrent-rasterbar from Debian 12's source as a static library
# (no DHT), links swarm_spike statically against it (glibc, libstdc++ and
# OpenSSL included) and, as root, runs that binary as an add_piece seed in
# an empty chroot while a box linked against Debian's shared library
# downloads from it over SSL. The evidence for docs/SWARM.md's
# portability choice; about 10 minutes on 2 cores, most of it the
# library. The library is kept in build/spike/ and not rebuilt.
# Usage: tests/spike/static_build.sh   (make spike-swarm-static)
set -eu
OUT=$(readlink -f build/spike)
mkdir -p "$OUT"
SRC=$OUT/libtorrent-src
LIB=$OUT/libtorrent-static/libtorrent-rasterbar.a

if [ ! -e "$LIB" ]; then
    # Debian's source package through apt, with its own source list and
    # lists folder: the machine's apt configuration is left as it is.
    A=$OUT/apt
    rm -rf "$A"; mkdir -p "$A/parts" "$A/lists/partial"
    : >"$A/empty.list"
    if [ -e /etc/apt/sources.list.d/debian.sources ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            >"$A/parts/debian-src.sources"
    else
        grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >"$A/parts/debian-src.list"
    fi
    O=(-o "Dir::Etc::SourceList=$A/empty.list" -o "Dir::Etc::SourceParts=$A/parts"
       -o "Dir::State::Lists=$A/lists")
    t0=$SECONDS
    apt-get "${O[@]}" update -qq
    (cd "$A" && apt-get "${O[@]}" source --download-only -qq libtorrent-rasterbar)
    rm -rf "$SRC"; mkdir -p "$SRC"
    tar -xf "$A"/libtorrent-rasterbar_*.orig.tar.* -C "$SRC" --strip-components=1
    echo "static: source in $((SECONDS - t0)) s: $(ls "$A"/*.orig.tar.*)"
    t0=$SECONDS
    B=$OUT/libtorrent-static
    rm -rf "$B"; mkdir -p "$B"
    (cd "$B" && cmake "$SRC" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -Ddht=OFF -DCMAKE_CXX_STANDARD=17 >cmake.log &&
        nice make -j2 torrent-rasterbar >make.log)
    echo "static: libtorrent.a built in $((SECONDS - t0)) s ($(stat -c %s "$LIB") bytes)"
fi

# The defines are the library's own (cmake's flags.make): the headers'
# layout depends on them.
DEFS=$(sed -n 's/^CXX_DEFINES = //p' "$OUT/libtorrent-static/CMakeFiles/torrent-rasterbar.dir/flags.make" |
    tr ' ' '\n' | grep -v TORRENT_BUILDING_LIBRARY | tr '\n' ' ')
BIN=$OUT/swarm_spike.static
# shellcheck disable=SC2086
g++ -std=c++17 -O2 -static -o "$BIN" tests/spike/swarm_spike.cpp -I"$SRC/include" $DEFS \
    "$LIB" -lssl -lcrypto -lpthread -ldl 2>"$OUT/static-link.log"
strip "$BIN"
echo "static: swarm_spike $(stat -c %s "$BIN") bytes stripped," \
    "$(zstd -19 -q -c "$BIN" | wc -c) as zstd -19; $(file -b "$BIN" | cut -d, -f1-4)"

[ "$(id -u)" = 0 ] || { echo "static: not root, no chroot run"; exit 0; }
# The static box in an empty chroot (nothing but the binary and its
# inputs) feeds by add_piece; a box of build/spike/swarm_spike (Debian's
# shared libtorrent) downloads from it over SSL. Loopback only.
W=$(mktemp -d /tmp/swarm-static.XXXXXX)
R=$W/root
cleanup() { # under set -e, a failing command here would be the exit status
    local j
    for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
    wait || true
    rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$R/src/tree" "$R/s" "$W/s2"
head -c $((8 * 1024 * 1024 + 99)) /dev/urandom >"$R/src/tree/a.bin"
echo small >"$R/src/tree/b.txt"
cd "$W"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
    -out ca.pem -days 1 -subj /CN=ca -addext basicConstraints=critical,CA:TRUE 2>/dev/null
for b in b1 b2; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $b.key \
        -out $b.csr -subj /CN=$b 2>/dev/null
    openssl x509 -req -in $b.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $b.pem -days 1 \
        -extfile <(echo subjectAltName=DNS:tree) 2>/dev/null
done
openssl dhparam -dsaparam -out dh.pem 2048 2>/dev/null
cp "$BIN" "$R/swarm_spike"
cp b1.pem b1.key dh.pem "$R/"
rc=0
"$R/swarm_spike" make "$R/src/tree" "$R/t.torrent" --ca ca.pem --piece-size 65536 | head -1
chroot "$R" /swarm_spike box --name static-seed --ip 127.0.0.2 --port 7003 --torrent /t.torrent \
    --save /s --cert /b1.pem --key /b1.key --dh /dh.pem --feed /src --feed-rate 4 \
    --feed-wait-peers 1 --timeout 40 --stop-file /stop >seed.log 2>&1 &
"$OUT/swarm_spike" box --name shared-box --ip 127.0.0.3 --port 7003 --torrent "$R/t.torrent" \
    --save "$W/s2" --cert b2.pem --key b2.key --dh dh.pem --peer 127.0.0.2:7003 --timeout 40 \
    --recheck >box.log 2>&1 || rc=$?
touch "$R/stop"
wait
grep -E ' (FEED all|RESULT) ' seed.log box.log
if [ $rc = 0 ] && diff -r "$R/src/tree" "$W/s2/tree" >/dev/null; then
    echo "static: the chroot's static seed served the whole torrent over SSL: 1 passed, 0 failed"
else
    echo "static: the download from the chroot failed (rc=$rc): 0 passed, 1 failed"
    exit 1
fi
