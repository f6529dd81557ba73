#!/usr/bin/env python3
"""Generate the depthwise-convolution test model of `make check` (tests/models/dwconv).

A chain of depthwise convolutions (group == channels) of different geometries, with
fixed-seed weights: 3x3 stride 1 with bias and Clip(0, 6), 3x3 stride 2 with asymmetric
padding, 5x5, 3x3 with dilation 2 and strides (1, 2); a batch of 2 and odd sizes, so that
work items have blocks of channels and rows of several lengths (the compiler's
depthwise form, codegen/cg_contract.c). test_data_set_0 = a random input and
onnxruntime's output on it. Run in build/venv (numpy, onnx, onnxruntime):
build/venv/bin/python tests/models/gen_dwconv.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dwconv")
C = 64


def dw(rng, inits, x, y, k, strides, pads, dil, bias):
    """A depthwise Conv node x -> y (its weights, and bias if asked, into inits)."""
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((C, 1) + k) * 0.3).astype(np.float32), y + "_w"))
    ins = [x, y + "_w"]
    if bias:
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(C) * 0.1).astype(np.float32), y + "_b"))
        ins.append(y + "_b")
    return helper.make_node("Conv", ins, [y], group=C, kernel_shape=list(k),
                            strides=list(strides), pads=list(pads), dilations=list(dil))


def main():
    """Write model.onnx and test_data_set_0."""
    rng = np.random.default_rng(10)
    inits = [numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [dw(rng, inits, "x", "a", (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True),
             helper.make_node("Clip", ["a", "lo", "hi"], ["a6"]),
             dw(rng, inits, "a6", "b", (3, 3), (2, 2), (0, 0, 1, 1), (1, 1), False),
             dw(rng, inits, "b", "c", (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), True),
             dw(rng, inits, "c", "y", (3, 3), (1, 2), (2, 2, 2, 2), (2, 2), True)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, 15, 13])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "dwconv", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(os.path.join(HERE, "test_data_set_0"), exist_ok=True)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model, path)
    xv = rng.standard_normal((2, C, 15, 13)).astype(np.float32)
    out = ort.InferenceSession(path).run(None, {"x": xv})[0]
    for name, arr in (("input_0", numpy_helper.from_array(xv, "x")),
                      ("output_0", numpy_helper.from_array(out, "y"))):
        with open(os.path.join(HERE, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(arr.SerializeToString())


if __name__ == "__main__":
    main()
