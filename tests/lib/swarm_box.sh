# Helpers for tests that drive ferry-swarm helpers directly: box N reads
# its commands from the fifo opened on fd 10+N and writes its events to
# $T/bN.out (and stderr to $T/bN.err).

# say N LINE: one command line to box N.
say() { echo "$2" >&$((10 + $1)); }

# wait_line N REGEX SECONDS: until box N's events hold a line matching.
wait_line() {
    local end=$((SECONDS + $3))
    while ! grep -qE "$2" "$T/b$1.out" 2>/dev/null; do
        [ $SECONDS -lt $end ] || {
            tail -n 5 "$T/b$1.out" "$T/b$1.err" >&2
            fail "box $1: no '$2' in $3 s"
        }
        sleep 0.05
    done
}
