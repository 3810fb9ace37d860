# Memory the host took back (bash; sourced by bench.sh and bench_delta.sh).
#
# A virtual machine whose host reclaims the memory the guest frees
# (virtio-balloon free page reporting) makes every page touched again
# cost a fault on the host: 7-17 us per 4 KiB page measured here, so
# writing 512 MiB into tmpfs takes 0.1 s with pages the guest still holds
# and 0.4-0.9 s with pages handed back seconds before. Every run of the
# bench frees what the last one wrote (and the page cache, when caches
# are dropped), so without care each tool's time carries a share of the
# host's work that depends on how long ago memory was freed: the largest
# source of noise on such a machine (docs/BENCHMARKS.md, "Caveats").
#
# mem_probe             sets MEM_RECLAIMED (1 when a virtio balloon offers
#                       free page reporting: bit 5 of its features),
#                       MEM_PREFAULT, and MEM_RATE_HELD / MEM_RATE_RESTED:
#                       MB/s of writing 1 GiB into /dev/shm right after
#                       freeing as much, and 5 s after freeing 2 GiB
# mem_prefault MIB      when MEM_PREFAULT is 1, writes MIB MiB into
#                       /dev/shm and frees them, so the command timed right
#                       after finds pages the guest holds; the same for
#                       every tool
#
# FERRY_BENCH_PREFAULT=0|1 overrides the choice (default: MEM_RECLAIMED).

MEM_SCRATCH=/dev/shm/ferry-bench-prefault.$$

mem_fill() {  # MIB: writes MIB MiB into /dev/shm and frees them
    dd if=/dev/zero of="$MEM_SCRATCH" bs=1M count="$1" status=none || true
    rm -f "$MEM_SCRATCH"
}

mem_write_rate() {  # MIB: MB/s of mem_fill MIB
    local t0 t1
    t0=$(date +%s%N)
    mem_fill "$1"
    t1=$(date +%s%N)
    echo $(( $1 * 1048576 * 1000 / (t1 - t0 + 1) ))
}

mem_probe() {
    local f
    MEM_RECLAIMED=0
    for f in /sys/bus/virtio/drivers/virtio_balloon/virtio*/features; do
        [ -r "$f" ] && [ "$(cut -c6 "$f")" = 1 ] && MEM_RECLAIMED=1
    done
    MEM_PREFAULT=${FERRY_BENCH_PREFAULT:-$MEM_RECLAIMED}
    mem_fill 1024
    MEM_RATE_HELD=$(mem_write_rate 1024)
    mem_fill 2048
    sleep 5
    MEM_RATE_RESTED=$(mem_write_rate 1024)
}

mem_prefault() {
    local avail
    [ "${MEM_PREFAULT:-0}" = 1 ] || return 0
    avail=$(awk '/^MemAvailable/ { print int($2 / 2048) }' /proc/meminfo)
    [ "$1" -lt "$avail" ] || set -- "$avail"
    mem_fill "$1"
}

mem_describe() {  # one line for a report's header
    printf 'host takes back freed memory: %s; fresh memory %s MB/s held, %s MB/s 5 s after freeing; prefault %s' \
        "$([ "$MEM_RECLAIMED" = 1 ] && echo yes || echo no)" \
        "$MEM_RATE_HELD" "$MEM_RATE_RESTED" \
        "$([ "$MEM_PREFAULT" = 1 ] && echo on || echo off)"
}
