# A file committed over an old version of 64 MiB or more
# (DEST_WRITE_RELEASE_MIN): the new version is in place when ferry returns, and
# the old one, whose pages are freed by a detached process rather than in
# the commit (fsx_close_detached), is let go of within seconds: no
# process keeps it open, nor anything else of the destination's. Whole and
# delta, push (the agent commits) and pull (the client does).
. "$(dirname "$0")/../lib/common.sh"

MIB=1048576

# holders DIR: pids with an open fd into DIR (the old versions show as
# "DIR/... (deleted)").
holders() {
    for fd in /proc/[0-9]*/fd/*; do
        case $(readlink "$fd" 2>/dev/null) in
        "$1"/*) echo "${fd%/fd/*}" ;;
        esac
    done | sort -u
}

# released DIR WHAT: within 5 s no process holds anything under DIR.
released() {
    for _ in $(seq 1 50); do
        [ -z "$(holders "$1")" ] && return 0
        sleep 0.1
    done
    fail "$2: still held: $(holders "$1" | tr '\n' ' ')"
}

mkdir -p "$T/src" "$T/old"
head -c $((70 * MIB)) /dev/urandom >"$T/old/model.bin"
cp "$T/old/model.bin" "$T/src/model.bin"
printf 'a new version' | dd of="$T/src/model.bin" bs=1 seek=$((33 * MIB)) \
    conv=notrunc 2>/dev/null
touch -d '2024-05-02 12:00:00' "$T/src/model.bin"

# 1. Pushed whole over the old version.
mkdir -p "$T/d1"
cp "$T/old/model.bin" "$T/d1/"
ino=$(stat -c %i "$T/d1/model.bin")
expect_rc 0 "$FERRY" push --json --delta=never "$T/src/" "local:$T/d1"
cmp "$T/src/model.bin" "$T/d1/model.bin" || fail "push: copy differs"
[ "$(stat -c %i "$T/d1/model.bin")" != "$ino" ] ||
    fail "push: the old version was written over, not replaced"
released "$T/d1" "push"

# 2. Pushed as a delta over it (the basis is the old version itself).
mkdir -p "$T/d2"
cp "$T/old/model.bin" "$T/d2/"
expect_rc 0 "$FERRY" push --json --delta=always "$T/src/" "local:$T/d2"
cmp "$T/src/model.bin" "$T/d2/model.bin" || fail "delta push: copy differs"
[ "$(json_field bytes_matched)" -gt $((60 * MIB)) ] ||
    fail "delta push: $(json_field bytes_matched) bytes matched"
released "$T/d2" "delta push"

# 3. Pulled over it: the client commits.
mkdir -p "$T/d3"
cp "$T/old/model.bin" "$T/d3/"
expect_rc 0 "$FERRY" pull --json "local:$T/src/model.bin" "$T/d3/"
cmp "$T/src/model.bin" "$T/d3/model.bin" || fail "pull: copy differs"
released "$T/d3" "pull"

# 4. Right after, the destination takes the next transfer (its lock is
#    not held by the process freeing the old version).
cp "$T/old/model.bin" "$T/d3/model.bin"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d3"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d3"
cmp "$T/src/model.bin" "$T/d3/model.bin" || fail "again: copy differs"
[ "$(json_field files_skipped)" = 1 ] ||
    fail "again: the second push did not find the file up to date"
released "$T/d3" "again"
