#!/bin/bash
# mutate.sh: how many of the checks in engine/, server/ and proto/ do the
# unit tests catch? (`make mutate`)
#
# A site is either
#   - a line that returns or fails with a check's error (FERRY_ERR_PROTOCOL,
#     BAD_PATH, TOO_LARGE, HASH_MISMATCH, STATE, FORMAT, SHORT, TRAILING,
#     CHANGED, TORN): its mutant reports success instead (the error
#     replaced by 0), or, where the line returns what a NAME_fail helper
#     returns (tar_fail, volr_fail, xfer_fail: they also record the
#     failure, which a later step would still meet), does not call it
#     (`return 0 && NAME_fail(...)`): the check passes silently;
#   - a row of a role's dispatch table ({ handler, states, once }): one
#     mutant takes the message in every state (none for a row that does
#     already: its states NAME_ANY), and a row with once set has a second
#     that takes it any number of times.
# Each mutant is built alone in a copy of the working tree, and the unit
# tests run on it until their first failure (test-unit -x). It is caught
# when they fail. Sites are drawn with a fixed seed, so two runs over the
# same tree judge the same mutants.
#
#   MUTATE_SAMPLE  sites to judge (default 40; 0: all of them)
#   MUTATE_SEED    the draw (default 1)
#   MUTATE_MIN     percentage caught below which the run fails (default 95)
#   MUTATE_FILES   a regex on paths: only sites in those files
#
# Prints each mutant not caught, then "caught K of N", and exits 1 when
# under MUTATE_MIN. Each mutant costs a compile and a link, and a unit run
# up to its first failure; an uncaught one a whole unit run.
set -u
SAMPLE=${MUTATE_SAMPLE:-40}
SEED=${MUTATE_SEED:-1}
MIN=${MUTATE_MIN:-95}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/ferry-mutate.XXXXXX)
[ -n "${MUTATE_KEEP:-}" ] || trap 'rm -rf "$W"' EXIT
START=$(date +%s)
# A loaded machine must not pass for a caught mutant.
export FERRY_TEST_TIMEOUT=${FERRY_TEST_TIMEOUT:-120}

# The working tree, tracked and new files, as it is now.
(cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) |
    tar -x -C "$W"
# The objects already built, if any, with their times: only what is
# older than its sources is built again.
[ -d "$ROOT/build/release" ] && mkdir -p "$W/build" &&
    cp -a "$ROOT/build/release" "$W/build/"
cd "$W" || exit 2
UNIT=build/release/tests/test-unit
make -j2 "$UNIT" >build.log 2>&1 || { tail -n 20 build.log; echo "mutate: the unit tests do not build"; exit 2; }
"./$UNIT" -x >unit.log 2>&1 || { tail -n 20 unit.log; echo "mutate: the unit tests fail before any mutation"; exit 2; }

ERRS='FERRY_ERR_(PROTOCOL|BAD_PATH|TOO_LARGE|HASH_MISMATCH|STATE|FORMAT|SHORT|TRAILING|CHANGED|TORN)'
ROW='^[[:space:]]*\[MSG_[A-Z0-9_]+\][[:space:]]*=[[:space:]]*\{[[:space:]]*[a-z0-9_]+,'
# A row whose states are NAME_ANY: it takes its message in every state.
ANY='\{[[:space:]]*[a-z0-9_]+,[[:space:]]*[A-Z0-9_]+_ANY[[:space:]]*,'
# KIND FILE LINE, one site a line.
sites() {
    local f
    find engine server proto -name '*.c' | sort | while read -r f; do
        [ -n "${MUTATE_FILES:-}" ] && ! [[ $f =~ $MUTATE_FILES ]] && continue
        grep -nE "$ERRS\\b" "$f" | grep -E 'return|fail\(' |
            cut -d: -f1 | sed "s|^|err $f |"
        grep -nE "$ROW" "$f" | grep -vE "$ANY" |
            cut -d: -f1 | sed "s|^|states $f |"
        grep -nE "$ROW.*,[[:space:]]*1[[:space:]]*\\},?[[:space:]]*\$" "$f" |
            cut -d: -f1 | sed "s|^|once $f |"
    done
}
sites >all.txt
TOTAL=$(wc -l <all.txt)
if [ "$SAMPLE" -gt 0 ] && [ "$SAMPLE" -lt "$TOTAL" ]; then
    awk -v seed="$SEED" 'BEGIN { srand(seed) } { printf "%.9f\t%s\n", rand(), $0 }' all.txt |
        sort -n | cut -f2- | head -n "$SAMPLE" | sort -k2,2 -k3,3n >judged.txt
else
    cp all.txt judged.txt
fi

# mutate KIND FILE LINE: edits FILE in place; 1 if nothing changed.
mutate() {
    local kind=$1 f=$2 l=$3
    case $kind in
    err)
        if sed -n "${l}p" "$f" | grep -qE 'return [a-z0-9_]+_fail\('; then
            sed -i -E "${l}s/return ([a-z0-9_]+_fail\()/return 0 \&\& \1/" "$f"
        else
            sed -i -E "${l}s/$ERRS\\b/0/" "$f"
        fi ;;
    # The states field, up to the once field or the row's end: every bit
    # set.
    states) sed -i -E "${l}s/(\\{[[:space:]]*[a-z0-9_]+,)[^,}]+/\\1 ~0u /" "$f" ;;
    once) sed -i -E "${l}s/,[[:space:]]*1[[:space:]]*\\}/, 0 }/" "$f" ;;
    esac
    ! cmp -s "$f" "$f.orig"
}

n=0 caught=0
missed=() unbuilt=()
while read -r kind f l; do
    cp "$f" "$f.orig"
    # Built without -Werror: a mutant may leave a value unused or narrow
    # a constant (~0u in a byte field), and still means what it says.
    if ! mutate "$kind" "$f" "$l"; then
        :
    elif ! make -j2 WARN=-w "$UNIT" >mut.log 2>&1; then
        # The edit, not the tests, is wrong: said, not judged.
        unbuilt+=("$kind $f:$l: $(sed -n "${l}p" "$f.orig" | sed 's/^[[:space:]]*//')")
    else
        n=$((n + 1))
        if timeout 600 "./$UNIT" -x >/dev/null 2>&1; then
            missed+=("$kind $f:$l: $(sed -n "${l}p" "$f.orig" | sed 's/^[[:space:]]*//')")
        else
            caught=$((caught + 1))
        fi
    fi
    mv "$f.orig" "$f"
    touch "$f"
done <judged.txt
make -j2 "$UNIT" >/dev/null 2>&1 || true

for m in "${unbuilt[@]}"; do echo "mutant does not build: $m"; done
for m in "${missed[@]}"; do echo "not caught: $m"; done
pct=0
[ "$n" -gt 0 ] && pct=$((caught * 100 / n))
echo "mutate: caught $caught of $n mutants ($pct%), drawn from $TOTAL sites (seed $SEED); $(($(date +%s) - START)) s"
[ "$n" -gt 0 ] && [ "$pct" -ge "$MIN" ]
