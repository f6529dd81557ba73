#!/usr/bin/env python3
"""Generate the atrous-convolution test model of `make check` (tests/models/atrous).

Dilated convolutions over a small feature map, as DeepLabV3's pyramid has them, some of
whose kernel taps read only zero padding at every output position (the compiler drops
those, passes/convtrim.c) and some not, with fixed-seed weights on a 1 x 16 x 6 x 7 map:
  a  3x3, dilation 6, pads 6: the outer rows of taps read only padding, the columns
     not (the last output column's left tap reads column 0);
  b  3x3, dilation 12, pads 12, bias: every outer tap dead, a 1x1 convolution;
  c  3x3, dilation 4, pads 4: every tap reads the map somewhere, none dropped;
  d  5x3, dilation (3, 5), pads (9, 5, 3, 5): two leading row taps dead, the trailing
     one's padding (3) too short to drop it;
  e  3x3, stride 2, dilation 6, pads 6: dead outer taps with a stride;
  f  depthwise 3x3, dilation 8, pads 8 (group 16), bias;
  g  3x3, dilation 6, no pads, over a Pad by 6 of constant 0.5: its outer taps read only
     that padding, which is not zeros: nothing dropped.
Their outputs concatenated on channels (after global pooling for e). test_data_set_0 = a
random input and onnxruntime's output on it.
Also tests/models-dyn/atrous_hw: x[1, 16, h, w] with h and w symbolic (flags: each 4..10;
data sets 4x5, 7x10, 10x9), where the taps are judged at the bounds: b (dilation 12) and
a depthwise 3x3 of dilation 10, pads 10, lose their outer taps, a (dilation 6) keeps
them.
And tests/models/atrous_band: dilated convolutions over a 1 x 8 x 40 x 36 map, whose
items (a few output rows each, over 32 cores) load one band of rows per vertical tap
instead of every row between the first tap's and the last's (codegen/cg_contract.c,
plan_patch_banded): 3x3 dilation 24 pads 24; 3x3 dilation (21, 3), pads (20, 3, 22,
3); 3x3 stride 2, dilation (22, 2), pads (22, 2); and 5x5 dilation 4, pads 8, with bias,
whose items' rows reach from one tap's to the next (not banded).
Run in build/venv (numpy, onnx, onnxruntime):
build/venv/bin/python tests/models/gen_atrous.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from gen_util import save_with_sets

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(TESTS, "models", "atrous")
HERE_DYN = os.path.join(TESTS, "models-dyn", "atrous_hw")
HERE_BAND = os.path.join(TESTS, "models", "atrous_band")
C, H, W = 16, 6, 7


def conv(rng, inits, x, y, k, pads, dil, strides=(1, 1), group=1, bias=False, ch=C):
    """A Conv node x -> y of ch channels in and out (weights, and bias if asked, into
    inits)."""
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((ch, ch // group) + k) * 0.2).astype(np.float32), y + "_w"))
    ins = [x, y + "_w"]
    if bias:
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(ch) * 0.1).astype(np.float32), y + "_b"))
        ins.append(y + "_b")
    return helper.make_node("Conv", ins, [y], group=group, kernel_shape=list(k),
                            strides=list(strides), pads=list(pads), dilations=list(dil))


def main():
    """Write model.onnx and test_data_set_0."""
    rng = np.random.default_rng(36)
    inits = [numpy_helper.from_array(np.array([0, 0, 6, 6, 0, 0, 6, 6], np.int64), "p6"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [conv(rng, inits, "x", "a", (3, 3), (6, 6, 6, 6), (6, 6)),
             conv(rng, inits, "x", "b", (3, 3), (12, 12, 12, 12), (12, 12), bias=True),
             conv(rng, inits, "x", "c", (3, 3), (4, 4, 4, 4), (4, 4)),
             conv(rng, inits, "x", "d", (5, 3), (9, 5, 3, 5), (3, 5)),
             conv(rng, inits, "x", "e", (3, 3), (6, 6, 6, 6), (6, 6), strides=(2, 2)),
             helper.make_node("GlobalAveragePool", ["e"], ["ep"]),
             helper.make_node("Expand", ["ep", "shape"], ["ee"]),
             conv(rng, inits, "x", "f", (3, 3), (8, 8, 8, 8), (8, 8), group=C, bias=True),
             helper.make_node("Pad", ["x", "p6", "half"], ["xp"]),
             conv(rng, inits, "xp", "g", (3, 3), (0, 0, 0, 0), (6, 6)),
             helper.make_node("Concat", ["a", "b", "c", "d", "ee", "f", "g"], ["y"], axis=1)]
    inits.append(numpy_helper.from_array(np.array([1, C, H, W], np.int64), "shape"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "atrous", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    save_with_sets(model, HERE, [rng.standard_normal((1, C, H, W)).astype(np.float32)])
    inits = []
    nodes = [conv(rng, inits, "x", "a", (3, 3), (6, 6, 6, 6), (6, 6)),
             conv(rng, inits, "x", "b", (3, 3), (12, 12, 12, 12), (12, 12), bias=True),
             conv(rng, inits, "x", "f", (3, 3), (10, 10, 10, 10), (10, 10), group=C),
             helper.make_node("Concat", ["a", "b", "f"], ["y"], axis=1)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, "h", "w"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3 * C, "h", "w"])
    model = helper.make_model(helper.make_graph(nodes, "atrous_hw", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    save_with_sets(model, HERE_DYN, [rng.standard_normal((1, C) + hw).astype(np.float32)
                           for hw in ((4, 5), (7, 10), (10, 9))])
    with open(os.path.join(HERE_DYN, "flags"), "w") as f:
        f.write("--dim h=4..10 --dim w=4..10\n")
    inits = []
    nodes = [conv(rng, inits, "x", "a", (3, 3), (24, 24, 24, 24), (24, 24), ch=8),
             conv(rng, inits, "x", "b", (3, 3), (20, 3, 22, 3), (21, 3), ch=8),
             conv(rng, inits, "x", "c", (3, 3), (22, 2, 22, 2), (22, 2), strides=(2, 2), ch=8),
             helper.make_node("Resize", ["c", "", "scales2"], ["cu"], mode="nearest"),
             conv(rng, inits, "x", "d", (5, 5), (8, 8, 8, 8), (4, 4), bias=True, ch=8),
             helper.make_node("Concat", ["a", "b", "cu", "d"], ["y"], axis=1)]
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales2"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 40, 36])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "atrous_band", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    save_with_sets(model, HERE_BAND, [rng.standard_normal((1, 8, 40, 36)).astype(np.float32)])


if __name__ == "__main__":
    main()
