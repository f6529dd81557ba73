#!/usr/bin/env python3
"""Generate tests/models-dyn/convseq: a text-line recogniser in miniature, whose output
length is derived from a symbolic input width by convolution windows (as PP-OCR's
recognisers and CTC heads have it), for the dynamic-model tests of `make check`.

x f32[1, 1, 8, width] -> Conv 3x3 stride 2 pad 1 -> Relu -> Conv 3x3 strides (2, 1)
pad 1 -> ReduceMean over height -> [1, 16, w'] -> Transpose [1, w', 16] -> MatMul
[16, 10] -> logits [1, w', 10]; outputs Softmax over the classes and Softmax over the
positions (a reduction along the derived axis: the padding past w' must not reach it).
w' = (width + 2 - 3) / 2 + 1. Data sets at widths 9, 23 and 64 (onnxruntime's outputs);
flags: --dim width=9..64. Also tests/models-dyn/convbatch: the same with a fixed batch of
3 lines (a batch that is not symbolic in a bundle whose width is: its convolutions are
divided over the whole batch, passes/divide.c conv_per_image). Run in build/venv (numpy,
onnx, onnxruntime):
build/venv/bin/python tests/models-dyn/gen_convseq.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DIR = os.path.dirname(os.path.abspath(__file__))
WIDTHS = (9, 23, 64)


def main():
    """Write both models."""
    write_model("convseq", 1)
    write_model("convbatch", 3)


def write_model(name, batch):
    """Write DIR/name: model.onnx for `batch` lines, flags and one test_data_set_K per
    width."""
    here = os.path.join(DIR, name)
    rng = np.random.default_rng(11)

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)
    inits = [init("w1", (8, 1, 3, 3), 0.5), init("b1", (8,), 0.1),
             init("w2", (16, 8, 3, 3), 0.2), init("b2", (16,), 0.1),
             init("wc", (16, 10), 0.3),
             numpy_helper.from_array(np.array([2], np.int64), "hax")]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3],
                         strides=[2, 1], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceMean", ["c2", "hax"], ["m"], keepdims=0),
        helper.make_node("Transpose", ["m"], ["t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "wc"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("Softmax", ["logits"], ["over_positions"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 8, "width"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, None, 10]),
         helper.make_tensor_value_info("over_positions", TensorProto.FLOAT,
                                       [batch, None, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(here, exist_ok=True)
    path = os.path.join(here, "model.onnx")
    onnx.save(model, path)
    with open(os.path.join(here, "flags"), "w") as f:
        f.write("--dim width=9..64\n")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, w in enumerate(WIDTHS):
        d = os.path.join(here, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        x = rng.standard_normal((batch, 1, 8, w)).astype(np.float32)
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        for i, (o, meta) in enumerate(zip(sess.run(None, {"x": x}), sess.get_outputs())):
            with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(o, meta.name).SerializeToString())


if __name__ == "__main__":
    main()
