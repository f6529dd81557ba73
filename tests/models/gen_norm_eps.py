#!/usr/bin/env python3
"""Generate the tiny-epsilon norm test model of `make check` (tests/models/norm_eps).

Three norms with epsilon 1e-12 (BERT / ViT / YOLOS style, below DLFloat16's smallest
normal) over rows of which two are constant, as a zero class token and a constant
detection token make them: LayerNormalization, the ReduceMean / Sub / Pow / Sqrt / Div
form older exporters write, and an RMS norm (x / Sqrt(mean(x^2) + eps)). A constant row
has variance 0, so its normalised values are 0 only when the epsilon survives:
with --precision=fp16 a rounded-away epsilon gave rsqrt(0) = inf and 0 * inf = NaN
(passes/fp16.c, stat_node). test_data_set_0 = a random input and onnxruntime's outputs.
Run in build/venv (numpy, onnx, onnxruntime): build/venv/bin/python tests/models/gen_norm_eps.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm_eps")
B, T, C, EPS = 2, 6, 64, 1e-12


def const(inits, name, arr):
    """Add initializer name = arr (float32 unless integer); returns the name."""
    arr = np.asarray(arr)
    inits.append(numpy_helper.from_array(arr if arr.dtype.kind == "i" else arr.astype(np.float32), name))
    return name


def main():
    """Write model.onnx and test_data_set_0."""
    rng = np.random.default_rng(12)
    inits = []
    tok = np.zeros((B, 2, C), np.float32)
    tok[:, 1, :] = 3.0                      # a zero row and a constant non-zero row
    const(inits, "tok", tok)
    const(inits, "g", rng.uniform(0.5, 1.5, C))
    const(inits, "b", rng.uniform(-0.2, 0.2, C))
    const(inits, "eps", np.array(EPS, np.float32))
    const(inits, "two", np.array(2.0, np.float32))
    nodes = [
        helper.make_node("Concat", ["tok", "x"], ["xc"], axis=1),
        # LayerNormalization (opset 17)
        helper.make_node("LayerNormalization", ["xc", "g", "b"], ["y_ln"], axis=-1, epsilon=EPS),
        # the decomposed form
        helper.make_node("ReduceMean", ["xc"], ["mu"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["xc", "mu"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["nd"]),
        helper.make_node("Mul", ["nd", "g"], ["ndg"]),
        helper.make_node("Add", ["ndg", "b"], ["y_dec"]),
        # RMS norm of the centred rows
        helper.make_node("Mul", ["d", "d"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Reciprocal", ["rms"], ["inv"]),
        helper.make_node("Mul", ["d", "inv"], ["y_rms"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, C])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y_ln", "y_dec", "y_rms")]
    model = helper.make_model(helper.make_graph(nodes, "norm_eps", [x], outs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(HERE, "test_data_set_0"), exist_ok=True)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model, path)
    xv = rng.standard_normal((B, T, C)).astype(np.float32)
    res = ort.InferenceSession(path).run(None, {"x": xv})
    files = [("input_0", numpy_helper.from_array(xv, "x"))]
    files += [(f"output_{i}", numpy_helper.from_array(r, o.name)) for i, (r, o) in enumerate(zip(res, outs))]
    for name, arr in files:
        with open(os.path.join(HERE, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(arr.SerializeToString())


if __name__ == "__main__":
    main()
