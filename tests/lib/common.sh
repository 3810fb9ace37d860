# Sourced by every integration and e2e test (bash).
#
# Gives: $FERRY, $AGENT, $TOOLS, a scratch dir $T removed on exit, and
# helpers to run commands expecting an exit status and to compare trees.
set -eu

: "${FERRY_BIN:=bin}"
: "${FERRY_TOOLS:=build/release/tests}"
case $FERRY_BIN in /*) ;; *) FERRY_BIN=$(pwd)/$FERRY_BIN ;; esac
case $FERRY_TOOLS in /*) ;; *) FERRY_TOOLS=$(pwd)/$FERRY_TOOLS ;; esac
FERRY=$FERRY_BIN/ferry
AGENT=$FERRY_BIN/ferry-agent
TOOLS=$FERRY_TOOLS
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export FERRY_AGENT="$AGENT"

T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-test.XXXXXX")
# Kept delta signatures (and any other cache) go here, not to ~/.cache.
export XDG_CACHE_HOME="$T/cache"
# Every --json line of every ferry the test runs, whatever the test does
# with its stdout, is copied here (client/output.c) and checked against
# docs/events.schema.json when the test ends: a line that does not fit
# fails the test. (0666: a test may run ferry as another user.)
export FERRY_TEST_EVENTS="$T/events.ndjson"
: >"$FERRY_TEST_EVENTS"
chmod 0666 "$FERRY_TEST_EVENTS"
CLEANUP_HOOKS=""
cleanup() {
    local rc=$?
    for h in $CLEANUP_HOOKS; do "$h" || true; done
    if [ -s "$FERRY_TEST_EVENTS" ] && ! python3 \
        "$TESTS_DIR/lib/validate_events.py" ${FERRY_EVENTS_TALLY:+--tally \
        "$FERRY_EVENTS_TALLY"} "$FERRY_TEST_EVENTS" >"$T/events.bad"; then
        echo "FAIL: $(basename "$0"): events that docs/events.schema.json" \
            "does not accept:" >&2
        sed "s|^$FERRY_TEST_EVENTS:|  line |" "$T/events.bad" | head -n 20 >&2
        [ "$rc" -ne 0 ] || rc=1
    fi
    chmod -R u+rwx "$T" 2>/dev/null || true
    rm -rf "$T"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
at_exit() { CLEANUP_HOOKS="$CLEANUP_HOOKS $1"; }

fail() {
    echo "FAIL: $(basename "$0"): $*" >&2
    exit 1
}

note() { [ -n "${VERBOSE:-}" ] && echo "  $*" >&2 || true; }

# expect_rc STATUS CMD...: runs CMD, fails the test unless it exits STATUS.
# Its stderr is kept in $T/last.err and stdout in $T/last.out. With
# --json among its words, its stdout must be events alone (their fields
# are checked at the end, see FERRY_TEST_EVENTS).
expect_rc() {
    want=$1
    shift
    set +e
    "$@" >"$T/last.out" 2>"$T/last.err"
    rc=$?
    set -e
    if [ "$rc" -ne "$want" ]; then
        echo "--- stderr:" >&2
        tail -n 20 "$T/last.err" >&2
        fail "expected exit $want, got $rc from: $*"
    fi
    case " $* " in
    *" --json "*)
        ! grep -vn '^{"event":"[a-z_]*".*}$' "$T/last.out" >&2 ||
            fail "stdout of a --json run holds more than events: $*"
        ;;
    esac
}

# error_lines: how many lines of the last command's stderr are not the
# summary of a transfer that got under way, nor the line after it (what
# the destination keeps, how to resume).
error_lines() {
    grep -Evc '^ferry: [0-9]+ (sent|received) \(|^ferry: run the same command again|^ferry: .* unfinished files? kept in ' \
        "$T/last.err" || true
}

# expect_err TEXT: the last command's stderr contains TEXT.
expect_err() {
    grep -qF -- "$1" "$T/last.err" ||
        { cat "$T/last.err" >&2; fail "stderr lacks '$1'"; }
}

# json_field NAME: value of NAME in the summary event of $T/last.out.
json_field() {
    grep '"event":"summary"' "$T/last.out" | tail -n 1 |
        sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"
}

# summary_check [FIELD=VALUE...]: the --json events of the last command
# ($T/last.out) end in one summary whose counts add up (sent + up to
# date + failed + left = total, a `failed` event per failed file), with
# each FIELD as given (tests/lib/summary_check.py).
summary_check() {
    python3 "$TESTS_DIR/lib/summary_check.py" "$T/last.out" "$@" ||
        { cat "$T/last.out"; fail "summary of the last run"; }
}

expect_field() {
    got=$(json_field "$1")
    [ "$got" = "$2" ] || fail "summary $1 = '$got', expected '$2'"
}

# tree_same A B: same names, types, modes, mtimes, sizes, link targets and
# file contents (see treecmp.py).
tree_same() {
    python3 "$TESTS_DIR/lib/treecmp.py" "$1" "$2" ||
        fail "trees differ: $1 vs $2"
}

# no_partial_names DIR REF: every regular file under DIR (outside .ferry)
# is byte-identical to the same path under REF, or absent there.
no_partial_names() {
    (cd "$1" && find . -path ./.ferry -prune -o -type f -print0) |
    while IFS= read -r -d '' f; do
        if [ -e "$2/$f" ]; then
            cmp -s "$1/$f" "$2/$f" || { echo "partial: $f"; return 1; }
        fi
    done
}

# wait_part_bytes DIR N: until a part file under DIR/.ferry/part holds N
# bytes on disk (a part file has its full length, with holes, from the
# start, so its size says nothing).
wait_part_bytes() {
    for _ in $(seq 1 1000); do
        got=$(find "$1/.ferry/part" -name '*.part' -printf '%b\n' \
            2>/dev/null | sort -n | tail -n 1)
        [ $(( ${got:-0} * 512 )) -ge "$2" ] && return 0
        sleep 0.01
    done
    fail "transfer into $1 never reached $2 bytes"
}

# agent_killed_midway DEST BYTES CMD...: runs CMD (a transfer through
# tests/lib/slow_agent.py into DEST; output in $T/last.out and
# $T/last.err), kills its agent once DEST holds BYTES of a part file, and
# waits for CMD, which reconnects by itself; sets rc to its exit status.
agent_killed_midway() {
    dest=$1 bytes=$2
    shift 2
    SLOW_AGENT_PIDFILE="$T/agent.pid" "$@" >"$T/last.out" 2>"$T/last.err" &
    pid=$!
    wait_part_bytes "$dest" "$bytes"
    kill -9 "$(cat "$T/agent.pid")"
    set +e
    wait $pid
    rc=$?
    set -e
    [ "$rc" -eq 0 ] || { cat "$T/last.err"; fail "after a retry: exit $rc"; }
    grep -q '"event":"retry"' "$T/last.out" || fail "no retry event"
}

# wait_exists PATH: until PATH exists (at most 20 s; then the test fails,
# with $T/watch.err shown if there is one).
wait_exists() {
    for _ in $(seq 1 200); do
        [ -e "$1" ] && return 0
        sleep 0.1
    done
    [ ! -e "$T/watch.err" ] || cat "$T/watch.err" >&2
    fail "$1 never came"
}

# wait_absent PATH: until PATH is gone (at most 10 s).
wait_absent() {
    for _ in $(seq 1 100); do
        [ ! -e "$1" ] && return 0
        sleep 0.1
    done
    fail "$1 is still there"
}

# free_port: a TCP port the kernel considers free on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# locked_dir DIR SRC: makes DIR a directory ferry may not write in, and
# sets as_user and ferry_bin to run ferry where that holds: as nobody
# when we are root (root may write anywhere; the build may live where
# nobody cannot reach, so copies are run), as ourselves otherwise. SRC
# is made readable to that user.
locked_dir() {
    mkdir -p "$1"
    if [ "$(id -u)" -eq 0 ]; then
        mkdir -p "$T/nbin"
        cp "$FERRY" "$AGENT" "$T/nbin/"
        chmod 0755 "$T" "$1" "$T/nbin"
        chmod -R a+rX "$2" "$T/nbin"
        as_user="setpriv --reuid=65534 --regid=65534 --clear-groups env"
        as_user="$as_user FERRY_AGENT=$T/nbin/ferry-agent"
        ferry_bin="$T/nbin/ferry"
    else
        chmod 0555 "$1"
        as_user=""
        ferry_bin="$FERRY"
    fi
}

# change_while_read DEST ARGS...: runs ferry ARGS (output in $T/last.out
# and $T/last.err) on $T/chg, a 200 MB file a and a small file b, and
# changes b once the transfer into DEST is under way; sets rc to ferry's
# exit status. b is read after a, so it changes while a is on its way.
change_while_read() {
    dest=$1
    shift
    mkdir -p "$T/chg"
    [ -e "$T/chg/a" ] ||
        head -c 200000000 /dev/zero | tr '\0' 'a' >"$T/chg/a"
    echo "before" >"$T/chg/b"
    touch -d '2020-01-01' "$T/chg/b"
    set +e
    "$FERRY" "$@" >"$T/last.out" 2>"$T/last.err" &
    pid=$!
    set -e
    # As soon as the plan is out (entries are being offered), change b.
    for _ in $(seq 1 200); do
        [ -e "$dest/.ferry" ] && break
        sleep 0.01
    done
    echo "after, and longer" >"$T/chg/b"
    set +e
    wait $pid
    rc=$?
    set -e
}

# stop_watch: Ctrl-C to the watch under way; 1 (and SIGKILL, so the test
# ends) when it is still there 10 s later.
stop_watch() {
    [ -n "${wpid:-}" ] || return 0
    kill -INT "$wpid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$wpid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$wpid" 2>/dev/null; then
        echo "the watch ($wpid) did not end within 10 s of Ctrl-C:" >&2
        tail -n 20 "$T/watch.err" >&2
        kill -KILL "$wpid" 2>/dev/null || true
        wait "$wpid" 2>/dev/null || true
        wpid=""
        return 1
    fi
    wait "$wpid" 2>/dev/null || true
    wpid=""
}
