#!/usr/bin/env bash
# build_before.sh REV: builds ferry and ferry-agent of git revision REV in
# build/before/REV (from `git archive`, with that revision's own Makefile)
# and prints the directory holding them, for FERRY_BENCH_BEFORE. A build
# that is there already is used as it is.
set -eu
rev=${1:?usage: build_before.sh REV}
root=$(cd "$(dirname "$0")/../.." && pwd)
hash=$(git -C "$root" rev-parse --short=12 "$rev^{commit}")
dir=$root/build/before/$hash
if ! [ -x "$dir/bin/ferry" ] || ! [ -x "$dir/bin/ferry-agent" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    git -C "$root" archive "$hash" | tar -C "$dir" -xf -
    make -C "$dir" -j"$(nproc)" bin/ferry bin/ferry-agent >"$dir/build.log" 2>&1 || {
        tail -n 20 "$dir/build.log" >&2
        echo "build_before.sh: building $rev failed (log: $dir/build.log)" >&2
        exit 1
    }
fi
echo "$dir/bin"
