# --dry-run and --delete over local: (lib/mirror_cases.sh; over ssh in
# e2e/ssh_mirror.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/mirror_cases.sh"

mirror_cases local
