#!/bin/bash
# make demo: the main job end to end on this machine. Starts a throwaway
# sshd on 127.0.0.1 (keys in a temp dir), generates a dataset (a few
# thousand small files and one large file), pushes it, changes a few
# files and pushes again (the rest is skipped), then pulls a "checkpoint"
# back. Prints each run's summary.
. "$(dirname "$0")/lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"

say() { printf '\n== %s\n' "$*"; }
summary() {
    grep '"event":"summary"' "$T/last.out" | tail -n 1 | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())
mib = s["bytes_payload"] / 2**20
print("   files: %d sent, %d skipped, %d failed of %d" % (s["files_sent"],
      s["files_skipped"], s["files_failed"], s["files_total"]))
print("   data:  %.1f MiB of file data in %.2f s (%.0f MiB/s); on the wire "
      "%.1f MiB out, %.1f MiB in" % (mib, s["elapsed_s"],
      mib / max(s["elapsed_s"], 1e-6), s["bytes_wire"] / 2**20,
      s["bytes_wire_in"] / 2**20))'
}

say "starting a throwaway sshd on 127.0.0.1"
sshd_start
echo "   port $SSHD_PORT, keys and config in $SSHD_DIR"
remote="ferry-test"
ssh_opts=(-F "$SSH_CONFIG")

say "generating a dataset: 3000 small files and one 300 MiB shard"
mkdir -p "$T/dataset"
small_files_tree "$T/dataset/images" 3000
openssl enc -aes-128-ctr -K 0102030405060708090a0b0c0d0e0f10 \
    -iv 00000000000000000000000000000000 -nosalt </dev/zero 2>/dev/null |
    head -c 314572800 >"$T/dataset/shard-000.bin"
du -sh "$T/dataset" | sed 's/^/   /'

say "push (the first time the agent is uploaded to the box's ~/.cache/ferry)"
expect_rc 0 "$FERRY" push "${ssh_opts[@]}" --json "$T/dataset" \
    "$remote:$T/box/datasets"
grep -h uploading "$T/last.err" | sed 's/^/   /' || true
summary

say "change 5 files, push again: only those are sent"
for i in 1 2 3 4 5; do
    f=$(find "$T/dataset/images" -name "f00000$i.bin")
    echo "edited $i" >>"$f"
done
expect_rc 0 "$FERRY" push "${ssh_opts[@]}" --json "$T/dataset" \
    "$remote:$T/box/datasets"
summary

say "the box writes a checkpoint; pull it back"
mkdir -p "$T/box/ckpt"
head -c 209715200 /dev/urandom >"$T/box/ckpt/step-1000.pt"
expect_rc 0 "$FERRY" pull "${ssh_opts[@]}" --json \
    "$remote:$T/box/ckpt/step-1000.pt" "$T/checkpoints/"
summary

say "verify"
python3 "$TESTS_DIR/lib/treecmp.py" "$T/dataset" "$T/box/datasets/dataset" &&
    echo "   dataset on the box is identical (names, modes, mtimes, bytes)"
cmp "$T/box/ckpt/step-1000.pt" "$T/checkpoints/step-1000.pt" &&
    echo "   checkpoint pulled back intact"
say "done"
