# The many-box lab (bash; source after common.sh and sshd.sh; as root): a
# client behind a shaped uplink and N boxes on one bridge, each box a
# network namespace with its own sshd, HOME and disk.
#
#   client ns            bridge ns (br0)              box K ns
#   up0 10.77.41.1 ==== c0        bK ==== eth0 10.77.41.(10+K), sshd :2222
#       uplink rate, both ways    box rate, both ways
#
# Each box's sshd also has a mount namespace of its own, in which
# $LAB_WS is its own folder: one path names a different place on each
# box, as /workspace does on rented boxes, so that box1:$LAB_WS/data
# box2:$LAB_WS/data (or 'box[1-2]:'$LAB_WS/data) are two copies.
#
# Every link is made inside the lab's own namespaces, so the root
# namespace's network is never touched; no namespace has a default route,
# IPv6 is off in each, and the only addresses are those of $LAB_NET.0/24:
# the lab reaches nothing but itself, and the uplink counter counts ferry's
# bytes and nothing else. Rates are tc tbf (no netem, so no added delay).
#
# lab_up N [UPLINK_RATE] [BOX_RATE]
#                     rates in tc's units (100mbit, 1gbit; those are the
#                     defaults); sets LAB (the namespaces' prefix),
#                     LAB_DIR (under /var/tmp: boxes write to disk, not
#                     tmpfs), LAB_WS (the boxes' workspace) and
#                     LAB_SSH_CONFIG (Host box1 .. boxN, for -F); lab_down
#                     is registered with at_exit
#   LAB_DISK_GB=N     (set before lab_up) LAB_DIR is an ext4 file system
#                     of its own, with a journal as on a rented box: an
#                     image of at most N GiB on /var/tmp's disk, mounted
#                     through a loop device with direct I/O (no second
#                     copy in the page cache). For benchmarks: /var/tmp
#                     may be ext4 without a journal, which skips every
#                     inode deleted in the last minute (six while its
#                     table block is dirty) each time it allocates one,
#                     so a run after a mass delete pays for it
# lab_down            stops every process in the lab's namespaces and
#                     removes them and LAB_DIR (and its image)
# lab_client CMD...   CMD in the client namespace, killed after
#                     LAB_CMD_TIMEOUT seconds (default 300)
# lab_home K          box K's HOME: what box K:~/x names is $(lab_home K)/x
# lab_ws K            box K's workspace, seen from outside: what
#                     box K:$LAB_WS/x names is $(lab_ws K)/x
# lab_uplink_bytes    "TX RX": bytes sent and received on the client's
#                     uplink so far (its veth's counters, frames whole)
# lab_rate_box K RATE box K's port, both ways, at RATE (a straggler)
# lab_rate_box_in K RATE  ... towards box K only: it receives at RATE and
#                     sends at its port's rate
# lab_box_kill K      SIGKILL to everything in box K (sshd, sessions,
#                     agents): a box that died
# lab_box_start K     box K's sshd (again), once it answers
# lab_isolate on|off  the boxes cannot reach each other (each still
#                     reaches the client), or can again
# lab_per_box         "--no-swarm" if $FERRY has it (many-box pushes then
#                     swarm by default, and it forces sends to each box in
#                     full), else nothing: per-box sends are the default
#
# A lab whose run was killed (namespaces fl<PID>-*, /var/tmp/ferry-lab.<PID>.*)
# is removed by `bash tests/lib/lab.sh clean` once that PID has ended, or
# at once by `bash tests/lib/lab.sh clean PID`.

LAB_NET=10.77.41
LAB_SSH_PORT=2222

# lab_bits RATE: RATE, in tc's units, as bits per second.
lab_bits() {
    case $1 in
    *gbit) echo $((${1%gbit} * 1000000000)) ;;
    *mbit) echo $((${1%mbit} * 1000000)) ;;
    *kbit) echo $((${1%kbit} * 1000)) ;;
    *) fail "lab: rate '$1': kbit, mbit or gbit" ;;
    esac
}

# lab_shape NS DEV RATE: DEV's egress in NS at RATE. The bucket holds
# 10 ms of the rate, so that at a gigabit a timer tick's worth of packets
# still passes (a smaller one caps the rate below RATE).
lab_shape() {
    local burst
    burst=$(($(lab_bits "$3") / 8 / 100))
    [ "$burst" -ge 32768 ] || burst=32768
    tc -n "$1" qdisc replace dev "$2" root tbf rate "$3" burst "$burst" \
        latency 50ms
}

# lab_ns NAME: a namespace of the lab, loopback up, IPv6 off (no link-local
# chatter on the counted uplink).
lab_ns() {
    ip netns add "$1"
    ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1
    ip -n "$1" link set lo up
}

# lab_link NS DEV PORT ADDR: a veth between NS (DEV, ADDR/24) and the
# bridge (PORT). Both ends are made in their namespaces directly.
lab_link() {
    ip link add "$2" netns "$1" type veth peer name "$3" netns "${LAB}br"
    ip -n "${LAB}br" link set "$3" master br0 up
    ip -n "$1" addr add "$4/24" dev "$2"
    ip -n "$1" link set "$2" up
}

lab_addr() { echo "$LAB_NET.$((10 + $1))"; }
lab_home() { echo "$LAB_DIR/box$1/home"; }
lab_ws() { echo "$LAB_DIR/box$1/ws"; }

lab_client() {
    timeout -k 5 "${LAB_CMD_TIMEOUT:-300}" ip netns exec "${LAB}c" "$@"
}

lab_up() {
    local n=$1 k
    [ "$(id -u)" -eq 0 ] || fail "lab: needs root (ip netns, tc)"
    if [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
        fail "lab: 1 to 200 boxes"
    fi
    LAB=fl$$-
    LAB_N=$n
    LAB_DIR=$(mktemp -d "/var/tmp/ferry-lab.$$.XXXXXX")
    [ -z "${LAB_DISK_GB:-}" ] || lab_disk "$LAB_DISK_GB"
    # Outside the boxes, an empty folder: each box mounts its own on it.
    LAB_WS=$LAB_DIR/ws
    mkdir "$LAB_WS"
    at_exit lab_down
    lab_ns "${LAB}br"
    ip -n "${LAB}br" link add br0 type bridge
    ip -n "${LAB}br" link set br0 up
    lab_ns "${LAB}c"
    lab_link "${LAB}c" up0 c0 "$LAB_NET.1"
    # Pushes leave by up0, pulls come back through c0.
    lab_shape "${LAB}c" up0 "${2:-100mbit}"
    lab_shape "${LAB}br" c0 "${2:-100mbit}"
    sshd_keys "$LAB_DIR/ssh"
    : >"$LAB_DIR/ssh/known_hosts"
    LAB_SSH_CONFIG=$LAB_DIR/ssh/ssh_config
    : >"$LAB_SSH_CONFIG"
    for k in $(seq 1 "$n"); do
        lab_ns "${LAB}b$k"
        lab_link "${LAB}b$k" eth0 "b$k" "$(lab_addr "$k")"
        lab_rate_box "$k" "${3:-1gbit}"
        mkdir -p "$(lab_home "$k")" "$(lab_ws "$k")"
        sshd_config_for "$LAB_DIR/ssh" "$(lab_addr "$k")" "$LAB_SSH_PORT" \
            "$(lab_home "$k")" "$LAB_DIR/box$k/sshd.pid" \
            >"$LAB_DIR/box$k/sshd_config"
        known_host_for "$(lab_addr "$k")" "$LAB_SSH_PORT" "$LAB_DIR/ssh" \
            >>"$LAB_DIR/ssh/known_hosts"
        ssh_host_for "box$k" "$(lab_addr "$k")" "$LAB_SSH_PORT" \
            "$LAB_DIR/ssh" >>"$LAB_SSH_CONFIG"
    done
    for k in $(seq 1 "$n"); do
        lab_box_start "$k"
    done
}

lab_rate_box() {
    lab_rate_box_in "$1" "$2"
    lab_shape "${LAB}b$1" eth0 "$2"
}

lab_rate_box_in() { lab_shape "${LAB}br" "b$1" "$2"; }

# The boxes' ports are isolated from each other (on) or not (off): each
# still reaches the client, as boxes in two networks would.
lab_isolate() {
    local k
    for k in $(seq 1 "$LAB_N"); do
        ip -n "${LAB}br" link set dev "b$k" type bridge_slave isolated "$1" ||
            fail "lab: isolating b$k"
    done
}

lab_per_box() {
    ! { "$FERRY" --help; "$FERRY" help push; } 2>&1 | grep -q -- --no-swarm ||
        echo --no-swarm
}

lab_uplink_bytes() {
    ip netns exec "${LAB}c" sh -c 'cd /sys/class/net/up0/statistics &&
        echo "$(cat tx_bytes) $(cat rx_bytes)"'
}

lab_box_start() {
    local k=$1 deadline
    # ip netns exec gives each command a mount namespace of its own,
    # whose mounts do not reach the root's (it makes them slaves).
    ip netns exec "${LAB}b$k" sh -c 'mount --bind "$1" "$2" &&
        exec /usr/sbin/sshd -D -f "$3" -E "$4"' sh "$(lab_ws "$k")" \
        "$LAB_WS" "$LAB_DIR/box$k/sshd_config" "$LAB_DIR/box$k/sshd.log" &
    # Out of the job table: its end (SIGKILL, lab_box_kill) is expected,
    # not news for stderr. bash still reaps it.
    disown $!
    deadline=$((SECONDS + 15))
    while [ "$SECONDS" -lt "$deadline" ]; do
        LAB_CMD_TIMEOUT=5 lab_client ssh -F "$LAB_SSH_CONFIG" \
            -o BatchMode=yes "box$k" true 2>/dev/null && return 0
        sleep 0.1
    done
    cat "$LAB_DIR/box$k/sshd.log" >&2
    fail "lab: the sshd of box$k did not start"
}

lab_box_kill() { lab_kill_ns "${LAB}b$1"; }

# lab_kill_ns NS: SIGKILL to every process in NS, and until none is left
# (at most 5 s).
lab_kill_ns() {
    local pids
    for _ in $(seq 1 50); do
        pids=$(ip netns pids "$1" 2>/dev/null) || return 0
        [ -n "$pids" ] || return 0
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null || true
        sleep 0.1
    done
    echo "lab: processes left in $1: $(ip netns pids "$1" | tr '\n' ' ')" >&2
}

# lab_remove PREFIX: every namespace named PREFIX*, emptied and deleted.
lab_remove() {
    local ns
    for ns in $(ip netns list | awk '{ print $1 }' | grep -F -- "$1"); do
        case $ns in "$1"*) ;; *) continue ;; esac
        lab_kill_ns "$ns"
        ip netns del "$ns" 2>/dev/null || true
    done
}

# lab_disk GB: LAB_DIR becomes a journaled ext4 of GB GiB (LAB_DISK_GB).
lab_disk() {
    local loop
    truncate -s "${1}G" "$LAB_DIR.img"
    # Inode tables and journal written now, not by a kernel thread
    # during the runs.
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 \
        "$LAB_DIR.img" || fail "lab: mkfs.ext4 $LAB_DIR.img"
    loop=$(losetup -f --show --direct-io=on "$LAB_DIR.img") ||
        fail "lab: losetup $LAB_DIR.img"
    mount "$loop" "$LAB_DIR" || fail "lab: mount $loop"
    losetup -d "$loop"  # detached when unmounted
}

# lab_unmount DIR: DIR's own file system, if it has one, unmounted and
# its image removed.
lab_unmount() {
    if mountpoint -q "$1"; then
        umount "$1" 2>/dev/null || umount -l "$1"
    fi
    rm -f "$1.img"
}

lab_down() {
    [ -n "${LAB:-}" ] || return 0
    lab_remove "$LAB"
    lab_unmount "$LAB_DIR"
    rm -rf "$LAB_DIR"
    LAB=""
}

# lab_clean [PID]: the labs of runs that ended (or PID's), removed.
lab_clean() {
    local ns pid d
    for ns in $(ip netns list | awk '{ print $1 }' | grep -E '^fl[0-9]+-'); do
        pid=${ns#fl}
        pid=${pid%%-*}
        if [ "$pid" = "${1:-}" ] || ! kill -0 "$pid" 2>/dev/null; then
            lab_remove "fl$pid-"
        fi
    done
    for d in /var/tmp/ferry-lab.*.*; do
        [ -d "$d" ] || continue
        pid=${d#/var/tmp/ferry-lab.}
        pid=${pid%%.*}
        if [ "$pid" = "${1:-}" ] || ! kill -0 "$pid" 2>/dev/null; then
            lab_unmount "$d"
            rm -rf "$d"
        fi
    done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case ${1:-} in
    clean) lab_clean "${2:-}" ;;
    *)
        echo "usage: bash tests/lib/lab.sh clean [PID]" >&2
        exit 2
        ;;
    esac
fi
