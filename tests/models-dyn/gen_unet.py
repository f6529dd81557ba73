#!/usr/bin/env python3
"""Generate tests/models-dyn/unet_hw and fpn_hw: a U-Net and a text detector's feature
pyramid in miniature, exported with a dynamic batch, height and width (the TorchScript
exporter's dynamic_axes, as published segmentation and detection models ship), for the
dynamic-model tests of `make check`.

Two max-pool levels down, then up again by a transposed convolution (stride 2) and by a
bilinear Resize (scale 2), each concatenated with its skip connection. The concatenations
join sizes derived from h: h / 2 beside 2 * floor(h / 4) and h beside 2 * floor(h / 2),
which agree only for h a multiple of 4 (onnxruntime fails at other sizes); the bundle
takes the bound and every 4th size below it (passes/symdim.c sd_steps). Data sets at
1x3x32x32, 2x3x24x40 and 1x3x16x64 (onnxruntime's outputs); flags: batch up to 2, h and w
16..64.

fpn_hw: three 3x3 stride-2 convolutions (sizes ceil(h / 2), ceil(h / 4), ceil(h / 8)),
then lateral 1x1 convolutions added to the nearest-upsampled coarser level (as PP-OCR's
DBNet detectors): the joined sizes agree at h = 8k and 8k - 1, so the least step that
only meets such sizes is 8 (the bundle takes 64, 56, .., 16). Data sets at 1x3x32x48,
2x3x40x24 and 1x3x64x64; same flags. Needs torch, onnx, onnxruntime and numpy:

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

DYN = os.path.join(TESTS, "models-dyn")
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


class Fpn(nn.Module):
    """Backbone 3 -> 8 -> 16 -> 16 channels at strides 2, 4, 8; a 1-channel sigmoid map at
    stride 2."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, 2, 1), nn.Conv2d(8, 16, 3, 2, 1)
        self.c3 = nn.Conv2d(16, 16, 3, 2, 1)
        self.l1, self.l2, self.l3 = nn.Conv2d(8, 8, 1), nn.Conv2d(16, 8, 1), nn.Conv2d(16, 8, 1)
        self.head = nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, x):
        a = torch.relu(self.c1(x))
        b = torch.relu(self.c2(a))
        c = torch.relu(self.c3(b))
        up = nn.functional.interpolate
        p2 = self.l2(b) + up(self.l3(c), scale_factor=2.0, mode="nearest")
        p1 = self.l1(a) + up(p2, scale_factor=2.0, mode="nearest")
        return torch.sigmoid(self.head(p1))


def write(name, model, shapes, axes=None, out_axes=None,
          flags="--dim batch=2 --dim h=16..64 --dim w=16..64"):
    """Export model to DYN/name (TorchScript exporter, input x with dynamic axes axes,
    output y with out_axes; both batch, h, w by default) with a data set per shape and
    the flags file (also gen_yolo.py's)."""
    here = os.path.join(DYN, name)
    buf = io.BytesIO()
    axes = axes or {0: "batch", 2: "h", 3: "w"}
    torch.onnx.export(model.eval(), (torch.randn(*shapes[0]),), buf, dynamo=False,
                      input_names=["x"], output_names=["y"], opset_version=17,
                      dynamic_axes={"x": axes, "y": out_axes or axes})
    rng = np.random.default_rng(3)
    gen_util.save_with_sets(onnx.load_from_string(buf.getvalue()), here,
                            [rng.standard_normal(s).astype(np.float32) for s in shapes])
    with open(os.path.join(here, "flags"), "w") as f:
        f.write(flags + "\n")
    print("wrote", here)


def main():
    torch.manual_seed(7)
    write("unet_hw", UNet(), SHAPES)
    write("fpn_hw", Fpn(), ((1, 3, 32, 48), (2, 3, 40, 24), (1, 3, 64, 64)))


if __name__ == "__main__":
    main()
