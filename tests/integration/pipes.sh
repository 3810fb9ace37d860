# The pipes between ferry and its children, and the agent's own stdin and
# stdout, are widened to 1 MiB (or the most pipe-max-size allows, in
# halves): an ssh or sshd on the other end of a 64 KiB pipe copies its
# buffers over and over (docs/DESIGN.md, "The agent's pipes").
. "$(dirname "$0")/../lib/common.sh"

pipe_bytes=1048576
max=$(cat /proc/sys/fs/pipe-max-size)
while [ "$pipe_bytes" -gt "$max" ] && [ "$pipe_bytes" -gt 131072 ]; do
    pipe_bytes=$((pipe_bytes / 2))
done

mkdir -p "$T/src"
echo data >"$T/src/f"

# The client's side: a wrapper notes the size of the pipes it was given.
cat >"$T/agent-wrap" <<SH
#!/usr/bin/env python3
import fcntl, os, sys
with open("$T/sizes", "a") as f:
    print(fcntl.fcntl(0, 1032), fcntl.fcntl(1, 1032), file=f)
os.execv("$AGENT", ["$AGENT"] + sys.argv[1:])
SH
chmod +x "$T/agent-wrap"
expect_rc 0 "$FERRY" push --agent "$T/agent-wrap" "$T/src" "local:$T/d1"
[ "$(cat "$T/sizes")" = "$pipe_bytes $pipe_bytes" ] ||
    fail "the agent's pipes from ferry: $(cat "$T/sizes"), want $pipe_bytes"
cmp "$T/src/f" "$T/d1/src/f" || fail "not transferred"

# The agent's side: started on 64 KiB pipes (as sshd gives it), it widens
# them itself; seen from our ends of the same pipes.
python3 - "$AGENT" "$pipe_bytes" <<'PY' || fail "the agent did not widen its pipes"
import fcntl, os, subprocess, sys, time
agent, want = sys.argv[1], int(sys.argv[2])
r_in, w_in = os.pipe()
r_out, w_out = os.pipe()
p = subprocess.Popen([agent, "serve"], stdin=r_in, stdout=w_out)
os.close(r_in)
os.close(w_out)
deadline = time.time() + 10
while time.time() < deadline:
    got = (fcntl.fcntl(w_in, 1032), fcntl.fcntl(r_out, 1032))
    if got == (want, want):
        break
    time.sleep(0.02)
os.close(w_in)
p.wait(timeout=10)
print("agent's pipes:", got, file=sys.stderr)
sys.exit(0 if got == (want, want) else 1)
PY
