#!/usr/bin/env bash
# bench_delta.sh [MiB]: delta transfers, ferry beside rsync in the same
# run, over the test sshd on 127.0.0.1 (tests/lib/sshd.sh). Prints one row
# per scenario and tool: median wall time of REPS runs and the bytes each
# tool says it moved (ferry: bytes_wire + bytes_wire_in, SSH framing
# included; rsync: --stats "Total bytes sent" + "received", its own
# protocol only), then XXH3 and the delta rates per core
# (build/release/tests/delta_rate). Every copy is checked against its
# source. See docs/BENCHMARKS.md, "Delta".
#
#   FERRY_BENCH_REPS     runs per row (default 3)
#   FERRY_BENCH_COLD     1: also the cold-cache rows (needs root to drop
#                        the page cache; default 1 when permitted)
#   FERRY_BENCH_ONLY     row ids to run (e.g. "rewrite_kept rewrite_cold")
#   FERRY_BENCH_SHARDS   shards in the shards rows (default 16)
#   FERRY_BENCH_SHARD_MIB  their size (default 64)
set -eu
SIZE_MIB=${1:-512}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
: "${FERRY_BIN:=$ROOT/bin}"
: "${FERRY_TOOLS:=$ROOT/build/release/tests}"
cd "$ROOT"
. "$ROOT/tests/lib/common.sh"
. "$ROOT/tests/lib/sshd.sh"
. "$BENCH_DIR/memory.sh"
REPS=${FERRY_BENCH_REPS:-3}
MIB=1048576
SIZE=$((SIZE_MIB * MIB))
gen() { python3 "$BENCH_DIR/gen.py" "$@"; }
sshd_start
mem_probe

can_drop=0
if [ "${FERRY_BENCH_COLD:-1}" = 1 ] &&
    (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
    can_drop=1
fi
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# Data on disk ($T), destinations on tmpfs (warm rows) or disk (cold).
D=$T/data
SHM=$(mktemp -d /dev/shm/ferry-bench.XXXXXX)
at_exit shm_cleanup
shm_cleanup() { rm -rf "$SHM"; }
mkdir -p "$D/old" "$D/rewrite" "$D/insert" "$D/touch" "$D/step"
gen random "$D/old/model.ckpt" "$SIZE" 12-ckpt
touch -d '2024-05-01 12:00:00' "$D/old/model.ckpt"
cp "$D/old/model.ckpt" "$D/rewrite/model.ckpt"
gen rewrite "$D/rewrite/model.ckpt" 1 12
gen insert "$D/old/model.ckpt" "$D/insert/model.ckpt" 4096 12
cp "$D/old/model.ckpt" "$D/touch/model.ckpt"
touch -d '2024-05-02 12:00:00' "$D/rewrite/model.ckpt" \
    "$D/insert/model.ckpt" "$D/touch/model.ckpt"
# step-2 beside step-1: 60% of its 4 MiB regions unchanged.
python3 - "$D/old/model.ckpt" "$D/step/step-2.bin" <<'PY'
import random, sys
r = random.Random(12)
region = 4 << 20
with open(sys.argv[1], "rb") as fi, open(sys.argv[2], "wb") as fo:
    while True:
        b = fi.read(region)
        if not b:
            break
        fo.write(b if r.random() < 0.6 else r.randbytes(len(b)))
PY

# The data just written goes to the disk now, not during the first rows
# (ferry's, which run first in each row: the writeback's CPU would be
# theirs).
sync

# run_one TOOL SRC DESTDIR [ferry options...]: one run; sets SECS, WIRE.
run_one() {
    local tool=$1 src=$2 dest=$3 t0 t1
    shift 3
    t0=$(date +%s.%N)
    if [ "$tool" = ferry ]; then
        "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json "$@" \
            "$src" "ferry-test:$dest" >"$T/out" 2>"$T/err" ||
            { cat "$T/err"; fail "ferry failed"; }
        t1=$(date +%s.%N)
        WIRE=$(( $(grep '"event":"summary"' "$T/out" |
            sed -n 's/.*"bytes_wire":\([0-9]*\).*/\1/p') +
            $(grep '"event":"summary"' "$T/out" |
            sed -n 's/.*"bytes_wire_in":\([0-9]*\).*/\1/p') ))
    else
        rsync -a --stats "$@" -e "ssh -F '$SSH_CONFIG'" "$src" \
            "ferry-test:$dest/" >"$T/out" 2>"$T/err" ||
            { cat "$T/err"; fail "rsync failed"; }
        t1=$(date +%s.%N)
        WIRE=$(( $(sed -n 's/^Total bytes sent: \([0-9,]*\).*/\1/p' "$T/out" |
            tr -d ,) + $(sed -n 's/^Total bytes received: \([0-9,]*\).*/\1/p' \
            "$T/out" | tr -d ,) ))
    fi
    SECS=$(echo "$t1 - $t0" | bc -l)
}

# row ID TEXT SRC BASIS_NAME COLD [ferry options...] -- [rsync options...]
# Each run starts from a destination that holds BASIS_NAME (the old
# version), warm (on tmpfs, both versions read once before) or cold (on
# disk, caches dropped). With KEPT=1 ferry's old version is put there by a
# ferry push, as when ferry sent the last checkpoint, so its signatures
# were kept (docs/DESIGN.md, "Kept signatures"); rsync's by cp -p as
# always.
row() {
    local id=$1 text=$2 src=$3 basis=$4 cold=$5 tool rep f_opts=() r_opts=()
    case " ${FERRY_BENCH_ONLY:-$id} " in *" $id "*) ;; *) return 0 ;; esac
    shift 5
    while [ $# -gt 0 ] && [ "$1" != -- ]; do f_opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    r_opts=("$@")
    for tool in ferry rsync; do
        : >"$T/times"
        for rep in $(seq 1 "$REPS"); do
            local dest=$SHM/dest
            [ "$cold" = 1 ] && dest=$T/dest
            rm -rf "$dest"
            mkdir -p "$dest"
            if [ "${KEPT:-0}" = 1 ] && [ "$tool" = ferry ]; then
                "$FERRY" push -q -F "$SSH_CONFIG" --agent "$AGENT" \
                    "$D/old/model.ckpt" "ferry-test:$dest/$basis" ||
                    fail "$id: the old version's push failed"
            else
                cp -p "$D/old/model.ckpt" "$dest/$basis"
            fi
            if [ "$cold" = 1 ]; then
                drop
            else
                cat "$src"/* "$dest/$basis" >/dev/null
            fi
            mem_prefault $((SIZE_MIB * 3))
            if [ "$tool" = ferry ]; then
                run_one ferry "$src/" "$dest" "${f_opts[@]}"
            else
                run_one rsync "$src/" "$dest" "${r_opts[@]}"
            fi
            same_copies "$src" "$dest" "$id: $tool"
            echo "$SECS $WIRE" >>"$T/times"
        done
        median "$T/times" "$id" "$tool" "$text"
    done
}

# same_copies SRC DEST WHAT: each file of SRC is in DEST, the same.
same_copies() {
    local f
    for f in "$1"/*; do
        cmp "$f" "$2/$(basename "$f")" || fail "$3: copy differs"
    done
}

# median FILE ID TOOL TEXT: the row of the median time of FILE's runs.
median() {
    sort -n "$1" | sed -n "$(( (REPS + 1) / 2 ))p" |
        { read -r s w; printf '%-14s %-6s %7.2f s %12d B  %s\n' \
            "$2" "$3" "$s" "$w" "$4"; }
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SIZE_MIB} MiB checkpoint," \
    "median of $REPS; $(rsync --version | head -n 1)"
echo "# $(mem_describe)"
row rewrite "1% rewritten in place (256 KiB regions), warm, tmpfs dest" \
    "$D/rewrite" model.ckpt 0
row insert "4 KiB inserted at the start, warm, tmpfs dest" \
    "$D/insert" model.ckpt 0
row touch "same content, new mtime, warm, tmpfs dest" \
    "$D/touch" model.ckpt 0
row step "step-2.bin beside step-1.bin, 60% of 4 MiB regions kept" \
    "$D/step" step-1.bin 0 --basis auto -- --fuzzy
KEPT=1 row rewrite_kept "1% rewritten in place, warm, tmpfs dest, old version sent by ferry" \
    "$D/rewrite" model.ckpt 0
KEPT=1 row insert_kept "4 KiB inserted at the start, warm, tmpfs dest, old version sent by ferry" \
    "$D/insert" model.ckpt 0
KEPT=1 row touch_kept "same content, new mtime, warm, tmpfs dest, old version sent by ferry" \
    "$D/touch" model.ckpt 0
if [ "$can_drop" = 1 ]; then
    row rewrite_cold "1% rewritten in place, cold caches, disk dest" \
        "$D/rewrite" model.ckpt 1
    KEPT=1 row rewrite_cold_kept "1% rewritten in place, cold caches, disk dest, old version sent by ferry" \
        "$D/rewrite" model.ckpt 1
    for rep in 1 2 3; do
        drop
        mem_prefault $((SIZE_MIB * 3))
        t0=$(date +%s.%N)
        dd if="$D/old/model.ckpt" of=/dev/null bs=1M 2>/dev/null
        dd if="$D/rewrite/model.ckpt" of=/dev/null bs=1M 2>/dev/null
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc -l
    done | sort -n | sed -n 2p |
        { read -r s; printf '%-14s %-6s %7.2f s %12s    %s\n' rewrite_cold \
            dd "$s" - "dd of both versions, cold caches"; }
    # What a receiver that keeps the old version until the commit must
    # do at least: read both versions and write the new one durably, the
    # reads side by side as the two ends of a push do them.
    for rep in 1 2 3; do
        rm -f "$T/floor.ckpt"
        drop
        mem_prefault $((SIZE_MIB * 3))
        t0=$(date +%s.%N)
        dd if="$D/rewrite/model.ckpt" of=/dev/null bs=1M 2>/dev/null &
        dd if="$D/old/model.ckpt" of="$T/floor.ckpt" bs=1M conv=fsync \
            2>/dev/null
        wait
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc -l
    done | sort -n | sed -n 2p |
        { read -r s; printf '%-14s %-6s %7.2f s %12s    %s\n' rewrite_cold \
            floor "$s" - "dd of the new version beside a durable copy of the old, cold caches"; }
    rm -f "$T/floor.ckpt"
else
    echo "(cold rows skipped: cannot drop the page cache)"
fi

# --basis auto (the default) where no basis pays, beside --basis none in
# the same run, and where one does, beside rsync --fuzzy. Each run starts
# from a destination that SETUP makes; tools alternate within a rep.
#   shards         NSHARDS new shards of one extension, empty destination
#   shards_beside  ... beside as many other shards (cp: no kept signatures)
#   moved          a checkpoint every element of which moved a little,
#                  beside the last one (cp)
#   moved_kept     ... the last one sent by ferry (its signatures kept)
#   partial        a checkpoint under a new name, 4 regions of 1.25 MiB
#                  (1%) rewritten, beside the last one
NSHARDS=${FERRY_BENCH_SHARDS:-16}
SHARD_MIB=${FERRY_BENCH_SHARD_MIB:-64}
PY=python3
python3 -c 'import numpy' 2>/dev/null ||
    { /usr/bin/python3 -c 'import numpy' 2>/dev/null && PY=/usr/bin/python3; }
gen_py() { "$PY" "$BENCH_DIR/gen.py" "$@"; }

# pair ID TEXT SRC SETUP TOOLS...: TOOLS among ferry (defaults), none
# (ferry --basis none) and fuzzy (rsync --fuzzy).
pair() {
    local id=$1 text=$2 src=$3 setup=$4 tool rep dest=$SHM/dest
    wants "$id" || return 0
    shift 4
    local order=("$@") back=()
    for tool in "$@"; do : >"$T/times-$tool"; back=("$tool" "${back[@]}"); done
    for rep in $(seq 1 "$REPS"); do
        # Every other repetition in the other order: the first run of a
        # repetition was 12% slower here whichever tool it was (50 shards
        # into an empty destination, where both take the same path).
        if [ $((rep % 2)) = 0 ]; then order=("${back[@]}"); else order=("$@"); fi
        for tool in "${order[@]}"; do
            rm -rf "$dest"
            mkdir -p "$dest"
            "$setup" "$dest" "$tool"
            cat "$src"/* "$dest"/* >/dev/null 2>&1 || true
            mem_prefault $((SIZE_MIB * 3))
            case $tool in
            ferry) run_one ferry "$src/" "$dest" ;;
            none) run_one ferry "$src/" "$dest" --basis none ;;
            fuzzy) run_one rsync "$src/" "$dest" --fuzzy ;;
            esac
            same_copies "$src" "$dest" "$id: $tool"
            echo "$SECS $WIRE" >>"$T/times-$tool"
        done
    done
    for tool in "$@"; do
        median "$T/times-$tool" "$id" "$tool" "$text"
    done
    # The defaults against --basis none run by run (the two run minutes
    # apart at most): the median of the ratios, the 3% aim's measure.
    if [ -s "$T/times-ferry" ] && [ -s "$T/times-none" ]; then
        paste -d' ' "$T/times-ferry" "$T/times-none" |
            awk '{ print $1 / $3 }' | sort -n |
            sed -n "$(( (REPS + 1) / 2 ))p" |
            { read -r q; printf '%-14s %-6s %7.3f x --basis none, the median of %d runs side by side%s\n' \
                "$id" paired "$q" "$REPS" \
                "$(awk -v q="$q" 'BEGIN { print q <= 1.03 ? "" : " (aim 1.03 MISSED)" }')"; }
    fi
}

# wants ID...: 1 if any of the rows is to run.
wants() {
    local id
    for id in "$@"; do
        case " ${FERRY_BENCH_ONLY:-$id} " in *" $id "*) return 0 ;; esac
    done
    return 1
}
mkdir -p "$D/shards" "$D/shards_old" "$D/moved" "$D/partial"
if wants shards shards_beside; then
    for i in $(seq 1 "$NSHARDS"); do
        gen random "$D/shards/shard-$(printf %03d "$i").bin" \
            $((SHARD_MIB * MIB)) "shard-$i"
        gen random "$D/shards_old/shard-$(printf %03d $((i + 500))).bin" \
            $((SHARD_MIB * MIB)) "old-shard-$i"
    done
fi
if wants moved moved_kept partial; then
    gen_py weights "$D/ckpt-1.npy" "$SIZE" 21
    gen_py perturb "$D/ckpt-1.npy" "$D/moved/ckpt-2.npy" 22
    gen_py regions "$D/ckpt-1.npy" "$D/partial/ckpt-2.npy" 4 1310720 23
fi
sync

set_empty() { :; }
set_shards() { cp -p "$D/shards_old"/* "$1/"; }
set_ckpt() { cp -p "$D/ckpt-1.npy" "$1/"; }
set_ckpt_kept() {
    if [ "$2" = fuzzy ]; then
        cp -p "$D/ckpt-1.npy" "$1/"
    else
        "$FERRY" push -q -F "$SSH_CONFIG" --agent "$AGENT" \
            "$D/ckpt-1.npy" "ferry-test:$1/" || fail "the last checkpoint's push"
    fi
}
pair shards "$NSHARDS x $SHARD_MIB MiB new shards (.bin), empty dest" \
    "$D/shards" set_empty ferry none
pair shards_beside "$NSHARDS x $SHARD_MIB MiB new shards beside as many others (cp)" \
    "$D/shards" set_shards ferry none
pair moved "every element moved a little, beside the last one (cp)" \
    "$D/moved" set_ckpt ferry none
pair moved_kept "every element moved a little, beside the last one sent by ferry" \
    "$D/moved" set_ckpt_kept ferry none
pair partial "new name, 4 regions of 1.25 MiB (1%) rewritten, beside the last one (cp)" \
    "$D/partial" set_ckpt ferry none fuzzy

"$FERRY_TOOLS/delta_rate" "$SIZE_MIB" | sed 's/^/rate /'
