# Globs in pull sources over local: (lib/glob_cases.sh; over ssh in
# e2e/ssh_glob.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/glob_cases.sh"

glob_cases local
