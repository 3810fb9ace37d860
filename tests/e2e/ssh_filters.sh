# The filter table of lib/filter_cases.sh through a real sshd: a pull's
# rules travel to the agent (FILTERS), which also reads .ferryignore.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/sshd.sh"
. "$TESTS_DIR/lib/filter_cases.sh"
sshd_start

filter_cases ferry-test -F "$SSH_CONFIG" --agent "$AGENT"
