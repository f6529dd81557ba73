#!/usr/bin/env python3
"""Generate tests/models-dyn/yolo_hw and yolo5_hw: an anchor-free detector's head in miniature (the
YOLOv8 head that ultralytics exports and packages such as NudeNet ship), exported by
the TorchScript exporter with a dynamic batch, height and width, for the
dynamic-model tests of `make check`.

Five 3x3 stride-2 convolutions give feature maps at strides 8, 16 and 32 (sizes
ceil(h / 8), ceil(h / 16), ceil(h / 32)); per map a box branch (4 x 16 distribution
bins) and a class branch, concatenated, flattened to [b, 67, h_s * w_s] and the three
concatenated along that axis: an axis of three pieces of two symbolic factors each
(passes/symdim.c prop_concat). Then the distribution focal loss's softmax and 1x1
convolution over the bins, the anchor points computed from the maps' shapes (Range,
meshgrid; folded at the bound, laid out as the pieces are) and the strides, and the
boxes: output [b, 7, anchors], compacted at the output to the actual anchors of each
map one after the other (symdim_out.c). yolo5_hw: an anchor-based head (YOLOv5's
Detect, exported dynamic), its cell grids constants folded at the bound along the maps'
derived axes, [b, 3 * h8 * w8 + 3 * h16 * w16, 7]. Data sets at 1x3x64x64, 2x3x96x64
and 1x3x72x100 (onnxruntime's outputs); flags: batch up to 2, height and width 64..128.
Needs torch, onnx, onnxruntime and numpy:

    python3 tests/models-dyn/gen_yolo.py
"""
import torch
import torch.nn as nn

import gen_unet  # tests/models-dyn/gen_unet.py (beside this file): write

SHAPES = ((1, 3, 64, 64), (2, 3, 96, 64), (1, 3, 72, 100))


def make_anchors(feats, strides, offset=0.5):
    """Anchor points (x, y) of every cell of every map, and each one's stride."""
    points, stride_col = [], []
    for f, stride in zip(feats, strides):
        _, _, h, w = f.shape
        sx = torch.arange(end=w, dtype=torch.float32) + offset
        sy = torch.arange(end=h, dtype=torch.float32) + offset
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_col.append(torch.full((h * w, 1), stride, dtype=torch.float32))
    return torch.cat(points), torch.cat(stride_col)


class Dfl(nn.Module):
    """The expected bin of a softmax over 16 bins, by a fixed 1x1 convolution."""

    def __init__(self, bins=16):
        super().__init__()
        self.conv = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(bins, dtype=torch.float).view(1, bins, 1, 1)
        self.bins = bins

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.bins, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class Yolo(nn.Module):
    """Backbone 3 -> 8 -> 16 -> 16 channels at strides 8, 16, 32; 3 classes."""

    def __init__(self, nc=3, bins=16):
        super().__init__()
        self.nc, self.bins, self.no = nc, bins, nc + 4 * bins
        self.s1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 8, 3, 2, 1),
                                nn.SiLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU())
        self.s2 = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.SiLU())
        self.s3 = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.SiLU())
        self.box = nn.ModuleList(nn.Conv2d(c, 4 * bins, 1) for c in (8, 16, 16))
        self.cls = nn.ModuleList(nn.Conv2d(c, nc, 1) for c in (8, 16, 16))
        self.dfl = Dfl(bins)
        self.stride = [8, 16, 32]

    def forward(self, x):
        p3 = self.s1(x)
        p4 = self.s2(p3)
        p5 = self.s3(p4)
        xs = [torch.cat((self.box[i](p), self.cls[i](p)), 1) for i, p in enumerate((p3, p4, p5))]
        x_cat = torch.cat([xi.view(xs[0].shape[0], self.no, -1) for xi in xs], 2)
        anchors, strides = (t.transpose(0, 1) for t in make_anchors(xs, self.stride))
        box, cls = x_cat.split((self.bins * 4, self.nc), 1)
        lt, rb = self.dfl(box).chunk(2, 1)
        a = anchors.unsqueeze(0)
        x1y1, x2y2 = a - lt, a + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)


class Yolo5(nn.Module):
    """An anchor-based head (YOLOv5's Detect, dynamic): per map of strides 8 and 16, 3
    anchors x (4 box + 1 objectness + 2 classes), the cell grid and anchor sizes made
    from the map's shape (Range, meshgrid: constants folded at the bound along the
    maps' derived axes), boxes decoded, [b, 3 * h8 * w8 + 3 * h16 * w16, 7]."""

    def __init__(self, nc=2, na=3):
        super().__init__()
        self.na, self.no = na, nc + 5
        self.b1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 8, 3, 2, 1),
                                nn.SiLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU())
        self.b2 = nn.Sequential(nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU())
        self.m = nn.ModuleList(nn.Conv2d(8, na * self.no, 1) for _ in range(2))
        self.stride = [8, 16]
        self.anchors = torch.tensor([[[10, 13], [16, 30], [33, 23]],
                                     [[30, 61], [62, 45], [59, 119]]], dtype=torch.float32)

    def forward(self, x):
        p = [self.b1(x)]
        p.append(self.b2(p[0]))
        z = []
        for i in range(2):
            y = self.m[i](p[i])
            bs, _, ny, nx = y.shape
            y = y.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32),
                                    torch.arange(nx, dtype=torch.float32), indexing="ij")
            grid = torch.stack((xv, yv), 2).expand(1, self.na, ny, nx, 2) - 0.5
            ag = (self.anchors[i] * self.stride[i]).view(1, self.na, 1, 1, 2)
            xy, wh, conf = y.sigmoid().split((2, 2, self.no - 4), 4)
            xy = (xy * 2 + grid) * self.stride[i]
            wh = (wh * 2) ** 2 * ag.expand(1, self.na, ny, nx, 2)
            z.append(torch.cat((xy, wh, conf), 4).view(bs, self.na * nx * ny, self.no))
        return torch.cat(z, 1)


def write(name, model, out_axes):
    """Export model to tests/models-dyn/name (gen_unet.write) at SHAPES, height and width 64..128."""
    gen_unet.write(name, model, SHAPES, {0: "batch", 2: "height", 3: "width"}, out_axes,
                   "--dim batch=2 --dim height=64..128 --dim width=64..128")


def main():
    torch.manual_seed(5)
    write("yolo_hw", Yolo(), {0: "batch", 2: "anchors"})
    write("yolo5_hw", Yolo5(), {0: "batch", 1: "anchors"})


if __name__ == "__main__":
    main()
