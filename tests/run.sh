#!/bin/bash
# Runs the shell test suites named as arguments (integration, e2e): every
# tests/SUITE/*.sh, each with a time limit, and prints one line per test as
# it ends. Exits non-zero if any test failed. TEST=name runs only matching
# tests; TEST_JOBS=N runs N at once (default 3).
#
# Tests run side by side because most of their time is waiting (for a
# timeout to fire, a proxy to stall, a retry to back off), not CPU: each
# has its own scratch dir, sshd on a port of its own and XDG dirs, so none
# sees another. Their time bounds are generous enough for a loaded machine.
# A test whose header holds the line "# run.sh: alone" (one that judges the
# link by how long a loopback key exchange takes, which a loaded machine
# stretches) runs after the others, with nothing beside it. TEST_JOBS=1
# runs every test alone, to rule load out.
cd "$(dirname "$0")/.." || exit 2
limit=${TEST_TIMEOUT:-300}
width=${TEST_JOBS:-3}
case $width in '' | *[!0-9]* | 0) echo "TEST_JOBS must be a positive number" >&2; exit 2 ;; esac
out=$(mktemp -d "${TMPDIR:-/tmp}/ferry-run.XXXXXX") || exit 2
trap 'rm -rf "$out"' EXIT
# Each test adds how many --json lines it had checked against the schema
# and their events (tests/lib/common.sh); the total is said at the end.
export FERRY_EVENTS_TALLY="$out/events.tally"
: >"$FERRY_EVENTS_TALLY"
trap 'kill $(jobs -p) 2>/dev/null; exit 130' INT TERM

# run_one N NAME FILE: runs one test, leaves its report in $out/N.report
# and its verdict in $out/N.pass or $out/N.fail.
run_one() {
    local start rc
    start=$(date +%s)
    if timeout -k 10 "$limit" bash "$3" >"$out/$1.log" 2>&1; then
        echo "PASS $2 ($(($(date +%s) - start))s)" >"$out/$1.report"
        : >"$out/$1.pass"
    else
        rc=$?
        {
            echo "FAIL $2 (exit $rc, $(($(date +%s) - start))s)"
            sed 's/^/    /' "$out/$1.log" | tail -n 30
        } >"$out/$1.report"
        : >"$out/$1.fail"
    fi
}

# Prints the reports of tests that ended since the last call, each whole.
show_ended() {
    local i
    for ((i = 1; i <= n; i++)); do
        [ -e "$out/$i.shown" ] && continue
        [ -e "$out/$i.pass" ] || [ -e "$out/$i.fail" ] || continue
        cat "$out/$i.report"
        : >"$out/$i.shown"
    done
}

# start NAME FILE WIDTH: starts a test once fewer than WIDTH run.
n=0
names=()
start() {
    while [ "$(jobs -rp | wc -l)" -ge "$3" ]; do
        wait -n
        show_ended
    done
    n=$((n + 1))
    names[n]=$1
    run_one "$n" "$1" "$2" &
}
drain() {
    while [ "$(jobs -rp | wc -l)" -gt 0 ]; do
        wait -n
        show_ended
    done
    wait
    show_ended
}

alone=()
for suite in "$@"; do
    for t in tests/"$suite"/*.sh; do
        [ -e "$t" ] || continue
        name=$suite/$(basename "$t" .sh)
        case $name in *"${TEST:-}"*) ;; *) continue ;; esac
        if grep -q '^# run.sh: alone' "$t"; then
            alone+=("$name" "$t")
        else
            start "$name" "$t" "$width"
        fi
    done
done
drain
for ((a = 0; a < ${#alone[@]}; a += 2)); do
    start "${alone[a]}" "${alone[a + 1]}" 1
    drain
done

awk '{ n += $1; k = k "," $2 } END {
    split(k, a, ","); for (i in a) if (a[i] != "" && a[i] != "-") seen[a[i]]
    m = 0; for (e in seen) m++
    printf "events validated: %d lines, %d event kinds\n", n, m }' \
    "$FERRY_EVENTS_TALLY"

pass=0
failed=""
for ((i = 1; i <= n; i++)); do
    if [ -e "$out/$i.pass" ]; then
        pass=$((pass + 1))
    else
        failed="$failed ${names[i]}"
    fi
done
if [ -n "$failed" ]; then
    echo "$pass passed; FAILED:$failed"
    exit 1
fi
echo "$pass passed"
