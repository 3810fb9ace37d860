#!/bin/bash
# Bundles in the swarm's helper (docs/SWARM.md, "Bundles"): small files
# travel end to end in one file of the torrent, and each box makes them
# again once it holds it.
#   - box 1 holds the small files in its destination: told by `from`
#     which bytes of the bundle each is, it makes the bundle from them
#     before start, and its check finds it whole (nothing fetched);
#   - box 2 holds nothing: it fetches the bundle from box 1 and, told by
#     `part`, makes each file from it before it says done; a file left
#     there by an earlier run, which has another name outside, is
#     replaced, not written through;
#   - `part` and `from` lines that could write over a file of the
#     torrent, outside the content, past the bundle's end, or that name
#     no bundle, are refused.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/swarm_box.sh"

SWARM=$FERRY_BIN/ferry-swarm
[ -x "$SWARM" ] || SWARM=$(pwd)/bin/ferry-swarm
[ -x "$SWARM" ] || fail "no ferry-swarm: run make swarm"
"$TOOLS/swarm_ca_make" "$T/ca" 2 || fail "swarm_ca_make"

PIDS=""
stop_all() {
    for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
}
at_exit stop_all

# The sources and a box's destination: three small files; the torrent's
# content as the client lays it out: the bundle, and a large file.
D=$T/dest1
mkdir -p "$D/sub" "$T/content/bundles" "$T/content/files"
head -c 3000 /dev/urandom >"$D/a"
head -c 70000 /dev/urandom >"$D/sub/b"
head -c 5 /dev/urandom >"$D/c"
cat "$D/a" "$D/sub/b" "$D/c" >"$T/content/bundles/0"
head -c 200000 /dev/urandom >"$T/content/files/big"
"$TOOLS/torrent_make" -p 16384 -c "$T/ca/ca.pem" "$T/content" \
    "$T/t.torrent" "$T/map" >/dev/null || fail "torrent_make"
# The bundle sorts first: its pieces are 0-4 (73,005 bytes).
[ "$(awk '$3 == "bundles/0"' "$T/map" | wc -l)" = 5 ] &&
    [ "$(head -n 1 "$T/map")" = "0 0 bundles/0" ] || fail "map: $(cat "$T/map")"

box_start() { # N
    mkdir -p "$T/s$1"
    rm -f "$T/b$1.in"
    mkfifo "$T/b$1.in"
    "$SWARM" <"$T/b$1.in" >"$T/b$1.out" 2>"$T/b$1.err" &
    PIDS="$PIDS $!"
    eval "exec $((10 + $1))>\"\$T/b\$1.in\""
    say "$1" "torrent $T/t.torrent"
    say "$1" "cert $T/ca/box$1.pem"
    say "$1" "key $T/ca/box$1.key"
    say "$1" "save $T/s$1"
}

# Box 1: the bundle from its own files, the large file fed.
box_start 1
say 1 "from 0 0 3000 $D/a"
say 1 "from 0 3000 70000 $D/sub/b"
say 1 "from 0 73000 5 $D/c"
say 1 "listen 127.0.42.1:0"
say 1 "start"
wait_line 1 '^checked ' 10
grep -qx 'checked 5' "$T/b1.out" || fail "box 1: $(grep checked "$T/b1.out")"
grep -qx 'holds 0 5' "$T/b1.out" || fail "box 1 holds: $(grep holds "$T/b1.out")"
while read -r p off path; do
    [ "$path" = files/big ] && say 1 "piece $p $off $T/content/$path"
done <"$T/map"
wait_line 1 '^done$' 20
cmp "$T/content/bundles/0" "$T/s1/content/bundles/0" || fail "box 1's bundle"

# Box 2: refusals first, then the parts; a.txt left by an earlier run
# with a name outside.
box_start 2
mkdir -p "$T/s2/content/files"
echo outside >"$T/outside"
ln "$T/outside" "$T/s2/content/files/a"
say 2 "part 0 0 3000 files/big"
say 2 "part 0 0 3000 files/../../x"
say 2 "part 0 73000 6 files/x"
say 2 "part 1 0 1 files/x"
say 2 "from 0 0 3000 rel/a"
say 2 "part 0 0 3000 files/a"
say 2 "part 0 3000 70000 files/sub/b"
say 2 "part 0 73000 5 files/c"
say 2 "listen 127.0.42.2:0"
say 2 "start"
wait_line 2 '^listening ' 10
port=$(sed -n 's/^listening [^ ]* \([0-9]*\)$/\1/p' "$T/b1.out")
say 1 "allow 127.0.42.2"
say 2 "peer 127.0.42.1:$port"
wait_line 2 '^done$' 30
say 2 "part 0 0 3000 files/y"
wait_line 2 '^error part: after start' 5
printf '%s\n' "error part 0: a file of the torrent" \
    "error part 0: unsafe path" "error part 0: past the end of its bundle" \
    "error part: no file starts at piece 1" \
    "error from 0: not an absolute path" "error part: after start" \
    >"$T/refuse.want"
grep '^error' "$T/b2.out" | diff "$T/refuse.want" - >&2 ||
    fail "box 2's refusals differ"
for f in a sub/b c; do
    cmp "$D/$f" "$T/s2/content/files/$f" || fail "box 2's $f"
done
[ "$(cat "$T/outside")" = outside ] || fail "a part was written through a link"
[ -z "$(find "$T/s2" -name '.ferry-part*')" ] || fail "a temporary file stayed"
cmp "$T/content/files/big" "$T/s2/content/files/big" || fail "box 2's big"
say 1 stop
say 2 stop
wait_line 1 '^stopped' 15
wait_line 2 '^stopped' 15
echo "ok: bundles made from a box's files, and into files from a bundle"
