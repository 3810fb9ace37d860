# What a killed `ferry unpack` leaves in DEST (its staging directory,
# DEST/.ferry-unpack.PID.N) is listed by `ferry status`, removed by
# `ferry clean` and by the next unpack; a staging directory of an unpack
# that still runs (its pid alive, or its lock held: another machine of a
# shared file system) is left alone.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src/data"
for i in $(seq 1 40); do head -c 20000 /dev/urandom >"$T/src/data/f$i"; done
expect_rc 0 "$FERRY" pack -q --volume-size 64K "$T/src/data" "$T/set"
mv "$T/set/data.00002.tar.zst" "$T/vol2"

# killed_unpack DEST: an unpack into DEST killed while it waits for its
# second volume (a FIFO nobody writes); its staging directory stays.
killed_unpack() {
    rm -f "$T/set/data.00002.tar.zst"
    mkfifo "$T/set/data.00002.tar.zst"
    "$FERRY" unpack -q "$T/set" "$1" 2>/dev/null &
    upid=$!
    for _ in $(seq 1 200); do
        [ -d "$1/.ferry-unpack.$upid.0" ] && break
        sleep 0.05
    done
    kill -9 $upid
    wait $upid || true
    [ -d "$1/.ferry-unpack.$upid.0" ] || fail "no staging directory left"
    rm "$T/set/data.00002.tar.zst"
    cp "$T/vol2" "$T/set/data.00002.tar.zst"
}

# Staging names of an unpack that runs: a live pid, and a gone pid whose
# directory is locked.
sleep 300 &
alive=$!
sh -c 'exit 0' &
gone=$!
wait $gone
live_stages() {
    mkdir -p "$1/.ferry-unpack.$alive.0" "$1/.ferry-unpack.$gone.7"
    flock -x "$1/.ferry-unpack.$gone.7" sleep 300 &
    locker=$!
    for _ in $(seq 1 100); do
        flock -xn "$1/.ferry-unpack.$gone.7" true || break
        sleep 0.05
    done
}
stop_helpers() { kill $alive ${locker:-} 2>/dev/null || true; }
at_exit stop_helpers
live_left() {
    [ -d "$1/.ferry-unpack.$alive.0" ] ||
        fail "removed the staging directory of a live pid"
    [ -d "$1/.ferry-unpack.$gone.7" ] ||
        fail "removed a locked staging directory"
}

# status lists it, clean removes it.
killed_unpack "$T/u1"
live_stages "$T/u1"
expect_rc 0 "$FERRY" status "$T/u1"
grep -q "\.ferry-unpack\.$upid\.0/" "$T/last.out" || fail "status: not listed"
! grep -q "\.ferry-unpack\.$alive\." "$T/last.out" || fail "status: a live one"
expect_rc 0 "$FERRY" clean "$T/u1"
grep -q "^removed .*\.ferry-unpack\.$upid\.0/" "$T/last.out" ||
    fail "clean: not said"
[ ! -e "$T/u1/.ferry-unpack.$upid.0" ] ||
    fail "clean left it: $(ls -A "$T/u1/.ferry-unpack.$upid.0" | tr '\n' ' ')"
live_left "$T/u1"
kill $locker

# The next unpack removes it, says so, and completes.
killed_unpack "$T/u2"
live_stages "$T/u2"
expect_rc 0 "$FERRY" unpack "$T/set" "$T/u2"
expect_err ".ferry-unpack.$upid.0: removed, left by an unpack that was stopped"
[ ! -e "$T/u2/.ferry-unpack.$upid.0" ] || fail "unpack left it"
live_left "$T/u2"
python3 "$TESTS_DIR/lib/treecmp.py" --content "$T/src/data" "$T/u2/data" ||
    fail "the unpack after the killed one"
