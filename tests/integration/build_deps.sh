# A machine without the libraries: `make` stops before compiling anything
# and says which package is missing and to run `make deps`, instead of a
# compiler error about xxhash.h halfway through the build. A compiler
# wrapper plays the machine without xxHash's headers.
. "$(dirname "$0")/../lib/common.sh"

cat >"$T/cc" <<'CC'
#!/bin/sh
# cc on a machine without xxHash's headers: an input that includes
# xxhash.h fails as gcc does; everything else goes to the real cc.
for a in "$@"; do
    case $a in
    -)
        input=$(cat)
        if printf '%s\n' "$input" | grep -q 'xxhash\.h'; then
            echo "<stdin>:1:10: fatal error: xxhash.h: No such file" \
                "or directory" >&2
            exit 1
        fi
        printf '%s\n' "$input" | exec cc "$@" ;;
    *.c)
        if grep -q 'xxhash\.h' "$a"; then
            echo "$a: fatal error: xxhash.h: No such file or directory" >&2
            exit 1
        fi ;;
    esac
done
exec cc "$@"
CC
chmod +x "$T/cc"

start=$(date +%s)
expect_rc 2 make -C "$TESTS_DIR/.." --no-print-directory CC="$T/cc" \
    OUT="$T/out" BINDIR="$T/bin" all
cat "$T/last.err" >>"$T/last.out"
grep -q "make deps" "$T/last.out" || { cat "$T/last.out"; fail "no hint"; }
grep -q "libxxhash-dev" "$T/last.out" || fail "the package is not named"
grep -q "No such file" "$T/last.out" && fail "a compiler error got through"
[ -z "$(find "$T/out" -name '*.o' 2>/dev/null)" ] ||
    fail "objects were compiled before the check"
[ $(( $(date +%s) - start )) -le 10 ] || fail "the check is slow"

# With every header there, the check passes and is not run again.
make -C "$TESTS_DIR/.." --no-print-directory OUT="$T/ok" BINDIR="$T/okbin" \
    "$T/ok/.deps-ok" >/dev/null || fail "the check fails with the headers"
[ -e "$T/ok/.deps-ok" ] || fail "no stamp"
