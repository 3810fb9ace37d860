#!/usr/bin/env python3
"""Writes a checkpoint the way a training job does, with a pause:

    ckpt_writer.py MODE PATH [PAUSE_S]

pause  torch.save's zip layout, half written, the file held open PAUSE_S
       seconds (a slow disk, a GC pause), then finished and closed
die    the same, but the process dies halfway (the file stays cut short)
tmp    written to PATH.tmp, closed, then renamed to PATH
"""
import io
import os
import random
import sys
import time
import zipfile

mode, path = sys.argv[1], sys.argv[2]
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
rnd = random.Random(hash(path) & 0xffff)
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
    z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    for i in range(4):
        z.writestr("archive/data/%d" % i, rnd.randbytes(400000))
    z.writestr("archive/version", "3\n")
data = buf.getvalue()
half = len(data) // 2
if mode == "tmp":
    with open(path + ".tmp", "wb") as f:
        f.write(data[:half])
        f.flush()
        time.sleep(pause)
        f.write(data[half:])
    os.rename(path + ".tmp", path)
    sys.exit(0)
f = open(path, "wb")
f.write(data[:half])
f.flush()
time.sleep(pause)
if mode == "die":
    os._exit(9)
f.write(data[half:])
f.close()
