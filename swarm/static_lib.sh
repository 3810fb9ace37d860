#!/bin/bash
# Builds libtorrent-rasterbar from the source of the Debian package this
# machine has (the same version the -dev package installs) as a static
# library without the DHT, for bin/ferry-swarm to be linked statically:
# a box then needs nothing installed, whatever its glibc (docs/SWARM.md,
# "Portability of the helper").
#
# The build takes minutes on two cores, so it is kept outside the
# checkout, in $FERRY_BUILD_CACHE (default ~/.cache/ferry-build), under
# the package's version: a clean clone builds it once per machine. The
# machine's apt configuration is not touched (a private deb-src list).
# Prints the folder that holds lib/, include/ and defines.
# Usage: swarm/static_lib.sh [x86_64|aarch64]   (aarch64: cross-built with
# g++-aarch64-linux-gnu and libssl-dev:arm64)
set -eu
# One function, read whole before it runs: a script edited while it
# builds would otherwise be read on from the old offset.
main() {
    arch=${1:-x86_64}
    case $arch in
    x86_64) cross=() ;;
    aarch64)
        cross=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64
            -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc
            -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++
            -DCMAKE_LIBRARY_ARCHITECTURE=aarch64-linux-gnu)
        ;;
    *) echo "static_lib: no build for $arch" >&2; exit 2 ;;
    esac
    ver=$(dpkg-query -W -f '${source:Version}' libtorrent-rasterbar-dev 2>/dev/null) || {
        echo "ferry: missing libtorrent-rasterbar-dev: run 'make deps'" >&2
        exit 1
    }
    CACHE=${FERRY_BUILD_CACHE:-$HOME/.cache/ferry-build}
    OUT=$CACHE/libtorrent-$(echo "$ver" | tr -c 'A-Za-z0-9.+\n' '_')-$arch
    if [ -e "$OUT/done" ]; then
        echo "$OUT"
        exit 0
    fi
    # One build of a version at a time: two checkouts building at once
    # would each clear the other's folder. The second waits, then finds
    # the first one's build.
    mkdir -p "$CACHE"
    exec 9>"$OUT.lock"
    flock 9
    if [ -e "$OUT/done" ]; then
        echo "$OUT"
        exit 0
    fi
    say() { echo "static_lib: $*" >&2; }
    rm -rf "$OUT.tmp"
    mkdir -p "$OUT.tmp"
    W=$OUT.tmp
    A=$W/apt
    mkdir -p "$A/parts" "$A/lists/partial" "$A/archives/partial"
    : >"$A/empty.list"
    # deb-src entries mirroring the machine's deb ones, deb822 and one-line.
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        sed 's/^Types:.*$/Types: deb-src/' "$f" >"$A/parts/$(basename "$f")"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        grep '^deb ' "$f" | sed 's/^deb /deb-src /' >"$A/parts/$(basename "$f").list" || true
    done
    O=(-o "Dir::Etc::SourceList=$A/empty.list" -o "Dir::Etc::SourceParts=$A/parts"
       -o "Dir::State::Lists=$A/lists" -o "Dir::Cache::Archives=$A/archives"
       -o APT::Sandbox::User=root)
    t0=$SECONDS
    apt-get "${O[@]}" update -qq >&2
    (cd "$A" && apt-get "${O[@]}" source --download-only -qq "libtorrent-rasterbar=$ver" >&2)
    mkdir -p "$W/src"
    tar --no-same-owner -xf "$A"/libtorrent-rasterbar_*.orig.tar.* -C "$W/src" --strip-components=1
    say "source $ver in $((SECONDS - t0)) s"
    t0=$SECONDS
    mkdir -p "$W/build"
    (cd "$W/build" && cmake "$W/src" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -Ddht=OFF -DCMAKE_CXX_STANDARD=17 ${cross[@]+"${cross[@]}"} >cmake.log &&
        nice make -j"$(nproc)" torrent-rasterbar >make.log) || {
        say "the build failed: see $W/build/make.log"
        exit 1
    }
    say "libtorrent-rasterbar.a ($arch) built in $((SECONDS - t0)) s"
    # The headers' layout depends on the library's own defines (cmake's).
    sed -n 's/^CXX_DEFINES = //p' "$W/build/CMakeFiles/torrent-rasterbar.dir/flags.make" |
        tr ' ' '\n' | grep -v -e TORRENT_BUILDING_LIBRARY -e '^$' >"$W/defines"
    mkdir -p "$W/lib"
    mv "$W/build/libtorrent-rasterbar.a" "$W/lib/"
    mv "$W/src/include" "$W/include"
    rm -rf "$W/build" "$W/src" "$A"
    : >"$W/done"
    rm -rf "$OUT"
    mv "$W" "$OUT"
    echo "$OUT"
}
main "$@"
exit
