#!/bin/bash
# make demo: what ferry is for, end to end on this machine. Starts a
# throwaway sshd on 127.0.0.1 (keys in a temp dir) standing in for the GPU
# box, then:
#   1. pushes a dataset (3000 small files, which travel in volumes, and a
#      300 MiB shard, over several streams);
#   2. pushes a changed dataset, interrupted halfway (Ctrl-C), then the
#      same command again: it resumes from what arrived;
#   3. watches the box's checkpoint directory (pull --watch) while the
#      "training job" saves two checkpoints under new names: the first
#      crosses whole, the second is built by delta from the first.
# Prints what each step moved.
. "$(dirname "$0")/lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"

say() { printf '\n== %s\n' "$*"; }
# The last summary of FILE (default $T/last.out), in two lines.
summary() {
    grep '"event":"summary"' "${1:-$T/last.out}" | tail -n 1 | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())
mib = s["bytes_payload"] / 2**20
print("   files: %d sent, %d skipped, %d failed of %d; %d stream(s)" % (
      s["files_sent"], s["files_skipped"], s["files_failed"],
      s["files_total"], s["streams"]))
print("   data:  %.1f MiB of file data in %.2f s; on the wire %.1f MiB out, "
      "%.1f MiB in; resumed %.1f MiB, built from what was there %.1f MiB" % (
      mib, s["elapsed_s"], s["bytes_wire"] / 2**20,
      s["bytes_wire_in"] / 2**20, s["resumed_bytes"] / 2**20,
      s["bytes_matched"] / 2**20))'
}
# Random-looking bytes of a given size, fast (AES-CTR of zeros).
noise() {  # KEY_HEX SIZE
    openssl enc -aes-128-ctr -K "$1" -iv 00000000000000000000000000000000 \
        -nosalt </dev/zero 2>/dev/null | head -c "$2"
}

say "starting a throwaway sshd on 127.0.0.1 (the 'GPU box')"
sshd_start
echo "   port $SSHD_PORT, keys and config in $SSHD_DIR"
box="ferry-test"
ssh_opts=(-F "$SSH_CONFIG")

say "1. push a dataset: 3000 small files and one 300 MiB shard"
mkdir -p "$T/dataset" "$T/box"
small_files_tree "$T/dataset/images" 3000
noise 0102030405060708090a0b0c0d0e0f10 314572800 >"$T/dataset/shard-000.bin"
du -sh "$T/dataset" | sed 's/^/   /'
echo "   \$ ferry push dataset $box:datasets   (the agent is uploaded the first time)"
expect_rc 0 "$FERRY" push "${ssh_opts[@]}" --json "$T/dataset" \
    "$box:$T/box/datasets"
grep -h uploading "$T/last.err" | sed 's/^/   /' || true
python3 - "$T/last.out" <<'PY'
import json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if '"event":"volume"' in l]
v = [e for e in v if e["action"] == "sent"]
print("   %d small files travelled in %d volume(s), %.1f MiB as %.1f MiB" % (
      sum(e["files"] for e in v), len(v),
      sum(e["bytes_files"] for e in v) / 2**20,
      sum(e["bytes"] for e in v) / 2**20))
PY
summary

say "2. change the dataset, push again, interrupted halfway; then resume"
noise 1112131415161718191a1b1c1d1e1f10 314572800 >"$T/dataset/shard-001.bin"
for i in 1 2 3 4 5; do
    f=$(find "$T/dataset/images" -name "f00000$i.bin")
    echo "edited $i" >>"$f"
done
echo "   \$ ferry push dataset $box:datasets   (Ctrl-C after 3 s)"
"$FERRY" push "${ssh_opts[@]}" --json --bwlimit 40M "$T/dataset" \
    "$box:$T/box/datasets" >"$T/cut.out" 2>"$T/cut.err" &
pid=$!
sleep 3
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
echo "   exit $rc: $(grep -o 'interrupted[^"]*' "$T/cut.err" | head -n 1)"
summary "$T/cut.out"
echo "   \$ ferry push dataset $box:datasets   (the same command again)"
expect_rc 0 "$FERRY" push "${ssh_opts[@]}" --json "$T/dataset" \
    "$box:$T/box/datasets"
summary
python3 "$TESTS_DIR/lib/treecmp.py" "$T/dataset" "$T/box/datasets/dataset" &&
    echo "   the dataset on the box is identical (names, modes, mtimes, bytes)"

say "3. watch the box's checkpoints while training saves them"
mkdir -p "$T/box/ckpt"
echo "   \$ ferry pull --watch 2s $box:ckpt/ checkpoints"
"$FERRY" pull "${ssh_opts[@]}" --watch 2s --json "$box:$T/box/ckpt/" \
    "$T/checkpoints" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
at_exit stop_watch
# Saved as the training job does: under a temporary name, then renamed.
noise 2122232425262728292a2b2c2d2e2f20 209715200 >"$T/box/ckpt/.step-1000.pt.tmp"
mv "$T/box/ckpt/.step-1000.pt.tmp" "$T/box/ckpt/step-1000.pt"
wait_exists "$T/checkpoints/step-1000.pt"
echo "   step-1000.pt (200 MiB) pulled:"
for _ in $(seq 1 100); do
    [ "$(grep -c '"event":"summary"' "$T/watch.out")" -ge 1 ] && break
    sleep 0.1
done
summary "$T/watch.out"
# The next save: the same model with three 1 MiB regions updated.
cp "$T/box/ckpt/step-1000.pt" "$T/box/ckpt/.step-2000.pt.tmp"
for off in 10 90 170; do
    noise 3132333435363738393a3b3c3d3e3f3$((off % 10)) 1048576 |
        dd of="$T/box/ckpt/.step-2000.pt.tmp" bs=1M seek=$off conv=notrunc \
            status=none
done
mv "$T/box/ckpt/.step-2000.pt.tmp" "$T/box/ckpt/step-2000.pt"
wait_exists "$T/checkpoints/step-2000.pt"
for _ in $(seq 1 100); do
    [ "$(grep -c '"event":"summary"' "$T/watch.out")" -ge 2 ] && break
    sleep 0.1
done
echo "   step-2000.pt (a new name, 3 MiB changed) pulled, built by delta:"
summary "$T/watch.out"
stop_watch
cmp "$T/box/ckpt/step-2000.pt" "$T/checkpoints/step-2000.pt" &&
    echo "   both checkpoints pulled back intact"
say "done"
