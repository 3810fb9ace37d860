# Generators of test trees (bash). Deterministic: no randomness beyond
# what a seed gives.

# awkward_tree DIR: names and files that break naive tools.
awkward_tree() {
    d=$1
    mkdir -p "$d"
    mkdir -p "$d/with space/and more" "$d/данные" "$d/empty dir" \
        "$d/ro dir" "$d/private"
    printf 'one\n' >"$d/with space/file one.txt"
    printf 'two\n' >"$d/with space/and more/file two.txt"
    printf 'utf8\n' >"$d/данные/файл-ü.bin"
    printf 'nihongo\n' >"$d/日本語.txt"
    printf 'newline\n' >"$d/new
line"
    printf 'quotes\n' >"$d/q\"uo'te\\s \$HOME;x"
    printf 'dash\n' >"$d/-dash"
    printf 'hidden\n' >"$d/.hidden"
    : >"$d/zero"
    : >"$d/with space/zero too"
    # Deep nesting.
    p="$d/deep"
    for i in $(seq 1 40); do p="$p/level$i"; done
    mkdir -p "$p"
    printf 'bottom\n' >"$p/file"
    # Modes.
    printf '#!/bin/sh\n' >"$d/exec.sh"
    chmod 0755 "$d/exec.sh"
    printf 'secret\n' >"$d/private/key"
    chmod 0600 "$d/private/key"
    chmod 0700 "$d/private"
    printf 'readonly\n' >"$d/readonly.txt"
    chmod 0444 "$d/readonly.txt"
    printf 'in ro dir\n' >"$d/ro dir/inside"
    # Symlinks: inside, outside, absolute, dangling, to a directory.
    ln -s "file one.txt" "$d/with space/link-inside"
    ln -s ../../outside/secret "$d/link-outside"
    ln -s /etc/passwd "$d/link-absolute"
    ln -s does-not-exist "$d/link-dangling"
    ln -s "with space" "$d/link-to-dir"
    # Binary content of a few blocks, not block-aligned.
    head -c 3500000 /dev/urandom >"$d/data.bin"
    # Over 4 GiB, sparse: cheap to make and to send.
    truncate -s 4100M "$d/big.sparse"
    printf 'middle' | dd of="$d/big.sparse" bs=1 seek=2147483000 \
        conv=notrunc status=none
    printf 'end' | dd of="$d/big.sparse" bs=1 seek=4299161000 \
        conv=notrunc status=none
    # Timestamps with nanoseconds, old and in the future.
    touch -h -d '2001-02-03 04:05:06.123456789' "$d/link-dangling"
    touch -d '2020-01-02 03:04:05.987654321' "$d/zero"
    touch -d '2099-12-31 23:59:59.5' "$d/.hidden"
    touch -d '1999-01-01 00:00:00' "$d/ro dir" "$d/ro dir/inside"
    chmod 0555 "$d/ro dir"
}

# small_files_tree DIR COUNT: COUNT small files in nested directories,
# sizes 0..8 KiB, content derived from the index.
small_files_tree() {
    python3 - "$1" "$2" <<'PY'
import os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 50), "e%02d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    size = rng.randint(0, 8192)
    with open(os.path.join(d, "f%06d.bin" % i), "wb") as f:
        f.write(rng.randbytes(size))
PY
}
