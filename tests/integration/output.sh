# What the user sees: NDJSON on stdout with --json (every line valid JSON,
# the summary last with every documented field), a progress line only on a
# terminal, names from the other side escaped before they are printed.
. "$(dirname "$0")/../lib/common.sh"

mkdir -p "$T/src"
head -c 5000000 /dev/urandom >"$T/src/data.bin"
printf 'x' >"$T/src/evil$(printf '\033')]0;pwned$(printf '\007')name"

expect_rc 0 "$FERRY" push --json "$T/src/" "local:$T/d1"
python3 - "$T/last.out" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
events = [json.loads(l) for l in lines]
assert events, "no events"
assert events[-1]["event"] == "summary", events[-1]
s = events[-1]
for k in ("ok", "files_total", "files_sent", "files_skipped", "bytes_total",
          "bytes_payload", "bytes_literal", "bytes_matched", "bytes_wire",
          "bytes_wire_in", "streams", "elapsed_s", "resumed_bytes",
          "readback_bytes", "readback_s", "exit_code"):
    assert k in s, "summary lacks " + k
assert s["ok"] is True and s["files_sent"] == 2 and s["streams"] == 1, s
files = [e for e in events if e["event"] == "file"]
assert len(files) == 2 and all(e["action"] == "sent" for e in files), files
assert any("\x1b" in e["path"] for e in files), "name not kept exactly"
# Each file sent is then ready, right after its file event.
for i, e in enumerate(events):
    if e["event"] == "file" and e["action"] == "sent":
        r = events[i + 1]
        assert r["event"] == "ready" and r["path"] == e["path"] and \
            r["bytes"] == e["bytes"], (e, r)
assert len([e for e in events if e["event"] == "ready"]) == 2, events
PY
# The same for a pull, whose files are committed here.
expect_rc 0 "$FERRY" pull --json "local:$T/src/" "$T/p1"
python3 - "$T/last.out" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
ready = [e["path"] for e in events if e["event"] == "ready"]
sent = [e["path"] for e in events
        if e["event"] == "file" and e["action"] == "sent"]
assert ready == sent and len(ready) == 2, (ready, sent)
PY
[ -s "$T/last.err" ] && grep -q $'\033' "$T/last.err" &&
    fail "an escape sequence from a name reached the terminal"

# The same error, as an event and as one line on stderr.
expect_rc 2 "$FERRY" push --json "$T/nope" "local:$T/d2"
python3 - "$T/last.out" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
err = [e for e in events if e["event"] == "error"]
assert err and err[0]["code"] == "ENOENT" and err[0]["side"] == "source", err
assert events[-1]["event"] == "summary" and events[-1]["ok"] is False
assert events[-1]["exit_code"] == 2
PY
[ "$(wc -l <"$T/last.err")" -eq 1 ] || fail "more than one line for one error"

# Escaped on stderr: the file with an escape sequence in its name fails
# (a directory is in its place at the destination); its error line shows
# the name escaped.
evil=$(cd "$T/src" && ls | grep name)
mkdir -p "$T/d5/$evil"
expect_rc 3 "$FERRY" push "$T/src/" "local:$T/d5"
expect_err "Is a directory"
expect_err 'evil\x1b]0;pwned\x07name'
grep -q $'\033' "$T/last.err" && fail "escape sequence printed raw"

# No progress line when stderr is not a terminal ...
expect_rc 0 "$FERRY" push "$T/src/" "local:$T/d3"
grep -q 'ETA' "$T/last.err" && fail "progress line on a pipe"
# ... and one (bytes, percent, files, rate, ETA) when it is.
export FERRY_AGENT_REAL="$AGENT" SLOW_AGENT_RATE=4000000
script -q -e -c "'$FERRY' push --agent '$TESTS_DIR/lib/slow_agent.py' \
    '$T/src/' 'local:$T/d4'" /dev/null >"$T/tty.out" 2>&1 ||
    { cat "$T/tty.out"; fail "push on a terminal"; }
grep -q '%.*files.*/s.*ETA' "$T/tty.out" || { cat -v "$T/tty.out" | head;
    fail "no progress line on a terminal"; }

# Files packed in volumes count as done when they are packed, not when
# the receiver answers for them: 20 MB of small files pushed at 8 MB/s
# show their progress rising (a few MiB ahead of the wire, in the
# buffers), not 100% at the first answers.
mkdir -p "$T/many"
for i in $(seq 1 40); do head -c 500000 /dev/urandom >"$T/many/f$i"; done
SLOW_AGENT_RATE=8000000 "$FERRY" push --progress --agent "$TESTS_DIR/lib/slow_agent.py" \
    "$T/many/" "local:$T/d6" 2>"$T/prog.err" || fail "push of many"
tree_same "$T/many" "$T/d6"
between=$(tr '\r' '\n' <"$T/prog.err" | grep -Eo ' [0-9]+%' | tr -d ' %' |
    awk '$1 > 0 && $1 < 100' | sort -u | wc -l)
[ "$between" -ge 2 ] || { tr '\r' '\n' <"$T/prog.err" | cat -v | head;
    fail "progress did not rise through the packed files"; }
