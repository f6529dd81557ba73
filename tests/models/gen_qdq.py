#!/usr/bin/env python3
"""Generate the small QDQ test models of `make check` (tests/models/qdq_*).

Each is a float model built here with fixed-seed weights, quantized by onnxruntime's
quantize_static (QDQ format, per-channel symmetric int8 weights; activations int8 with
a zero point for qdq_cnn and qdq_qk, uint8 for qdq_attn, qdq_attn_long and qdq_attn_deep) on a calibration set of random inputs
(seeds other than the test input's), with test_data_set_0 = a further random input and
onnxruntime's output of the QDQ model on it, run as the graph says (graph optimizations
off: its fused QLinear* kernels round differently, by up to two steps). Run in build/venv (numpy, onnx,
onnxruntime):  build/venv/bin/python tests/models/gen_qdq.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))


def init(rng, name, shape, scale=0.3):
    """A float32 initializer of normal weights."""
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def cnn(rng):
    """Conv 3x3 (pad) + Relu, strided 1x1 conv, residual Add, MaxPool, pooling, Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w3", "b3"], ["c3"], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [init(rng, "w1", [8, 3, 3, 3]), init(rng, "b1", [8], 0.1),
             init(rng, "w2", [8, 8, 3, 3], 0.15), init(rng, "b2", [8], 0.1),
             init(rng, "w3", [16, 8, 1, 1]), init(rng, "b3", [16], 0.1),
             init(rng, "wf", [10, 16]), init(rng, "bf", [10], 0.1)]
    g = helper.make_graph(nodes, "qdq_cnn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return g, {"x": [1, 3, 12, 12]}


def attn(rng, seq=6):
    """Projections, scores of two activations, Softmax, weighted sum, output MatMul."""
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["o"]),
        helper.make_node("MatMul", ["o", "wo"], ["y"]),
    ]
    inits = [init(rng, n, [16, 16]) for n in ("wq", "wk", "wv", "wo")]
    g = helper.make_graph(nodes, "qdq_attn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, 16])], inits)
    return g, {"x": [1, seq, 16]}


def attn_long(rng):
    """attn over 72 positions: the weighted sum's depth (72) is that of BERT's attention
    (over 64, more than a half stick of int8 per row)."""
    return attn(rng, seq=72)


def attn_deep(rng):
    """attn over 320 positions: the weighted sum's depth (320) is split into chunks when
    the scratchpad is small (part_quant.sh compiles it for a 16 KiB one), so the row and
    column sums its zero points need accumulate over the chunks like the product."""
    return attn(rng, seq=320)


def qk(rng, seq=8, heads=2, dh=16):
    """BERT-like attention: Q, K, V projections of one input, each a MatMul and the Add of
    a bias of zeros (as exported BERT models have; the QDQ pair after the Add then
    requantizes with the MatMul's own parameters), heads split by Reshape / Transpose,
    scaled scores, Softmax, weighted sum, heads merged."""
    h = heads * dh
    nodes = []
    for p in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", "w" + p], [p + "m"]),
                  helper.make_node("Add", [p + "m", "b" + p], [p + "b"]),
                  helper.make_node("Reshape", [p + "b", "split"], [p + "r"])]
    nodes += [
        helper.make_node("Transpose", ["qr"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["kr"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["vr"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "merge"], ["y"]),
    ]
    inits = [init(rng, "w" + p, [h, h]) for p in ("q", "k", "v")]
    inits += [numpy_helper.from_array(np.zeros([h], np.float32), "b" + p) for p in ("q", "k", "v")]
    inits += [numpy_helper.from_array(np.array([1, seq, heads, dh], np.int64), "split"),
              numpy_helper.from_array(np.array([1, seq, h], np.int64), "merge"),
              numpy_helper.from_array(np.array(dh ** -0.5, np.float32), "scale")]
    g = helper.make_graph(nodes, "qdq_qk",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, h])], inits)
    return g, {"x": [1, seq, h]}


class Reader(CalibrationDataReader):
    """Eight random inputs (seeds 100..107)."""

    def __init__(self, shapes):
        self.items = iter([{n: np.random.default_rng(100 + i).standard_normal(s).astype(np.float32)
                            for n, s in shapes.items()} for i in range(8)])

    def get_next(self):
        return next(self.items, None)


def make(name, build, act):
    """Write HERE/name/model.onnx and its test_data_set_0."""
    graph, shapes = build(np.random.default_rng(len(name)))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    d = os.path.join(HERE, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    fp = os.path.join(d, "float.tmp.onnx")
    onnx.save(model, fp)
    quantize_static(fp, os.path.join(d, "model.onnx"), Reader(shapes),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=act, weight_type=QuantType.QInt8)
    os.remove(fp)
    feeds = {n: np.random.default_rng(7).standard_normal(s).astype(np.float32)
             for n, s in shapes.items()}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for k, (n, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(ds, "input_%d.pb" % k))
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(ds, "output_%d.pb" % k))


if __name__ == "__main__":
    make("qdq_cnn", cnn, QuantType.QInt8)
    make("qdq_attn", attn, QuantType.QUInt8)
    make("qdq_attn_long", attn_long, QuantType.QUInt8)
    make("qdq_attn_deep", attn_deep, QuantType.QUInt8)
    make("qdq_qk", qk, QuantType.QInt8)
