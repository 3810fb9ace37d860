#!/usr/bin/python3
"""Trains a small language model with PyTorch and saves it twice, 50 steps
apart, as a training run saves checkpoints:

    torch_pair.py DIR MiB

DIR/fp32/step-A.pth, step-B.pth   torch.save({"model", "optimizer",
                                  "step"}): fp32 weights and AdamW's state,
                                  about MiB each
DIR/bf16/step-A.safetensors, step-B.safetensors
                                  the same run's weights cast to bf16, as
                                  safetensors (written here: the format is
                                  an 8-byte header length, a JSON header and
                                  the data), about MiB each

The recipe is fixed so that a pair is the same from one run to the next:
seed 1000; a decoder of width 512 (1024 for more than 48M parameters), as
many layers as the size asks, 4 heads, vocabulary 8192, sequences of 32
tokens in batches of 4 drawn from a fixed corpus of repeating phrases (so
the loss falls); AdamW, learning rate 3e-4, weight decay 0.01; 20 steps
before the first save (the optimizer's moments are not zero), 50 steps
between the two saves. The bf16 pair needs 3x the parameters of the fp32
one for the same file size (2 bytes a weight against 12 for a weight and
its two moments), so it comes from a model of its own, trained the same
way. Needs Debian's python3-torch (and libopenblas0-pthread, without which
it trains ten times slower).
"""
import json
import os
import struct
import sys

import torch
from torch import nn

VOCAB = 8192
SEQ = 32
BATCH = 4
WARM = 20
BETWEEN = 50


class Model(nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        block = nn.TransformerEncoderLayer(width, 4, 4 * width,
                                           dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(block, layers)
        self.head = nn.Linear(width, VOCAB)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.head(self.body(self.embed(x), mask=mask))


def model_for(params):
    width = 512 if params <= 48_000_000 else 1024
    per_layer = 12 * width * width + 13 * width
    fixed = 2 * VOCAB * width + VOCAB
    layers = max(1, round((params - fixed) / per_layer))
    return Model(width, layers)


def batches(rng):
    phrases = torch.randint(0, VOCAB, (64, SEQ + 1), generator=rng)
    while True:
        pick = torch.randint(0, 64, (BATCH,), generator=rng)
        b = phrases[pick]
        yield b[:, :-1], b[:, 1:]


def train(model, steps, opt, data):
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(steps):
        x, y = next(data)
        loss = loss_fn(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss)


def save_safetensors(path, state):
    hdr, blobs, off = {}, [], 0
    for name, t in state.items():
        b = t.detach().to(torch.bfloat16).contiguous().view(torch.int16)
        raw = b.numpy().tobytes()
        hdr[name] = {"dtype": "BF16", "shape": list(t.shape),
                     "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hdr["__metadata__"] = {"format": "pt"}
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for raw in blobs:
            f.write(raw)
    os.rename(tmp, path)


def pair(out, kind, mib):
    torch.manual_seed(1000)
    rng = torch.Generator().manual_seed(1000)
    per_param = 12 if kind == "fp32" else 2
    model = model_for(mib * (1 << 20) // per_param)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    data = batches(rng)
    os.makedirs(os.path.join(out, kind), exist_ok=True)
    step = 0
    for name, steps in (("step-A", WARM), ("step-B", BETWEEN)):
        loss = train(model, steps, opt, data)
        step += steps
        if kind == "fp32":
            path = os.path.join(out, kind, name + ".pth")
            torch.save({"model": model.state_dict(),
                        "optimizer": opt.state_dict(), "step": step},
                       path + ".tmp")
            os.rename(path + ".tmp", path)
        else:
            path = os.path.join(out, kind, name + ".safetensors")
            save_safetensors(path, model.state_dict())
        print("%s %s: step %d, loss %.3f, %d bytes" %
              (kind, name, step, loss, os.path.getsize(path)), flush=True)


def main():
    out, mib = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(os.cpu_count() or 1)
    for kind in ("bf16", "fp32"):
        pair(out, kind, mib)


if __name__ == "__main__":
    main()
