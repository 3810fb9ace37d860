# --dry-run and --delete (bash; source after common.sh). mirror_cases
# REMOTE PREFIX... runs them as pushes to REMOTE:$T/... and pulls from
# it, REMOTE "local" or an ssh host, PREFIX... the options for it.

# A listing of everything under DIR that a change would show: names,
# types, modes, sizes, mtimes (directories' too) and contents.
mirror_snapshot() {
    (cd "$1" && find . -printf '%p %y %m %s %T@ %l\n' | LC_ALL=C sort &&
        find . -type f -exec md5sum {} + | LC_ALL=C sort)
}

mirror_trees() {
    rm -rf "$T/msrc" "$T/mdst" "$T/outside" "$T/sibling"
    mkdir -p "$T/msrc/a" "$T/msrc/b" "$T/outside/keep" "$T/sibling"
    echo one >"$T/msrc/a/x"
    echo two >"$T/msrc/b/y"
    echo precious >"$T/outside/keep/file"
    echo near >"$T/sibling/file"
}

mirror_cases() {
    local remote=$1 w before after
    shift
    for w in push pull; do
        mirror_trees
        if [ $w = push ]; then
            run() { expect_rc "$1" "$FERRY" push "${@:2}" "$T/msrc/" \
                "$remote:$T/mdst"; }
        else
            run() { expect_rc "$1" "$FERRY" pull "${@:2}" \
                "$remote:$T/msrc/" "$T/mdst"; }
        fi
        mkdir -p "$T/mdst"
        run 0 -q "$@"
        # Changes on both sides, and things only the destination has:
        # a file, a directory, links that point outside it.
        echo three >"$T/msrc/a/new"
        echo changed-size >"$T/msrc/b/y"
        echo old >"$T/mdst/a/old"
        mkdir -p "$T/mdst/extra/deep"
        echo e >"$T/mdst/extra/deep/f"
        echo kept >"$T/mdst/scratch.tmp"
        ln -s "$T/outside" "$T/mdst/out"
        ln -s ../../outside/keep "$T/mdst/a/up"
        before=$(mirror_snapshot "$T/msrc"; mirror_snapshot "$T/mdst";
            mirror_snapshot "$T/outside"; mirror_snapshot "$T/sibling")

        # A dry run lists and totals, and changes nothing anywhere.
        run 0 -n --delete --exclude '*.tmp' "$@"
        grep -q '^send .* a/new$' "$T/last.out" || fail "$w -n: a/new"
        grep -q '^send .* b/y$' "$T/last.out" || fail "$w -n: b/y"
        ! grep -q '^skip' "$T/last.out" || fail "$w -n: lists what is up to date"
        grep -q '^delete .* extra/deep/f$' "$T/last.out" ||
            fail "$w -n: extra/deep/f"
        grep -q '^delete .* out$' "$T/last.out" || fail "$w -n: out"
        ! grep -q 'scratch.tmp' "$T/last.out" ||
            fail "$w -n: an excluded file would be deleted"
        expect_err "dry run: 2 to send (19 B), 1 up to date (4 B), 4 to delete"
        # -v lists the rest too.
        run 0 -n -v --delete --exclude '*.tmp' "$@"
        grep -q '^skip .* a/x$' "$T/last.out" || fail "$w -n -v: a/x"
        grep -q '^send .* a/new$' "$T/last.out" || fail "$w -n -v: a/new"
        run 0 -n --json "$@"
        expect_field files_send 2
        expect_field files_delete 0
        ! grep -q '"action":"skip"' "$T/last.out" ||
            fail "$w -n --json: lists what is up to date"
        after=$(mirror_snapshot "$T/msrc"; mirror_snapshot "$T/mdst";
            mirror_snapshot "$T/outside"; mirror_snapshot "$T/sibling")
        [ "$before" = "$after" ] || fail "$w: a dry run changed something"
        [ ! -e "$T/mdst/.ferry" ] && [ ! -e "$T/msrc/.ferry" ] ||
            fail "$w: a dry run made a state directory"

        # --delete: the mirror, beneath the destination only; excluded
        # files stay, links are removed and not followed.
        before=$(mirror_snapshot "$T/outside"; mirror_snapshot "$T/sibling")
        run 0 -q --delete --exclude '*.tmp' "$@"
        [ "$(cd "$T/mdst" && find . -mindepth 1 | LC_ALL=C sort |
            tr '\n' ' ')" = "./a ./a/new ./a/x ./b ./b/y ./scratch.tmp " ] ||
            fail "$w --delete: $(cd "$T/mdst" && find . | tr '\n' ' ')"
        rm "$T/mdst/scratch.tmp"
        tree_same "$T/msrc" "$T/mdst"
        echo kept >"$T/mdst/scratch.tmp"
        after=$(mirror_snapshot "$T/outside"; mirror_snapshot "$T/sibling")
        [ "$before" = "$after" ] ||
            fail "$w --delete touched something outside the destination"
        # --delete-excluded removes the excluded file too.
        run 0 -q --delete-excluded --exclude '*.tmp' "$@"
        [ ! -e "$T/mdst/scratch.tmp" ] || fail "$w --delete-excluded"
        # A transfer that fails (a source is missing) deletes nothing.
        echo stays >"$T/mdst/stays"
        if [ $w = push ]; then
            expect_rc 2 "$FERRY" push -q --delete "$@" "$T/msrc/" \
                "$T/missing" "$remote:$T/mdst"
        else
            expect_rc 2 "$FERRY" pull -q --delete "$@" "$remote:$T/msrc/" \
                "$remote:$T/missing" "$T/mdst"
        fi
        [ -f "$T/mdst/stays" ] || fail "$w: deleted after a failure"
        mirror_scope "$remote" $w "$@"
        mirror_types "$remote" $w "$@"
        note "$w: ok"
    done
}

# --delete mirrors only the directories the sources send (rsync's rule):
# "dir" sends dir, not the destination around it; a file or a pull's
# glob sends no directory at all.
mirror_scope() {
    local remote=$1 w=$2 src
    shift 2
    rm -rf "$T/mscope"
    mkdir -p "$T/mscope/other" "$T/mscope/msrc/stale"
    echo precious >"$T/mscope/notes"
    echo old >"$T/mscope/msrc/stale/f"
    for src in "$T/msrc" "$T/msrc/a/x" "$T/msrc/a/*"; do
        [ "$src" != "$T/msrc/a/*" ] || [ $w = pull ] || continue
        if [ $w = push ]; then
            expect_rc 0 "$FERRY" push -q --delete "$@" "$src" \
                "$remote:$T/mscope/"
        else
            expect_rc 0 "$FERRY" pull -q --delete "$@" "$remote:$src" \
                "$T/mscope/"
        fi
        [ -f "$T/mscope/notes" ] && [ -d "$T/mscope/other" ] ||
            fail "$w --delete $src: removed what it does not send"
    done
    [ ! -e "$T/mscope/msrc/stale" ] ||
        fail "$w --delete $T/msrc: kept what its directory no longer has"
    tree_same "$T/msrc" "$T/mscope/msrc"
}

# --delete mirrors a change of type: a directory that became a file or a
# link goes, with what it holds (rsync's --delete); a file that became a
# directory is replaced. Without --delete a directory in the way of a
# file or a link fails that entry and stays.
mirror_types() {
    local remote=$1 w=$2
    shift 2
    types_run() {
        local rc=$1
        shift
        if [ $w = push ]; then
            expect_rc "$rc" "$FERRY" push "$@" "$T/tsrc/" "$remote:$T/tdst"
        else
            expect_rc "$rc" "$FERRY" pull "$@" "$remote:$T/tsrc/" "$T/tdst"
        fi
    }
    rm -rf "$T/tsrc" "$T/tdst"
    mkdir -p "$T/tsrc/d2f/sub" "$T/tsrc/d2l" "$T/tdst"
    echo a >"$T/tsrc/d2f/sub/a"
    echo b >"$T/tsrc/d2l/b"
    echo f >"$T/tsrc/f2d"
    types_run 0 -q "$@"
    rm -rf "$T/tsrc/d2f" "$T/tsrc/d2l" "$T/tsrc/f2d"
    echo now-a-file >"$T/tsrc/d2f"
    ln -s d2f "$T/tsrc/d2l"
    mkdir "$T/tsrc/f2d"
    echo c >"$T/tsrc/f2d/c"
    types_run 3 -q "$@"
    expect_err "d2f: Is a directory"
    expect_err "d2l: Is a directory"
    [ -f "$T/tdst/d2f/sub/a" ] && [ -f "$T/tdst/d2l/b" ] ||
        fail "$w: a directory in the way went without --delete"
    types_run 0 -q --delete "$@"
    tree_same "$T/tsrc" "$T/tdst"
}
