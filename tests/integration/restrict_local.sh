# The restricted agent (ferry-agent serve --restrict ROOT) over local:,
# so that it runs under the sanitizers too: transfers beneath ROOT work
# under its Landlock ruleset (commits rename across directories), paths
# outside are refused and nothing there changes; and the agent confines
# itself with Landlock whenever this kernel has it (ABI 2). A kernel
# without it is named, and the path checks are still asserted.
. "$(dirname "$0")/../lib/common.sh"

root="$T/root"
outside="$T/outside"
mkdir -p "$root/ds" "$outside" "$T/src/tree/sub"
echo secret >"$outside/secret"
echo inside >"$root/ds/file"
echo data >"$T/src/tree/a"
head -c 300000 /dev/urandom >"$T/src/tree/sub/b"
ln -s "$outside" "$root/esc"

# This kernel's Landlock ABI, asked apart from the agent.
abi=$(python3 -c 'import ctypes, platform
nr = {"x86_64": 444, "aarch64": 444}.get(platform.machine())
libc = ctypes.CDLL(None, use_errno=True)
print(libc.syscall(nr, None, 0, 1) if nr else -1)')

# The agent says which confinement it runs under before it reads a byte
# (pipes at both ends, as ssh gives it).
set +e
: | "$AGENT" serve -v --restrict "$root" 2>"$T/agent.err" | cat
set -e
if [ "$abi" -ge 2 ]; then
    grep -qF "confined to $(cd "$root" && pwd -P) by Landlock" \
        "$T/agent.err" ||
        { cat "$T/agent.err"; fail "Landlock ABI $abi, agent not confined"; }
else
    grep -qF "no Landlock here" "$T/agent.err" ||
        { cat "$T/agent.err"; fail "agent said nothing of its confinement"; }
    echo "NOTE: this kernel has no Landlock ABI 2 (got $abi): only the" \
        "path checks confine the agent here" >&2
fi

# By hand with nothing to poll (/dev/null): told why, not an abort.
expect_rc 2 "$AGENT" serve --restrict "$root" </dev/null
expect_err "must be pipes"

# ferry starts the agent as AGENT serve [-v]: a wrapper adds --restrict.
cat >"$T/restricted-agent" <<SH
#!/bin/sh
shift
exec "$AGENT" serve --restrict "$root" "\$@"
SH
chmod +x "$T/restricted-agent"
ra=(--agent "$T/restricted-agent" --retries 0)

mkdir -p "$outside/.ferry/part"
snap() { find "$outside" -printf '%p %y %m %s %T@\n' | sort; }
before=$(snap)

# Beneath ROOT: relative, "~" and absolute paths all land there.
expect_rc 0 "$FERRY" push "${ra[@]}" "$T/src/tree" "local:up"
tree_same "$T/src/tree" "$root/up/tree"
expect_rc 0 "$FERRY" push "${ra[@]}" "$T/src/tree/a" "local:~/home-a"
[ "$(cat "$root/home-a")" = data ] || fail "~ is not ROOT"
expect_rc 0 "$FERRY" pull "${ra[@]}" "local:$root/ds/file" "$T/got/"
[ "$(cat "$T/got/file")" = inside ] || fail "pull beneath ROOT"

# Outside: refused with a reason, nothing read or written there.
expect_rc 3 "$FERRY" push "${ra[@]}" "$T/src/tree/a" "local:$outside/x"
expect_err "outside the directory this agent serves"
expect_rc 3 "$FERRY" push "${ra[@]}" "$T/src/tree/a" "local:../outside"
expect_rc 2 "$FERRY" pull "${ra[@]}" "local:../outside/secret" "$T/got2/"
expect_rc 2 "$FERRY" pull "${ra[@]}" "local:esc/secret" "$T/got2/"
expect_err "symlink"
expect_rc 3 "$FERRY" push "${ra[@]}" "$T/src/tree/a" "local:esc/"
expect_rc 3 "$FERRY" clean "${ra[@]}" "local:$outside"
[ "$(snap)" = "$before" ] ||
    { diff <(echo "$before") <(snap) >&2; fail "outside ROOT changed"; }
[ ! -e "$T/got2/secret" ] || fail "read outside ROOT"
