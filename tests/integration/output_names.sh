# How names and outcomes read: one '/' between a destination and a path
# however the destination was written, "received" for a pull, warnings
# with a code of their own, C1 controls escaped like C0 ones (on stderr
# and in JSON), a source file changed while read named where it is, with
# a hint, and a progress line that fits a narrow terminal.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
echo data >"$T/src/f"

# A directory in the way of the file: the error line names it with one
# '/', for a remote destination and a local one.
mkdir -p "$T/d1/f" "$T/p1/f"
expect_rc 3 "$FERRY" push "$T/src/f" "local:$T/d1//"
expect_err "ferry: local:$T/d1/f: Is a directory"
grep -q '//' "$T/last.err" && { cat "$T/last.err"; fail "doubled slash"; }
expect_rc 3 "$FERRY" pull "local:$T/src/f" "$T/p1//"
expect_err "ferry: $T/p1/f: Is a directory"
grep -q '//' "$T/last.err" && { cat "$T/last.err"; fail "doubled slash"; }

# A pull receives, a push sends.
expect_rc 0 "$FERRY" pull "local:$T/src/f" "$T/p2/"
expect_err "ferry: 1 received ("
expect_rc 0 "$FERRY" push "$T/src/f" "local:$T/d2/"
expect_err "ferry: 1 sent ("

# A warning (a FIFO is skipped) has a code that says it is one.
mkfifo "$T/src/pipe"
expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d3"
python3 - "$T/last.out" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
w = [e for e in ev if e["event"] == "warning"]
assert len(w) == 1 and w[0]["code"] == "WARNING", w
assert w[0]["path"].endswith("pipe"), w
PY
expect_err "(warning)"
rm -f "$T/src/pipe"

# C1 controls (U+009B is a CSI) are escaped like ESC: on stderr as the
# bytes, in JSON as \u009b; the raw bytes reach neither.
c1=$(printf 'c1\302\2332Jname')
mkdir -p "$T/src2" "$T/d4/$c1"
echo x >"$T/src2/$c1"
expect_rc 3 "$FERRY" push --json "$T/src2/" "local:$T/d4"
expect_err 'c1\xc2\x9b2Jname: Is a directory'
grep -q "$(printf '\302\233')" "$T/last.err" && fail "C1 control printed raw"
grep -q "$(printf '\302\233')" "$T/last.out" && fail "C1 control raw in JSON"
grep -qF 'c1\u009b2Jname' "$T/last.out" || fail "C1 control not \\u009b"

# A source file that changes while it is read, in a pull: named where it
# is on the remote side (not as if in the remote home), with a hint.
change_while_read "$T/chgdst" pull --block-size 64K --pack-threshold 0 \
    "local:$T/chg/" "$T/chgdst"
[ "$rc" -eq 2 ] || { cat "$T/last.err"; fail "changed file: exit $rc"; }
expect_err "ferry: local:$T/chg/b: file changed while being read"
expect_err "run the same command again once the writer is done"
# The same with the directory itself as the source (its name on the wire
# is "chg/b").
change_while_read "$T/chgdst2" pull --block-size 64K --pack-threshold 0 \
    "local:$T/chg" "$T/chgdst2"
[ "$rc" -eq 2 ] || { cat "$T/last.err"; fail "changed file: exit $rc"; }
expect_err "ferry: local:$T/chg/b: file changed while being read"

# The progress line fits a terminal 40 columns wide: no frame wider than
# 39 columns (a full last column wraps on some terminals).
mkdir -p "$T/big"
head -c 8000000 /dev/urandom >"$T/big/data.bin"
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=4000000
script -q -e -c "stty cols 40; '$FERRY' push --agent \
    '$TESTS_DIR/lib/slow_agent.py' '$T/big/' 'local:$T/d5'" /dev/null \
    >"$T/tty.out" 2>&1 || { cat "$T/tty.out"; fail "push on a terminal"; }
python3 - "$T/tty.out" <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
# Progress frames are drawn after "\r\x1b[K"; messages ("ferry: ...")
# take the line's place the same way but end with a newline.
frames = [f for f in re.split(r"[\r\n]", raw)
          if f.startswith("\x1b[K") and not f.startswith("\x1b[Kferry:")]
assert frames, "no progress frames: %r" % raw[:300]
wide = [f for f in frames if len(f) - 3 > 39]
assert not wide, "frames wider than 39 columns: %r" % wide[:3]
assert any("%" in f for f in frames), frames[:3]
PY
