#!/bin/sh
# Runs the shell test suites named as arguments (integration, e2e): every
# tests/SUITE/*.sh, each with a time limit, and prints one line per test.
# Exits non-zero if any test failed. TEST=name runs only matching tests.
cd "$(dirname "$0")/.." || exit 2
limit=${TEST_TIMEOUT:-300}
pass=0
failed=""
for suite in "$@"; do
    for t in tests/"$suite"/*.sh; do
        [ -e "$t" ] || continue
        name=$suite/$(basename "$t" .sh)
        case $name in *"${TEST:-}"*) ;; *) continue ;; esac
        start=$(date +%s)
        if timeout -k 10 "$limit" bash "$t" >"/tmp/ferry-$$.log" 2>&1; then
            pass=$((pass + 1))
            echo "PASS $name ($(( $(date +%s) - start ))s)"
        else
            rc=$?
            echo "FAIL $name (exit $rc, $(( $(date +%s) - start ))s)"
            sed 's/^/    /' "/tmp/ferry-$$.log" | tail -n 30
            failed="$failed $name"
        fi
        rm -f "/tmp/ferry-$$.log"
    done
done
if [ -n "$failed" ]; then
    echo "$pass passed; FAILED:$failed"
    exit 1
fi
echo "$pass passed"
