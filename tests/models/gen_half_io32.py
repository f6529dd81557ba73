#!/usr/bin/env python3
"""Generate the half-precision model with a float32 interface of `make check`
(tests/models/half_io32).

What float16 converters write when they keep a model's inputs and outputs in float32
(onnxconverter-common's keep_io_types, published "fp16" models): the input cast to
float16, a small MLP and a layer norm computed in float16 with float16 weights, and two
outputs cast back to float32 (one through a Reshape), beside a third output that is a
float16 constant cast to float32 (exact: it keeps the float32 check). spyrun --check
judges the first two by the float16 metrics (spyrec records them in the bundle's META,
cli/spyrec_halfout.c): their values carry half precision whatever the file's dtype, and
no implementation agrees with onnxruntime's float16 rounding to the float32 tolerance.
test_data_set_0 = a random input and onnxruntime's outputs.
Run in build/venv (numpy, onnx, onnxruntime): build/venv/bin/python tests/models/gen_half_io32.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "half_io32")
B, C, H = 4, 32, 64


def main():
    """Write model.onnx and test_data_set_0."""
    rng = np.random.default_rng(16)
    h16 = lambda a: np.asarray(a, np.float16)
    inits = [
        numpy_helper.from_array(h16(rng.standard_normal((C, H)) * 0.3), "w1"),
        numpy_helper.from_array(h16(rng.standard_normal(H) * 0.1), "b1"),
        numpy_helper.from_array(h16(rng.standard_normal((H, C)) * 0.3), "w2"),
        numpy_helper.from_array(h16(rng.uniform(0.5, 1.5, C)), "g"),
        numpy_helper.from_array(h16(rng.uniform(-0.2, 0.2, C)), "b"),
        numpy_helper.from_array(h16(rng.standard_normal(C)), "table"),
        numpy_helper.from_array(np.array([B, 2, C // 2], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.FLOAT16),
        helper.make_node("MatMul", ["x16", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
        helper.make_node("Add", ["h3", "x16"], ["h4"]),
        helper.make_node("LayerNormalization", ["h4", "g", "b"], ["h5"], axis=-1, epsilon=1e-5),
        helper.make_node("Cast", ["h5"], ["y"], to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["h3", "shape"], ["h3r"]),
        helper.make_node("Cast", ["h3r"], ["z"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["table"], ["t"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "half_io32", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, C])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, C]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [B, 2, C // 2]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [C])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="gen_half_io32")
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(HERE, "test_data_set_0"), exist_ok=True)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model, path)
    x = rng.standard_normal((B, C)).astype(np.float32)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, {"x": x})
    d = os.path.join(HERE, "test_data_set_0")
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    for i, (o, meta) in enumerate(zip(outs, sess.get_outputs())):
        with open(os.path.join(d, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(o, meta.name).SerializeToString())


if __name__ == "__main__":
    main()
