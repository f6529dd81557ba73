#!/usr/bin/env python3
"""Small graphs of onnxruntime's contrib operators (domain com.microsoft), with goldens.

onnxruntime's optimizers and quantizer write these into the models they save, and
published models ship them: fused GELUs, FusedMatMul and skip layer norms (its
transformer optimizer), the RMS norms of T5 and Llama exports, and the QOperator
quantization format (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat, QGemm).

    python3 tests/models/gen_msft.py [OUTDIR]   (default: this folder)

writes OUTDIR/msft_transformer and OUTDIR/msft_qoperator (model.onnx and
test_data_set_0, outputs computed by onnxruntime's CPU provider). Needs numpy, onnx and
onnxruntime (the Makefile's build/venv has them). Weights and inputs are seeded.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(2024)
MS = "com.microsoft"


def f32(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def save(name, nodes, inputs, outputs, inits, feeds, opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    for i, (k, v) in enumerate(feeds.items()):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (o, meta) in enumerate(zip(s.run(None, feeds), s.get_outputs())):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(o, meta.name).SerializeToString())
    print("wrote", d)


def transformer():
    """A layer as the transformer optimizer leaves it, plus the T5/Llama norms."""
    B, S, H, F = 2, 8, 32, 64
    n = [
        helper.make_node("FusedMatMul", ["x", "wq"], ["q"], domain=MS, alpha=0.25, transB=1),
        helper.make_node("FusedMatMul", ["x", "x"], ["scores"], domain=MS, alpha=0.125,
                         transB=1),
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("FusedMatMul", ["q", "p"], ["ctx_t"], domain=MS, transA=1),
        helper.make_node("Transpose", ["ctx_t"], ["ctx"], perm=[0, 2, 1]),
        helper.make_node("SkipLayerNormalization", ["ctx", "x", "g1", "b1", "bias1"],
                         ["ln1", "", "", "sum1"], domain=MS, epsilon=1e-5),
        helper.make_node("MatMul", ["ln1", "w1"], ["h1"]),
        helper.make_node("BiasGelu", ["h1", "c1"], ["a1"], domain=MS),
        helper.make_node("FastGelu", ["h1", "c1"], ["a2"], domain=MS),
        helper.make_node("FastGelu", ["h1"], ["a3"], domain=MS),
        helper.make_node("Gelu", ["h1"], ["a4"], domain=MS),
        helper.make_node("QuickGelu", ["h1"], ["a5"], domain=MS, alpha=1.5),
        helper.make_node("Sum", ["a1", "a2", "a3", "a4", "a5"], ["a"]),
        helper.make_node("MatMul", ["a", "w2"], ["h2"]),
        helper.make_node("SkipSimplifiedLayerNormalization", ["h2", "sum1", "g2", "bias2"],
                         ["ln2", "", "", "sum2"], domain=MS, epsilon=1e-6),
        helper.make_node("SimplifiedLayerNormalization", ["sum2", "g3"], ["ln3"], axis=-1,
                         epsilon=1e-6),
        helper.make_node("LayerNormalization", ["ln2", "g1", "b1"], ["ln4"], axis=-1,
                         epsilon=1e-5),
        helper.make_node("Add", ["ln3", "ln4"], ["y"]),
    ]
    inits = [init("wq", f32(H, H)), init("g1", 1 + f32(H, scale=0.1)), init("b1", f32(H)),
             init("bias1", f32(H)), init("w1", f32(H, F, scale=0.2)), init("c1", f32(F)),
             init("w2", f32(F, H, scale=0.2)), init("g2", 1 + f32(H, scale=0.1)),
             init("bias2", f32(H)), init("g3", 1 + f32(H, scale=0.1))]
    x = f32(B, S, H, scale=1.0)
    save("msft_transformer", n, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, H])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
          helper.make_tensor_value_info("sum2", TensorProto.FLOAT, None)], inits, {"x": x})


def qoperator():
    """A small CNN in the QOperator format, as onnxruntime's static quantizer writes it."""
    u8 = lambda v: np.array(v, dtype=np.uint8)
    sc = lambda v: np.array(v, dtype=np.float32)
    w1 = RNG.integers(-60, 60, (8, 3, 3, 3), dtype=np.int8)
    wg = RNG.integers(-60, 60, (5, 16), dtype=np.int8)          # QGemm B, transposed
    n = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w1", "w1s", "w1z", "cs", "cz", "cb"],
                         ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("QLinearSigmoid", ["c", "cs", "cz", "ss", "sz"], ["s"], domain=MS),
        helper.make_node("QLinearMul", ["c", "cs", "cz", "s", "ss", "sz", "ms", "mz"], ["m"],
                         domain=MS),
        helper.make_node("QLinearAdd", ["m", "ms", "mz", "c", "cs", "cz", "as", "az"], ["a"],
                         domain=MS),
        helper.make_node("QLinearLeakyRelu", ["a", "as", "az", "ls", "lz"], ["l"], domain=MS,
                         alpha=0.2),
        helper.make_node("QLinearAveragePool", ["l", "ls", "lz", "ps", "pz"], ["p"], domain=MS,
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Transpose", ["p"], ["p_nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("QLinearAveragePool", ["p_nhwc", "ps", "pz", "ps", "pz"], ["p2_nhwc"],
                         domain=MS, kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                         count_include_pad=0, channels_last=1),
        helper.make_node("Transpose", ["p2_nhwc"], ["p2"], perm=[0, 3, 1, 2]),
        helper.make_node("QLinearConcat", ["ks", "kz", "p", "ps", "pz", "p2", "ps", "pz"], ["k"],
                         domain=MS, axis=1),
        helper.make_node("QLinearGlobalAveragePool", ["k", "ks", "kz", "gs", "gz"], ["gp"],
                         domain=MS, channels_last=0),
        helper.make_node("Flatten", ["gp"], ["f"]),
        helper.make_node("QGemm", ["f", "gs", "gz", "wg", "wgs", "wgz", "bg", "ys", "yz"], ["yq"],
                         domain=MS, transB=1, alpha=1.0),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
        helper.make_node("QGemm", ["f", "gs", "gz", "wg", "wgs", "wgz", "bg"], ["yf"], domain=MS,
                         transB=1, alpha=0.5),
    ]
    inits = [init("xs", sc(0.02)), init("xz", u8(128)), init("w1", w1),
             init("w1s", sc([0.004 + 0.001 * i for i in range(8)])),
             init("w1z", np.zeros(8, dtype=np.int8)), init("cs", sc(0.05)), init("cz", u8(120)),
             init("cb", RNG.integers(-500, 500, 8, dtype=np.int32)), init("ss", sc(1 / 255)),
             init("sz", u8(0)), init("ms", sc(0.03)), init("mz", u8(110)), init("as", sc(0.07)),
             init("az", u8(100)), init("ls", sc(0.06)), init("lz", u8(90)), init("ps", sc(0.05)),
             init("pz", u8(95)), init("ks", sc(0.05)), init("kz", u8(95)), init("gs", sc(0.04)),
             init("gz", u8(100)), init("wg", wg),
             init("wgs", sc([0.01 + 0.002 * i for i in range(5)])),
             init("wgz", np.zeros(5, dtype=np.int8)),
             init("bg", RNG.integers(-300, 300, 5, dtype=np.int32)), init("ys", sc(0.1)),
             init("yz", u8(128))]
    x = f32(2, 3, 12, 12, scale=1.0)
    save("msft_qoperator", n, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 12, 12])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
          helper.make_tensor_value_info("yf", TensorProto.FLOAT, None)], inits, {"x": x})


if __name__ == "__main__":
    transformer()
    qoperator()
