#!/usr/bin/env python3
"""Generate tests/models/attn_long_f32, the float attention model of the int8 tests, and
its calibration sets tests/calib/attn_long_f32/set_K.

One attention head over 72 positions (hidden size 16): Q, K and V projections, scores
Q.K^T, Softmax, the weighted sum P.V (a product of two activations 72 deep, which
--precision=int8 quantizes) named "weighted_sum", and an output projection. Fixed-seed
weights; test_data_set_0 = a random input and onnxruntime's float32 output on it; the
calibration sets are random inputs of other seeds. The intermediate shapes are recorded
(value_info), as exporters do: the int8 pass reads a product's depth from them. Run in build/venv (numpy, onnx,
onnxruntime):  build/venv/bin/python tests/models/gen_attn_f32.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from gen_qdq import attn

HERE = os.path.dirname(os.path.abspath(__file__))
NAME, SEQ, DIM = "attn_long_f32", 72, 16      # DIM: gen_qdq.attn's hidden size


def model():
    """The float attention graph of gen_qdq.attn over SEQ positions, its P.V named."""
    graph, _ = attn(np.random.default_rng(72), seq=SEQ)
    graph.name = NAME
    for n in graph.node:
        if list(n.input) == ["p", "v"]:
            n.name = "weighted_sum"
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)   # the depth of P.V, as exporters record it


def save_input(folder, seed):
    """A random input (seed) as folder/input_0.pb; its value."""
    os.makedirs(folder, exist_ok=True)
    x = np.random.default_rng(seed).standard_normal([1, SEQ, DIM]).astype(np.float32)
    onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(folder, "input_0.pb"))
    return x


if __name__ == "__main__":
    d = os.path.join(HERE, NAME)
    os.makedirs(d, exist_ok=True)
    onnx.save(model(), os.path.join(d, "model.onnx"))
    ds = os.path.join(d, "test_data_set_0")
    x = save_input(ds, 7)
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})
    onnx.save_tensor(numpy_helper.from_array(y, "y"), os.path.join(ds, "output_0.pb"))
    for s in range(4):
        save_input(os.path.join(HERE, "..", "calib", NAME, "set_%d" % s), 100 + s)
