#!/usr/bin/env python3
"""Writes two saves of one training run as safetensors, without torch:

    ckpt_pair.py OLD NEW CASE [MiB] [DTYPE]

OLD has tensors w0..w3 of weights near N(0, 0.02) in DTYPE (BF16, the
default, or F32), about MiB (default 4) in all; NEW is OLD after CASE:

  same       the same tensors
  few        a few elements changed
  perturbed  every element moved a little (as a training step moves it)
  added      perturbed, and a tensor more
  removed    perturbed, and w3 left out
  renamed    perturbed, and w1 named w1_renamed
  header     perturbed, and metadata that grows the header (every offset
             moves)
"""
import json
import random
import struct
import sys

old_path, new_path, case = sys.argv[1], sys.argv[2], sys.argv[3]
mib = int(sys.argv[4]) if len(sys.argv) > 4 else 4
dtype = sys.argv[5] if len(sys.argv) > 5 else "BF16"
rnd = random.Random(1000)
width = 2 if dtype == "BF16" else 4
n = mib * (1 << 20) // 4 // width


def enc(vals):
    raw = struct.pack("<%df" % len(vals), *vals)
    if width == 4:
        return raw
    # bf16: the high half of each float32
    return b"".join(raw[i + 2:i + 4] for i in range(0, len(raw), 4))


def write(path, tensors, meta=None):
    hdr, off, blobs = {}, 0, []
    for name, vals in tensors:
        b = enc(vals)
        hdr[name] = {"dtype": dtype, "shape": [len(vals)],
                     "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hdr["__metadata__"] = meta or {"format": "pt"}
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


old = [("w%d" % i, [rnd.gauss(0, 0.02) for _ in range(n)]) for i in range(4)]
write(old_path, old)


def perturb(vals):
    return [v + rnd.gauss(0, 0.0005) for v in vals]


meta = None
if case == "same":
    new = old
elif case == "few":
    new = []
    for name, vals in old:
        vals = list(vals)
        for _ in range(20):
            vals[rnd.randrange(n)] += 0.01
        new.append((name, vals))
else:
    new = [(name, perturb(vals)) for name, vals in old]
    if case == "added":
        new.append(("w4", [rnd.gauss(0, 0.02) for _ in range(n // 4)]))
    elif case == "removed":
        new = new[:3]
    elif case == "renamed":
        new[1] = ("w1_renamed", new[1][1])
    elif case == "header":
        meta = {"format": "pt", "step": "2000", "note": "x" * 5000}
    elif case != "perturbed":
        sys.exit("unknown case " + case)
write(new_path, new, meta)
