#!/bin/bash
# Runs `make test` then `make demo` as root in a minimal Debian 12 root
# (debootstrap --variant=minbase plus git, make, ca-certificates and
# sudo), the machine a new user starts from, so that a package the tests
# use and `make deps` does not install shows up here and not there.
#
# The root is made once and kept as build/minimal-root/bookworm.tar.gz;
# each run unpacks a fresh copy, binds /proc /sys /dev /dev/pts /dev/shm
# into it, copies in the files a clone of the working tree has (tracked
# and new ones, not ignored ones such as build/ and bin/) and removes the
# copy when it ends, however it ends. The output goes to
# build/minimal-root/run-TIME.log; the exit status is 0 when both
# commands passed. Needs root (chroot, mount); MIRROR=URL overrides the
# Debian mirror, which is otherwise the one apt on this machine uses.
set -u
cd "$(dirname "$0")/.." || exit 2
if [ "$(id -u)" -ne 0 ]; then
    echo "minimal_root: needs root (debootstrap, chroot, mount)" >&2
    exit 2
fi

SUITE=bookworm
INCLUDE=git,make,ca-certificates,sudo
DIR=$PWD/build/minimal-root
TARBALL=$DIR/$SUITE.tar.gz
LOG=$DIR/run-$(date +%Y%m%d-%H%M%S).log
BINDS="proc sys dev dev/pts dev/shm"

say() { echo "minimal_root: $*" | tee -a "$LOG"; }

# The first mirror apt here uses for the suite itself (not -updates or
# -security), from one-line and deb822 sources alike.
find_mirror() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        awk -v s="$SUITE" '$1 == "deb" {
            sub(/\[[^]]*\]/, ""); $0 = $0
            if ($3 == s) { print $2; exit }
        }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        awk -v s="$SUITE" '
        function flush() {
            if (deb && uri != "" && (" " suites " ") ~ (" " s " "))
                print uri
            deb = 0; uri = ""; suites = ""
        }
        /^[ \t]*$/ { flush(); next }
        /^Types:/ { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
        /^URIs:/ { uri = $2 }
        /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
        END { flush() }' "$f"
    done
}

# The root, once: debootstrap into a scratch directory, then the tarball
# under its name only when it is whole.
build_root() {
    local mirror tmp
    mirror=${MIRROR:-$(find_mirror | head -n 1)}
    if [ -z "$mirror" ]; then
        say "no Debian $SUITE mirror in /etc/apt; set MIRROR=URL"
        return 1
    fi
    tmp=$(mktemp -d "$DIR/debootstrap.XXXXXX") || return 1
    say "debootstrap $SUITE minbase from $mirror (once)"
    if ! debootstrap --variant=minbase --include="$INCLUDE" \
        "$SUITE" "$tmp/root" "$mirror" >>"$LOG" 2>&1; then
        say "debootstrap failed (see $LOG)"
        rm -rf --one-file-system "$tmp"
        return 1
    fi
    # The packages debootstrap fetched, which an installed system
    # does not need.
    rm -f "$tmp"/root/var/cache/apt/archives/*.deb
    tar -C "$tmp/root" --numeric-owner -czf "$tmp/root.tar.gz" . &&
        mv "$tmp/root.tar.gz" "$TARBALL"
    local rc=$?
    rm -rf --one-file-system "$tmp"
    return $rc
}

ROOT=""
# The mounts at and under the copy, the last made first.
mounts_in_root() {
    awk -v r="$ROOT" '$2 == r || index($2, r "/") == 1 { print $2 }' \
        /proc/mounts | tac
}

# Ends what still runs inside the copy (an sshd a test left), unmounts
# what is mounted there (the binds, a tmpfs a test left) and removes it.
# The copy is removed only once nothing is mounted under it, so that rm
# can never reach the machine's own /dev or /sys.
cleanup() {
    local p m left
    [ -n "$ROOT" ] && [ -d "$ROOT" ] || return 0
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] &&
            kill -KILL "${p#/proc/}" 2>/dev/null
    done
    for m in $(mounts_in_root); do
        umount "$m" || umount -l "$m"
    done
    left=$(mounts_in_root)
    if [ -n "$left" ]; then
        say "still mounted, $ROOT left in place: $left"
        return 1
    fi
    rm -rf --one-file-system "$ROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir -p "$DIR" || exit 2
start=$(date +%s)
if [ ! -s "$TARBALL" ]; then
    build_root || exit 1
    say "root made in $(($(date +%s) - start)) s: $TARBALL"
fi

ROOT=$(mktemp -d "$DIR/root.XXXXXX") || exit 2
tar -C "$ROOT" --numeric-owner -xzf "$TARBALL" || exit 1
# The copy bound onto itself, so that its / is a mount point as a
# machine's is: `unshare -m` makes / private and fails on a directory.
# Private, so that what the tests mount there stays there.
mount --bind "$ROOT" "$ROOT" && mount --make-private "$ROOT" || exit 1
for m in $BINDS; do
    mkdir -p "$ROOT/$m" && mount --bind "/$m" "$ROOT/$m" || exit 1
done
# Name resolution for apt, and no service started by a package's
# install script (openssh-server's sshd on the machine's port 22).
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" || exit 1
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"

mkdir -p "$ROOT/src" || exit 1
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
        [ -e "$f" ] || [ -L "$f" ] || continue
        case $f in build/* | bin/*) continue ;; esac
        printf '%s\0' "$f"
    done |
    tar --null -T - -cf - | tar -C "$ROOT/src" -xf - || exit 1

say "make test, then make demo, as root in $ROOT (log $LOG)"
t0=$(date +%s)
chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c 'cd /src &&
        { make test; t=$?; echo "minimal_root: make test exit $t"; } &&
        { make demo; d=$?; echo "minimal_root: make demo exit $d"; } &&
        [ "$t" -eq 0 ] && [ "$d" -eq 0 ]' 2>&1 | tee -a "$LOG"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ]; then
    say "passed in $(($(date +%s) - t0)) s"
else
    say "FAILED (exit $rc) in $(($(date +%s) - t0)) s; log $LOG"
fi
exit "$rc"
