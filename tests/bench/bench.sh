#!/usr/bin/env bash
# bench.sh quick|full|streams: ferry side by side with rsync, scp and
# tar|zstd|ssh, on loopback and through an emulated WAN (tests/tools/netproxy).
# streams: 1 GiB pushes and pulls with default settings next to rsync and
# scp, on loopback and through the WAN, and ferry's rate against -j 1, 2,
# 4, 8 and 16 (its own results section in docs/BENCHMARKS.md).
#
# Starts the test sshd on 127.0.0.1 (tests/lib/sshd.sh), generates seeded
# data in a temp dir, runs every scenario with every tool (alternating,
# median of REPS runs), checks each copy against its source and prints a
# table. Writes build/bench/results-<UTC time>-<mode>.json and latest.json;
# a full run also rewrites the results section of docs/BENCHMARKS.md.
# Exits 1 if a row failed or a copy differs ("not built" rows are fine).
# See docs/BENCHMARKS.md for what is measured and how.
#
# Environment:
#   FERRY_BIN, FERRY_TOOLS     where ferry/ferry-agent and netproxy are
#   FERRY_BENCH_TRANSPORT      ssh (default) or local: ferry rows use local:
#                              (no sshd, no WAN rows), to develop the harness
#   FERRY_BENCH_ONLY           scenario ids to run, e.g. "big small"
#   FERRY_BENCH_REPS           repetitions (default 3 full, 1 quick)
#   FERRY_BENCH_OUT            output directory (default build/bench)
#   FERRY_BENCH_DOCS           1/0: update docs/BENCHMARKS.md (default: full)
#   FERRY_BENCH_DROP_CACHES    1/0: drop the page cache before each run
#                              (default: full mode, if permitted)
#   FERRY_BENCH_WAN_BIG_MIB    size of the WAN big file (default 256 full)
#   FERRY_BENCH_LONG_RTTS      streams: round trips (ms) of the long-link
#                              rows beside the 50 ms ones (default
#                              "100 200"; "" runs none)
#   FERRY_BENCH_LONG_PEER_REPS streams: runs of rsync per long-link row
#                              (default 1: at 200 ms one takes 2 minutes)
#   FERRY_BENCH_BEFORE         a directory with ferry and ferry-agent of an
#                              earlier build: each ferry row of the loopback
#                              and WAN scenarios also runs with it, in turn
#                              (tool "NAME @LABEL"), and the report compares
#                              the two (make bench BEFORE=REV builds one)
#   FERRY_BENCH_BEFORE_LABEL   its name in the table (default "before")
#   FERRY_BENCH_WATCH_EVERY    seconds between the watch row's saves
#                              (default 20 full, 4 quick)
#   FERRY_BENCH_WATCH_S        the watch's interval (default 5 full, 1 quick)
#   FERRY_BENCH_WATCH_COUNT    checkpoints saved, the first excluded
#                              (default 5 full, 3 quick)
set -eu

# What ferry can do today; flip these as features land. Delta and resume
# rows still run when "no" (ferry then re-sends whole files) and say so in
# their notes; the "ferry -z" row is listed as not run.
FEATURE_DELTA=yes     # rsync-style block matching of changed files
FEATURE_RESUME=yes    # a killed transfer continues from .ferry/part
FEATURE_COMPRESS=yes  # ferry -z: zstd on the wire for compressible data

MODE=${1:-}
case $MODE in
quick | full | streams) ;;
*)
    echo "usage: bench.sh quick|full|streams" >&2
    exit 2
    ;;
esac

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
: "${FERRY_BIN:=$ROOT/bin}"
: "${FERRY_TOOLS:=$ROOT/build/release/tests}"
case $FERRY_BIN in /*) ;; *) FERRY_BIN=$ROOT/$FERRY_BIN ;; esac
case $FERRY_TOOLS in /*) ;; *) FERRY_TOOLS=$ROOT/$FERRY_TOOLS ;; esac
cd "$ROOT"
# common.sh: $FERRY, $AGENT, $TOOLS, scratch dir $T (removed on exit),
# at_exit hooks; sshd.sh: sshd_start.
. "$ROOT/tests/lib/common.sh"
. "$ROOT/tests/lib/sshd.sh"
. "$BENCH_DIR/memory.sh"
set -o pipefail

START_S=$(date +%s)
TRANSPORT=${FERRY_BENCH_TRANSPORT:-ssh}
case $TRANSPORT in ssh | local) ;; *) fail "FERRY_BENCH_TRANSPORT: ssh or local" ;; esac
OUT_DIR=${FERRY_BENCH_OUT:-$ROOT/build/bench}
NETPROXY=$TOOLS/netproxy
MIB=1048576

# Sizes. The WAN big file is smaller than the loopback one: OpenSSH's
# 2 MiB channel window caps the peers at ~35 MB/s over a 50 ms RTT, and
# 1 GiB x 3 peers x 3 runs would take most of the 10 minute budget.
if [ "$MODE" = streams ]; then
    # Every row moves the same 1 GiB file. The -j tables run once per
    # repetition of FERRY_BENCH_TABLE_REPS (1): they show where streams
    # stop paying, which one run shows as well as three, within budget.
    REPS=${FERRY_BENCH_REPS:-3}
    TABLE_REPS=${FERRY_BENCH_TABLE_REPS:-1}
    CMD_TIMEOUT=300
    BIG=$((${FERRY_BENCH_STREAMS_MIB:-1024} * MIB))
    SMALL_N=0 TEXT=0 CKPT=0 WAN_BIG=$BIG SCP_SAMPLE=0
    SLOW_MBIT=1000
    DOCS=${FERRY_BENCH_DOCS:-1}
    DROP=${FERRY_BENCH_DROP_CACHES:-1}
elif [ "$MODE" = full ]; then
    REPS=${FERRY_BENCH_REPS:-3}
    CMD_TIMEOUT=300
    BIG=$((1024 * MIB))
    SMALL_N=20000
    TEXT=$((200 * MIB))
    CKPT=$((512 * MIB))
    WAN_BIG=$((${FERRY_BENCH_WAN_BIG_MIB:-256} * MIB))
    SCP_SAMPLE=20
    SLOW_MBIT=1000
    DOCS=${FERRY_BENCH_DOCS:-1}
    DROP=${FERRY_BENCH_DROP_CACHES:-1}
    WATCH_EVERY=${FERRY_BENCH_WATCH_EVERY:-20}
    WATCH_S=${FERRY_BENCH_WATCH_S:-5}
    WATCH_COUNT=${FERRY_BENCH_WATCH_COUNT:-5}
    WATCH_K=4
else
    REPS=${FERRY_BENCH_REPS:-1}
    CMD_TIMEOUT=60
    BIG=$((32 * MIB))
    SMALL_N=500
    TEXT=$((8 * MIB))
    CKPT=$((32 * MIB))
    WAN_BIG=$((${FERRY_BENCH_WAN_BIG_MIB:-16} * MIB))
    SCP_SAMPLE=4
    SLOW_MBIT=100
    DOCS=${FERRY_BENCH_DOCS:-0}
    DROP=${FERRY_BENCH_DROP_CACHES:-0}
    WATCH_EVERY=${FERRY_BENCH_WATCH_EVERY:-4}
    WATCH_S=${FERRY_BENCH_WATCH_S:-1}
    WATCH_COUNT=${FERRY_BENCH_WATCH_COUNT:-3}
    WATCH_K=1
fi
WAN_DELAY_MS=25 # one way, each direction: 50 ms RTT
WAN_MBIT=1000
LONG_RTTS=""
[ "$MODE" = streams ] && LONG_RTTS=${FERRY_BENCH_LONG_RTTS-"100 200"}
LONG_PEER_REPS=${FERRY_BENCH_LONG_PEER_REPS:-1}
SEED=20240501
ONLY=${FERRY_BENCH_ONLY:-}

# The interpreter itself, not a version manager's shim: the harness starts
# Python a few times per run and a shim costs ~0.1 s each time.
PY=$(python3 -c 'import sys; print(sys.executable)')

RUNS=$T/runs.ndjson
: >"$RUNS"
mkdir -p "$T/data" "$T/dst" "$T/bin" "$T/rss"
RSS_AGENT=$T/rss/agent
BEFORE=${FERRY_BENCH_BEFORE:-}
BEFORE_LABEL=${FERRY_BENCH_BEFORE_LABEL:-before}

log() { printf '[bench %3ds] %s\n' "$(($(date +%s) - START_S))" "$*" >&2; }

# q WORD: WORD quoted for a remote shell.
q() { printf '%q' "$1"; }

record() { "$PY" "$BENCH_DIR/report.py" record "$RUNS" "$@"; }

wanted() {
    [ -z "$ONLY" ] && return 0
    case " $ONLY " in *" $1 "*) return 0 ;; esac
    return 1
}

# ---------------------------------------------------------------- setup

check_prereqs() {
    local c
    for c in rsync scp ssh zstd tar python3 ss stdbuf /usr/bin/time \
        /usr/sbin/sshd openssl; do
        command -v "$c" >/dev/null || fail "missing $c (make deps)"
    done
    [ -x "$FERRY" ] || fail "no $FERRY (make all)"
    if [ -n "$BEFORE" ] && ! [ -x "$BEFORE/ferry" -a -x "$BEFORE/ferry-agent" ]; then
        fail "FERRY_BENCH_BEFORE: no ferry and ferry-agent in $BEFORE"
    fi
    [ -x "$AGENT" ] || fail "no $AGENT (make all)"
}

# Wrappers that record the peak RSS of the remote side into $RSS_AGENT:
# ferry's agent (given to ferry with --agent) and the sftp-server behind
# scp. rsync and tar get theirs through the remote command line.
make_wrappers() {
    cat >"$T/bin/ferry-agent-timed" <<EOF
#!/bin/sh
exec /usr/bin/time -a -o $(q "$RSS_AGENT") -f %M $(q "$AGENT") "\$@"
EOF
    [ -z "$BEFORE" ] || cat >"$T/bin/ferry-agent-before-timed" <<EOF
#!/bin/sh
exec /usr/bin/time -a -o $(q "$RSS_AGENT") -f %M $(q "$BEFORE/ferry-agent") "\$@"
EOF
    local sftp=/usr/lib/openssh/sftp-server
    [ -x "$sftp" ] || sftp=/usr/libexec/openssh/sftp-server
    [ -x "$sftp" ] || sftp=/usr/libexec/sftp-server
    [ -x "$sftp" ] || fail "no sftp-server found (scp needs it)"
    cat >"$T/bin/sftp-server-timed" <<EOF
#!/bin/sh
exec /usr/bin/time -a -o $(q "$RSS_AGENT") -f %M $sftp "\$@"
EOF
    # tar | zstd | ssh, both directions. $1 local dir, $2 ssh config,
    # $3 host, $4 remote dir, $5 RSS file.
    cat >"$T/bin/tar-push" <<'EOF'
#!/usr/bin/env bash
set -eu -o pipefail
remote="mkdir -p $(printf %q "$4") && zstd -dq | tar -C $(printf %q "$4") -xf -"
tar -C "$1" -cf - . | zstd -q -T0 |
    ssh -F "$2" "$3" "/usr/bin/time -a -o $(printf %q "$5") -f %M sh -c $(printf %q "$remote")"
EOF
    cat >"$T/bin/tar-pull" <<'EOF'
#!/usr/bin/env bash
set -eu -o pipefail
remote="tar -C $(printf %q "$4") -cf - . | zstd -q -T0"
mkdir -p "$1"
ssh -F "$2" "$3" "/usr/bin/time -a -o $(printf %q "$5") -f %M sh -c $(printf %q "$remote")" |
    zstd -dq | tar -C "$1" -xf -
EOF
    chmod +x "$T/bin/"*
}

# The test sshd, restarted with its sftp subsystem (scp uses SFTP by
# default since OpenSSH 9.0) replaced by sftp-server behind the RSS
# wrapper.
start_sshd() {
    sshd_start
    local old=$SSHD_PID
    sshd_stop
    wait "$old" 2>/dev/null || true
    sed -i '/^Subsystem[[:space:]]\{1,\}sftp[[:space:]]/d' "$SSHD_DIR/sshd_config"
    printf 'Subsystem sftp %s\n' "$T/bin/sftp-server-timed" \
        >>"$SSHD_DIR/sshd_config"
    sshd_launch
}

PROXY_PIDS=""
stop_proxies() {
    local p
    for p in $PROXY_PIDS; do kill "$p" 2>/dev/null || true; done
    PROXY_PIDS=""
}

# spawn_listener NAME TARGET ARGS...: a netproxy (TARGET host:port) or,
# with TARGET "sink", a linksink, in the background; sets LISTEN_PORT once
# it listens.
spawn_listener() {
    local name=$1 target=$2
    shift 2
    rm -f "$T/$name.port"
    if [ "$target" = sink ]; then
        python3 "$BENCH_DIR/linksink.py" serve "$T/$name.port" \
            2>"$T/$name.log" &
    else
        "$NETPROXY" -q --port-file "$T/$name.port" --lifetime 3600 "$@" \
            "$target" 2>"$T/$name.log" &
    fi
    PROXY_PIDS="$PROXY_PIDS $!"
    for _ in $(seq 1 100); do
        [ -s "$T/$name.port" ] && break
        sleep 0.05
    done
    [ -s "$T/$name.port" ] || { cat "$T/$name.log" >&2; fail "$name did not start"; }
    LISTEN_PORT=$(cat "$T/$name.port")
}

# start_proxy NAME ARGS...: a netproxy in front of sshd; sets PROXY_PORT
# and adds "Host NAME" to the bench ssh config.
start_proxy() {
    local name=$1
    shift
    spawn_listener "$name" "127.0.0.1:$SSHD_PORT" "$@"
    PROXY_PORT=$LISTEN_PORT
    sed -e "s/^Host ferry-test\$/Host $name/" \
        -e "s/^\\( *Port \\)$SSHD_PORT\$/\\1$PROXY_PORT/" \
        "$SSH_CONFIG" >>"$CFG"
    printf '[127.0.0.1]:%s %s\n' "$PROXY_PORT" \
        "$(cut -d' ' -f1,2 "$SSHD_DIR/host_ed25519.pub")" \
        >>"$SSHD_DIR/known_hosts"
    ssh -F "$CFG" -o BatchMode=yes "$name" true ||
        fail "ssh through netproxy $name failed"
}

# start_raw_link HOST ARGS...: a netproxy with the emulator ARGS of the
# link HOST, in front of a linksink instead of sshd (the linkfloor tool).
declare -A RAW_PORT=()
SINK_PORT=""
start_raw_link() {
    local host=$1
    shift
    if [ -z "$SINK_PORT" ]; then
        spawn_listener linksink sink
        SINK_PORT=$LISTEN_PORT
    fi
    spawn_listener "raw-$host" "127.0.0.1:$SINK_PORT" "$@"
    RAW_PORT[$host]=$LISTEN_PORT
}

HAVE_PROXY=0
setup_network() {
    CFG=$T/ssh_config
    cp "$SSH_CONFIG" "$CFG"
    at_exit stop_proxies
    if [ -x "$NETPROXY" ]; then
        HAVE_PROXY=1
        start_proxy ferry-wan --delay-ms "$WAN_DELAY_MS" --rate "$WAN_MBIT" \
            --trace "$T/trace-ferry-wan"
        start_proxy ferry-slow --rate "$SLOW_MBIT"
        local rtt
        for rtt in $LONG_RTTS; do
            start_proxy "ferry-wan$rtt" --delay-ms $((rtt / 2)) \
                --rate "$WAN_MBIT" --trace "$T/trace-ferry-wan$rtt"
            if [ "$MODE" = streams ]; then
                start_raw_link "ferry-wan$rtt" --delay-ms $((rtt / 2)) \
                    --rate "$WAN_MBIT"
            fi
        done
        if [ "$MODE" = streams ]; then
            start_raw_link ferry-wan --delay-ms "$WAN_DELAY_MS" \
                --rate "$WAN_MBIT"
        fi
    else
        log "no $NETPROXY: WAN rows not run (make all builds it)"
    fi
}

# run_mib DIR: MiB a run over DIR fills: its pages read and as many
# written, and some for the programs.
declare -A RUN_MIB=()
run_mib() {
    [ -n "${RUN_MIB[$1]:-}" ] ||
        RUN_MIB[$1]=$(( $(du -sm "$1" | cut -f1) * 2 + 128 ))
    echo "${RUN_MIB[$1]}"
}

DROP_OK=0
check_drop_caches() {
    if [ "$DROP" = 1 ] && sync &&
        (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
        DROP_OK=1
    fi
}

drop_caches() {
    if [ "$DROP_OK" = 1 ]; then
        sync
        echo 3 >/proc/sys/vm/drop_caches
    fi
}

# ---------------------------------------------------------- wire bytes
#
# TCP payload bytes of the sshd side of every connection, taken from the
# kernel's tcp_info when each socket is destroyed (ss -E listens to
# sock_diag destroy events). Same method for every tool, nothing in the
# data path; works for WAN rows too (the proxy's connection to sshd).

SS_PID=""
WIRE_OK=0
BG_PID=""
stop_bg() { [ -z "$BG_PID" ] || kill -9 "$BG_PID" 2>/dev/null || true; }
stop_ss() {
    if [ -n "$SS_PID" ]; then
        kill "$SS_PID" 2>/dev/null || true
        wait "$SS_PID" 2>/dev/null || true
        SS_PID=""
    fi
}

# sshd_idle: waits (up to 15 s) until no connection to sshd is open or
# closing; TIME-WAIT sockets are already destroyed and counted.
sshd_idle() {
    local _ open
    for _ in $(seq 1 300); do
        open=$(ss -tanH "( sport = :$SSHD_PORT )" |
            awk '$1 != "LISTEN" && $1 != "TIME-WAIT"' | wc -l)
        [ "$open" -eq 0 ] && return 0
        sleep 0.05
    done
    log "warning: connections to sshd still open after 15 s"
}

# One listener for the whole bench; a run's events are what it appends
# to $T/ss.log between wire_begin and wire_end.
start_ss() {
    : >"$T/ss.log"
    stdbuf -oL ss -tinHE "( sport = :$SSHD_PORT )" >"$T/ss.log" 2>/dev/null &
    SS_PID=$!
    sleep 0.1
}

wire_begin() {
    WIRE_OFF=$(stat -c %s "$T/ss.log")
}

# wire_end: sets WIRE_UP (client to server), WIRE_DOWN, WIRE_CONNS.
wire_end() {
    sshd_idle
    sleep 0.05
    read -r WIRE_UP WIRE_DOWN WIRE_CONNS < <(tail -c +$((WIRE_OFF + 1)) "$T/ss.log" |
        awk -v port=":$SSHD_PORT" '
        /^[^ \t]/ {
            mine = substr($4, length($4) - length(port) + 1) == port
            if (mine) conns++
            next
        }
        mine {
            for (i = 1; i <= NF; i++) {
                split($i, kv, ":")
                if (kv[1] == "bytes_received") up += kv[2]
                if (kv[1] == "bytes_sent") down += kv[2]
            }
            mine = 0
        }
        END { printf "%d %d %d\n", up, down, conns }')
}

check_wire() {
    wire_begin
    ssh -F "$CFG" ferry-test true
    wire_end
    if [ "$WIRE_CONNS" -ge 1 ] && [ "$WIRE_UP" -gt 0 ]; then
        WIRE_OK=1
    else
        log "ss -E sees no socket events: wire bytes not measured"
    fi
}

# ------------------------------------------------------------- data

gen() { "$PY" "$BENCH_DIR/gen.py" "$@"; }

make_data() {
    local d=$T/data
    log "generating data (seed $SEED)"
    if [ "$MODE" = streams ]; then
        mkdir -p "$d/big"
        gen random "$d/big/dataset.bin" "$BIG" "$SEED-big"
        return 0
    fi
    mkdir -p "$d/big" "$d/small" "$d/text" "$d/ckpt" "$d/rewrite" \
        "$d/insert" "$d/wan_big"
    gen random "$d/big/dataset.bin" "$BIG" "$SEED-big"
    gen small "$d/small" "$SMALL_N" "$SEED"
    gen text "$d/text" "$TEXT" "$SEED"
    # A dataset shard too big to pack: the text tree's first ten of
    # sixteen directories in one file (125 MiB in the full bench).
    mkdir -p "$d/shard"
    cat "$d/text"/shard0*/* >"$d/shard/corpus.jsonl"
    gen random "$d/ckpt/model.ckpt" "$CKPT" "$SEED-ckpt"
    touch -d '2024-05-01 12:00:00' "$d/ckpt/model.ckpt"
    # The next version of the checkpoint: 1% rewritten in place, or 4 KiB
    # inserted at the start. Newer mtime, so rsync does not skip it.
    cp --reflink=auto "$d/ckpt/model.ckpt" "$d/rewrite/model.ckpt"
    gen rewrite "$d/rewrite/model.ckpt" 1 "$SEED"
    gen insert "$d/ckpt/model.ckpt" "$d/insert/model.ckpt" 4096 "$SEED"
    touch -d '2024-05-02 12:00:00' "$d/rewrite/model.ckpt" \
        "$d/insert/model.ckpt"
    gen random "$d/wan_big/dataset.bin" "$WAN_BIG" "$SEED-wan"
    mkdir -p "$d/sample1" "$d/sampleN"
    gen sample "$d/small" "$d/sample1" 1
    gen sample "$d/small" "$d/sampleN" "$SCP_SAMPLE"
}

# tree_bytes DIR: total size of the regular files under DIR.
tree_bytes() {
    { find "$1" -type f -printf '%s\n' 2>/dev/null || true; } |
        awk '{ s += $1 } END { print s + 0 }'
}

# tree_disk_bytes DIR: bytes its files hold on disk (blocks allocated):
# what has arrived in a partial file that already has its full length
# with holes (ferry's staging files), unlike its size.
tree_disk_bytes() {
    { find "$1" -type f -printf '%b\n' 2>/dev/null || true; } |
        awk '{ s += $1 * 512 } END { print s + 0 }'
}

# last_line FILE: the last non-blank line of FILE, cut to 120 characters.
last_line() {
    awk 'NF { l = $0 } END { print substr(l, 1, 120) }' "$1" 2>/dev/null || true
}

tree_files() { find "$1" -type f | wc -l; }

# ------------------------------------------------------------ tools

is_ferry() { case $1 in ferry | ferry_* | ferry@*) return 0 ;; esac; return 1; }

# with_before TOOLS...: the tools, each ferry row followed by the same
# row with the earlier build (TOOL@before) when FERRY_BENCH_BEFORE is set.
with_before() {
    local t
    for t in "$@"; do
        echo "$t"
        if [ -n "$BEFORE" ] && is_ferry "$t"; then echo "$t@before"; fi
    done
}

tool_name() {
    case $1 in
    *@before) echo "$(tool_name "${1%@before}") @$BEFORE_LABEL" ;;
    ferry) echo "ferry" ;;
    ferry_z) echo "ferry -z" ;;
    ferry_bw) echo "ferry --bwlimit -j 4" ;;
    ferry_blocks) echo "ferry, no volumes" ;;
    ferry_raw) echo "ferry --compress=never" ;;
    ferry_j*) echo "ferry -j ${1#ferry_j}" ;;
    rsync) echo "rsync -a" ;;
    rsync_z) echo "rsync -az" ;;
    rsync_partial) echo "rsync -a --partial" ;;
    scp | scp_sample) echo "scp -r" ;;
    tar) echo "tar|zstd|ssh" ;;
    floor) echo "floor: tar | tar; sync" ;;
    linkfloor) echo "floor: ssh true, then the bytes over the raw link" ;;
    esac
}

# build_cmd TOOL DIR HOST SRC DEST: sets CMD (an array). DIR is push or
# pull; for a push SRC is local and DEST remote, for a pull the reverse.
# Every tool copies the contents of SRC into DEST.
build_cmd() {
    local tool=$1 dir=$2 host=$3 src=$4 dest=$5
    local rpath f ferry=$FERRY agent=$T/bin/ferry-agent-timed
    rpath="/usr/bin/time -a -o $(q "$RSS_AGENT") -f %M rsync"
    case $tool in *@before)
        tool=${tool%@before}
        ferry=$BEFORE/ferry
        agent=$T/bin/ferry-agent-before-timed
        ;;
    esac
    case $tool in
    ferry | ferry_z | ferry_bw | ferry_blocks | ferry_raw | ferry_j*)
        local remote=(-F "$CFG" --agent "$agent")
        [ "$TRANSPORT" = local ] &&
            remote=(--agent "$agent") && host=local
        [ "$tool" = ferry_z ] && remote+=(-z)
        [ "$tool" = ferry_bw ] && remote+=(--bwlimit "${BW_RATE}B" -j 4)
        # Every file on its own and raw, as before volumes: the rows side
        # by side (on a long link auto would compress blocks now).
        [ "$tool" = ferry_blocks ] &&
            remote+=(--pack-threshold 0 --compress=never)
        [ "$tool" = ferry_raw ] && remote+=(--compress=never)
        case $tool in ferry_j*) remote+=(-j "${tool#ferry_j}") ;; esac
        if [ "$dir" = push ]; then
            CMD=("$ferry" push --json "${remote[@]}" "$src/" "$host:$dest")
        else
            CMD=("$ferry" pull --json "${remote[@]}" "$host:$src/" "$dest")
        fi
        ;;
    rsync | rsync_z | rsync_partial)
        f=-a
        [ "$tool" = rsync_z ] && f=-az
        CMD=(rsync "$f")
        [ "$tool" = rsync_partial ] && CMD+=(--partial)
        CMD+=(-e "ssh -F '$CFG'" --rsync-path="$rpath")
        if [ "$dir" = push ]; then
            CMD+=("$src/" "$host:$dest/")
        else
            CMD+=("$host:$src/" "$dest/")
        fi
        ;;
    scp | scp_sample)
        # scp -r SRC/* DEST/ into an existing DEST (made by prepare_dest).
        if [ "$dir" = push ]; then
            CMD=(scp -q -r -F "$CFG" "$src"/* "$host:$dest/")
        else
            CMD=(scp -q -r -F "$CFG" "$host:$src/*" "$dest/")
        fi
        ;;
    tar)
        if [ "$dir" = push ]; then
            CMD=("$T/bin/tar-push" "$src" "$CFG" "$host" "$dest" "$RSS_AGENT")
        else
            CMD=("$T/bin/tar-pull" "$dest" "$CFG" "$host" "$src" "$RSS_AGENT")
        fi
        ;;
    floor)
        # What any tool must do, without a network: read the files and
        # create them durably (ferry syncs what it commits; the peers'
        # rows do not).
        CMD=(sh -c 'mkdir -p "$2" && tar -C "$1" -cf - . | tar -C "$2" -xf - && sync -f "$2"' \
            floor "$src" "$dest")
        ;;
    linkfloor)
        # What any SSH tool spends on this link at least: OpenSSH's own
        # login and command (no transfer), then the bytes over a plain TCP
        # connection through the same emulator. Both ends are this
        # machine, so the files are read here whichever way the row goes.
        CMD=(sh -c 'ssh -F "$1" -o BatchMode=yes "$2" true &&
            cat "$3"/* | python3 "$4" send "$5"' linkfloor "$CFG" "$host" \
            "$src" "$BENCH_DIR/linksink.py" "${RAW_PORT[$host]}")
        ;;
    *) fail "unknown tool $tool" ;;
    esac
}

tool_notes() {
    local tool=${1%@before} scen=$2
    case $tool in
    ferry | ferry_z | ferry_bw | ferry_blocks | ferry_raw | ferry_j*)
        [ "$tool" = ferry_z ] && echo "zstd blocks (files under --pack-threshold travel in volumes, compressed either way)"
        [ "$tool" = ferry_bw ] &&
            echo "limit $((BW_RATE / 1024)) KiB/s over 4 streams; ok within 15%"
        [ "$tool" = ferry_blocks ] && echo "--pack-threshold 0 --compress=never"
        [ "$tool" = ferry_raw ] && echo "blocks sent raw"
        case $scen in
        delta_*) [ "$FEATURE_DELTA" = yes ] ||
            echo "delta not built yet: whole file re-sent" ;;
        resume) [ "$FEATURE_RESUME" = yes ] ||
            echo "resume not built yet: starts from 0" ;;
        esac
        if [ "$TRANSPORT" = local ]; then
            echo "local: transport, wire = ferry's own count"
        fi
        ;;
    rsync_z) echo "zlib" ;;
    scp | scp_sample) echo "SFTP mode, mtimes not kept" ;;
    tar) echo "zstd -3 -T0" ;;
    floor) echo "local, no network: reading the files and creating them durably" ;;
    linkfloor) echo "ssh -F CFG HOST true, then cat | TCP through an identical emulator to a sink" ;;
    esac
}

# ----------------------------------------------------------- measure

# Deleting a tree of 20,000 files takes seconds here (ext4 mounted with
# discard). A finished destination is moved to $T/trash instead, and
# deleted in the background while the next run's copy is checked, never
# while a run is being timed.
TRASH_PID=""
trash_wait() {
    if [ -n "$TRASH_PID" ]; then
        wait "$TRASH_PID" || true
        TRASH_PID=""
    fi
    rm -rf "$T/trash"
}

trash_empty_bg() {
    [ -e "$T/trash" ] || return 0
    rm -rf "$T/trash" &
    TRASH_PID=$!
}

# prepare_dest HOW DEST TOOL: fresh (empty; scp needs it to exist), old
# (a copy of the old checkpoint, for the delta rows), keep (resume) or
# none (just out of the way).
prepare_dest() {
    local how=$1 dest=$2 tool=$3
    case $how in
    keep) return 0 ;;
    esac
    if [ -e "$dest" ]; then
        trash_wait
        mv "$dest" "$T/trash"
    fi
    case $how in
    fresh) case $tool in scp | scp_sample) mkdir -p "$dest" ;; esac ;;
    old) cp -a --reflink=auto "$T/data/ckpt" "$dest" ;;
    esac
}

# max_int FILE: the largest integer line in FILE, or nothing.
max_int() {
    [ -f "$1" ] || return 0
    awk '/^[0-9]+$/ { if ($1 > m) m = $1 } END { if (m) print m }' "$1"
}

# run_once TOOL DIR HOST SRC DEST CHECK_SRC: runs one measured command
# and checks DEST against CHECK_SRC. Sets R_STATUS, R_REASON, R_RSS_AGENT
# and wire counters; runcmd.py's result is in $T/run.json.
run_once() {
    local tool=$1 dir=$2 host=$3 src=$4 dest=$5 check=$6 rc
    build_cmd "$tool" "$dir" "$host" "$src" "$dest"
    rm -f "$RSS_AGENT"
    drop_caches
    mem_prefault "$(run_mib "$check")"
    wire_begin
    # When the run began, for link_start (runcmd.py's own start, a few
    # tens of ms, is counted in).
    R_T0_MS=$(date +%s%3N)
    "$PY" "$BENCH_DIR/runcmd.py" --timeout "$CMD_TIMEOUT" \
        --result "$T/run.json" --stdout "$T/run.out" --stderr "$T/run.err" \
        -- "${CMD[@]}"
    wire_end
    trash_empty_bg
    rc=$(sed -n 's/.*"rc": *\(-*[0-9]*\).*/\1/p' "$T/run.json")
    R_REASON=""
    if [ "$rc" = 0 ] && [ "$tool" = linkfloor ]; then
        R_STATUS=ok  # it writes nothing: its sink only counts the bytes
    elif [ "$rc" = 0 ]; then
        # Full comparison for ferry, contents only for the peers.
        local cmp=("$TESTS_DIR/lib/treecmp.py")
        is_ferry "$tool" || cmp=("$TESTS_DIR/lib/treecmp.py" --content)
        if "$PY" "${cmp[@]}" "$check" "$dest" 2>"$T/cmp.err"; then
            R_STATUS=ok
        else
            R_STATUS=mismatch
            R_REASON=$(awk 'NR == 1 { print substr($0, 1, 120) }' "$T/cmp.err")
            sed 's/^/    /' "$T/cmp.err" | head -n 5 >&2
        fi
    else
        R_REASON="exit $rc: $(last_line "$T/run.err")"
        if grep -q "not built yet" "$T/run.err"; then
            R_STATUS=not-built
        elif [ "$rc" = 124 ]; then
            R_STATUS=timeout
            R_REASON="over ${CMD_TIMEOUT}s"
        else
            R_STATUS=failed
            tail -n 5 "$T/run.err" | sed 's/^/    /' >&2
        fi
    fi
    trash_wait
    R_RSS_AGENT=$(max_int "$RSS_AGENT")
    if is_ferry "$tool" && [ "$TRANSPORT" = local ]; then
        # No TCP to count: use ferry's own bytes_wire / bytes_wire_in.
        local s
        s=$(grep '"event":"summary"' "$T/run.out" | tail -n 1 || true)
        WIRE_UP=$(printf '%s' "$s" | sed -n 's/.*"bytes_wire":\([0-9]*\).*/\1/p')
        WIRE_DOWN=$(printf '%s' "$s" | sed -n 's/.*"bytes_wire_in":\([0-9]*\).*/\1/p')
        WIRE_CONNS=0
    elif [ "$WIRE_OK" != 1 ]; then
        WIRE_UP="" WIRE_DOWN="" WIRE_CONNS=""
    fi
}

# record_run SCEN TOOL REP [KEY=VALUE...]: records the last run_once,
# with extra fields.
record_run() {
    local scen=$1 tool=$2 rep=$3
    shift 3
    local tn
    tn=$(tool_notes "$tool" "$scen" | paste -sd ';' - | sed 's/;/; /g')
    record "$@" kind=run scenario="$scen" tool="$(tool_name "$tool")" rep="$rep" \
        status="$R_STATUS" reason="$R_REASON" rss_agent_kib="$R_RSS_AGENT" \
        wire_up="$WIRE_UP" wire_down="$WIRE_DOWN" conns="$WIRE_CONNS" \
        notes="$tn" --run-json "$T/run.json" --ferry-out "$T/run.out"
    local wall
    wall=$(sed -n 's/.*"wall_s": *\([0-9.]*\).*/\1/p' "$T/run.json")
    log "$scen: $(tool_name "$tool") #$rep: $R_STATUS ${wall}s${R_REASON:+ ($R_REASON)}"
}

# scenario ID TITLE BYTES BASELINE: declares a scenario for the report.
scenario() {
    record kind=scenario id="$1" title="$2" bytes="$3" baseline="$4"
    log "scenario $1: $2"
}

# not_run SCEN TOOL REASON
not_run() {
    record kind=run scenario="$1" tool="$(tool_name "$2")" rep=0 \
        status=not-run reason="$3"
}

# run_bwlimit: the checkpoint pushed with --bwlimit set so that it takes
# 10 s, over 4 streams that share the limit. A run whose rate (bytes over
# ferry's elapsed time) is more than 15% off the limit fails the row.
BW_RATE=0
run_bwlimit() {
    local rep dest=$T/dst/remote-bwlimit rate
    BW_RATE=$((CKPT / 10))
    for rep in $(seq 1 "$REPS"); do
        prepare_dest fresh "$dest" ferry_bw
        run_once ferry_bw push ferry-test "$T/data/ckpt" "$dest" "$T/data/ckpt"
        if [ "$R_STATUS" = ok ]; then
            rate=$(grep '"event":"summary"' "$T/run.out" | tail -n 1 |
                "$PY" -c 'import json, sys
s = json.loads(sys.stdin.read())
print(int(s["bytes_total"] / max(s["elapsed_s"], 1e-3)))')
            if [ $((rate * 100)) -lt $((BW_RATE * 85)) ] ||
                [ $((rate * 100)) -gt $((BW_RATE * 115)) ]; then
                R_STATUS=failed
                R_REASON="rate $rate B/s, limit $BW_RATE B/s: off by over 15%"
            fi
            log "bwlimit: $rate B/s for a limit of $BW_RATE B/s"
        fi
        record_run bwlimit ferry_bw "$rep"
        prepare_dest none "$dest" ferry_bw
    done
}

# run_scenario ID DIR HOST SRC PREP TOOLS...: REPS rounds, each running
# every tool once, in turn.
run_scenario() {
    local id=$1 dir=$2 host=$3 src=$4 prep=$5
    shift 5
    local rep tool dest
    # shellcheck disable=SC2046
    set -- $(with_before "$@")
    for rep in $(seq 1 "$REPS"); do
        for tool in "$@"; do
            if [ "$dir" = push ]; then dest=$T/dst/remote-$id; else dest=$T/dst/local-$id; fi
            if is_ferry "$tool" && [ "$TRANSPORT" = local ] &&
                [ "$host" != ferry-test ]; then
                [ "$rep" = 1 ] && not_run "$id" "$tool" "no network with FERRY_BENCH_TRANSPORT=local"
                continue
            fi
            prepare_dest "$prep" "$dest" "$tool"
            run_once "$tool" "$dir" "$host" "$src" "$dest" "$src"
            # shellcheck disable=SC2046
            record_run "$id" "$tool" "$rep" $(link_start "$host" "$dir" "$R_T0_MS")
            prepare_dest none "$dest" "$tool"
        done
    done
}

# link_start HOST DIR T0_MS: from the proxy's trace of HOST (if it keeps
# one), the seconds from T0_MS (the run's start) to the first MiB of data
# across and to 90% of the link's rate (over 500 ms), as key=value words.
link_start() {
    local trace=$T/trace-$1
    [ -s "$trace" ] || return 0
    "$PY" - "$trace" "$3" "$2" "$WAN_MBIT" <<'PY'
import sys
path, t0, d, mbit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
col = 1 if d == "push" else 2
rows = [tuple(map(int, l.split())) for l in open(path) if l.strip()]
rows = [r for r in rows if r[0] >= t0]
if not rows:
    sys.exit(0)
base, first, full, j = rows[0][col], None, None, 0
link = mbit * 1e6 / 8
for i, r in enumerate(rows):
    if first is None and r[col] - base >= 1 << 20:
        first = r[0]
    while r[0] - rows[j][0] > 500:
        j += 1
    span = r[0] - rows[j][0]
    if full is None and span >= 400 and \
            (r[col] - rows[j][col]) * 1000 / span >= 0.9 * link:
        full = r[0]
out = []
if first is not None:
    out.append("first_mib_s=%.2f" % ((first - t0) / 1000))
if full is not None:
    out.append("to90_s=%.2f" % ((full - t0) / 1000))
print(" ".join(out))
PY
}

# scp over the WAN copies one file per several round trips (SFTP open,
# write, close): 20,000 files would take over an hour. It runs on a
# 1-file and an N-file sample; the row is the straight line through them,
# extrapolated to the full count.
run_scp_sample() {
    local id=$1 host=$2 rep=$3 total=$4
    local dest=$T/dst/remote-$id w1 wn u1 un d1 dn
    prepare_dest fresh "$dest" scp
    run_once scp push "$host" "$T/data/sample1" "$dest" "$T/data/sample1"
    w1=$(sed -n 's/.*"wall_s": *\([0-9.]*\).*/\1/p' "$T/run.json")
    u1=${WIRE_UP:-0} d1=${WIRE_DOWN:-0}
    if [ "$R_STATUS" = ok ]; then
        prepare_dest fresh "$dest" scp
        run_once scp push "$host" "$T/data/sampleN" "$dest" "$T/data/sampleN"
    fi
    prepare_dest none "$dest" scp
    if [ "$R_STATUS" = ok ]; then
        wn=$(sed -n 's/.*"wall_s": *\([0-9.]*\).*/\1/p' "$T/run.json")
        un=${WIRE_UP:-0} dn=${WIRE_DOWN:-0}
        # x(n) = x1 + (xN - x1) * (total - 1) / (N - 1)
        local k
        k=$(awk -v n="$SCP_SAMPLE" -v t="$total" 'BEGIN { print (t - 1) / (n - 1) }')
        "$PY" - "$T/run.json" "$w1" "$wn" "$k" <<'PY'
import json, sys
p, w1, wn, k = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
r = json.load(open(p))
r["wall_s"] = round(w1 + (wn - w1) * k, 3)
json.dump(r, open(p, "w"))
PY
        if [ -n "$WIRE_UP" ]; then
            WIRE_UP=$(awk -v a="$u1" -v b="$un" -v k="$k" 'BEGIN { printf "%d", a + (b - a) * k }')
            WIRE_DOWN=$(awk -v a="$d1" -v b="$dn" -v k="$k" 'BEGIN { printf "%d", a + (b - a) * k }')
        fi
    fi
    record_run "$id" scp_sample "$rep" sample_n="$SCP_SAMPLE" \
        sample_total="$total" sample_w1="$w1" sample_wn="${wn:-}"
}

# Resume: start the transfer through a rate-limited proxy (so that it can
# be caught in the middle), kill -9 the client once about half the bytes
# are in the destination (in .ferry/part for ferry, the partial file for
# rsync), then time the second run at full speed.
run_resume() {
    local id=resume src=$T/data/ckpt rep tool pid got kept via deadline
    local dest=$T/dst/remote-$id half=$((CKPT / 2)) slow=ferry-test
    [ "$HAVE_PROXY" = 1 ] && slow=ferry-slow
    # shellcheck disable=SC2046
    set -- $(with_before "$@")
    for rep in $(seq 1 "$REPS"); do
        for tool in "$@"; do
            prepare_dest fresh "$dest" "$tool"
            via=$slow
            is_ferry "$tool" && [ "$TRANSPORT" = local ] && via=ferry-test
            build_cmd "$tool" push "$via" "$src" "$dest"
            "${CMD[@]}" >/dev/null 2>"$T/kill.err" </dev/null &
            pid=$!
            BG_PID=$pid
            got=0
            deadline=$((SECONDS + CMD_TIMEOUT))
            while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
                got=$(tree_disk_bytes "$dest")
                [ "$got" -ge "$half" ] && break
                sleep 0.02
            done
            kill -9 "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            BG_PID=""
            sshd_idle
            sleep 0.3
            kept=$(tree_disk_bytes "$dest")
            run_once "$tool" push ferry-test "$src" "$dest" "$src"
            record_run "$id" "$tool" "$rep" kill_bytes="$got" kept_bytes="$kept"
            prepare_dest none "$dest" "$tool"
        done
    done
}

# The watch row: a training job saves a checkpoint every WATCH_EVERY s
# under a new name on the box (tests/bench/watchrow.py: torch.save's zip,
# written in place and closed; 1% of it rewritten since the last one, as
# WATCH_K regions of at least 1 MiB) while `ferry pull --watch WATCH_S`
# pulls them through the WAN emulator. Then, for each checkpoint but the
# first, beside the one before it (and warm, as the watch found it): a
# one-shot `ferry pull` of it and `rsync --fuzzy` of it, alternating.
# watchrow.py judge turns the lot into the row's runs and its aims.
run_watch() {
    local id=watch box=$T/data/watchbox here=$T/dst/watch-here
    local one=$T/dst/watch-one rs=$T/dst/watch-rsync i prev name rc
    local names=() peers=$T/watch-peers.ndjson watch_up watch_down region
    # As watchrow.py cuts them: 1% in all, at least 1 MiB each.
    region=$((CKPT / 100 / WATCH_K))
    [ "$region" -ge "$MIB" ] || region=$MIB
    scenario "$id" "WAN (50 ms RTT, 1 Gbit/s): pull --watch of a $((CKPT / MIB)) MiB checkpoint saved every $WATCH_EVERY s under a new name, $WATCH_K region(s) of $(awk -v r="$region" 'BEGIN { printf "%.2f", r / 1048576 }') MiB rewritten each time (first one excluded), looks every $WATCH_S s" \
        "$CKPT" "rsync --fuzzy"
    if [ "$HAVE_PROXY" != 1 ] || [ "$TRANSPORT" = local ]; then
        for i in ferry_watch ferry_once rsync_fuzzy; do
            not_run "$id" "$i" "no emulated link (netproxy or ssh transport missing)"
        done
        return 0
    fi
    rm -rf "$box" "$here" "$one" "$rs" "$T/watchwork"
    mkdir -p "$box" "$here" "$one" "$rs" "$T/watchwork"
    mem_prefault $((CKPT / MIB * 4 + 256))
    wire_begin
    rc=0
    "$PY" "$BENCH_DIR/watchrow.py" run "$box" "$T/watchwork" "$WATCH_COUNT" \
        "$WATCH_EVERY" "$CKPT" "$WATCH_K" "$SEED" "$T/watch.json" -- \
        "$FERRY" pull --watch "$WATCH_S" --json -F "$CFG" \
        --agent "$AGENT" "ferry-wan:$box/" "$here/" \
        2>"$T/watch.err" || rc=$?
    wire_end
    # Every event of the watch, stamped, for a look at where time went.
    mkdir -p "$OUT_DIR"
    cp "$T/watch.json" "$OUT_DIR/watch-events-latest.json" 2>/dev/null || true
    watch_up=${WIRE_UP:-} watch_down=${WIRE_DOWN:-}
    [ "$WIRE_OK" = 1 ] || watch_up="" watch_down=""
    rm -rf "$T/watchwork"
    [ "$rc" = 0 ] || { tail -n 5 "$T/watch.err" | sed 's/^/    /' >&2; }
    mapfile -t names < <("$PY" -c 'import json, sys
for c in json.load(open(sys.argv[1]))["checkpoints"]: print(c["name"])' "$T/watch.json")
    : >"$peers"
    for ((i = 1; i < ${#names[@]}; i++)); do
        name=${names[i]} prev=${names[i - 1]}
        # Each beside the one before it only, as ferry put it there: the
        # one-shot dest's by a pull, rsync's by cp.
        if [ "$i" = 1 ]; then
            "$FERRY" pull -q -F "$CFG" --agent "$AGENT" \
                "ferry-test:$box/$prev" "$one/" || fail "watch: the first pull"
            cp -p "$box/$prev" "$rs/"
        fi
        # (A peer that failed the last time left no basis: this run then
        # sends the whole file, and its row says FAILED already.)
        cat "$box/$name" "$one/$prev" "$rs/$prev" >/dev/null 2>&1 || true
        watch_peer ferry_once "$i" "$name" "$box" "$one" \
            "$FERRY" pull --json -F "$CFG" --agent "$AGENT" \
            "ferry-wan:$box/$name" "$one/"
        watch_peer rsync_fuzzy "$i" "$name" "$box" "$rs" \
            rsync -a --fuzzy --stats -e "ssh -F '$CFG'" \
            "ferry-wan:$box/$name" "$rs/"
        rm -f "$one/$prev" "$rs/$prev"
    done
    "$PY" "$BENCH_DIR/watchrow.py" judge "$T/watch.json" "$peers" "$RUNS" \
        "$WATCH_S" "$box" "$here" "$rc" "$watch_up" "$watch_down" \
        || fail "watch: judge"
    rm -rf "$box" "$here" "$one" "$rs"
}

# watch_peer TOOL N NAME SRC DEST CMD...: one timed run of a peer of the
# watch row (SRC/NAME is pulled into DEST), for watchrow.py judge.
watch_peer() {
    local tool=$1 n=$2 name=$3 src=$4 dest=$5 st=ok
    shift 5
    wire_begin
    "$PY" "$BENCH_DIR/runcmd.py" --timeout "$CMD_TIMEOUT" \
        --result "$T/run.json" --stdout "$T/run.out" --stderr "$T/run.err" \
        -- "$@"
    wire_end
    grep -q '"rc": *0[,}]' "$T/run.json" || {
        st=failed
        tail -n 5 "$T/run.err" | sed 's/^/    /' >&2
    }
    [ "$st" != ok ] || cmp -s "$src/$name" "$dest/$name" || st=mismatch
    "$PY" "$BENCH_DIR/watchrow.py" peer "$T/run.json" "$T/run.out" "$tool" \
        "$n" "$st" "${WIRE_UP:-}" "${WIRE_DOWN:-}" >>"$T/watch-peers.ndjson"
    log "watch: $tool #$n: $st $(sed -n 's/.*"wall_s": *\([0-9.]*\).*/\1/p' "$T/run.json")s"
}

# ------------------------------------------------------------- meta

collect_meta() {
    local cipher ferry_v
    cipher=$(ssh -v -F "$CFG" ferry-test true 2>&1 |
        awk '/kex: client->server cipher:/ && !c { c = $5 } END { print c }' || true)
    ferry_v=$("$FERRY" --version 2>/dev/null | awk 'NR == 1 { print $2 }' || true)
    local sizes
    if [ "$MODE" = streams ]; then
        sizes="one $((BIG / MIB)) MiB incompressible file; WAN: ${WAN_DELAY_MS} ms each way, $WAN_MBIT Mbit/s${LONG_RTTS:+; long rows: ${LONG_RTTS// / and } ms RTT}; -j rows: $TABLE_REPS run(s) each; rsync on the long rows: $LONG_PEER_REPS run(s)"
    else
        sizes="big file $((BIG / MIB)) MiB; $SMALL_N small files ($(($(tree_bytes "$T/data/small") / MIB)) MiB)"
        sizes="$sizes; text tree $(($(tree_bytes "$T/data/text") / MIB)) MiB in $(tree_files "$T/data/text") files"
        sizes="$sizes; checkpoint $((CKPT / MIB)) MiB (1% rewritten as 256 KiB regions / 4 KiB inserted at the start)"
        sizes="$sizes; WAN: $((WAN_BIG / MIB)) MiB file and the $SMALL_N small files, ${WAN_DELAY_MS} ms each way, $WAN_MBIT Mbit/s"
    fi
    record kind=meta mode="$MODE" reps="$REPS" \
        date="$(date -u '+%Y-%m-%d %H:%M UTC')" \
        git="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo +dirty)" \
        ferry_version="${ferry_v:-?}" \
        nproc="$(nproc)" \
        cpu="$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1)" \
        mem_gib="$(awk '/^MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" \
        kernel="$(uname -sr)" \
        os="$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")" \
        rsync_version="$(rsync --version | head -n 1 | awk '{ print "rsync " $3 }')" \
        ssh_version="$(ssh -V 2>&1 | cut -d, -f1)" \
        zstd_version="zstd $(zstd --version | sed -n 's/.* v\([0-9.]*\).*/\1/p')" \
        tar_version="$(tar --version | head -n 1)" \
        python_version="$("$PY" --version)" \
        ssh_cipher="${cipher:-?}" \
        transport="$TRANSPORT" \
        drop_caches="$([ "$DROP_OK" = 1 ] && echo yes || echo "no (data warm for all tools alike)")" \
        memory="$(mem_describe)" \
        wire_method="$([ "$WIRE_OK" = 1 ] && echo "TCP payload both ways on the sshd side, from tcp_info at socket close (ss -E)" || echo "not measured (ss -E unavailable)")" \
        sizes="$sizes" \
        wan="delay_ms=$WAN_DELAY_MS rate_mbit=$WAN_MBIT" \
        features="delta=$FEATURE_DELTA resume=$FEATURE_RESUME compress=$FEATURE_COMPRESS" \
        before_label="${BEFORE:+$BEFORE_LABEL}"
}

# ------------------------------------------------------------- main

# The streams scenarios: ID TITLE DIR HOST, with default settings next to
# rsync and scp, then the -j tables.
streams_main() {
    local d=$T/data/big mib=$((BIG / MIB)) dir host id
    local wan="WAN (50 ms RTT, 1 Gbit/s)" jt=(ferry_j1 ferry_j2 ferry_j4 ferry_j8 ferry_j16)
    [ "$HAVE_PROXY" = 1 ] || fail "the streams bench needs netproxy (make all)"
    for id in wan_push wan_pull lo_push lo_pull; do
        case $id in *push) dir=push ;; *) dir=pull ;; esac
        case $id in wan_*) host=ferry-wan ;; *) host=ferry-test ;; esac
        wanted "$id" || continue
        scenario "$id" "$([ $host = ferry-wan ] && echo "$wan" || echo loopback): $dir a $mib MiB file, default settings" \
            "$BIG" "rsync -a"
        # On loopback the disk may bind before any network: the floor row
        # writes the file durably, as ferry does and its peers do not.
        case $id in
        lo_*) run_scenario "$id" "$dir" "$host" "$d" fresh ferry rsync scp floor ;;
        *) run_scenario "$id" "$dir" "$host" "$d" fresh ferry rsync scp linkfloor ;;
        esac
    done
    local rtt reps=$REPS
    for rtt in $LONG_RTTS; do
        for dir in push pull; do
            id=wan${rtt}_$dir
            wanted "$id" || continue
            scenario "$id" "WAN ($rtt ms RTT, 1 Gbit/s): $dir a $mib MiB file, default settings" \
                "$BIG" "rsync -a"
            run_scenario "$id" "$dir" "ferry-wan$rtt" "$d" fresh ferry linkfloor
            REPS=$LONG_PEER_REPS
            run_scenario "$id" "$dir" "ferry-wan$rtt" "$d" fresh rsync
            REPS=$reps
        done
    done
    REPS=$TABLE_REPS
    for id in wan_j_push wan_j_pull lo_j_push lo_j_pull; do
        case $id in *push) dir=push ;; *) dir=pull ;; esac
        case $id in wan_*) host=ferry-wan ;; *) host=ferry-test ;; esac
        wanted "$id" || continue
        scenario "$id" "$([ $host = ferry-wan ] && echo "$wan" || echo loopback): $dir a $mib MiB file with -j N" \
            "$BIG" "ferry -j 1"
        run_scenario "$id" "$dir" "$host" "$d" fresh "${jt[@]}"
    done
    REPS=$reps
    streams_finish
}

streams_finish() {
    record kind=meta duration_s="$(($(date +%s) - START_S))"
    local stamp args rc=0
    stamp=$(date -u +%Y%m%d-%H%M%S)
    args=(--json "$OUT_DIR/results-$stamp-$MODE.json" --json "$OUT_DIR/latest-streams.json")
    [ "$DOCS" = 1 ] && args+=(--docs "$ROOT/docs/BENCHMARKS.md" --section streams)
    echo
    echo "ferry streams bench ($REPS run(s) per row, $TABLE_REPS per -j row, median;"
    echo "x rsync = wall / wall of the rsync row, or of ferry -j 1 in the tables):"
    echo
    "$PY" "$BENCH_DIR/report.py" render "$RUNS" "${args[@]}" --strict || rc=$?
    exit "$rc"
}

main() {
    check_prereqs
    make_wrappers
    at_exit stop_ss
    at_exit stop_bg
    at_exit trash_wait
    start_sshd
    start_ss
    setup_network
    check_drop_caches
    mem_probe
    log "$(mem_describe)"
    check_wire
    make_data
    collect_meta
    log "mode $MODE: $REPS run(s) per row, timeout ${CMD_TIMEOUT}s, transport $TRANSPORT"

    local d=$T/data t
    local tools=(ferry rsync scp tar)
    if [ "$MODE" = streams ]; then
        streams_main
        return
    fi
    if wanted big; then
        scenario big "$((BIG / MIB)) MiB incompressible file" "$BIG" "rsync -a"
        run_scenario big push ferry-test "$d/big" fresh "${tools[@]}" floor
    fi
    if wanted small; then
        scenario small "$SMALL_N small files (0-8 KiB)" "$(tree_bytes "$d/small")" "rsync -a"
        run_scenario small push ferry-test "$d/small" fresh ferry ferry_blocks \
            rsync scp tar floor
    fi
    if wanted text; then
        scenario text "compressible text tree, $(($(tree_bytes "$d/text") / MIB)) MiB" \
            "$(tree_bytes "$d/text")" "rsync -a"
        if [ "$FEATURE_COMPRESS" = yes ]; then
            run_scenario text push ferry-test "$d/text" fresh ferry ferry_z \
                ferry_blocks rsync rsync_z scp tar
        else
            run_scenario text push ferry-test "$d/text" fresh ferry rsync rsync_z scp tar
            not_run text ferry_z "compression not built yet (FEATURE_COMPRESS=no)"
        fi
    fi
    if wanted delta_rewrite; then
        scenario delta_rewrite "delta: 1% of a $((CKPT / MIB)) MiB checkpoint rewritten in place" \
            "$CKPT" "rsync -a"
        run_scenario delta_rewrite push ferry-test "$d/rewrite" old ferry rsync
    fi
    if wanted delta_insert; then
        scenario delta_insert "delta: 4 KiB inserted at the start of a $((CKPT / MIB)) MiB checkpoint" \
            "$((CKPT + 4096))" "rsync -a"
        run_scenario delta_insert push ferry-test "$d/insert" old ferry rsync
    fi
    if wanted resume; then
        # The baseline a resume is judged against: the same file, fresh.
        scenario resume_fresh "the $((CKPT / MIB)) MiB checkpoint pushed fresh (baseline of the resume row)" \
            "$CKPT" "rsync -a"
        run_scenario resume_fresh push ferry-test "$d/ckpt" fresh ferry rsync
        scenario resume "resume a $((CKPT / MIB)) MiB push killed at half (second run)" \
            "$CKPT" "rsync -a --partial"
        run_resume ferry rsync_partial
    fi
    if wanted bwlimit; then
        scenario bwlimit "--bwlimit: the $((CKPT / MIB)) MiB checkpoint at a limit of a tenth of it per second (10 s)" \
            "$CKPT" "ferry --bwlimit -j 4"
        run_bwlimit
    fi
    if wanted pull; then
        scenario pull "pull a $((CKPT / MIB)) MiB checkpoint" "$CKPT" "rsync -a"
        run_scenario pull pull ferry-test "$d/ckpt" fresh "${tools[@]}"
    fi
    if wanted wan_big; then
        scenario wan_big "WAN (50 ms RTT, 1 Gbit/s): $((WAN_BIG / MIB)) MiB file" "$WAN_BIG" "rsync -a"
        if [ "$HAVE_PROXY" = 1 ]; then
            run_scenario wan_big push ferry-wan "$d/wan_big" fresh "${tools[@]}"
        else
            for t in "${tools[@]}"; do not_run wan_big "$t" "no netproxy"; done
        fi
    fi
    if wanted wan_pull; then
        scenario wan_pull "WAN (50 ms RTT, 1 Gbit/s): pull a $((WAN_BIG / MIB)) MiB checkpoint" \
            "$WAN_BIG" "rsync -a"
        if [ "$HAVE_PROXY" = 1 ]; then
            run_scenario wan_pull pull ferry-wan "$d/wan_big" fresh ferry rsync
        else
            for t in ferry rsync; do not_run wan_pull "$t" "no netproxy"; done
        fi
    fi
    if wanted wan_small; then
        scenario wan_small "WAN (50 ms RTT, 1 Gbit/s): $SMALL_N small files" \
            "$(tree_bytes "$d/small")" "rsync -a"
        if [ "$HAVE_PROXY" = 1 ]; then
            run_scenario wan_small push ferry-wan "$d/small" fresh ferry \
                ferry_blocks rsync tar
            run_scp_sample wan_small ferry-wan 1 "$SMALL_N"
        else
            for t in "${tools[@]}"; do not_run wan_small "$t" "no netproxy"; done
        fi
    fi
    if wanted wan_text; then
        scenario wan_text "WAN (50 ms RTT, 1 Gbit/s): compressible text tree, $(($(tree_bytes "$d/text") / MIB)) MiB" \
            "$(tree_bytes "$d/text")" "rsync -a"
        if [ "$HAVE_PROXY" = 1 ]; then
            run_scenario wan_text push ferry-wan "$d/text" fresh ferry \
                ferry_blocks rsync tar
        else
            for t in ferry ferry_blocks rsync tar; do
                not_run wan_text "$t" "no netproxy"
            done
        fi
    fi
    if wanted wan_shard; then
        scenario wan_shard "WAN (50 ms RTT, 1 Gbit/s): one text file too big to pack, $(($(tree_bytes "$d/shard") / MIB)) MiB" \
            "$(tree_bytes "$d/shard")" "rsync -a"
        if [ "$HAVE_PROXY" = 1 ]; then
            run_scenario wan_shard push ferry-wan "$d/shard" fresh ferry \
                ferry_raw rsync rsync_z
        else
            for t in ferry ferry_raw rsync rsync_z; do
                not_run wan_shard "$t" "no netproxy"
            done
        fi
    fi

    if wanted watch; then
        run_watch
    fi

    record kind=meta duration_s="$(($(date +%s) - START_S))"
    local stamp args
    stamp=$(date -u +%Y%m%d-%H%M%S)
    args=(--json "$OUT_DIR/results-$stamp-$MODE.json" --json "$OUT_DIR/latest.json")
    [ "$DOCS" = 1 ] && args+=(--docs "$ROOT/docs/BENCHMARKS.md")
    echo
    echo "ferry bench ($MODE, $REPS run(s) per row, median; wall time of the"
    echo "second run for resume; x rsync = wall / wall of the rsync row):"
    echo
    local rc=0
    "$PY" "$BENCH_DIR/report.py" render "$RUNS" "${args[@]}" --strict || rc=$?
    echo
    log "results: $OUT_DIR/results-$stamp-$MODE.json$([ "$DOCS" = 1 ] && echo ", docs/BENCHMARKS.md")"
    return "$rc"
}

main
