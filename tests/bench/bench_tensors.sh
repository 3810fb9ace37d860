#!/usr/bin/env bash
# bench_tensors.sh [MiB]: checkpoints sent as their tensors' differences,
# over the test sshd on 127.0.0.1 (tests/lib/sshd.sh): a bf16 and an fp32
# safetensors pair (tests/lib/ckpt_pair.py "perturbed": weights drawn
# from N(0, 0.02), every one moved by N(0, 0.0005), seed 1000), the newer
# save pushed beside the older one, with ferry (tensors auto), ferry
# --tensors=never, ferry -z and rsync. One row per pair and tool: the
# median wall time of REPS runs and the bytes on the wire (ferry:
# bytes_wire + bytes_wire_in; rsync: its --stats), with their ratio to
# the file. Every copy is checked against its source. See
# docs/BENCHMARKS.md, "Tensor checkpoints".
#
#   FERRY_BENCH_REPS     runs per row (default 3)
set -eu
SIZE_MIB=${1:-256}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
: "${FERRY_BIN:=$ROOT/bin}"
: "${FERRY_TOOLS:=$ROOT/build/release/tests}"
cd "$ROOT"
. "$ROOT/tests/lib/common.sh"
. "$ROOT/tests/lib/sshd.sh"
REPS=${FERRY_BENCH_REPS:-3}
sshd_start

D=$T/data
for dt in BF16 F32; do
    mkdir -p "$D/$dt"
    python3 "$ROOT/tests/lib/ckpt_pair.py" "$D/$dt/step-1000.safetensors" \
        "$D/$dt/step-2000.safetensors" perturbed "$SIZE_MIB" "$dt"
done
sync

# run_one TOOL SRC DEST: one push of SRC's newer save into DEST (which
# holds the older one); sets SECS and WIRE.
run_one() {
    local tool=$1 src=$2 dest=$3 t0 t1 opts=()
    case $tool in
    ferry) ;;
    ferry-never) opts=(--tensors=never) ;;
    ferry-z) opts=(-z) ;;
    esac
    t0=$(date +%s.%N)
    if [ "$tool" = rsync ]; then
        rsync -a --stats --fuzzy -e "ssh -F '$SSH_CONFIG'" \
            "$src/step-2000.safetensors" "ferry-test:$dest/" >"$T/out" \
            2>"$T/err" || { cat "$T/err"; fail "rsync failed"; }
        t1=$(date +%s.%N)
        WIRE=$(( $(sed -n 's/^Total bytes sent: \([0-9,]*\).*/\1/p' \
            "$T/out" | tr -d ,) + $(sed -n \
            's/^Total bytes received: \([0-9,]*\).*/\1/p' "$T/out" |
            tr -d ,) ))
    else
        "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json "${opts[@]}" \
            "$src/" "ferry-test:$dest" >"$T/out" 2>"$T/err" ||
            { cat "$T/err"; fail "ferry failed"; }
        t1=$(date +%s.%N)
        WIRE=$(( $(grep '"event":"summary"' "$T/out" |
            sed -n 's/.*"bytes_wire":\([0-9]*\).*/\1/p') +
            $(grep '"event":"summary"' "$T/out" |
            sed -n 's/.*"bytes_wire_in":\([0-9]*\).*/\1/p') ))
    fi
    SECS=$(echo "$t1 - $t0" | bc -l)
    cmp "$src/step-2000.safetensors" "$dest/step-2000.safetensors" ||
        fail "$tool: the copy differs"
}

printf '%-6s %-12s %9s %12s %7s\n' pair tool seconds wire ratio
for dt in BF16 F32; do
    size=$(stat -c %s "$D/$dt/step-2000.safetensors")
    for tool in ferry ferry-never ferry-z rsync; do
        : >"$T/times"
        for rep in $(seq 1 "$REPS"); do
            rm -rf "$T/dest"
            mkdir -p "$T/dest"
            cp -p "$D/$dt/step-1000.safetensors" "$T/dest/"
            run_one "$tool" "$D/$dt" "$T/dest"
            echo "$SECS" >>"$T/times"
        done
        med=$(sort -n "$T/times" | sed -n "$(( (REPS + 1) / 2 ))p")
        printf '%-6s %-12s %9.3f %12d %7.3f\n' "$dt" "$tool" "$med" "$WIRE" \
            "$(echo "$WIRE / $size" | bc -l)"
    done
done
