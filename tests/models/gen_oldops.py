#!/usr/bin/env python3
"""A model of the old operator sets the ONNX model zoo's first models use (opset 5):
ImageScaler (an experimental operator of opsets 1 to 9, in converted Caffe and CoreML
models) and BatchNormalization before version 6 (consumed_inputs, is_test). onnxruntime
runs opset 7 and later only, so the golden is computed here with numpy.

    python3 tests/models/gen_oldops.py [OUTDIR]   (default: this folder)

writes OUTDIR/old_opset5 (model.onnx, test_data_set_0). Needs numpy and onnx.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    scale, bias = 0.5, np.array([1.0, -2.0, 0.25], np.float32)
    g, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.1, 0.2, 0.3], np.float32)
    mean, var = np.array([0.5, 0.0, -1.0], np.float32), np.array([1.0, 2.0, 0.5], np.float32)
    nodes = [helper.make_node("ImageScaler", ["x"], ["s"], scale=scale, bias=bias.tolist()),
             helper.make_node("BatchNormalization", ["s", "g", "b", "m", "v"], ["y"],
                              epsilon=1e-5, is_test=1, consumed_inputs=[0, 0, 0, 1, 1])]
    inits = [numpy_helper.from_array(a, n) for a, n in ((g, "g"), (b, "b"), (mean, "m"),
                                                         (var, "v"))]
    graph = helper.make_graph(nodes, "old_opset5",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 5)])
    m.ir_version = 3
    c = lambda a: a.reshape(1, 3, 1, 1)
    s = x * scale + c(bias)
    y = ((s - c(mean)) / np.sqrt(c(var) + 1e-5) * c(g) + c(b)).astype(np.float32)
    d = os.path.join(OUT, "old_opset5")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for name, a, f in (("x", x, "input_0.pb"), ("y", y, "output_0.pb")):
        with open(os.path.join(d, "test_data_set_0", f), "wb") as fh:
            fh.write(numpy_helper.from_array(a, name).SerializeToString())
    print("wrote", d)


if __name__ == "__main__":
    main()
