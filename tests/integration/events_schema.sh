# docs/events.schema.json against what documents it and what it checks:
# README's table of events and their fields, its summary fields and exit
# statuses, and the error names of common/err.[ch] are the schema's,
# both ways; the validator refuses a bad event with one line saying why;
# and every command ends with a summary under --json, whatever its end.
. "$(dirname "$0")/../lib/common.sh"

root=$(cd "$TESTS_DIR/.." && pwd)
validate="$TESTS_DIR/lib/validate_events.py"

python3 - "$root" <<'PY' || fail "the schema and what documents it differ"
import json, os, re, sys

root = sys.argv[1]
schema = json.load(open(os.path.join(root, "docs/events.schema.json")))
defs = schema["$defs"]
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
bad = []


def table(after):
    """The rows of the first table after the line holding `after`: a list
    of cells lists."""
    lines = readme[readme.index(after):].splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|"))
    rows = []
    for l in lines[start + 2:]:
        if not l.startswith("|"):
            break
        rows.append([c.strip() for c in l.strip("|").split("|")])
    return rows


def ticked(text):
    return set(re.findall(r"`([a-z_0-9]+)`", text))


def same(what, doc, sch):
    for n in sorted(doc - sch):
        bad.append("%s: %s is in README, not in the schema" % (what, n))
    for n in sorted(sch - doc):
        bad.append("%s: %s is in the schema, not in README" % (what, n))


def fields(name):
    """Every field an event's shapes can carry, event aside, and host
    where it is not required (every event of one of many boxes carries
    it: README says so once)."""
    d = defs[name]
    shapes = [d] if "properties" in d else [
        defs[s["$ref"].split("/")[-1]] for s in (d["then"], d["else"])]
    once = set() if "host" in d.get("required", ()) else {"host"}
    return set().union(*(s["properties"] for s in shapes)) - {"event"} - once


events = table("The events:")
doc = {}
for cells in events:
    names = ticked(cells[0])
    assert len(names) == 1, cells
    doc[names.pop()] = ticked(cells[2])
same("events", set(doc), set(schema["properties"]["event"]["enum"]))
branches = {b["if"]["properties"]["event"]["const"] for b in schema["allOf"]}
same("events with a definition", set(doc), branches)
for name in sorted(set(doc) & set(defs) - {"summary"}):
    same("fields of " + name, doc[name], fields(name))

summary = set().union(*(ticked(c[0]) for c in table("| field | meaning |")))
same("summary fields", summary,
     set(defs["summary_transfer"]["properties"]) - {"event", "host"})
if "host" not in ticked(readme[readme.index("The events:"):]):
    bad.append("host: every event's field with many boxes, not in README")

codes = {int(c[0]) for c in table("## Exit status")}
same("exit codes", set(map(str, codes)),
     {str(o["const"]) for o in defs["exit_code"]["oneOf"]})

err_h = open(os.path.join(root, "common/err.h")).read()
err_c = open(os.path.join(root, "common/err.c")).read()
names = set(re.findall(r"^\s*X\((\w+), -\d+,", err_h, re.M))
names |= set(re.findall(r'case -E\w+: return "(E\w+)";', err_c))
names |= {"ERROR", "WARNING"}
enum = set(defs["code"]["enum"])
for n in sorted(names ^ enum):
    bad.append("error code %s: in %s only" % (n, "the schema" if n in enum
               else "common/err.[ch]"))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# The validator: a good line passes; each bad one is named with its line,
# its event and what is wrong; nothing else on stdout.
good='{"event":"ready","path":"a","bytes":3}'
cat >"$T/bad.ndjson" <<EOF
$good
{"event":"ready","path":"a","bytes":3,"color":"red"}
{"event":"file","path":"a","action":"sent","bytes":"3"}
{"event":"teleported","path":"a"}
{"event":"summary","ok":true}
ferry: a line for stderr
{"event":"ready","path":"a","bytes":3,"bytes":4}
{"path":"a","bytes":3}
EOF
expect_rc 1 python3 "$validate" "$T/bad.ndjson"
said() {
    grep -qF -- "$T/bad.ndjson:$1" "$T/last.out" ||
        { cat "$T/last.out"; fail "the validator did not say '$1'"; }
}
said "2: event \"ready\": Additional properties are not allowed ('color' was unexpected)"
said "3: event \"file\": bytes: '3' is not of type 'integer'"
said "4: event \"teleported\": event: 'teleported' is not one of"
said "5: event \"summary\": "
said "6: not a JSON object"
said "7: not a JSON object (duplicate key 'bytes')"
[ "$(grep -c "^$T/bad.ndjson:8: event null: 'event' is a required property" \
    "$T/last.out")" -eq 1 ] && [ "$(grep -c "^$T/bad.ndjson:8:" \
    "$T/last.out")" -eq 1 ] || { cat "$T/last.out"; fail "line 8: not one line"; }
! grep "^$T/bad.ndjson:1:" "$T/last.out" || fail "a good line refused"
expect_rc 0 python3 "$validate" - <<<"$good"

# Every command ends with a summary naming it, however it ends.
mkdir -p "$T/src/d"
echo one >"$T/src/a"
echo two >"$T/src/d/b"
ends() {
    want=$1 cmd=$2
    shift 2
    expect_rc "$want" "$FERRY" "$@"
    tail -n 1 "$T/last.out" | grep -q "^{\"event\":\"summary\",.*\"exit_code\":$want,.*\"command\":\"$cmd\"}\$" ||
        { cat "$T/last.out"; fail "no summary of $cmd last: $*"; }
}
ends 0 push push --json "$T/src/" "local:$T/d1"
ends 0 push push --json -n "$T/src/" "local:$T/d2"
ends 2 push push --json -n "$T/nope" "local:$T/d2"
mkdir -p "$T/d3"
echo old >"$T/d3/gone"
ends 0 pull pull --json --delete "local:$T/src/" "$T/d3"
grep -q '^{"event":"deleted","action":"delete","path":"gone",' "$T/last.out" ||
    { cat "$T/last.out"; fail "no deleted event"; }
ends 0 status status --json "$T/d1"
ends 0 status status --json "local:$T/d1"
ends 0 clean clean --json "$T/d1"
ends 0 clean clean --json "local:$T/d1"
ends 3 status status --json "$T/nope"
ends 0 pack pack --json "$T/src" "$T/vols"
ends 0 unpack unpack --json "$T/vols" "$T/back"
ends 1 pack pack --json "$T/src"
ends 1 unpack unpack --bogus --json "$T/vols" "$T/back2"
ends 0 push push --json --keep-volumes "$T/src/" "local:$T/kv"
expect_rc 1 "$FERRY" --json
tail -n 1 "$T/last.out" | grep -q '^{"event":"summary",.*"exit_code":1,' ||
    fail "no summary for a command line without a command"
