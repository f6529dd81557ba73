#!/usr/bin/env python3
"""Generate tests/models-dyn/pt2_gpt_seq and pt2_unet_hw: torch.export archives (.pt2)
with dynamic shapes (torch.export.Dim), for the dynamic-model tests of `make check`.

pt2_gpt_seq: a decoder block in miniature (token and position embeddings, causal
self-attention through a tril buffer sliced to the sequence, LayerNorm, GELU MLP, tied
head) over input_ids [batch, seq], batch in 1..4 and seq in 2..23; data sets [2, 16],
[1, 5] and [3, 23].

pt2_unet_hw: a U-Net in miniature over x [batch, 3, 4h, 4w] (the Dim h times 4, as
torch.export writes a size it must keep a multiple of 4), h and w in 2..8, batch in 1..2:
convolutions, max pools, a transposed convolution and bilinear upsampling, each joined to
its skip connection; data sets 2x3x16x24, 1x3x32x32 and 1x3x8x32 (the first is the
example: a batch of 1 would be specialised).

The bounds come from the archives' range constraints: the flags files are empty.
Outputs are PyTorch's (eager, float32). Needs torch and numpy:

    python3 tests/models-dyn/gen_pt2.py
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

DYN = os.path.dirname(os.path.abspath(__file__))


class TinyGpt(nn.Module):
    """One pre-norm decoder block, 2 heads of 16, vocabulary 100, context 24."""

    def __init__(self, vocab=100, d=32, heads=2, ctx=24):
        super().__init__()
        self.heads = heads
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx)))

    def forward(self, idx):
        b, t = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(t))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        hd = x.shape[-1] // self.heads
        q, k, v = [z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) * hd ** -0.5
        att = att.masked_fill(self.mask[:t, :t] == 0, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, -1))
        x = x + self.fc2(F.gelu(self.fc(self.ln2(x))))
        return self.lnf(x) @ self.tok.weight.t()


class TinyUNet(nn.Module):
    """Two levels: 3 -> 8 -> 16 channels and back to 2 classes."""

    def __init__(self):
        super().__init__()
        self.e1, self.e2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, padding=1)
        self.mid = nn.Conv2d(16, 16, 3, padding=1)
        self.up2 = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.d2, self.d1 = nn.Conv2d(32, 8, 3, padding=1), nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = F.relu(self.e1(x))
        b = F.relu(self.e2(F.max_pool2d(a, 2)))
        m = F.relu(self.mid(F.max_pool2d(b, 2)))
        d = F.relu(self.d2(torch.cat([self.up2(m), b], 1)))
        u = F.interpolate(d, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.d1(torch.cat([u, a], 1))


def write(name, model, inputs, dyn):
    """Export model on inputs[0] with dynamic shapes dyn to DYN/name/model.pt2, with a
    data set per input tuple (PyTorch's outputs) and an empty flags file."""
    here = os.path.join(DYN, name)
    os.makedirs(here, exist_ok=True)
    model.eval()
    ep = torch.export.export(model, inputs[0], dynamic_shapes=dyn)
    torch.export.save(ep, os.path.join(here, "model.pt2"))
    from onnx import numpy_helper
    for k, ins in enumerate(inputs):
        ds = os.path.join(here, "test_data_set_%d" % k)
        os.makedirs(ds, exist_ok=True)
        with torch.no_grad():
            y = model(*ins)
        for j, t in enumerate(ins):
            with open(os.path.join(ds, "input_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(t.numpy(), "in%d" % j).SerializeToString())
        with open(os.path.join(ds, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y.numpy().astype(np.float32), "y").SerializeToString())
    open(os.path.join(here, "flags"), "w").close()
    print("wrote", here)


def main():
    torch.manual_seed(5)
    g = torch.Generator().manual_seed(9)
    ids = [(torch.randint(0, 100, s, generator=g),) for s in ((2, 16), (1, 5), (3, 23))]
    write("pt2_gpt_seq", TinyGpt(), ids,
          {"idx": {0: Dim("batch", min=1, max=4), 1: Dim("seq", min=2, max=23)}})
    imgs = [(torch.randn(*s, generator=g),) for s in ((2, 3, 16, 24), (1, 3, 32, 32),
                                                       (1, 3, 8, 32))]
    h, w = Dim("h", min=2, max=8), Dim("w", min=2, max=8)
    write("pt2_unet_hw", TinyUNet(), imgs,
          {"x": {0: Dim("batch", min=1, max=2), 2: 4 * h, 3: 4 * w}})


if __name__ == "__main__":
    main()
