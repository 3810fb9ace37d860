#!/usr/bin/env python3
"""Writes checkpoints in the layouts training code saves, without torch:

    ckpt_layouts.py DIR [MiB] [SEED]

DIR/torch.pth    torch.save's layout: a stored zip (Python's zipfile) of
                 archive/data.pkl (a pickle), archive/data/N storages,
                 archive/version and archive/byteorder, as torch writes it
DIR/model.safetensors  an 8-byte header length, the JSON header, the data
DIR/arr.npy      NumPy's format, written by hand (float32, 2-D)
DIR/ckpt.tar     a tar of a directory of shards (Python's tarfile)

MiB (default 5) is about the size of each; SEED (default 7) draws the
data, so two seeds make two versions of the same layout.
"""
import io
import json
import os
import pickle
import random
import struct
import sys
import tarfile
import zipfile

out = sys.argv[1]
mib = int(sys.argv[2]) if len(sys.argv) > 2 else 5
rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
os.makedirs(out, exist_ok=True)

# torch.save: the pickle names storages by key; the storages are members.
nstor = 4
sizes = [mib * (1 << 20) // nstor] * nstor
with zipfile.ZipFile(os.path.join(out, "torch.pth"), "w",
                     zipfile.ZIP_STORED) as z:
    meta = {"model": {"layer%d.weight" % i: ("storage", str(i), sizes[i] // 4)
                      for i in range(nstor)}, "epoch": 12}
    z.writestr("archive/data.pkl", pickle.dumps(meta, protocol=2))
    z.writestr("archive/byteorder", "little")
    for i, n in enumerate(sizes):
        z.writestr("archive/data/%d" % i, rnd.randbytes(n))
    z.writestr("archive/version", "3\n")
    z.writestr("archive/.data/serialization_id", "1234567890")

# safetensors
tensors, off, blobs = {}, 0, []
for i in range(3):
    n = mib * (1 << 20) // 3 // 2 * 2
    tensors["w%d" % i] = {"dtype": "BF16", "shape": [n // 2],
                          "data_offsets": [off, off + n]}
    blobs.append(rnd.randbytes(n))
    off += n
tensors["__metadata__"] = {"format": "pt"}
hdr = json.dumps(tensors).encode()
hdr += b" " * (-len(hdr) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs))

# .npy, version 1, float32 of shape (rows, 256)
rows = mib * (1 << 20) // (256 * 4)
d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 256), }" % rows
d += " " * (-(10 + len(d) + 1) % 64) + "\n"
with open(os.path.join(out, "arr.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode())
    f.write(rnd.randbytes(rows * 256 * 4))

# a tar of shards
with tarfile.open(os.path.join(out, "ckpt.tar"), "w") as t:
    for i in range(3):
        data = rnd.randbytes(mib * (1 << 20) // 3)
        ti = tarfile.TarInfo("ckpt/shard-%d.bin" % i)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
