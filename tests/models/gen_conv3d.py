#!/usr/bin/env python3
"""Generate the 3-d convolution test model of `make check` (tests/models/conv3d).

A video stem as torchvision's r3d_18 has it: Conv 3x7x7, stride (1, 2, 2), pads (1, 3,
3), 3 -> 8 channels with bias, then Relu, over x[1, 3, 2, 112, 112]. An item of one
output frame row [56 x 56 pixels] takes 147 taps x 3136 pixels of windows (1.8 MB at one
input channel), more than the scratchpad: the tiler splits the frame's rows
(passes/tile.c shrink_inner). test_data_set_0 = a random input and onnxruntime's output
on it. Run in build/venv (numpy, onnx, onnxruntime):
build/venv/bin/python tests/models/gen_conv3d.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from gen_util import save_with_sets

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv3d")


def main():
    """Write model.onnx and test_data_set_0."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(
                 (rng.standard_normal((8, 3, 3, 7, 7)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 7, 7],
                              strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3]),
             helper.make_node("Relu", ["c"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 112, 112])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "conv3d", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    save_with_sets(model, HERE, [rng.standard_normal((1, 3, 2, 112, 112)).astype(np.float32)])

if __name__ == "__main__":
    main()
