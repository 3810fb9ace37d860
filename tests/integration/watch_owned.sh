# pull --watch --keep removes and replaces only what the watch itself
# pulled, as it pulled it: a box that lists old entries named like the
# user's own files and directories cannot have them removed; one whose
# newest entries carry those names cannot have them overwritten or
# swapped away; a pulled unit the user changed is left alone; and what
# the watch pulled and nobody touched still goes (the honest case).
. "$(dirname "$0")/../lib/common.sh"

at_exit stop_watch

# wait_event ACTIONS PATH: until the watch said one of ACTIONS (a|b) of
# PATH.
wait_event() {
    for _ in $(seq 1 300); do
        grep '"event":"watch"' "$T/watch.out" |
            grep -E "\"action\":\"($1)\"" |
            grep -q "\"path\":\"$2\"" && return 0
        sleep 0.1
    done
    cat "$T/watch.err" >&2
    fail "no '$1' event for $2"
}

# The user's own files, planted where the watch writes.
plant() {
    mkdir -p "$1/thesis"
    echo "my notes" >"$1/notes.txt"
    echo "chapter one" >"$1/thesis/ch1.tex"
}
planted_intact() {
    [ "$(cat "$1/notes.txt" 2>/dev/null)" = "my notes" ] ||
        fail "$2: notes.txt was removed or replaced"
    [ "$(cat "$1/thesis/ch1.tex" 2>/dev/null)" = "chapter one" ] ||
        fail "$2: thesis/ was removed or replaced"
}

# 1. A box that lists old entries named like local files and directories
# it does not have: with --keep 1 they are not ferry's, so they stay;
# the checkpoints the watch pulled are removed as newer ones come.
R=$T/box
L=$T/here
mkdir -p "$R"
plant "$L"
head -c 100000 /dev/urandom >"$R/step-1.pt"
touch -d '-2 min' "$R/step-1.pt"
FERRY_AGENT_REAL="$AGENT" \
    LYING_AGENT_ENTRIES="f:notes.txt:9,d:thesis,f:thesis/ch1.tex:12" \
    "$FERRY" pull --watch 1 --keep 1 --json \
    --agent "$TESTS_DIR/lib/lying_agent.py" "local:$R/" "$L" \
    >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
wait_event pulled step-1.pt
planted_intact "$L" "after the first pull"
head -c 100000 /dev/urandom >"$R/step-2.pt"
touch -d '-1 min' "$R/step-2.pt"
wait_event pulled step-2.pt
wait_event removed step-1.pt
[ ! -e "$L/step-1.pt" ] || fail "the watch's own older pull was kept"
cmp "$R/step-2.pt" "$L/step-2.pt" || fail "step-2.pt differs"
stop_watch || fail "Ctrl-C did not end the watch"
planted_intact "$L" "listed by the box"
! grep '"action":"removed"' "$T/watch.out" | grep -q 'notes\|thesis' ||
    fail "the watch said it removed the user's files"

# 2. A pulled checkpoint the user changed afterwards is theirs: a newer
# one comes, --keep 1 leaves the changed one alone.
R2=$T/box2
L2=$T/here2
mkdir -p "$R2"
head -c 100000 /dev/urandom >"$R2/a.pt"
touch -d '-2 min' "$R2/a.pt"
mkdir -p "$R2/b.ck"
head -c 50000 /dev/urandom >"$R2/b.ck/shard0"
touch -d '-2 min' "$R2/b.ck/shard0" "$R2/b.ck"
"$FERRY" pull --watch 1 --keep 2 --json --agent "$AGENT" "local:$R2/" \
    "$L2" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
wait_event pulled a.pt
wait_event pulled b.ck
echo "my edit" >>"$L2/a.pt"
echo "my own shard" >"$L2/b.ck/mine"
head -c 100000 /dev/urandom >"$R2/c.pt"
touch -d '-1 min' "$R2/c.pt"
head -c 100000 /dev/urandom >"$R2/d.pt"
wait_event pulled c.pt
wait_event pulled d.pt
stop_watch || fail "Ctrl-C did not end the watch"
[ -e "$L2/a.pt" ] || fail "a checkpoint the user changed was removed"
tail -n 1 "$L2/a.pt" | grep -q "my edit" || fail "a.pt lost the user's edit"
[ -e "$L2/b.ck/mine" ] || fail "a directory the user added to was removed"
grep '"action":"left_alone"' "$T/watch.out" | grep -q '"path":"a.pt"' ||
    fail "the watch did not say it left a.pt alone"

# 3. The box's newest entries have the names of the user's own file and
# directory: they are neither pulled over them nor swapped into place.
# A directory of the user's has the name the watch would stage a unit
# in: the unit is not pulled into it.
R3=$T/box3
L3=$T/here3
mkdir -p "$R3/thesis" "$R3/run" "$L3/.run.ferry-watch"
plant "$L3"
echo "box notes" >"$R3/notes.txt"
echo "box chapter" >"$R3/thesis/ch9.tex"
echo "box shard" >"$R3/run/shard0"
echo "mine" >"$L3/.run.ferry-watch/mine"
"$FERRY" pull --watch 1 --json --agent "$AGENT" "local:$R3/" \
    "$L3" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
# Whatever it did with them, then what it should have done.
wait_event 'left_alone|pulled' notes.txt
wait_event 'left_alone|pulled' thesis
wait_event 'left_alone|pulled' run
stop_watch || fail "Ctrl-C did not end the watch"
planted_intact "$L3" "newest on the box"
[ "$(cat "$L3/.run.ferry-watch/mine" 2>/dev/null)" = mine ] ||
    fail "a directory of the user's was taken for staging"
[ ! -e "$L3/run" ] || fail "run/ was placed from the user's directory"
wait_event left_alone notes.txt
wait_event left_alone thesis
wait_event left_alone run
[ ! -e "$L3/thesis/ch9.tex" ] || fail "the box's thesis/ was placed"
[ "$(ls -A "$L3" | grep ferry-watch)" = .run.ferry-watch ] ||
    fail "staging left behind"
exit 0
