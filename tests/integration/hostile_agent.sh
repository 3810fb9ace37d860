# The other side is hostile: a scripted agent tries to write outside the
# destination, into ferry's state, or files nobody asked for, and sends
# garbage. Each attempt must fail cleanly and write nothing it should not.
. "$(dirname "$0")/../lib/common.sh"

fake="$TESTS_DIR/lib/fake_agent.py"
mkdir -p "$T/outside" "$T/dest"
export FAKE_AGENT_OUTSIDE="$T/outside"

run_fake() {
    FAKE_AGENT_MODE=$1 expect_rc "$2" "$FERRY" pull --agent "$fake" \
        "local:/srv/wanted.txt" "$T/dest/"
}

# "../escape": the decoder refuses the path.
run_fake dotdot 4
[ ! -e "$T/escape" ] || fail "dotdot wrote outside"

# A symlink, then a file "through" it: never followed; the file fails.
FAKE_AGENT_MODE=symlink-walk expect_rc 3 "$FERRY" pull --agent "$fake" \
    "local:/srv/a" "$T/dest/"
expect_err "a/pwned: Not a directory"
[ ! -e "$T/outside/pwned" ] || fail "wrote through a symlink"
rm -f "$T/dest/a"

# Its state directory is not the sender's to write.
FAKE_AGENT_MODE=state-dir expect_rc 3 "$FERRY" pull --agent "$fake" \
    "local:/srv/.ferry" "$T/dest/"
expect_err "name reserved"
[ ! -e "$T/dest/.ferry/part/x" ] || fail "wrote into the state directory"

# A name that was not requested.
run_fake unrequested 4
expect_err "not requested"
[ ! -e "$T/dest/other.txt" ] || fail "accepted an unrequested file"

# A block whose hash is wrong is never committed.
run_fake bad-hash 9
[ ! -e "$T/dest/wanted.txt" ] || fail "committed a file with a bad hash"

# Noise before the protocol and an oversized frame: clear errors.
run_fake banner 4
expect_err "local"
run_fake huge-frame 4

# An agent that speaks another protocol version.
run_fake version 8
expect_err "protocol 9-9"

# Nothing was left behind in the destination.
[ -z "$(ls -A "$T/dest")" ] || { ls -laR "$T/dest"; fail "dest not empty"; }

# A status that lists more unfinished files than a client holds (the
# space check reads the same list) is refused, not kept in memory.
FAKE_AGENT_MODE=many-partials expect_rc 4 "$FERRY" status --agent "$fake" \
    "local:/srv/d"
expect_err "more than 65536 unfinished files"
