#!/usr/bin/env python3
"""Generate the models over a bounded symbolic sequence of tests/models-dyn made from
the tree's own, for the dynamic-model tests of `make check` (one bundle each, run at
every data set's length): recurrent layers (onnx_rnn.c unrolls at the bound and masks
the steps past the actual length) and a quantized attention (its int8 products over
the sequence count the actual depth, onnx_qlinear.c dec_int_matmul).

  rnn_gru_seq      tests/models/gru (PyTorch: Embedding, two stacked GRU layers, the
                   last step by Gather(-1), Linear) with its ids' sequence axis made
                   symbolic: ids i64[3, seq]
  rnn_lstm_bi_seq  tests/models/lstm_bi (two bidirectional LSTM layers, Reshape with
                   [0, 0, -1], the last step by Gather(-1)): ids i64[2, seq]
  rnn_ops_seq      one graph of the recurrent operators' other forms, x f32[seq, 2, 4]
                   and sequence_lens i32[2]: a bidirectional LSTM with sequence_lens
                   whose Y, Y_h and Y_c are graph outputs (Y along the symbolic axis:
                   the runtime gives it its actual length); a reverse GRU with
                   linear_before_reset (onnxruntime has no layout 1 to check it
                   against); an RNN whose only output is Y_h
  cls_norm_seq     tests/models/norm_eps (a constant token prepended, Concat(tok, x) on
                   the sequence axis, then three norms) with x f32[2, seq, 64]: its
                   outputs' length, seq + 1, is derived from the symbol
  convtr_seq       transposed convolutions over a symbolic length (a vocoder's and a
                   decoder's upsampling): a[1, 2, seq] through Conv, ConvTranspose
                   stride 2 pads 1, Relu, ConvTranspose stride 2 with output_padding
                   (lengths 2 seq and 4 seq derived from the symbol), the mean over the
                   second, which is also an output (the output's length is the
                   runtime's to give, the mean reads the value itself); img[1, 2, seq, 5]
                   through a 2x2 stride-2 ConvTranspose with bias
  resize_seq       Resize by integer factors along a symbolic height, img[1, 2, seq, 5]:
                   nearest (asymmetric, floor) x2 on both axes then a 3x3 Conv; linear
                   (half_pixel) x3 on the height then the mean over it; cubic
                   (pytorch_half_pixel) x3 on the height
  fmap_hw          outputs with two derived axes, x[2, 2, h, w] (h and w symbolic, each
                   2..12; data sets of h 2, 5, 12 with w 8, 6, 7): a stride-2 Conv's
                   feature map [2, 4, h', w'] and a linear x2 Resize [2, 2, 2h, 2w], each
                   given back as the prefix of its actual shape (symdim_out.c)
  pool_hw          a ResNet stem and block over a symbolic height and width, x[1, 3, h, w]
                   (each 17..48; data sets of 17x30, 33x47 and 48x40, whose stem gives an
                   odd size, odd and even, and even): Conv 7x7 stride 2, MaxPool 3x3
                   stride 2 pads 1 (its feature map an output: at an odd input the last
                   window reads the high pad, which the bound's even size did not need),
                   a stride-2 block with its 1x1 downsample, MaxPool 3x3 stride 2 with
                   ceil_mode, GlobalAveragePool
  ceilpool_hw      SqueezeNet's stem over a symbolic height and width, x[1, 3, h, w]
                   (each 32..64; data sets of 33x40, 47x64 and 64x37): Conv 3x3 stride 2,
                   Relu, MaxPool 3x3 stride 2 with ceil_mode (its high pad's mask, a
                   row of positions shared by the kernel's row chunks, whose last chunk
                   is shorter: once loaded over the ring from a core whose tile had a
                   row fewer, which the runtime refused), Conv 1x1, GlobalAveragePool
  shift_seq        slices that end at the end of a symbolic sequence, x[2, seq, 8]: the
                   difference x[:, 1:] - x[:, :-1] (an output of length seq - 1, derived),
                   and a softmax over x[:, 1:] (a class token dropped) then its mean over
                   the sequence; with size buckets, whose smallest box (seq 2) reads the
                   slices below the minimum
  convlstm_seq     an LSTM over the output of a stride-2 Conv1d, x[1, 4, seq] (Conv k3 s2
                   p1: length (seq + 1) / 2, derived), Y_h and the mean of Y over its
                   steps; the smallest size bucket (seq 2) unrolls one step, whose slice
                   is the whole sequence (it was dropped as an identity, and Y_h took the
                   symbol: a bundle the runtime refused)
  sdpa_shape_seq   attention as torch.onnx's dynamo exporter (PyTorch 2.15) writes
                   scaled_dot_product_attention, x[2, 4, seq, 8] as Q, K and V: K's
                   transpose reshaped through sizes read with Shape and cut with Slice
                   (starts and ends of +-2^63: [-1, S, D], then [B, H, D, S]) and with
                   Gather(-1); such a slice or gather of the folded shape was made a
                   run-time computation (counted from an extent that might be
                   symbolic), so the Reshape had a shape computed at run time and was
                   refused ('dynamic shape input')
  posconv_seq      wav2vec2's positional convolution, x[1, 4, seq]: a grouped Conv with an
                   even kernel (4, pads 2: length seq + 1, derived), its last position
                   cut (Slice to -1: seq + 1 - 1), added to x, Gelu; the output and its
                   mean over the sequence. The two lengths were 'operands that
                   disagree' before derived offsets were added up
  resize_size_hw   a segmentation head's upsampling to the input's size, x[1, 2, h, w]
                   (each 9..24; data sets of 9x24, 17x13 and 24x24): Conv 3x3 stride 2
                   pads 1 (h' and w' derived), then Resize to the sizes read with Shape
                   from x (F.interpolate(y, size=x.shape[-2:])), linear half_pixel, added
                   to x, and nearest (floor, asymmetric) to the same sizes: the source
                   positions are computed at run time from the actual lengths (the ratio
                   of h to h' is no constant); refused before ('a gather along h')
  qdq_attn_seq     tests/models/qdq_attn (onnxruntime's quantize_static QDQ attention:
                   uint8 activations with zero points, int8 products of the scores and
                   of the probabilities with V over the sequence) with x f32[1, seq, 16]
Data sets at sequence lengths 2 (the bound's minimum), 5 and 12 (its maximum; 2, 4 and 6
for qdq_attn_seq, whose bound is its export's), ids and values from seeded generators,
goldens from onnxruntime (graph optimizations off for the QDQ model: its fused kernels
round differently); flags --dim seq=2..12 (2..6). Run in build/venv (numpy, onnx,
onnxruntime):
build/venv/bin/python tests/models-dyn/gen_seq.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DIR = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(DIR)
LENGTHS = (2, 5, 12)
FLAGS = "--dim seq=2..12\n"


def main():
    """Write the three models."""
    rng = np.random.default_rng(23)
    for name, src in (("rnn_gru_seq", "gru"), ("rnn_lstm_bi_seq", "lstm_bi")):
        model, vocab, batch = from_tree_model(src)
        write(name, model, lambda t, b=batch, v=vocab: {
            "ids": rng.integers(0, v, size=(b, t)).astype(np.int64)})
    write("rnn_ops_seq", ops_model(rng), lambda t: {
        "x": rng.standard_normal((t, 2, 4)).astype(np.float32),
        "seqlens": np.array([t, max(1, t - 2)], np.int32)})
    model, _, _ = from_tree_model("qdq_attn", seq_outputs=True)
    write("qdq_attn_seq", model, lambda t: {
        "x": rng.standard_normal((1, t, 16)).astype(np.float32)},
        lengths=(2, 4, 6), flags="--dim seq=2..6\n", optimized=False)
    model, _, _ = from_tree_model("norm_eps", seq_outputs=True)
    write("cls_norm_seq", model, lambda t: {
        "x": rng.standard_normal((2, t, 64)).astype(np.float32)})
    write("convtr_seq", convtr_model(rng), lambda t: {
        "a": rng.standard_normal((1, 2, t)).astype(np.float32),
        "img": rng.standard_normal((1, 2, t, 5)).astype(np.float32)})
    write("resize_seq", resize_model(rng), lambda t: {
        "img": rng.standard_normal((1, 2, t, 5)).astype(np.float32)})
    write("fmap_hw", fmap_model(rng), lambda t: {
        "x": rng.standard_normal((2, 2, t, (3 * t) % 11 + 2)).astype(np.float32)},
        flags="--dim h=2..12 --dim w=2..12\n")
    sizes = {17: 30, 33: 47, 48: 40}
    write("pool_hw", pool_model(rng), lambda t: {
        "x": rng.standard_normal((1, 3, t, sizes[t])).astype(np.float32)},
        lengths=tuple(sizes), flags="--dim h=17..48 --dim w=17..48\n")
    sizes_c = {33: 40, 47: 64, 64: 37}
    write("ceilpool_hw", ceilpool_model(rng), lambda t: {
        "x": rng.standard_normal((1, 3, t, sizes_c[t])).astype(np.float32)},
        lengths=tuple(sizes_c), flags="--dim h=32..64 --dim w=32..64\n")
    write("shift_seq", shift_model(), lambda t: {
        "x": rng.standard_normal((2, t, 8)).astype(np.float32)})
    write("convlstm_seq", convlstm_model(rng), lambda t: {
        "x": rng.standard_normal((1, 4, t)).astype(np.float32)})
    write("sdpa_shape_seq", sdpa_shape_model(), lambda t: {
        "x": rng.standard_normal((2, 4, t, 8)).astype(np.float32)})
    write("posconv_seq", posconv_model(rng), lambda t: {
        "x": rng.standard_normal((1, 4, t)).astype(np.float32)})
    sizes_r = {9: 24, 17: 13, 24: 24}
    write("resize_size_hw", resize_size_model(rng), lambda t: {
        "x": rng.standard_normal((1, 2, t, sizes_r[t])).astype(np.float32)},
        lengths=tuple(sizes_r), flags="--dim h=9..24 --dim w=9..24\n")


def from_tree_model(name, seq_outputs=False):
    """tests/models/NAME with axis 1 of its input symbolic ('seq') and the value_info that
    fixed it dropped (with seq_outputs, axis 1 of its outputs too: they lie along the
    sequence); also its vocabulary size (0 without an embedding) and batch."""
    model = onnx.load(os.path.join(TREE, "models", name, "model.onnx"))
    inp = model.graph.input[0]
    dim = inp.type.tensor_type.shape.dim[1]
    bound = dim.dim_value
    dim.ClearField("dim_value")
    dim.dim_param = "seq"
    del model.graph.value_info[:]
    for out in model.graph.output if seq_outputs else []:
        dims = out.type.tensor_type.shape.dim     # may be undeclared
        d = dims[1] if len(dims) > 1 else None
        if d is not None and d.dim_value >= bound:           # the sequence, or it with a prefix
            name = "seq" if d.dim_value == bound else "seq_out"
            d.ClearField("dim_value")
            d.dim_param = name
    emb = [i for i in model.graph.initializer if i.name == "emb.weight"]
    return model, emb[0].dims[0] if emb else 0, inp.type.tensor_type.shape.dim[0].dim_value


def rand_init(rng, name, shape):
    """A float32 initializer of normal values times 0.4 from rng."""
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.4).astype(np.float32), name)


def checked_model(graph, opset):
    """The model of graph at opset (IR version 8), checked."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def ops_model(rng):
    """The graph of rnn_ops_seq (see the top of the file)."""
    def init(name, shape):
        return rand_init(rng, name, shape)
    h = 5
    inits = [init("lw", (2, 4 * h, 4)), init("lr", (2, 4 * h, h)), init("lb", (2, 8 * h)),
             init("gw", (1, 9, 4)), init("gr", (1, 9, 3)), init("gb", (1, 18)),
             init("rw", (1, 3, 4)), init("rr", (1, 3, 3))]
    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "seqlens"], ["y", "y_h", "y_c"],
                         hidden_size=h, direction="bidirectional"),
        helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy"], hidden_size=3,
                         direction="reverse", linear_before_reset=1),
        helper.make_node("RNN", ["x", "rw", "rr"], ["", "r_h"], hidden_size=3),
    ]
    graph = helper.make_graph(
        nodes, "rnn_ops_seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 2, 4]),
         helper.make_tensor_value_info("seqlens", TensorProto.INT32, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 2, 2, h]),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [2, 2, h]),
         helper.make_tensor_value_info("y_c", TensorProto.FLOAT, [2, 2, h]),
         helper.make_tensor_value_info("gy", TensorProto.FLOAT, ["seq", 1, 2, 3]),
         helper.make_tensor_value_info("r_h", TensorProto.FLOAT, [1, 2, 3])],
        inits)
    return checked_model(graph, 14)


def convtr_model(rng):
    """The graph of convtr_seq (see the top of the file)."""
    def init(name, shape):
        return rand_init(rng, name, shape)
    inits = [init("w1", (4, 2, 3)), init("t1", (4, 3, 4)), init("t2", (3, 2, 3)),
             init("t3", (2, 3, 2, 2)), init("b3", (3,))]
    nodes = [
        helper.make_node("Conv", ["a", "w1"], ["a1"], pads=[1, 1]),
        helper.make_node("ConvTranspose", ["a1", "t1"], ["a2"], strides=[2], pads=[1, 1]),
        helper.make_node("Relu", ["a2"], ["a3"]),
        helper.make_node("ConvTranspose", ["a3", "t2"], ["up1"], strides=[2], pads=[1, 1],
                         output_padding=[1]),
        helper.make_node("ConvTranspose", ["img", "t3", "b3"], ["up2"], strides=[2, 2]),
        helper.make_node("ReduceMean", ["up1"], ["m1"], axes=[2], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "convtr_seq",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 2, "seq"]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 2, "seq", 5])],
        [helper.make_tensor_value_info("up1", TensorProto.FLOAT, [1, 2, None]),
         helper.make_tensor_value_info("up2", TensorProto.FLOAT, [1, 3, None, 10]),
         helper.make_tensor_value_info("m1", TensorProto.FLOAT, [1, 2])],
        inits)
    return checked_model(graph, 17)


def resize_model(rng):
    """The graph of resize_seq (see the top of the file)."""
    w = rand_init(rng, "w", (3, 2, 3, 3))
    up2 = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up2")
    up3 = numpy_helper.from_array(np.array([1, 1, 3, 1], np.float32), "up3")
    hax = numpy_helper.from_array(np.array([2], np.int64), "hax")
    nodes = [
        helper.make_node("Resize", ["img", "", "up2"], ["near"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Conv", ["near", "w"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["img", "", "up3"], ["lin"], mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("ReduceMean", ["lin", "hax"], ["m"], keepdims=0),
        helper.make_node("Resize", ["img", "", "up3"], ["cub"], mode="cubic",
                         coordinate_transformation_mode="pytorch_half_pixel"),
    ]
    graph = helper.make_graph(
        nodes, "resize_seq",
        [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 2, "seq", 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, None, 10]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 2, 5]),
         helper.make_tensor_value_info("cub", TensorProto.FLOAT, [1, 2, None, 5])],
        [w, up2, up3, hax])
    return checked_model(graph, 18)


def fmap_model(rng):
    """The graph of fmap_hw (see the top of the file)."""
    w = rand_init(rng, "w", (4, 2, 3, 3))
    up = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["f"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["f"], ["fmap"]),
        helper.make_node("Resize", ["x", "", "up"], ["big"], mode="linear",
                         coordinate_transformation_mode="half_pixel"),
    ]
    graph = helper.make_graph(
        nodes, "fmap_hw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, "h", "w"])],
        [helper.make_tensor_value_info("fmap", TensorProto.FLOAT, [2, 4, None, None]),
         helper.make_tensor_value_info("big", TensorProto.FLOAT, [2, 2, None, None])],
        [w, up])
    return checked_model(graph, 18)


def pool_model(rng):
    """The graph of pool_hw (see the top of the file)."""
    inits = [rand_init(rng, "w0", (8, 3, 7, 7)), rand_init(rng, "w1", (8, 8, 3, 3)),
             rand_init(rng, "w2", (8, 8, 1, 1))]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], strides=[2, 2], pads=[3, 3, 3, 3]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("MaxPool", ["r0"], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["pool", "w1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["pool", "w2"], ["c2"], strides=[2, 2]),
        helper.make_node("Add", ["c1", "c2"], ["s"]),
        helper.make_node("Relu", ["s"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p2"], kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("GlobalAveragePool", ["p2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "pool_hw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8]),
         helper.make_tensor_value_info("pool", TensorProto.FLOAT, [1, 8, None, None])],
        inits)
    return checked_model(graph, 18)


def shift_model():
    """The graph of shift_seq (see the top of the file)."""
    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)
    inits = [ints("zero", [0]), ints("one", [1]), ints("minus1", [-1]), ints("end", [2**62])]
    nodes = [
        helper.make_node("Slice", ["x", "one", "end", "one"], ["tail"]),
        helper.make_node("Slice", ["x", "zero", "minus1", "one"], ["head"]),
        helper.make_node("Sub", ["tail", "head"], ["diff"]),
        helper.make_node("Softmax", ["tail"], ["p"], axis=1),
        helper.make_node("ReduceMean", ["p", "one"], ["mean"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "shift_seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "seq", 8])],
        [helper.make_tensor_value_info("diff", TensorProto.FLOAT, [2, None, 8]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, [2, 8])], inits)
    return checked_model(graph, 18)


def convlstm_model(rng):
    """The graph of convlstm_seq (see the top of the file)."""
    inits = [rand_init(rng, "wc", (8, 4, 3)), rand_init(rng, "w", (1, 32, 8)),
             rand_init(rng, "r", (1, 32, 8)), rand_init(rng, "b", (1, 64)),
             numpy_helper.from_array(np.array([0], np.int64), "zero")]
    nodes = [
        helper.make_node("Conv", ["x", "wc"], ["c"], strides=[2], pads=[1, 1]),
        helper.make_node("Transpose", ["c"], ["t"], perm=[2, 0, 1]),
        helper.make_node("LSTM", ["t", "w", "r", "b"], ["Y", "Y_h"], hidden_size=8),
        helper.make_node("ReduceMean", ["Y", "zero"], ["mean"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "convlstm_seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "seq"])],
        [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 1, 8]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, 1, 8])], inits)
    return checked_model(graph, 18)


def sdpa_shape_model():
    """The graph of sdpa_shape_seq (see the top of the file)."""
    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)
    inits = [ints("m1", [-1]), ints("m2", [-2]), ints("big", [2**63 - 1]),
             ints("small", [-2**63]), numpy_helper.from_array(np.array(0.5, np.float32), "scale")]
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "m1"], ["d"], axis=0),       # [D]
        helper.make_node("Slice", ["sh", "m2", "m1"], ["s"]),          # [S]
        helper.make_node("Slice", ["sh", "m1", "big"], ["d2"]),        # [D]
        helper.make_node("Slice", ["sh", "small", "m2"], ["bh"]),      # [B, H]
        helper.make_node("Concat", ["m1", "s", "d"], ["s1"], axis=0),
        helper.make_node("Reshape", ["x", "s1"], ["k3"]),
        helper.make_node("Transpose", ["k3"], ["kt3"], perm=[0, 2, 1]),
        helper.make_node("Concat", ["bh", "d2", "s"], ["s2"], axis=0),
        helper.make_node("Reshape", ["kt3", "s2"], ["kt"]),
        helper.make_node("Mul", ["x", "scale"], ["q"]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "sdpa_shape_seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, None, 8])], inits)
    return checked_model(graph, 18)


def posconv_model(rng):
    """The graph of posconv_seq (see the top of the file)."""
    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)
    inits = [rand_init(rng, "w", (4, 2, 4)), ints("zero", [0]), ints("minus1", [-1]),
             ints("two", [2])]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[2, 2], group=2),
        helper.make_node("Slice", ["c", "zero", "minus1", "two"], ["cut"]),
        helper.make_node("Add", ["x", "cut"], ["s"]),
        helper.make_node("Gelu", ["s"], ["y"]),
        helper.make_node("ReduceMean", ["y", "two"], ["mean"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "posconv_seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, None]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, 4])], inits)
    return checked_model(graph, 20)


def resize_size_model(rng):
    """The graph of resize_size_hw (see the top of the file)."""
    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)
    inits = [rand_init(rng, "w", (2, 2, 3, 3)), ints("zero", [0]), ints("two", [2]),
             ints("four", [4])]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Shape", ["c"], ["sc"]),
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("Slice", ["sc", "zero", "two"], ["nc"]),
        helper.make_node("Slice", ["sx", "two", "four"], ["hw"]),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
        helper.make_node("Resize", ["c", "", "", "sizes"], ["up"], mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Add", ["x", "up"], ["y"]),
        helper.make_node("Resize", ["c", "", "", "sizes"], ["near"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]
    graph = helper.make_graph(
        nodes, "resize_size_hw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, None, None]),
         helper.make_tensor_value_info("near", TensorProto.FLOAT, [1, 2, None, None])], inits)
    return checked_model(graph, 18)


def ceilpool_model(rng):
    """The graph of ceilpool_hw (see the top of the file)."""
    inits = [rand_init(rng, "w0", (16, 3, 3, 3)), rand_init(rng, "w1", (8, 16, 1, 1))]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], strides=[2, 2]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("Conv", ["p0", "w1"], ["c1"]),
        helper.make_node("GlobalAveragePool", ["c1"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "ceilpool_hw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    return checked_model(graph, 18)


def write(name, model, inputs_at, lengths=LENGTHS, flags=FLAGS, optimized=True):
    """tests/models-dyn/NAME: model.onnx, flags, and test_data_set_K at lengths[K] with
    the inputs inputs_at(length) and onnxruntime's outputs (its graph optimizations off
    unless optimized)."""
    here = os.path.join(DIR, name)
    os.makedirs(here, exist_ok=True)
    path = os.path.join(here, "model.onnx")
    onnx.save(model, path)
    with open(os.path.join(here, "flags"), "w") as f:
        f.write(flags)
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for k, t in enumerate(lengths):
        d = os.path.join(here, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        feeds = inputs_at(t)
        for i, meta in enumerate(sess.get_inputs()):
            with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[meta.name], meta.name).SerializeToString())
        for i, (o, meta) in enumerate(zip(sess.run(None, feeds), sess.get_outputs())):
            with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(o, meta.name).SerializeToString())


if __name__ == "__main__":
    main()
