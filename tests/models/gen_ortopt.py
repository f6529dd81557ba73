#!/usr/bin/env python3
"""Models as onnxruntime saves them after its extended graph optimizations.

A model optimized by onnxruntime (SessionOptions.optimized_model_filepath, level
ORT_ENABLE_EXTENDED) and shipped that way holds its contrib operators: FusedConv (a
convolution with its activation), FusedGemm, FusedMatMul with transposes folded in,
transBatchA / transBatchB included. This takes models of this folder (made by
gen_torch.py) and writes their optimized forms beside them as ortx_NAME (model.onnx,
test_data_set_0 with the source's inputs and onnxruntime's outputs of the optimized
model), plus a small MLP with FusedGemm of every activation it fuses.

    python3 tests/models/gen_ortopt.py [OUTDIR]   (default: this folder)

Needs numpy, onnx and onnxruntime (the Makefile's build/venv has them).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else HERE


def optimize(src, dst):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = dst
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def goldens(d, feeds):
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    sd = os.path.join(d, "test_data_set_0")
    os.makedirs(sd, exist_ok=True)
    for i, (k, v) in enumerate(feeds.items()):
        with open(os.path.join(sd, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (o, meta) in enumerate(zip(s.run(None, feeds), s.get_outputs())):
        with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(o, meta.name).SerializeToString())
    ops = sorted({n.op_type for n in onnx.load(os.path.join(d, "model.onnx")).graph.node
                  if n.domain == "com.microsoft"})
    print("wrote", d, ops)


def from_tree(name):
    """ortx_NAME from this folder's NAME and its test_data_set_0 inputs."""
    src = os.path.join(HERE, name)
    d = os.path.join(OUT, "ortx_" + name)
    os.makedirs(d, exist_ok=True)
    optimize(os.path.join(src, "model.onnx"), os.path.join(d, "model.onnx"))
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {}
    for i, meta in enumerate(s.get_inputs()):
        t = onnx.TensorProto()
        with open(os.path.join(src, "test_data_set_0", "input_%d.pb" % i), "rb") as f:
            t.ParseFromString(f.read())
        feeds[meta.name] = numpy_helper.to_array(t)
    goldens(d, feeds)


def mlp():
    """Gemm -> activation pairs that onnxruntime fuses into FusedGemm."""
    rng = np.random.default_rng(3)
    acts = [("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("LeakyRelu", {"alpha": 0.2})]
    nodes, inits, x = [], [], "x"
    for i, (act, attrs) in enumerate(acts):
        w = (rng.standard_normal((16, 16)) * 0.4).astype(np.float32)
        b = (rng.standard_normal(16) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, "w%d" % i), numpy_helper.from_array(b, "b%d" % i)]
        nodes += [helper.make_node("Gemm", [x, "w%d" % i, "b%d" % i], ["g%d" % i], transB=i % 2),
                  helper.make_node(act, ["g%d" % i], ["a%d" % i], **attrs)]
        x = "a%d" % i
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        [4, 16])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    d = os.path.join(OUT, "ortx_mlp")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src.onnx")
    onnx.save(m, src)
    optimize(src, os.path.join(d, "model.onnx"))
    os.remove(src)
    goldens(d, {"x": rng.standard_normal((4, 16)).astype(np.float32)})


if __name__ == "__main__":
    from_tree("cnn_opset9")
    from_tree("audio1d")
    mlp()
