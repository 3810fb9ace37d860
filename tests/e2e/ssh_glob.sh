# Globs in pull sources through a real sshd: expanded by the agent, not
# by the remote shell (lib/glob_cases.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/glob_cases.sh"
sshd_start

glob_cases ferry-test -F "$SSH_CONFIG" --agent "$AGENT"
