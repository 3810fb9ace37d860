# pull --watch takes its source as a plain pull does: DIR/ puts DIR's
# entries in LOCAL, DIR (no trailing slash) in LOCAL/DIR's name, a glob
# its matches in LOCAL (and only they are units, so --keep counts only
# them), ~/ is the box's home; a directory that does not exist yet, or a
# glob that matches nothing yet, is said once (`waiting`) and watched
# until it appears (`watching`).
. "$(dirname "$0")/../lib/common.sh"

R=$T/home/runs
mkdir -p "$R/ckpts"
echo one >"$R/ckpts/a.pt"
echo log >"$R/ckpts/train.log"
export HOME=$T/home

run_watch() {  # LOCAL SRC [options]: a watch for 4 s, its events in $T/ev
    local l=$1 s=$2
    shift 2
    set +e
    # --foreground: no SIGCONT after the INT. Under load it can land
    # while LeakSanitizer's exit check stops the threads (ptrace), undo
    # that stop, and leave the check waiting for good (make asan).
    timeout --foreground -s INT 4 "$FERRY" pull --watch 1 --json --agent "$AGENT" "$@" \
        "local:$s" "$l" >"$T/ev" 2>"$T/err"
    set -e
}

run_watch "$T/l1" "$R/ckpts/"
[ -f "$T/l1/a.pt" ] && [ -f "$T/l1/train.log" ] || fail "DIR/: not in LOCAL"
run_watch "$T/l2" "$R/ckpts"
[ -f "$T/l2/ckpts/a.pt" ] || fail "DIR: not in LOCAL/DIR"
[ ! -e "$T/l2/ckpts/ckpts" ] && [ ! -e "$T/l2/a.pt" ] ||
    fail "DIR: placed twice or in LOCAL"
run_watch "$T/l3" "$R/ckpts/*.pt"
[ -f "$T/l3/a.pt" ] || fail "glob: the match not pulled"
[ ! -e "$T/l3/train.log" ] || fail "glob: an entry it does not match pulled"
run_watch "$T/l4" "~/runs/ckpts/"
[ -f "$T/l4/a.pt" ] || fail "~/: not the box's home"

# Not there yet: said once, then watched when it comes.
(sleep 2; mkdir -p "$R/later"; echo two >"$R/later/b.pt") &
run_watch "$T/l5" "$R/later/"
wait
[ -f "$T/l5/b.pt" ] || { cat "$T/err"; fail "a directory that came later"; }
python3 - "$T/ev" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
w = [e["action"] for e in ev if e["event"] == "watch"]
assert w.count("waiting") == 1, w
assert w.index("waiting") < w.index("watching") < w.index("pulled"), w
PY
(sleep 2; echo three >"$R/ckpts/c.bin") &
run_watch "$T/l6" "$R/ckpts/*.bin"
wait
[ -f "$T/l6/c.bin" ] || fail "a glob that matched later"
grep -q '"action":"waiting".*no match' "$T/ev" || fail "no match not said"

# --keep counts only the units the source selects: with a glob, the
# newest two checkpoints stay here however new the log beside them is.
mkdir -p "$R/run"
for i in 1 2 3; do
    echo "ckpt $i" >"$R/run/ckpt_$i.pth"
    touch -d "-$((10 - i)) min" "$R/run/ckpt_$i.pth"
done
echo log >"$R/run/train.log"
run_watch "$T/l7" "$R/run/ckpt_*.pth" --keep 2
[ -f "$T/l7/ckpt_3.pth" ] && [ -f "$T/l7/ckpt_2.pth" ] ||
    { ls -la "$T/l7"; fail "--keep 2 with a glob: the two newest"; }
[ ! -e "$T/l7/ckpt_1.pth" ] || fail "--keep 2 with a glob: the oldest stayed"
[ ! -e "$T/l7/train.log" ] || fail "--keep with a glob: the log was pulled"
