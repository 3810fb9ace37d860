# Push and pull through a real sshd on 127.0.0.1, awkward names included,
# into a remote path with spaces, quotes, '$', ';' and a newline.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

awkward_tree "$T/src"
rm -f "$T/src/big.sparse"   # covered over local:; keeps this test quick
dest="$T/remote dir/it's \$HOME; rm -rf x
second line"

# Its parent "remote dir" is missing too: --mkpath makes it.
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json --mkpath \
    "$T/src/" "ferry-test:$dest"
tree_same "$T/src" "$dest"
expect_field files_failed 0
wire=$(json_field bytes_wire)
[ "$wire" -gt 3000000 ] || fail "bytes_wire $wire: should count SSH bytes"
# ... once: the pipe to the pump thread is not the wire.
literal=$(json_field bytes_literal)
[ "$wire" -le $((literal + literal / 10 + 1000000)) ] ||
    fail "bytes_wire $wire for $literal bytes of data: counted twice?"

expect_rc 0 "$FERRY" pull -F "$SSH_CONFIG" --agent "$AGENT" --json \
    "ferry-test:$dest/" "$T/back"
tree_same "$T/src" "$T/back"
wire_in=$(json_field bytes_wire_in)
[ "$wire_in" -gt 3000000 ] || fail "bytes_wire_in $wire_in"
literal=$(json_field bytes_literal)
[ "$wire_in" -le $((literal + literal / 10 + 1000000)) ] ||
    fail "bytes_wire_in $wire_in for $literal bytes of data: counted twice?"

# Unchanged: nothing sent.
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    "$T/src/" "ferry-test:$dest"
expect_field files_sent 0

# With --force (no space check) a push sends while it scans, here a scan
# slowed down so it surely does; the totals come when it ends.
small_files_tree "$T/many" 300
FERRY_TEST_SCAN_DELAY_US=5000 expect_rc 0 "$FERRY" push -vv --force \
    -F "$SSH_CONFIG" --agent "$AGENT" --json "$T/many/" "ferry-test:$T/live"
expect_err "scan: sending as it goes on"
tree_same "$T/many" "$T/live"
expect_field files_total "$(find "$T/many" -type f | wc -l)"
expect_rc 0 "$FERRY" pull --force -F "$SSH_CONFIG" --agent "$AGENT" --json \
    "ferry-test:$T/live/" "$T/live-back"
tree_same "$T/many" "$T/live-back"

# A remote path under ~ is the remote account's home.
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" \
    "$T/src/exec.sh" "ferry-test:~/exec-copy.sh"
cmp -s "$T/src/exec.sh" "$SSHD_HOME/exec-copy.sh" || fail "~ not expanded"

# Whatever the remote side writes to stderr (a shell's startup files, the
# agent) reaches the terminal escaped: no control sequence gets through.
cat >"$T/noisy" <<NOISY
#!/bin/sh
[ "\$1" = serve ] && printf 'motd \033]0;pwned\007 \302\233 2J\n' >&2
exec "$AGENT" "\$@"
NOISY
chmod +x "$T/noisy"
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$T/noisy" \
    "$T/src/exec.sh" "ferry-test:$T/noisy-dest/"
expect_err 'motd \x1b]0;pwned\x07'
grep -q $'\033' "$T/last.err" && fail "an escape sequence reached stderr"
grep -q $'\302\233' "$T/last.err" && fail "a C1 control reached stderr"
true
