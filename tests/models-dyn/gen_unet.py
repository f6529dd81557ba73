#!/usr/bin/env python3
"""Generate tests/models-dyn/unet_hw: a U-Net in miniature exported with a dynamic batch,
height and width (the TorchScript exporter's dynamic_axes, as published segmentation
models ship), for the dynamic-model tests of `make check`.

Two max-pool levels down, then up again by a transposed convolution (stride 2) and by a
bilinear Resize (scale 2), each concatenated with its skip connection. The concatenations
join sizes derived from h: h / 2 beside 2 * floor(h / 4) and h beside 2 * floor(h / 2),
which agree only for h a multiple of 4 (onnxruntime fails at other sizes); the bundle
takes the bound and every 4th size below it (passes/symdim.c sd_steps). Data sets at
1x3x32x32, 2x3x24x40 and 1x3x16x64 (onnxruntime's outputs); flags: batch up to 2, h and w
16..64. Needs torch, onnx, onnxruntime and numpy:

    python3 tests/models-dyn/gen_unet.py
"""
import io
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "models"))
import gen_util  # noqa: E402  tests/models/gen_util.py: save_with_sets

HERE = os.path.join(TESTS, "models-dyn", "unet_hw")
SHAPES = ((1, 3, 32, 32), (2, 3, 24, 40), (1, 3, 16, 64))


def block(cin, cout):
    """Two 3x3 'same' convolutions with ReLUs."""
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNet(nn.Module):
    """Encoder 3 -> 4 -> 8 -> 16 channels, decoder back to 2 classes."""

    def __init__(self):
        super().__init__()
        self.e1, self.e2, self.e3 = block(3, 4), block(4, 8), block(8, 16)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.d2 = block(16, 8)
        self.red1 = nn.Conv2d(8, 4, 1)
        self.d1 = block(8, 4)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(self.pool(a))
        c = self.e3(self.pool(b))
        d = self.d2(torch.cat([self.up2(c), b], 1))
        u = nn.functional.interpolate(self.red1(d), scale_factor=2.0, mode="bilinear",
                                      align_corners=False)
        return self.head(self.d1(torch.cat([u, a], 1)))


def main():
    torch.manual_seed(7)
    buf = io.BytesIO()
    axes = {0: "batch", 2: "h", 3: "w"}
    torch.onnx.export(UNet().eval(), (torch.randn(*SHAPES[0]),), buf, dynamo=False,
                      input_names=["x"], output_names=["y"], opset_version=17,
                      dynamic_axes={"x": axes, "y": axes})
    rng = np.random.default_rng(3)
    gen_util.save_with_sets(onnx.load_from_string(buf.getvalue()), HERE,
                            [rng.standard_normal(s).astype(np.float32) for s in SHAPES])
    with open(os.path.join(HERE, "flags"), "w") as f:
        f.write("--dim batch=2 --dim h=16..64 --dim w=16..64\n")
    print("wrote", HERE)


if __name__ == "__main__":
    main()
