#!/usr/bin/env python3
"""gen.py: deterministic benchmark data. Same arguments, same bytes.

  gen.py random FILE BYTES SEED      incompressible (AES-128-CTR of zeros,
                                     key from the seed, via openssl: fast)
  gen.py small DIR COUNT SEED        COUNT files of 0..8 KiB in 50x7
                                     directories (as small_files_tree in
                                     tests/lib/trees.sh, seeded)
  gen.py text DIR BYTES SEED         a tree of JSONL/CSV/TXT files of
                                     Zipf-distributed words, about BYTES
                                     in all (zstd -3 makes it ~3x smaller)
  gen.py rewrite FILE PERCENT SEED   overwrite PERCENT % of FILE in place,
                                     as 256 KiB regions at seeded 4 KiB
                                     aligned offsets (size unchanged)
  gen.py insert SRC DST BYTES SEED   DST = BYTES seeded random bytes + SRC
  gen.py sample SRC DST COUNT        copy the first COUNT files of SRC (in
                                     sorted order) to DST, same layout
  gen.py weights FILE BYTES SEED     fp32 weights, N(0, 0.02) (numpy; as
                                     random without it)
  gen.py perturb SRC DST SEED        DST = SRC's fp32 elements each moved
                                     a little (x (1 + N(0, 1e-3)); without
                                     numpy, each element's low byte
                                     changed): every block differs
  gen.py regions SRC DST K BYTES SEED  DST = SRC with K contiguous regions
                                     of BYTES rewritten at seeded offsets
  gen.py tiny DIR COUNT SEED         COUNT files in directories of 1,000
                                     (dNNNN/fNNNNN): even ones empty, odd
                                     ones 1..64 seeded bytes (the million
                                     files row of docs/NOTES.md)
"""
import hashlib
import os
import random
import shutil
import subprocess
import sys

CHUNK = 1 << 20
REGION = 256 * 1024


def gen_random(path, size, seed):
    key = hashlib.sha256(("ferry-bench-%s" % seed).encode()).hexdigest()
    cmd = ["openssl", "enc", "-aes-128-ctr", "-nosalt",
           "-K", key[:32], "-iv", key[32:64]]
    with open("/dev/zero", "rb") as zero, open(path, "wb") as out:
        p = subprocess.Popen(cmd, stdin=zero, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        left = size
        while left > 0:
            b = p.stdout.read(min(CHUNK, left))
            if not b:
                raise SystemExit("gen.py: openssl stopped early")
            out.write(b)
            left -= len(b)
        p.kill()
        p.wait()


def gen_small(root, count, seed):
    rng = random.Random(seed)
    for i in range(count):
        d = os.path.join(root, "d%02d" % (i % 50), "e%02d" % (i % 7))
        os.makedirs(d, exist_ok=True)
        size = rng.randint(0, 8192)
        with open(os.path.join(d, "f%06d.bin" % i), "wb") as f:
            f.write(rng.randbytes(size))


def vocabulary(rng, n):
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = list(range(len(letters), 0, -1))
    words = set()
    while len(words) < n:
        words.add("".join(rng.choices(letters, weights=weights,
                                      k=rng.randint(1, 11))))
    words = sorted(words)
    rng.shuffle(words)
    return words


def gen_text(root, total, seed):
    rng = random.Random(seed)
    words = vocabulary(rng, 30000)
    # Zipf: the k-th word has weight 1/k.
    cum, acc = [], 0.0
    for k in range(1, len(words) + 1):
        acc += 1.0 / k
        cum.append(acc)
    # Drawing every word is slow in Python (30 M draws for 200 MiB), so
    # draw a pool of sentences, total/8 bytes (at most 24 MiB), and make
    # records of randomly picked sentences. A sentence rarely repeats
    # within a compressor's window, so the ratio stays that of the words.
    pool, n = [], 0
    want = max(1 << 20, min(total // 8, 24 << 20))
    while n < want:
        ws = rng.choices(words, cum_weights=cum, k=4096)
        w = 0
        while w < len(ws):
            k = rng.randint(8, 120)
            pool.append(" ".join(ws[w:w + k]))
            n += len(pool[-1])
            w += k
    made, i = 0, 0
    while made < total:
        # Sizes log-uniform in 16 KiB .. 4 MiB, the last one trimmed.
        size = min(int(2 ** rng.uniform(14, 22)), total - made)
        kind = ("jsonl", "jsonl", "csv", "txt")[i % 4]
        d = os.path.join(root, "shard%02d" % (i % 16))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "part-%05d.%s" % (i, kind))
        out, n, rec = [], 0, 0
        while n < size:
            text = pool[rng.randrange(len(pool))]
            if kind == "jsonl":
                line = '{"id": %d, "lang": "en", "score": %.3f, "text": "%s"}\n' % (
                    i * 100000 + rec, rng.random(), text)
            elif kind == "csv":
                line = "%d,%d,%.5f,%s\n" % (i, rec, rng.random(), text)
            else:
                line = text + ".\n"
            out.append(line)
            n += len(line)
            rec += 1
        data = "".join(out).encode()[:size]
        with open(path, "wb") as f:
            f.write(data)
        made += len(data)
        i += 1


def gen_rewrite(path, percent, seed):
    rng = random.Random(seed)
    size = os.path.getsize(path)
    nreg = max(1, -(-int(size * percent / 100) // REGION))
    slots = max(1, (size - REGION) // 4096)
    offsets = set()
    while len(offsets) < min(nreg, slots):
        off = rng.randrange(slots) * 4096
        # Keep regions apart so that exactly nreg*REGION bytes change.
        if all(abs(off - o) >= REGION for o in offsets):
            offsets.add(off)
    with open(path, "r+b") as f:
        for off in sorted(offsets):
            f.seek(off)
            f.write(rng.randbytes(min(REGION, size - off)))


def gen_insert(src, dst, nbytes, seed):
    rng = random.Random(seed)
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        fo.write(rng.randbytes(nbytes))
        shutil.copyfileobj(fi, fo, CHUNK)


def gen_sample(src, dst, count):
    files = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            files.append(os.path.relpath(os.path.join(dirpath, name), src))
    for rel in sorted(files)[:count]:
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dst, rel))


def numpy_or_none():
    try:
        import numpy
        return numpy
    except ImportError:
        return None


def gen_weights(path, size, seed):
    np = numpy_or_none()
    if np is None:
        gen_random(path, size, "weights-%s" % seed)
        return
    rng = np.random.default_rng(seed)
    n = CHUNK // 4
    with open(path, "wb") as out:
        left = size
        while left > 0:
            w = (rng.standard_normal(n, dtype=np.float32) * 0.02).tobytes()
            out.write(w[:left])
            left -= min(left, len(w))


def gen_perturb(src, dst, seed):
    np = numpy_or_none()
    rng = random.Random(seed) if np is None else np.random.default_rng(seed)
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while True:
            b = fi.read(CHUNK)
            if not b:
                break
            if np is not None and len(b) % 4 == 0:
                w = np.frombuffer(b, dtype=np.float32)
                e = rng.standard_normal(len(w), dtype=np.float32) * 1e-3
                fo.write((w * (1 + e)).astype(np.float32).tobytes())
                continue
            a = bytearray(b)
            noise = rng.randbytes(len(a) // 4 + 1)
            for i in range(0, len(a), 4):
                a[i] ^= noise[i // 4] | 1
            fo.write(a)


def gen_regions(src, dst, k, nbytes, seed):
    rng = random.Random(seed)
    shutil.copyfile(src, dst)
    size = os.path.getsize(dst)
    # k slots, one region at a seeded place within each: no overlap.
    slot = size // k
    with open(dst, "r+b") as f:
        for i in range(k):
            f.seek(i * slot + rng.randrange(0, slot - nbytes))
            f.write(rng.randbytes(nbytes))


def gen_tiny(root, count, seed):
    rng = random.Random(seed)
    for i in range(count):
        d = os.path.join(root, "d%04d" % (i // 1000))
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        n = 0 if i % 2 == 0 else rng.randint(1, 64)
        with open(os.path.join(d, "f%05d" % (i % 1000)), "wb") as f:
            f.write(rng.randbytes(n))


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "random" and len(args) == 3:
        gen_random(args[0], int(args[1]), args[2])
    elif cmd == "small" and len(args) == 3:
        gen_small(args[0], int(args[1]), int(args[2]))
    elif cmd == "text" and len(args) == 3:
        gen_text(args[0], int(args[1]), int(args[2]))
    elif cmd == "rewrite" and len(args) == 3:
        gen_rewrite(args[0], float(args[1]), int(args[2]))
    elif cmd == "insert" and len(args) == 4:
        gen_insert(args[0], args[1], int(args[2]), int(args[3]))
    elif cmd == "weights" and len(args) == 3:
        gen_weights(args[0], int(args[1]), int(args[2]))
    elif cmd == "perturb" and len(args) == 3:
        gen_perturb(args[0], args[1], int(args[2]))
    elif cmd == "regions" and len(args) == 5:
        gen_regions(args[0], args[1], int(args[2]), int(args[3]),
                    int(args[4]))
    elif cmd == "tiny" and len(args) == 3:
        gen_tiny(args[0], int(args[1]), int(args[2]))
    elif cmd == "sample" and len(args) == 3:
        gen_sample(args[0], args[1], int(args[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
