#!/usr/bin/env python3
"""Small graphs of onnxruntime's contrib operators (domain com.microsoft), with goldens.

onnxruntime's optimizers and quantizer write these into the models they save, and
published models ship them: fused GELUs, FusedMatMul and skip layer norms (its
transformer optimizer), the RMS norms of T5 and Llama exports, and the QOperator
quantization format (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat, QGemm).

    python3 tests/models/gen_msft.py [OUTDIR]   (default: this folder)

writes OUTDIR/msft_transformer, OUTDIR/msft_qoperator and OUTDIR/msft_qmatmul
(DynamicQuantizeMatMul, MatMulIntegerToFloat, MatMulNBits, 16-bit QuantizeLinear and
DequantizeLinear of the domain), OUTDIR/msft_bert_fused (EmbedLayerNormalization,
Attention), OUTDIR/msft_mha_rotary (RotaryEmbedding, MultiHeadAttention) and
OUTDIR/msft_dqlstm (DynamicQuantizeLSTM) (model.onnx and
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


def pack_bits(q, bits):
    """Unsigned values q (last axis) packed low bits first into bytes."""
    flat = q.reshape(-1, q.shape[-1]).astype(np.uint32)
    nbytes = (q.shape[-1] * bits + 7) // 8
    out = np.zeros((flat.shape[0], nbytes), dtype=np.uint8)
    for i in range(q.shape[-1]):
        bit = i * bits
        out[:, bit // 8] |= ((flat[:, i] << (bit % 8)) & 0xFF).astype(np.uint8)
        if bit % 8 + bits > 8:
            out[:, bit // 8 + 1] |= (flat[:, i] >> (8 - bit % 8)).astype(np.uint8)
    return out.reshape(q.shape[:-1] + (nbytes,))


def qmatmul():
    """Dynamic quantization as onnxruntime's optimizer fuses it, 4-bit weights (MatMulNBits)
    as LLM exports ship them, and 16-bit QDQ of the com.microsoft domain."""
    K, N, M = 64, 24, 16
    b8 = RNG.integers(-100, 100, (K, N), dtype=np.int8)
    bu = RNG.integers(0, 255, (K, M), dtype=np.uint8)
    nbits = []
    for name, bs, zp in (("nb32", 32, True), ("nb16", 16, False)):
        nb = K // bs
        q = RNG.integers(0, 16, (N, nb, bs), dtype=np.uint8)
        z = RNG.integers(0, 16, (N, nb), dtype=np.uint8)
        nbits.append((name, bs, pack_bits(q, 4), (RNG.random((N, nb)) * 0.05 + 0.01).astype(
            np.float32).reshape(-1), pack_bits(z, 4).reshape(-1) if zp else None))
    n = [
        helper.make_node("DynamicQuantizeMatMul", ["x", "b8", "b8s", "b8z", "bias"], ["y1"],
                         domain=MS),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulIntegerToFloat", ["xq", "bu", "xs", "bus", "xz", "buz", "biasm"],
                         ["y2"], domain=MS),
        helper.make_node("QuantizeLinear", ["x", "s16", "z16"], ["x16"], domain=MS),
        helper.make_node("DequantizeLinear", ["x16", "s16", "z16"], ["y5"], domain=MS),
    ]
    inits = [init("b8", b8), init("b8s", (RNG.random(N) * 0.01 + 0.001).astype(np.float32)),
             init("b8z", np.zeros(N, dtype=np.int8)), init("bias", f32(N)), init("bu", bu),
             init("bus", np.array(0.004, dtype=np.float32)), init("buz", np.array(127, np.uint8)),
             init("biasm", f32(M)), init("s16", np.array(0.0003, dtype=np.float32)),
             init("z16", np.array(1000, dtype=np.uint16))]
    outs = ["y1", "y2", "y5"]
    for name, bs, b, sc, zp in nbits:
        ins = ["x", name + "_b", name + "_s"] + ([name + "_z"] if zp is not None else [])
        n.append(helper.make_node("MatMulNBits", ins, ["y_" + name], domain=MS, K=K, N=N, bits=4,
                                  block_size=bs))
        inits += [init(name + "_b", b), init(name + "_s", sc)]
        if zp is not None:
            inits.append(init(name + "_z", zp))
        outs.append("y_" + name)
    x = f32(2, 5, K, scale=1.0)
    save("msft_qmatmul", n, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, K])],
         [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits,
         {"x": x}, opset=21)


def bert_fused():
    """EmbedLayerNormalization and Attention as the transformer optimizer fuses BERT, and
    Attention's other masks: 2B key ranges, 2-D and 3-D 0/1 masks, causal with Q, K and V
    of other widths, attention_bias."""
    B, S, H, V, NH = 2, 6, 32, 50, 4
    i32 = lambda a: np.asarray(a, dtype=np.int32)
    n = [
        helper.make_node("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "b",
                                                      "mask"], ["emb", "mi", "esum"], domain=MS,
                         epsilon=1e-12),
        helper.make_node("Attention", ["emb", "w", "wb", "mi"], ["a1"], domain=MS, num_heads=NH),
        helper.make_node("SkipLayerNormalization", ["a1", "emb", "g", "b"], ["l1"], domain=MS,
                         epsilon=1e-12),
        helper.make_node("Attention", ["l1", "w", "wb", "range"], ["a2"], domain=MS,
                         num_heads=NH),
        helper.make_node("Attention", ["l1", "w", "", "mask"], ["a3"], domain=MS, num_heads=NH,
                         scale=0.3),
        helper.make_node("Attention", ["l1", "w", "wb", "mask3"], ["a4"], domain=MS,
                         num_heads=2, mask_filter_value=-1000.0),
        helper.make_node("Attention", ["l1", "w2", "wb2", "", "", "abias"], ["a5"], domain=MS,
                         num_heads=NH, unidirectional=1, qkv_hidden_sizes=[32, 32, 16]),
        helper.make_node("Attention", ["l1", "w", "wb"], ["a6"], domain=MS, num_heads=NH),
        helper.make_node("Concat", ["a1", "a2", "a3", "a4", "a6"], ["y"], axis=-1),
    ]
    inits = [init("we", f32(V, H)), init("pe", f32(16, H)), init("se", f32(2, H)),
             init("g", 1 + f32(H, scale=0.1)), init("b", f32(H, scale=0.1)),
             init("w", f32(H, 3 * H, scale=0.3)), init("wb", f32(3 * H, scale=0.1)),
             init("w2", f32(H, 80, scale=0.3)), init("wb2", f32(80, scale=0.1)),
             init("range", i32([5, 6, 1, 0])), init("abias", f32(1, NH, S, S))]
    mask = i32([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    mask3 = (RNG.random((B, S, S)) > 0.3).astype(np.int32)
    mask3[:, :, 0] = 1
    feeds = {"ids": RNG.integers(0, V, (B, S)).astype(np.int32),
             "seg": RNG.integers(0, 2, (B, S)).astype(np.int32), "mask": mask, "mask3": mask3}
    ins = [helper.make_tensor_value_info(k, TensorProto.INT32, list(v.shape))
           for k, v in feeds.items()]
    save("msft_bert_fused", n, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                     helper.make_tensor_value_info("a5", TensorProto.FLOAT, None),
                                     helper.make_tensor_value_info("mi", TensorProto.INT32, None),
                                     helper.make_tensor_value_info("esum", TensorProto.FLOAT,
                                                                   None)], inits, feeds)


def mha_rotary():
    """Llama/Whisper-style attention as onnxruntime's optimizer leaves it: RotaryEmbedding
    (position ids, and an offset) and MultiHeadAttention (causal with a 0/1 key padding
    mask, key lengths on keys and values in heads, cross-attention with a bias)."""
    B, S, T, D, NH = 2, 6, 9, 32, 4
    hd = D // NH
    n = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("RotaryEmbedding", ["q", "pos", "cos", "sin"], ["qr"], domain=MS,
                         num_heads=NH),
        helper.make_node("RotaryEmbedding", ["k", "off", "cos", "sin"], ["kr"], domain=MS,
                         num_heads=NH, interleaved=1),
        helper.make_node("MultiHeadAttention", ["qr", "kr", "v", "bias", "kpm"], ["y1"],
                         domain=MS, num_heads=NH, unidirectional=1),
        helper.make_node("Reshape", ["kr", "shape4"], ["k4a"]),
        helper.make_node("Transpose", ["k4a"], ["k4"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["v", "shape4"], ["v4a"]),
        helper.make_node("Transpose", ["v4a"], ["v4"], perm=[0, 2, 1, 3]),
        helper.make_node("MultiHeadAttention", ["qr", "k4", "v4", "", "lens"], ["y2"],
                         domain=MS, num_heads=NH, scale=0.2),
        helper.make_node("MatMul", ["mem", "wk"], ["mk"]),
        helper.make_node("MatMul", ["mem", "wv"], ["mv"]),
        helper.make_node("MultiHeadAttention", ["q", "mk", "mv", "bias", "", "abias"], ["y3"],
                         domain=MS, num_heads=NH),
    ]
    inits = [init("wq", f32(D, D, scale=0.3)), init("wk", f32(D, D, scale=0.3)),
             init("wv", f32(D, D, scale=0.3)), init("cos", np.cos(f32(16, hd // 2, scale=2.0))),
             init("sin", np.sin(f32(16, hd // 2, scale=2.0))), init("bias", f32(3 * D, scale=0.1)),
             init("off", np.array([3], dtype=np.int64)),
             init("shape4", np.array([B, S, NH, hd], dtype=np.int64)),
             init("lens", np.array([4, 6], dtype=np.int32)), init("abias", f32(1, NH, S, T))]
    feeds = {"x": f32(B, S, D, scale=1.0), "mem": f32(B, T, D, scale=1.0),
             "pos": np.array([[0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7]], dtype=np.int64),
             "kpm": np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]], dtype=np.int32)}
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                         list(v.shape)) for k, v in feeds.items()]
    save("msft_mha_rotary", n, ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                     for o in ("y1", "y2", "y3")], inits, feeds)


def dq_lstm():
    """DynamicQuantizeLSTM as onnxruntime's dynamic quantizer writes it (ddddocr's
    common_old.onnx ships one): bidirectional, int8 weights, W with a scale per gate
    column (zero points then 0, as onnxruntime requires), R with a scale and zero point
    per direction (3 and -5), peepholes, an
    initial state; each product quantizes its float operand per tensor, X once for all
    steps, H once a step. Its own generator, so the models above keep their weights."""
    rng = np.random.default_rng(77)
    T, B, I, H, D = 5, 1, 12, 16, 2
    w = rng.integers(-127, 128, (D, I, 4 * H)).astype(np.int8)
    r = rng.integers(-120, 121, (D, H, 4 * H)).astype(np.int8)
    n = [helper.make_node("DynamicQuantizeLSTM",
                          ["x", "w", "r", "b", "", "h0", "c0", "p", "ws", "wz", "rs", "rz"],
                          ["y", "yh", "yc"], domain=MS, direction="bidirectional",
                          hidden_size=H)]
    inits = [init("w", w), init("r", r),
             init("b", (rng.standard_normal((D, 8 * H)) * 0.2).astype(np.float32)),
             init("p", (rng.standard_normal((D, 3 * H)) * 0.2).astype(np.float32)),
             init("ws", (rng.random((D, 4 * H)) * 0.004 + 0.002).astype(np.float32)),
             init("wz", np.zeros((D, 4 * H), np.int8)),
             init("rs", np.array([0.004, 0.006], np.float32)),
             init("rz", np.array([3, -5], np.int8))]
    feeds = {"x": (rng.standard_normal((T, B, I)) * 1.5).astype(np.float32),
             "h0": (rng.standard_normal((D, B, H)) * 0.3).astype(np.float32),
             "c0": (rng.standard_normal((D, B, H)) * 0.3).astype(np.float32)}
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
           for k, v in feeds.items()]
    save("msft_dqlstm", n, ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                 for o in ("y", "yh", "yc")], inits, feeds)


if __name__ == "__main__":
    transformer()
    qoperator()
    qmatmul()
    bert_fused()
    mha_rotary()
    dq_lstm()
