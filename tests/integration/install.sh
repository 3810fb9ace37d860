# make install: the binaries side by side (the client finds its agent
# there), the man page (it renders without warnings), and completions
# (bash offers commands, options and hosts).
. "$(dirname "$0")/../lib/common.sh"

root=$(cd "$TESTS_DIR/.." && pwd)
expect_rc 0 make -s -C "$root" install PREFIX=/usr DESTDIR="$T/dest" \
    INSTALL_FROM="$FERRY_BIN"
p=$T/dest/usr
for f in bin/ferry bin/ferry-agent share/man/man1/ferry.1 \
    share/bash-completion/completions/ferry share/zsh/site-functions/_ferry; do
    [ -f "$p/$f" ] || fail "not installed: $f"
done
[ -x "$p/bin/ferry" ] && [ -x "$p/bin/ferry-agent" ] || fail "not executable"
if [ -x "$FERRY_BIN/ferry-agent-aarch64" ]; then
    [ -x "$p/bin/ferry-agent-aarch64" ] || fail "aarch64 agent not installed"
fi

# The installed client runs its installed agent for local: copies.
mkdir -p "$T/src"
echo data >"$T/src/f"
expect_rc 0 env -u FERRY_AGENT "$p/bin/ferry" push -q "$T/src/" "local:$T/dst"
cmp -s "$T/src/f" "$T/dst/f" || fail "installed ferry did not copy"

# The man page: no warnings from groff, and the parts a user looks for.
LC_ALL=C groff -man -Tutf8 -ww -z "$p/share/man/man1/ferry.1" \
    2>"$T/groff.err" || fail "groff failed"
[ ! -s "$T/groff.err" ] || fail "man page warnings: $(head -3 "$T/groff.err")"
LC_ALL=C MANWIDTH=80 man -l "$p/share/man/man1/ferry.1" 2>/dev/null |
    col -b >"$T/man.txt"
for s in SYNOPSIS "EXIT STATUS" FILTERS "--dry-run" "--bwlimit" "--margin"; do
    grep -q -- "$s" "$T/man.txt" || fail "man page lacks $s"
done
# Every option of `ferry push --help` is in the man page.
"$FERRY" push --help | grep -o -- '--[a-z][a-z-]*' | sort -u |
    while read -r o; do
        grep -q -- "$o" "$T/man.txt" || fail "man page lacks $o"
    done

# bash completion: commands, options, and hosts of ~/.ssh/config.
mkdir -p "$T/home/.ssh"
printf 'Host gpu-box\n  HostName 127.0.0.1\nHost *\n' >"$T/home/.ssh/config"
complete_words() {
    HOME=$T/home bash -c '. "$1"; shift; COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ferry
        printf "%s\n" "${COMPREPLY[@]}"' _ \
        "$p/share/bash-completion/completions/ferry" "$@"
}
complete_words ferry pu | grep -qx push || fail "bash: no push"
complete_words ferry push --del | grep -qx -- --delete || fail "bash: --delete"
complete_words ferry push gpu | grep -qx gpu-box: || fail "bash: host"
# ... and every long option that push and pull list in their help (the
# option table's), as they are or with '=' for a value.
complete_words ferry push -- >"$T/offered"
for cmd in push pull; do
    "$FERRY" help "$cmd" | sed -n 's/^  -., \(--[a-z][a-z-]*\).*/\1/p
        s/^      \(--[a-z][a-z-]*\).*/\1/p'
done | sort -u >"$T/listed"
[ -s "$T/listed" ] || fail "no options in ferry help push"
while read -r o; do
    grep -qx -- "$o=\?" "$T/offered" || fail "bash: no $o"
done <"$T/listed"
# zsh: each of them is in its list too.
while read -r o; do
    grep -q -- "$o[=[]" "$p/share/zsh/site-functions/_ferry" ||
        grep -q -- ",$o[=}]" "$p/share/zsh/site-functions/_ferry" ||
        fail "zsh: no $o"
done <"$T/listed"
