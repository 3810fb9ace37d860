# --exclude, --include, --exclude-from and .ferryignore over local: (the
# table is in lib/filter_cases.sh; e2e/ssh_filters.sh runs it over ssh).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/filter_cases.sh"

filter_cases local

# A bad pattern or list is one line naming it; nothing is sent.
filter_tree
expect_rc 1 "$FERRY" push --exclude / "$T/fsrc/" "local:$T/bad"
expect_err "--exclude '/': not a pattern"
expect_rc 1 "$FERRY" push --exclude-from "$T/missing" "$T/fsrc/" \
    "local:$T/bad"
expect_err "--exclude-from $T/missing: "
[ ! -e "$T/bad" ] || fail "a refused command made the destination"

# A .ferryignore that cannot be used stops that source, naming it.
printf '/\n' >"$T/fsrc/.ferryignore"
expect_rc 2 "$FERRY" push "$T/fsrc/" "local:$T/bad"
expect_err ".ferryignore: line 1: "
[ -z "$(find "$T/bad" -type f 2>/dev/null)" ] ||
    fail "a source with a broken .ferryignore was sent"

# The ignore file of one source does not filter another.
filter_tree
mkdir -p "$T/other"
echo x >"$T/other/top.log"
printf '*.log\n' >"$T/fsrc/.ferryignore"
expect_rc 0 "$FERRY" push -q "$T/fsrc" "$T/other" "local:$T/two"
[ -f "$T/two/other/top.log" ] || fail "fsrc's .ferryignore filtered other"
[ ! -e "$T/two/fsrc/top.log" ] || fail ".ferryignore of fsrc not applied"
