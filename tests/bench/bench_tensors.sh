#!/usr/bin/env bash
# bench_tensors.sh [MiB]: checkpoints sent as their tensors' differences.
# Two real pairs of saves, 50 training steps apart, from
# tests/bench/torch_pair.py (PyTorch trains a small language model with
# AdamW; its recipe is fixed there): bf16 weights as safetensors, and fp32
# weights with AdamW's state as torch.save writes them, each about MiB
# (default 256). They are made once and kept in
# ~/.cache/ferry-bench/torch-pair-v1-MiB (python3-torch and
# libopenblas0-pthread are installed if missing).
#
# The pair's directory is pushed into one that holds the older save (the
# same file, its time kept, so each tool skips it), over the test sshd on 127.0.0.1, with ferry
# (tensors auto), ferry --tensors=never, ferry --basis none (no basis: the
# 3% aim of a guess that shares nothing, as on loopback, where tensors are
# not coded and every block differs), ferry -z and rsync --fuzzy, on
# loopback and through netproxy at 100 Mbit/s (a 50 ms round trip: a
# long link, where blocks are compressed and tensors coded). One
# row per link, pair and tool: the median wall time of REPS runs (the
# tools alternate within a run, each starting one place later) and the bytes on the wire (ferry:
# bytes_wire; rsync: its --stats), with their ratio to the file. Every copy
# is checked against its source. Then the aims (docs/BENCHMARKS.md,
# "Tensor checkpoints"), each with what was measured and ok or MISSED.
#
#   FERRY_BENCH_REPS     runs per row (default 4: each tool once in each
#                        place of the order)
#   FERRY_BENCH_TOOLS    the tools, in their first order
#   FERRY_BENCH_LINKS    "loopback wan100" (default both)
set -eu
SIZE_MIB=${1:-256}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
: "${FERRY_BIN:=$ROOT/bin}"
: "${FERRY_TOOLS:=$ROOT/build/release/tests}"
# Before common.sh, which points XDG_CACHE_HOME into its scratch dir.
PAIRS=${XDG_CACHE_HOME:-$HOME/.cache}/ferry-bench/torch-pair-v1-$SIZE_MIB
cd "$ROOT"
. "$ROOT/tests/lib/common.sh"
. "$ROOT/tests/lib/sshd.sh"
. "$ROOT/tests/lib/netproxy.sh"
REPS=${FERRY_BENCH_REPS:-4}
LINKS=${FERRY_BENCH_LINKS:-loopback wan100}
# Debian's torch is for Debian's python, whatever python3 comes first.
PY=/usr/bin/python3

if ! "$PY" -c 'import torch' 2>/dev/null; then
    sh "$ROOT/tests/deps.sh" python3-torch libopenblas0-pthread
fi
if [ ! -e "$PAIRS/done" ]; then
    echo "making the checkpoint pairs ($SIZE_MIB MiB; once, kept in $PAIRS)"
    rm -rf "$PAIRS"
    mkdir -p "$PAIRS"
    "$PY" "$BENCH_DIR/torch_pair.py" "$PAIRS" "$SIZE_MIB"
    : >"$PAIRS/done"
fi
sshd_start

# pair_files PAIR: sets OLD and NEW, the older and newer save's names.
pair_files() {
    case $1 in
    bf16) OLD=step-A.safetensors NEW=step-B.safetensors ;;
    fp32) OLD=step-A.pth NEW=step-B.pth ;;
    esac
}

# run_one TOOL PAIR HOST: one push of PAIR's newer save into a fresh
# destination that holds the older one; sets SECS and WIRE.
run_one() {
    local tool=$1 src=$PAIRS/$2 dest=$T/dest t0 t1 opts=()
    pair_files "$2"
    rm -rf "$dest"
    mkdir -p "$dest"
    cp -p "$src/$OLD" "$dest/"
    sync
    case $tool in
    ferry) ;;
    ferry-never) opts=(--tensors=never) ;;
    ferry-none) opts=(--basis none) ;;
    ferry-z) opts=(-z) ;;
    esac
    t0=$(date +%s.%N)
    if [ "$tool" = rsync ]; then
        rsync -a --stats --fuzzy -e "ssh -F '$SSH_CONFIG'" \
            "$src/" "$3:$dest/" >"$T/out" 2>"$T/err" ||
            { cat "$T/err"; fail "rsync failed"; }
        t1=$(date +%s.%N)
        # What ran next, on loopback, ran 0.4 s slower right after rsync
        # (cause not found): a pause removes it.
        sleep 2
        WIRE=$(( $(sed -n 's/^Total bytes sent: \([0-9,]*\).*/\1/p' \
            "$T/out" | tr -d ,) + $(sed -n \
            's/^Total bytes received: \([0-9,]*\).*/\1/p' "$T/out" |
            tr -d ,) ))
    else
        "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json "${opts[@]}" \
            "$src/" "$3:$dest" >"$T/out" 2>"$T/err" ||
            { cat "$T/err"; fail "ferry failed"; }
        t1=$(date +%s.%N)
        WIRE=$(grep '"event":"summary"' "$T/out" |
            sed -n 's/.*"bytes_wire":\([0-9]*\).*/\1/p')
    fi
    SECS=$(echo "$t1 - $t0" | bc -l)
    cmp "$src/$NEW" "$dest/$NEW" || fail "$tool: the copy differs"
}

TOOLS_RUN=${FERRY_BENCH_TOOLS:-"ferry ferry-never ferry-none ferry-z rsync"}
printf '%-9s %-5s %-12s %9s %12s %7s\n' link pair tool seconds wire ratio
for link in $LINKS; do
    case $link in
    loopback) host=ferry-test ;;
    wan100) proxy_start --rate 100 --delay-ms 25; host=ferry-proxy ;;
    *) fail "FERRY_BENCH_LINKS: loopback or wan100, not $link" ;;
    esac
    for pair in bf16 fp32; do
        pair_files "$pair"
        size=$(stat -c %s "$PAIRS/$pair/$NEW")
        for tool in $TOOLS_RUN; do : >"$T/times.$tool"; done
        for rep in $(seq 1 "$REPS"); do
            # Each rep starts one tool later, so every tool takes every
            # place.
            set -- $TOOLS_RUN
            for _ in $(seq 2 "$rep"); do set -- "$@" "$1"; shift; done
            for tool in "$@"; do
                run_one "$tool" "$pair" "$host"
                echo "$SECS" >>"$T/times.$tool"
                echo "$WIRE" >"$T/wire.$tool"
            done
        done
        # Against --basis none, run by run (the runs of one rep are
        # minutes apart at most, and the load moves less within a rep).
        if [ -s "$T/times.ferry-none" ] && [ -s "$T/times.ferry" ]; then
            echo "$link $pair $(paste -d' ' "$T/times.ferry" \
                "$T/times.ferry-none" | awk '{ print $1 / $2 }' | sort -n |
                sed -n "$(( (REPS + 1) / 2 ))p")" >>"$T/paired"
        fi
        for tool in $TOOLS_RUN; do
            med=$(sort -n "$T/times.$tool" | sed -n "$(( (REPS + 1) / 2 ))p")
            wire=$(cat "$T/wire.$tool")
            echo "$link $pair $tool $med $wire $size" >>"$T/rows"
            printf '%-9s %-5s %-12s %9.3f %12d %7.3f\n' "$link" "$pair" \
                "$tool" "$med" "$wire" "$(echo "$wire / $size" | bc -l)"
        done
    done
    [ "$link" = loopback ] || proxy_stop
done

# The aims (docs/BENCHMARKS.md, "Tensor checkpoints on the wire"):
# through the 100 Mbit/s link, where tensors are coded, the bytes (no more
# than -z, but for a few bytes of messages per block) and the time against
# --tensors=never's scaled by the two tools' bytes; on loopback, where the
# link outruns the codec and ferry steps aside, the time alone.
echo
: >>"$T/paired"
awk -v reps="$REPS" '
FILENAME ~ /paired$/ { q[$1, $2] = $3; next }
{ t[$1, $2, $3] = $4; w[$1, $2, $3] = $5; s[$1, $2] = $6; l[$1] = 1 }
function say(what, ok) { printf "%-66s %s\n", what, ok ? "ok" : "MISSED" }
END {
    for (k in l) for (p = 0; p < 2; p++) {
        pair = p ? "fp32" : "bf16"; aim = p ? 0.82 : 0.52
        if (!((k, pair, "ferry") in w)) continue
        f = t[k, pair, "ferry"]; n = t[k, pair, "ferry-never"]
        if (k == "wan100" && (k, pair, "ferry-never") in w) {
            r = w[k, pair, "ferry"] / s[k, pair]
            say(sprintf("%s %s: %.3f of the file on the wire (at most %.2f)",
                k, pair, r, aim), r <= aim)
            say(sprintf("%s %s: %d bytes, ferry -z %d", k, pair,
                w[k, pair, "ferry"], w[k, pair, "ferry-z"]),
                w[k, pair, "ferry"] <= w[k, pair, "ferry-z"] * 1.001)
            b = w[k, pair, "ferry"] / w[k, pair, "ferry-never"]
            lim = 1.1 * b * n
            say(sprintf("%s %s: %.2f s, at most 1.1 x %.3f x %.2f s = %.2f",
                k, pair, f, b, n, lim), f <= lim)
        } else if ((k, pair, "ferry-never") in w) {
            lim = n + (0.05 * n > 0.1 ? 0.05 * n : 0.1)
            say(sprintf("%s %s: %.2f s, at most %.2f (never %.2f; %d runs)",
                k, pair, f, lim, n, reps), f <= lim)
        }
        if (!((k, pair, "ferry-none") in w)) continue
        b = w[k, pair, "ferry"] / w[k, pair, "ferry-none"]
        say(sprintf("%s %s: %.4f x the bytes of --basis none (at most 1.01)", k,
            pair, b), b <= 1.01)
        say(sprintf("%s %s: %.3f x the time of --basis none, median of runs " \
            "(at most 1.03)", k, pair, q[k, pair]), q[k, pair] <= 1.03)
    }
}' "$T/paired" "$T/rows"
