#!/usr/bin/env python3
"""Generate tests/models-dyn/fpn_dynamo_hw: a feature pyramid whose upsampled maps are
resized to their skip connections' sizes (F.interpolate(p, size=skip.shape[-2:]), as
segmentation heads and detectors' FPNs do), exported by the dynamo exporter with a
dynamic batch, height and width, for the dynamic-model tests of `make check`.

The dynamo exporter writes each such size as arithmetic on the input's extent, (h + 3)
// 4 for a stride-4 map, not as the Shape of the map: the sizes reach the Resize as
constants folded at the bound with their formula (ir.h IrExtElem), which the
decomposition recomputes from the actual extent on the device and declares as that
extent through the formula (SYMLIKE's formula), a size pass_symdim derives and joins
with the convolutions' own. Three 3x3 stride-2 convolutions, lateral 1x1 convolutions
added to the nearest- and bilinear-resized coarser maps, and a head resized back to
the input's size. Data sets at 1x3x64x64, 2x3x40x72 and 1x3x81x57 (onnxruntime's
outputs); flags: batch up to 2, h and w 32..96. Needs torch, onnx, onnxruntime, numpy:

    python3 tests/models-dyn/gen_dynamo_hw.py
"""
import io
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "models"))
import gen_util  # noqa: E402  tests/models/gen_util.py: save_with_sets
import gen_unet  # noqa: E402  tests/models-dyn/gen_unet.py: Fpn

DYN = os.path.join(TESTS, "models-dyn")
SHAPES = ((1, 3, 64, 64), (2, 3, 40, 72), (1, 3, 81, 57))


class SizedFpn(gen_unet.Fpn):
    """gen_unet's feature pyramid (strides 2, 4, 8) with each coarser map resized to its
    skip connection's size, and the head's map to the input's."""

    def forward(self, x):
        a = torch.relu(self.c1(x))
        b = torch.relu(self.c2(a))
        c = torch.relu(self.c3(b))
        p2 = self.l2(b) + F.interpolate(self.l3(c), size=b.shape[-2:], mode="nearest")
        p1 = self.l1(a) + F.interpolate(p2, size=a.shape[-2:], mode="bilinear",
                                        align_corners=False)
        return F.interpolate(torch.sigmoid(self.head(p1)), size=x.shape[-2:], mode="bilinear",
                             align_corners=False)


def main():
    torch.manual_seed(11)
    here = os.path.join(DYN, "fpn_dynamo_hw")
    buf = io.BytesIO()
    dims = {0: torch.export.Dim("batch", max=2), 2: torch.export.Dim("h", min=32, max=96),
            3: torch.export.Dim("w", min=32, max=96)}
    torch.onnx.export(SizedFpn().eval(), (torch.randn(*SHAPES[0]),), buf, dynamo=True,
                      input_names=["x"], output_names=["y"], dynamic_shapes={"x": dims},
                      external_data=False)
    rng = np.random.default_rng(3)
    gen_util.save_with_sets(onnx.load_from_string(buf.getvalue()), here,
                            [rng.standard_normal(s).astype(np.float32) for s in SHAPES])
    with open(os.path.join(here, "flags"), "w") as f:
        f.write("--dim batch=2 --dim h=32..96 --dim w=32..96\n")
    print("wrote", here)


if __name__ == "__main__":
    main()
