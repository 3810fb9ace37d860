#!/usr/bin/env bash
# bench_fanout.sh: one push to many boxes, in the network-namespace lab
# (tests/lib/lab.sh; root): a client behind a FANOUT_UPLINK uplink, boxes
# on FANOUT_BOX_RATE ports, each with its own sshd, HOME and disk. Data:
# many small files (0-8 KiB) and a few large ones, incompressible.
#
# Rows, each the median of FANOUT_RUNS runs into fresh folders:
#   first contact  2 MiB to every box, its agent cache emptied
#                  first: what bootstrapping costs (a row of its own, so
#                  the others start from bootstrapped boxes)
#   (a) 1 box      the data to one box
#   (b) per box    to every box, each sent its copy in full (--no-swarm
#                  when ferry has it, else the default)
#   (c) default    to every box, the default mode ("not built" when ferry
#                  has no --no-swarm: then (b) is the default)
#   (d) killed     the default to every box, the last box killed (sshd,
#                  sessions, agent) at half the default row's time: the
#                  others' time (ferry exits 10); then the re-run, the box
#                  back: its time and bytes
#   (e) straggler  the default to every box, the last on a FANOUT_SLOW_RATE
#                  port: the others' time (until the last of their box
#                  events), the straggler's and the command's in the notes
#   (f) floor      the data copied into every box's folder at once (cp,
#                  then sync), no network: what this machine's cores and
#                  disk cost the boxes' side
#   (g) floor      the swarm alone: the helpers in the boxes' namespaces,
#                  fed the data in stripes from here, until each holds
#                  all of it (no SSH, no uplink, no transfer after it)
#   (h) floor      with (g), after each of its runs: every box's
#                  transfer taking the gathered copy into place
#                  (--adopt), what (c) does once its swarm is over
# Time is the command's wall time, bytes those of the client's uplink
# veth (frames whole, both directions; the lab carries nothing else), and
# x(a) the ratio to row (a). Each run's log line also says how many TCP
# segments the client's namespace sent again (nstat's TcpRetransSegs).
# CPU s is the machine's busy CPU time during the run (all cores, every
# namespace), from which the table's last line gives (c)'s floor here.
# Every copy is checked against the source.
# The table also goes to build/bench/fanout-latest.txt.
#
#   FANOUT_MB          data in MiB (default 1024)
#   FANOUT_BOXES       boxes (default 8)
#   FANOUT_RUNS        runs per row (default 3)
#   FANOUT_SMALL       small files (default 20 per MiB of data, ~8%)
#   FANOUT_LARGE       large files sharing the rest (default 4)
#   FANOUT_UPLINK      the client's uplink (default 100mbit)
#   FANOUT_BOX_RATE    each box's port (default 1gbit)
#   FANOUT_SLOW_RATE   the straggler's port (default 50mbit)
#   FANOUT_ONLY        row ids to run, e.g. "a b" (first contact always runs)
#   FANOUT_LOGS        a folder to keep each command's stderr and stamped
#                      stdout in (HHMMSS.err, HHMMSS.out), e.g. with
#                      FANOUT_ARGS=-vv
#   FANOUT_ARGS        more options for every ferry command
#   FANOUT_DISK_GB     the boxes' file system (a journaled ext4 image,
#                      tests/lib/lab.sh LAB_DISK_GB; default twice the
#                      data on every box, plus 4)
set -eu
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
: "${FERRY_BIN:=$ROOT/bin}"
: "${FERRY_TOOLS:=$ROOT/build/release/tests}"
cd "$ROOT"
. "$ROOT/tests/lib/common.sh"
. "$ROOT/tests/lib/sshd.sh"
. "$ROOT/tests/lib/lab.sh"
set -o pipefail

MIB=1048576
SIZE_MB=${FANOUT_MB:-1024}
N=${FANOUT_BOXES:-8}
RUNS=${FANOUT_RUNS:-3}
SMALL=${FANOUT_SMALL:-$((SIZE_MB * 20))}
LARGE=${FANOUT_LARGE:-4}
UPLINK=${FANOUT_UPLINK:-100mbit}
BOX_RATE=${FANOUT_BOX_RATE:-1gbit}
SLOW_RATE=${FANOUT_SLOW_RATE:-50mbit}
ONLY=${FANOUT_ONLY:-}
[ "$N" -ge 2 ] || fail "FANOUT_BOXES: at least 2"
[ "$(id -u)" -eq 0 ] || fail "the lab needs root (ip netns, tc)"
[ -x "$FERRY" ] && [ -x "$AGENT" ] || fail "no $FERRY or $AGENT (make all)"
START_S=$(date +%s)
log() { printf '[fanout %4ds] %s\n' "$(($(date +%s) - START_S))" "$*" >&2; }
# div X Y [DECIMALS]: X / Y, with DECIMALS (2) places.
div() {
    awk -v x="$1" -v y="$2" -v d="${3:-2}" 'BEGIN { printf "%.*f", d, x / y }'
}
mb() { div "$1" "$MIB" 1; }
wanted() { [ -z "$ONLY" ] || case " $ONLY " in *" $1 "*) ;; *) false ;; esac; }

# ---------------------------------------------------------------- data

SRC=$T/src
log "data: $SIZE_MB MiB, $SMALL small files and $LARGE large"
python3 "$BENCH_DIR/gen.py" small "$SRC/small" "$SMALL" 41
small_bytes=$(find "$SRC/small" -type f -printf '%s\n' |
    awk '{ n += $1 } END { print n + 0 }')
large_each=$(((SIZE_MB * MIB - small_bytes) / LARGE))
[ "$large_each" -gt 0 ] || fail "FANOUT_SMALL leaves no room for large files"
for i in $(seq 1 "$LARGE"); do
    python3 "$BENCH_DIR/gen.py" random "$SRC/large-$i.bin" "$large_each" "41-$i"
done
DATA=$(find "$SRC" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')

# Commands get three times what the slowest row should take at the
# uplink's rate (every box sent its copy in full), and two minutes.
LAB_CMD_TIMEOUT=$((3 * N * DATA * 8 / $(lab_bits "$UPLINK") + 120))
log "lab: $N boxes, uplink $UPLINK, ports $BOX_RATE"
LAB_DISK_GB=${FANOUT_DISK_GB:-$((SIZE_MB * N * 2 / 1024 + 4))}
lab_up "$N" "$UPLINK" "$BOX_RATE"
read -r -a PER_BOX <<<"$(lab_per_box)"
ALL="box[1-$N]"
# shellcheck disable=SC2206
P=(lab_client "$FERRY" push -q -F "$LAB_SSH_CONFIG" ${FANOUT_ARGS:-})

# ---------------------------------------------------------------- runs

# retrans: TCP segments the client's namespace has sent again so far.
retrans() {
    ip netns exec "${LAB}c" nstat -saz TcpRetransSegs 2>/dev/null |
        awk '$1 == "TcpRetransSegs" { print $2 }' | grep . || echo 0
}

# busy: the machine's busy CPU time so far, in clock ticks (every
# namespace's processes, the lab's client and boxes alike, count here).
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
HZ=$(getconf CLK_TCK)

# meter_start, meter_stop: between them, SECS (wall), TX and RX (the
# uplink's bytes out and in), RETX (TCP segments the client sent again),
# CPU (the machine's busy CPU seconds).
meter_start() {
    B0=$(lab_uplink_bytes)
    R0=$(retrans)
    C0=$(busy)
    T0=$(date +%s.%N)
}
meter_stop() {
    local b1
    SECS=$(awk -v t="$(date +%s.%N)" -v t0="$T0" \
        'BEGIN { printf "%.3f", t - t0 }')
    CPU=$(div "$(($(busy) - C0))" "$HZ" 1)
    b1=$(lab_uplink_bytes)
    TX=$((${b1% *} - ${B0% *}))
    RX=$((${b1#* } - ${B0#* }))
    RETX=$(($(retrans) - R0))
}

# stamp: each line of stdin, with the time before it.
stamp() {
    python3 -u -c '
import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line))'
}

# stamped OUT CMD...: CMD with each line of its stdout (its --json
# events, each as it comes) stamped with the time into OUT; its stderr
# in $T/last.err. With FANOUT_LOGS, both are kept there, the stderr
# stamped too.
stamped() {
    local out=$1 rc=0 at
    shift
    if [ -n "${FANOUT_LOGS:-}" ]; then
        mkdir -p "$FANOUT_LOGS"
        at=$FANOUT_LOGS/$(date +%H%M%S)
        "$@" 2> >(tee "$T/last.err" | stamp >"$at.err") | stamp >"$out" ||
            rc=$?
        wait $! 2>/dev/null || true
        cp "$out" "$at.out"
    else
        "$@" 2>"$T/last.err" | stamp >"$out" || rc=$?
    fi
    return "$rc"
}

# timed OUT CMD...: stamped, metered; sets RC.
timed() {
    meter_start
    set +e
    stamped "$@"
    RC=$?
    set -e
    meter_stop
}

# expect_ok WHAT WANT: the last run exited WANT.
expect_ok() {
    [ "$RC" -eq "$2" ] ||
        { tail -n 20 "$T/last.err" >&2; fail "$1: exit $RC, not $2"; }
}

# same_on DIR K...: DIR of each box K (in its workspace) is the source.
same_on() {
    local dir=$1 k
    shift
    for k in "$@"; do
        tree_same "$SRC" "$(lab_ws "$k")/$dir"
    done
}

# forget DIR: DIR removed from every box (the next run starts afresh),
# and the deletes written out. The boxes' disk is a journaled ext4 of
# their own (LAB_DISK_GB), as on a rented box: the root's may have no
# journal, and ext4 without one skips the inodes deleted in the last
# minutes each time it allocates one, so that a run after a mass delete
# paid for it (in perf: ext4's recently_deleted, find_inode_bit).
forget() {
    local k
    for k in $(seq 1 "$N"); do
        rm -rf "$(lab_ws "$k")/${1:?}"
    done
    sync
}

# done_at OUT HOSTS...: seconds from the run's start (T0) until the last
# of HOSTS was done (its box event in OUT, from a --json run).
done_at() {
    python3 - "$T0" "$@" <<'PY'
import json, sys
t0, hosts = float(sys.argv[1]), set(sys.argv[3:])
at, bad = {}, 0
for line in open(sys.argv[2]):
    stamp, event = line.split(" ", 1)
    try:
        e = json.loads(event)
    except ValueError:
        bad += 1
        continue
    if e["event"] == "box" and e["host"] in hosts:
        at[e["host"]] = float(stamp) - t0
if bad:
    print("fanout: %d lines of ferry's --json output are not JSON" % bad,
          file=sys.stderr)
print("%.2f" % max(at.values()) if len(at) == len(hosts) else "?")
PY
}

# record ROW: the last run's figures into $T/rows.ROW (and its CPU
# seconds into $T/cpu.ROW).
record() {
    echo "$SECS $TX $RX" >>"$T/rows.$1"
    echo "$CPU" >>"$T/cpu.$1"
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# med ROW COLUMN: the median of a column of ROW's runs.
med() { awk -v c="$2" '{ print $c }' "$T/rows.$1" | median; }

others=$(seq 1 $((N - 1)))
hosts_others=$(for k in $others; do printf 'box%s ' "$k"; done)

# 2 MiB: enough for a push to many boxes to spread, so that each box's
# swarm helper is uploaded here too, not in the first timed row.
mkdir -p "$T/hello"
head -c 2097152 /dev/urandom >"$T/hello/h.bin"
for r in $(seq 1 "$RUNS"); do
    for k in $(seq 1 "$N"); do
        rm -rf "$(lab_home "$k")/.cache/ferry"
    done
    forget hello
    timed "$T/out" "${P[@]}" "$T/hello/" "$ALL:$LAB_WS/hello"
    expect_ok "first contact" 0
    record first
done
log "first contact: $(div "$(med first 1)" 1) s"

if wanted a; then
    for r in $(seq 1 "$RUNS"); do
        timed "$T/out" "${P[@]}" "$SRC/" "box1:$LAB_WS/a"
        expect_ok "(a)" 0
        same_on a 1
        forget a
        record a
        log "(a) run $r: $(div "$SECS" 1) s, $TX B out, $RETX segments" \
            "sent again"
    done
fi

# fanout ROW FLAGS...: the data to every box, RUNS times.
fanout() {
    local row=$1 r
    shift
    for r in $(seq 1 "$RUNS"); do
        timed "$T/out" "${P[@]}" "$@" "$SRC/" "$ALL:$LAB_WS/$row"
        expect_ok "($row)" 0
        # shellcheck disable=SC2046
        same_on "$row" $(seq 1 "$N")
        forget "$row"
        record "$row"
        log "($row) run $r: $(div "$SECS" 1) s, $TX B out, $RETX" \
            "segments sent again"
    done
}
wanted b && fanout b "${PER_BOX[@]}"
[ "${#PER_BOX[@]}" -eq 0 ] || ! wanted c || fanout c

# The default row's time, for when to kill a box.
def=c
[ -s "$T/rows.c" ] || def=b
if wanted d; then
    [ -s "$T/rows.$def" ] || fail "(d) needs row ($def) in FANOUT_ONLY"
    half=$(div "$(med "$def" 1)" 2 3)
    for r in $(seq 1 "$RUNS"); do
        meter_start
        stamped "$T/out" "${P[@]}" --retry-for 0 "$SRC/" \
            "$ALL:$LAB_WS/d" &
        pid=$!
        sleep "$half"
        lab_box_kill "$N"
        set +e
        wait "$pid"
        RC=$?
        set -e
        meter_stop
        expect_ok "(d)" 10
        # shellcheck disable=SC2086
        same_on d $others
        record d
        s_others=$SECS
        lab_box_start "$N"
        timed "$T/out" "${P[@]}" --retry-for 0 "$SRC/" "$ALL:$LAB_WS/d"
        expect_ok "(d) re-run" 0
        same_on d "$N"
        forget d
        record d2
        log "(d) run $r: others $(div "$s_others" 1) s;" \
            "re-run $(div "$SECS" 1) s, $TX B out"
    done
fi

if wanted e; then
    lab_rate_box "$N" "$SLOW_RATE"
    for r in $(seq 1 "$RUNS"); do
        timed "$T/out" "${P[@]}" --json "$SRC/" "$ALL:$LAB_WS/e"
        expect_ok "(e)" 0
        # shellcheck disable=SC2046
        same_on e $(seq 1 "$N")
        forget e
        # shellcheck disable=SC2086
        s_others=$(done_at "$T/out" $hosts_others)
        s_slow=$(done_at "$T/out" "box$N")
        echo "$s_others $TX $RX $s_slow $SECS" >>"$T/rows.e"
        echo "$CPU" >>"$T/cpu.e"
        log "(e) run $r: others $s_others s, box$N $s_slow s," \
            "all $(div "$SECS" 1) s, $RETX segments sent again"
    done
    lab_rate_box "$N" "$BOX_RATE"
fi

# (f) the machine's floor for the boxes' side: the data written into
# every box's folder at once, from this machine's page cache, made
# durable, with no network and no ferry. On one VM the boxes share its
# cores and disk, which a real fan-out does not; (c) against it says what
# of the time is this machine's.
if wanted f; then
    for r in $(seq 1 "$RUNS"); do
        meter_start
        for k in $(seq 1 "$N"); do
            cp -r "$SRC" "$(lab_ws "$k")/f" &
        done
        wait
        sync -f "$(lab_ws 1)"
        meter_stop
        forget f
        TX=0 RX=0 record f
        log "(f) run $r: $(div "$SECS" 1) s"
    done
fi

# (g) the swarm's own floor: the same helpers (bin/ferry-swarm), one in
# each box's namespace, given the data in stripes (piece p to box p mod
# N, read from the source files here at once, not over the uplink), until
# every box holds all of it and has made its small files from their
# bundles: the all-gather alone, with TLS between the boxes, on this
# machine's cores and disk, with no SSH, no uplink and no transfer after
# it. The torrent is laid out as the client lays it out
# (client/swarm_make.c): files of 1 MiB and more under files/, the
# smaller ones end to end in bundles of at most 64 MiB (by path here:
# no box holds any). (c) can come no nearer than max((a), (g)) here.
if wanted g; then
    SW=$FERRY_BIN/ferry-swarm
    [ -x "$SW" ] || fail "(g): no $SW (make swarm)"
    "$FERRY_TOOLS/swarm_ca_make" "$T/gca" "$N" >/dev/null ||
        fail "(g): swarm_ca_make"
    G=$T/gsrc/content
    mkdir -p "$G/bundles" "$G/files"
    (cd "$SRC" && find . -type f -printf '%P %s\n' | LC_ALL=C sort) \
        >"$T/g.list"
    # BUNDLE OFFSET LEN PATH for each small file
    awk -v B=$((64 << 20)) -v M=$((1 << 20)) '$2 < M {
        if (n == 0 || at + $2 > B) { n++; at = 0 }
        print n - 1, at, $2, $1; at += $2 }' "$T/g.list" >"$T/g.parts"
    for b in $(cut -d' ' -f1 "$T/g.parts" | uniq); do
        awk -v b="$b" '$1 == b { print $4 }' "$T/g.parts" |
            (cd "$SRC" && xargs cat) >"$G/bundles/$b"
    done
    awk -v M=$((1 << 20)) '$2 >= M { print $1 }' "$T/g.list" |
        while read -r p; do
            mkdir -p "$(dirname "$G/files/$p")"
            ln "$SRC/$p" "$G/files/$p" 2>/dev/null || cp "$SRC/$p" "$G/files/$p"
        done
    # The piece length a push picks for this much data (-b).
    "$FERRY_TOOLS/torrent_make" -b "$DATA" -c "$T/gca/ca.pem" "$G" \
        "$T/g.torrent" "$T/g.map" >/dev/null || fail "(g): torrent_make"
    # part lines, with each bundle's first piece from the map
    awk 'NR == FNR { if ($2 == 0 && $3 ~ /^bundles\//) {
            sub(/^bundles\//, "", $3); first[$3] = $1 }; next }
        { print "part", first[$1], $2, $3, "files/" $4 }' \
        "$T/g.map" "$T/g.parts" >"$T/g.partlines"
    for r in $(seq 1 "$RUNS"); do
        for k in $(seq 1 "$N"); do
            rm -f "$T/g$k.in" "$T/g$k.out"
            mkfifo "$T/g$k.in"
            mkdir -p "$(lab_ws "$k")/g"
            ip netns exec "${LAB}b$k" "$SW" <"$T/g$k.in" >"$T/g$k.out" \
                2>"$T/g$k.err" &
            eval "exec $((20 + k))>\"\$T/g\$k.in\""
            printf '%s\n' "torrent $T/g.torrent" "cert $T/gca/box$k.pem" \
                "key $T/gca/box$k.key" "save $(lab_ws "$k")/g" \
                >&$((20 + k))
            cat "$T/g.partlines" >&$((20 + k))
            printf '%s\n' "listen $(lab_addr "$k"):0" "start" >&$((20 + k))
        done
        g_wait() { # PATTERN: every box has said it
            local k end=$((SECONDS + LAB_CMD_TIMEOUT))
            for k in $(seq 1 "$N"); do
                until grep -qE "$1" "$T/g$k.out"; do
                    [ $SECONDS -lt $end ] ||
                        { tail -n 3 "$T/g$k.out" "$T/g$k.err" >&2;
                          fail "(g): box$k never said '$1'"; }
                    sleep 0.05
                done
            done
        }
        g_wait '^listening '
        for k in $(seq 1 "$N"); do
            for m in $(seq 1 "$N"); do
                port=$(sed -n 's/^listening [^ ]* //p' "$T/g$m.out" | tail -n 1)
                if [ "$m" -lt "$k" ]; then
                    echo "peer $(lab_addr "$m"):$port" >&$((20 + k))
                elif [ "$m" -gt "$k" ]; then
                    echo "allow $(lab_addr "$m")" >&$((20 + k))
                fi
            done
        done
        g_wait '^checked '
        meter_start
        while read -r p off path; do
            echo "piece $p $off $G/$path" >&$((20 + p % N + 1))
        done <"$T/g.map"
        g_wait '^done$'
        meter_stop
        for k in $(seq 1 "$N"); do
            echo stop >&$((20 + k))
            eval "exec $((20 + k))>&-"
        done
        wait
        # The bytes (libtorrent sets no mtimes).
        for k in $(seq 1 "$N"); do
            diff -rq "$SRC" "$(lab_ws "$k")/g/content/files" >&2 ||
                fail "(g): box$k's copy differs"
        done
        TX=0 RX=0 record g
        log "(g) run $r: $(div "$SECS" 1) s"
        # (h) what follows the all-gather in (c): each box's transfer
        # taking the gathered copy into place (--adopt; (c) links where
        # this renames), the manifests over the uplink.
        if wanted h; then
            timed "$T/out" "${P[@]}" --adopt content/files "$SRC/" \
                "$ALL:$LAB_WS/g"
            expect_ok "(h)" 0
            for k in $(seq 1 "$N"); do
                diff -rq -x content "$SRC" "$(lab_ws "$k")/g" >&2 ||
                    fail "(h): box$k's copy differs"
            done
            record h
            log "(h) run $r: $(div "$SECS" 1) s, $TX B out"
        fi
        forget g
    done
fi

# ---------------------------------------------------------------- table

# ratio X ROW COLUMN: X over row (a)'s median of COLUMN.
ratio() {
    [ -s "$T/rows.a" ] || { echo -; return; }
    div "$1" "$(med a "$2")"
}
line() { printf '%-34s %8s %6s %10s %6s %9s %7s  %s\n' "$@"; }
# cpu ROW: the median of ROW's busy CPU seconds.
cpu() { [ -s "$T/cpu.$1" ] && median <"$T/cpu.$1" || echo -; }
# row ID LABEL NOTE: ROW's medians as a line of the table.
row() {
    local s tx rx
    if [ ! -s "$T/rows.$1" ]; then
        line "$2" - - - - - - "${3:-not run}"
        return
    fi
    s=$(med "$1" 1) tx=$(med "$1" 2) rx=$(med "$1" 3)
    line "$2" "$(div "$s" 1)" "$(ratio "$s" 1)" "$(mb "$tx")" \
        "$(ratio "$tx" 2)" "$(mb "$rx")" "$(cpu "$1")" "${3:-}"
}

# The floor of (c) on this machine: the uplink's time for the data (row
# (a), a push to one box, is bound by it), or the CPU time of the parts
# of (c) spread over every core, whichever is longer: the scatter (a),
# the all-gather (g) and, when run, the boxes' commits after it (h). On
# a real fan-out each box has cores of its own and the floor is (a)'s
# time alone.
c_floor() {
    [ -s "$T/rows.a" ] && [ -s "$T/rows.g" ] && [ -s "$T/rows.c" ] ||
        return 0
    local cores f ch=0 parts
    cores=$(nproc)
    parts="(a) $(cpu a) + (g) $(cpu g)"
    if [ -s "$T/cpu.h" ]; then
        ch=$(cpu h)
        parts="$parts + (h) $ch"
    fi
    f=$(awk -v a="$(med a 1)" -v ca="$(cpu a)" -v cg="$(cpu g)" \
        -v ch="$ch" -v n="$cores" 'BEGIN { f = (ca + cg + ch) / n;
        if (a > f) f = a; printf "%.1f", f }')
    echo "(c) floor here: max((a) $(div "$(med a 1)" 1) s, ($parts CPU s)" \
        "/ $cores cores) = $f s; (c) $(div "$(med c 1)" 1) s is" \
        "$(div "$(med c 1)" "$f") of it"
}

e_note=""
[ ! -s "$T/rows.e" ] || e_note="box$N $(med e 4) s, all $(div "$(med e 5)" 1) s"
{
    echo "fan-out bench: $(mb "$DATA") MiB ($SMALL small files, $LARGE" \
        "large) to $N boxes; uplink $UPLINK, box ports $BOX_RATE;" \
        "median of $RUNS; $(nproc) cores, $(date -u +%FT%TZ)"
    line row "wall s" "x(a)" "up MiB" "x(a)" "down MiB" "CPU s" notes
    row first "first contact, $N boxes" "2 MiB; agents and helpers uploaded"
    row a "(a) 1 box"
    if [ "${#PER_BOX[@]}" -gt 0 ]; then
        row b "(b) $N boxes, --no-swarm"
        row c "(c) $N boxes, default"
    else
        row b "(b) $N boxes, per-box (default)"
        line "(c) $N boxes, swarm" - - - - - "not built"
    fi
    row d "(d) box$N killed at half, others" "exit 10"
    row d2 "(d) re-run, box$N back"
    row e "(e) box$N at $SLOW_RATE, others" "$e_note"
    row f "(f) floor: cp to $N folders" "no network: the disk and cores"
    row g "(g) floor: the swarm alone" "the helpers' all-gather, no SSH"
    row h "(h) floor: the boxes' commits" "after (g): each box adopts its copy"
    c_floor
} | tee "$T/table"
mkdir -p "$ROOT/build/bench"
cp "$T/table" "$ROOT/build/bench/fanout-latest.txt"
