# The filter cases (bash; source after common.sh): one source tree, then
# a table of rows, each the options of a transfer and the tree expected
# at the destination. filter_cases REMOTE PREFIX... runs every row as a
# push of $T/fsrc/ to REMOTE:DIR and as a pull back from REMOTE:$T/fsrc/,
# where REMOTE is "local" or an ssh host, with PREFIX... (ssh options,
# --agent) before the row's own options.
#
# A row is "name | options | expected": options are split on spaces
# (patterns hold none); expected lists the files, and the empty
# directories with a trailing '/', sorted. An ignore row writes its
# options' first word, with "\n" for newlines, to fsrc/.ferryignore
# instead of passing them.

filter_tree() {
    local s=$T/fsrc
    rm -rf "$s"
    mkdir -p "$s/a/__pycache__" "$s/b/data/tmp" "$s/build" "$s/ckpt/sub" \
        "$s/.git"
    for f in a/x.py a/__pycache__/x.pyc a/keep.log b/.DS_Store \
        b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt \
        ckpt/step-2.pt ckpt/sub/opt.pt top.log .git/HEAD; do
        echo "$f" >"$s/$f"
    done
}

FILTER_ALL=".git/HEAD a/__pycache__/x.pyc a/keep.log a/x.py b/.DS_Store \
b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt \
ckpt/sub/opt.pt top.log"

FILTER_ROWS=$(cat <<'ROWS'
nothing | | ALL
names anywhere | --exclude __pycache__ --exclude .DS_Store | .git/HEAD a/keep.log a/x.py b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt top.log
star | --exclude=*.log | .git/HEAD a/__pycache__/x.pyc a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt
include first wins | --include keep.log --exclude *.log | .git/HEAD a/__pycache__/x.pyc a/keep.log a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt
exclude first wins | --exclude *.log --include keep.log | .git/HEAD a/__pycache__/x.pyc a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt
anchored | --exclude /build --exclude /.git --exclude /data | a/__pycache__/x.pyc a/keep.log a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt top.log
slash inside | --exclude data/tmp | .git/HEAD a/__pycache__/x.pyc a/keep.log a/x.py b/.DS_Store b/data/part-0.bin build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt top.log
directories only | --exclude step-1.pt/ --exclude sub/ | .git/HEAD a/__pycache__/x.pyc a/keep.log a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt top.log
double star | --exclude /ckpt/**/opt.pt --exclude b/** | .git/HEAD a/__pycache__/x.pyc a/keep.log a/x.py b/ build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/ top.log
only checkpoints | --include */ --include *.pt --exclude * | .git/ a/__pycache__/ b/data/tmp/ build/ ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt
exclude-from | --exclude-from=FROM | .git/HEAD a/x.py b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-2.pt ckpt/sub/
ignore | *.log\n!keep.log\n/ckpt/\n__pycache__/\n.ferryignore | .git/HEAD a/keep.log a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t build/out.o
ignore and options | *.pyc\n.ferryignore --include x.pyc | .git/HEAD a/__pycache__/x.pyc a/keep.log a/x.py b/.DS_Store b/data/part-0.bin b/data/tmp/t build/out.o ckpt/step-1.pt ckpt/step-2.pt ckpt/sub/opt.pt top.log
ROWS
)

# The tree under DIR, as the rows write it.
filter_listing() {
    (cd "$1" && find . -mindepth 1 \( -type f -o -type d -empty \) \
        -not -path './.ferry*' | sed 's|^\./||' | while read -r p; do
            if [ -d "$p" ]; then echo "$p/"; else echo "$p"; fi
        done | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
}

filter_cases() {
    local remote=$1 name opts expected got dir args ignore w
    shift
    printf '+ step-2.pt\n# rsync comment\n- *.pt\n*.log\n__pycache__\n.DS_Store\n' \
        >"$T/from"
    while IFS='|' read -r name opts expected; do
        name=$(echo "$name" | sed 's/ *$//')
        opts=$(echo "$opts" | sed 's/^ *//; s/ *$//')
        expected=$(echo "$expected" | sed 's/^ *//; s/ *$//')
        [ "$expected" = ALL ] && expected=$FILTER_ALL
        filter_tree
        ignore=""
        case $name in ignore*)
            ignore=${opts%% *}
            [ "$ignore" = "$opts" ] && opts="" || opts=${opts#* }
            printf "$ignore\n" >"$T/fsrc/.ferryignore" ;;
        esac
        opts=${opts//FROM/$T/from}
        # shellcheck disable=SC2086
        set -f; args=($opts); set +f
        for w in push pull; do
            dir="$T/fdst-$w"
            rm -rf "$dir"
            if [ $w = push ]; then
                expect_rc 0 "$FERRY" push -q "$@" "${args[@]}" "$T/fsrc/" \
                    "$remote:$dir"
            else
                mkdir -p "$dir"
                expect_rc 0 "$FERRY" pull -q "$@" "${args[@]}" \
                    "$remote:$T/fsrc/" "$dir"
            fi
            got=$(filter_listing "$dir")
            [ "$got" = "$expected" ] || fail "$w, row '$name' ($opts):
    got:  $got
    want: $expected"
        done
        note "row $name: ok"
    done <<<"$FILTER_ROWS"
}
