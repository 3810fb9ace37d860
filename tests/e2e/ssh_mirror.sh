# --dry-run and --delete through a real sshd (lib/mirror_cases.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/mirror_cases.sh"
sshd_start

mirror_cases ferry-test -F "$SSH_CONFIG" --agent "$AGENT"
