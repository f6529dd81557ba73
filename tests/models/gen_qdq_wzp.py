#!/usr/bin/env python3
"""Generate tests/models/qdq_cnn_wzp: tests/models/qdq_cnn (gen_qdq.py) with asymmetric
int8 weights, a zero point per output channel of its first convolution (1, -2, 0, 3,
...), as other quantizers write them. Its input's QuantizeLinear / DequantizeLinear
pair then feeds a convolution whose decomposition subtracts the same zero point from
the dequantized input; the fuser's requantization fold (passes/requant.c) must keep
that subtraction, whose result another kernel reads (it removed it, leaving that
kernel reading a value no kernel stored: an internal error found by make fuzz).
test_data_set_0 = qdq_cnn's input and onnxruntime's output (graph optimizations off,
as gen_qdq.py). Run in build/venv (numpy, onnx, onnxruntime):
build/venv/bin/python tests/models/gen_qdq_wzp.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    """Write qdq_cnn_wzp: model.onnx and test_data_set_0."""
    model = onnx.load(os.path.join(HERE, "qdq_cnn", "model.onnx"))
    for i, init in enumerate(model.graph.initializer):
        if init.name == "w1_zero_point":
            zp = np.array([1, -2, 0, 3, -1, 2, 0, -3], np.int8)[:init.dims[0]]
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(zp, init.name))
    out = os.path.join(HERE, "qdq_cnn_wzp")
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    path = os.path.join(out, "model.onnx")
    onnx.save(model, path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    src = os.path.join(HERE, "qdq_cnn", "test_data_set_0", "input_0.pb")
    x = numpy_helper.to_array(onnx.load_tensor(src))
    name = sess.get_inputs()[0].name
    with open(os.path.join(out, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, name).SerializeToString())
    for k, (o, meta) in enumerate(zip(sess.run(None, {name: x}), sess.get_outputs())):
        with open(os.path.join(out, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(o, meta.name).SerializeToString())


if __name__ == "__main__":
    main()
