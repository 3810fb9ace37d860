# push --keep-volumes through a real sshd on 127.0.0.1: the set on the
# box is what ferry pack makes and reads back; an SSH connection cut
# (netproxy) after 2 MiB fails the run, and the same command run again
# sends only the volumes that were not finished.
. "$(dirname "$0")/../lib/common.sh"
. "$TESTS_DIR/lib/trees.sh"
. "$TESTS_DIR/lib/sshd.sh"
sshd_start

small_files_tree "$T/src/data/small" 500
for i in $(seq 10 29); do head -c 300000 /dev/urandom >"$T/src/data/r$i"; done

expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --keep-volumes --volume-size 512K "$T/src/data" "ferry-test:$T/box"
n=$(json_field volumes)
[ "$n" -ge 6 ] || fail "only $n volumes"
expect_field volumes_sent "$n"
(cd "$T/box" && sha256sum -c --quiet SHA256SUMS) || fail "sha256sum -c"
expect_rc 0 "$FERRY" pack --volume-size 512K "$T/src/data" "$T/packed"
for f in "$T/packed"/*; do
    cmp -s "$f" "$T/box/$(basename "$f")" || fail "$(basename "$f") is not ferry pack's"
done
expect_rc 0 "$FERRY" unpack "$T/box" "$T/back"
tree_same "$T/src/data" "$T/back/data"

. "$TESTS_DIR/lib/netproxy.sh"
# 16 Mbit/s: the volumes before the cut arrive over a second, so the
# agent has stored some of them even on a loaded machine.
proxy_start --cut-after 2m --cut-dir up --cut-rounds 1 --rate 16
expect_rc 5 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --keep-volumes --volume-size 512K "$T/src/data" "ferry-proxy:$T/box2"
# The agent may still store what reached it before it sees the cut: it
# is done once its temporary file is gone.
for _ in $(seq 1 100); do
    [ -z "$(ls -A "$T/box2" | grep '^\.data')" ] && break
    sleep 0.1
done
[ -z "$(ls -A "$T/box2" | grep '^\.data')" ] || fail "temporary files left"
[ ! -e "$T/box2/data.manifest" ] || fail "a manifest after the cut"
held=$(ls "$T/box2" | grep -c '^data\..*\.tar\.zst$' || true)
[ "$held" -ge 1 ] || fail "no volume finished before the cut"
for v in "$T/box2"/data.*.tar.zst; do
    cmp -s "$v" "$T/packed/$(basename "$v")" || fail "partial $(basename "$v")"
done
expect_rc 0 "$FERRY" push -F "$SSH_CONFIG" --agent "$AGENT" --json \
    --keep-volumes --volume-size 512K "$T/src/data" "ferry-proxy:$T/box2"
expect_field volumes_kept "$held"
expect_field volumes_sent $((n - held))
for f in "$T/packed"/*; do
    cmp -s "$f" "$T/box2/$(basename "$f")" || fail "resumed: $(basename "$f")"
done
exit 0
