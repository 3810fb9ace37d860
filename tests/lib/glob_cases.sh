# Globs in pull sources (bash; source after common.sh): glob_cases REMOTE
# PREFIX... pulls from REMOTE:$T/box (REMOTE "local" or an ssh host).
# The agent expands them, never a shell: a name with a space, a quote or
# a '$' comes through as it is, and a glob that matches nothing fails and
# creates nothing.

glob_cases() {
    local remote=$1 b=$T/box
    shift
    mkdir -p "$b/ckpt/run 1" "$b/ckpt/run2"
    for s in 100 200 300; do echo "$s" >"$b/ckpt/step-$s.pt"; done
    echo other >"$b/ckpt/notes.txt"
    echo hidden >"$b/ckpt/.step-9.pt"
    echo q >"$b/ckpt/run 1/it's \$x.pt"
    echo r >"$b/ckpt/run2/last.pt"

    expect_rc 0 "$FERRY" pull -q "$@" "$remote:$b/ckpt/step-*.pt" "$T/g1"
    [ "$(cd "$T/g1" && ls -A | tr '\n' ' ')" = \
        "step-100.pt step-200.pt step-300.pt " ] ||
        fail "step-*.pt: $(ls -A "$T/g1" | tr '\n' ' ')"
    cmp -s "$b/ckpt/step-200.pt" "$T/g1/step-200.pt" || fail "content"
    # Sets and '?', a glob in a directory, and a plain source beside.
    expect_rc 0 "$FERRY" pull -q "$@" "$remote:$b/ckpt/step-[12]00.pt" \
        "$remote:$b/ckpt/run*/*.pt" "$remote:$b/ckpt/notes.tx?" "$T/g2"
    [ "$(cd "$T/g2" && ls -A | tr '\n' ' ')" = \
        "it's \$x.pt last.pt notes.txt step-100.pt step-200.pt " ] ||
        fail "sets: $(ls -A "$T/g2" | tr '\n' ' ')"
    # One match into a new name: renamed, as any single file.
    expect_rc 0 "$FERRY" pull -q "$@" "$remote:$b/ckpt/step-3*" "$T/one.pt"
    cmp -s "$b/ckpt/step-300.pt" "$T/one.pt" || fail "single match"
    # No match: a clear error, nothing created.
    expect_rc 2 "$FERRY" pull "$@" "$remote:$b/ckpt/nope-*.pt" "$T/g3"
    expect_err "ckpt/nope-*.pt: no match"
    [ "$(wc -l <"$T/last.err")" -le 2 ] || fail "no match: too many lines"
    [ ! -e "$T/g3" ] || fail "a glob that matched nothing made $T/g3"
    # A dry run of a glob lists what it matches.
    expect_rc 0 "$FERRY" pull -n "$@" "$remote:$b/ckpt/step-*.pt" "$T/g4"
    [ "$(grep -c '^send' "$T/last.out")" = 3 ] || fail "dry run of a glob"
    [ ! -e "$T/g4" ] || fail "a dry run made $T/g4"
}
