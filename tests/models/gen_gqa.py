#!/usr/bin/env python3
"""Small graphs of onnxruntime's GroupQueryAttention (domain com.microsoft), with goldens.

GroupQueryAttention is the attention of the LLM exports of onnxruntime-genai's model
builder (Phi-3, Llama, Qwen, Mistral), between its MatMulNBits projections and simplified
layer norms. Each model makes every output of each node (output, present_key,
present_value) a graph output.

    python3 tests/models/gen_gqa.py [TESTDIR]   (default: tests/, this folder's parent)

writes, with outputs computed by onnxruntime's CPU provider, under TESTDIR/models/
(model.onnx and test_data_set_0):
  msft_gqa_prompt  a prompt of batch 2, 8 tokens, separate Q/K/V, 4 heads on 2 kv heads
                   of size 16: without a past and with rotary (cos/sin caches); with an
                   empty past (0 positions), local_window_size 3, softcap 1.5 and
                   attention_bias; bidirectional (causal 0) with scale 0.3
  msft_gqa_decode  one new token, batch 2, packed QKV over a past of 7 positions:
                   interleaved rotary and softcap 2; a right-padded batch (seqlens_k 7
                   and 4), scale 0.2, local_window_size 4
  msft_gqa_chunk   a chunk of 3 tokens after 4, batch 1, multi-query (1 kv head), head
                   size 32, rotary on 16 channels: seqlens_k and total_sequence_length
                   constants; seqlens_k an input
  msft_gqa_llama   a llama-like block: SimplifiedLayerNormalization, a packed QKV
                   projection in MatMulNBits, GroupQueryAttention with rotary over a
                   past, the output projection in MatMulNBits,
                   SkipSimplifiedLayerNormalization
and TESTDIR/models-dyn/msft_gqa_dynseq, a prompt of a symbolic sequence_length (flags:
--dim sequence_length=2..16; data sets of 3, 9 and 16 tokens), and
TESTDIR/golden/passes/gqa_malformed.onnx, GroupQueryAttention nodes that spyrec must
refuse (gqa_malformed.err beside it, written by hand, lists their messages).
Needs numpy, onnx and onnxruntime (the Makefile's build/venv has them). Weights and inputs
are seeded.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))
RNG = np.random.default_rng(4242)
MS = "com.microsoft"


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def i32(a):
    return np.asarray(a, dtype=np.int32)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def caches(positions, half):
    """Rotary cos/sin caches [positions, half] as the model builder computes them."""
    inv = 1.0 / (10000.0 ** (np.arange(half, dtype=np.float64) / half))
    ang = np.outer(np.arange(positions), inv)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def gqa(ins, outs, **attrs):
    return helper.make_node("GroupQueryAttention", ins, outs, domain=MS, **attrs)


def value_info(feeds):
    return [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                          list(v.shape)) for k, v in feeds.items()]


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "gqa", inputs,
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                           for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21),
                                            helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def save(name, nodes, feeds, outputs, inits, inputs=None, sets=None, folder="models"):
    """Write ROOT/folder/name: model.onnx and test_data_set_K for each feed dict of sets
    (default: feeds alone), with onnxruntime's outputs; inputs: the declared inputs
    (default: those of feeds)."""
    d = os.path.join(ROOT, folder, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model(nodes, inputs or value_info(feeds), outputs, inits),
              os.path.join(d, "model.onnx"))
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    for k, fs in enumerate(sets or [feeds]):
        t = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(t, exist_ok=True)
        for i, (n, v) in enumerate(fs.items()):
            with open(os.path.join(t, "input_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
        for i, (o, meta) in enumerate(zip(s.run(None, fs), s.get_outputs())):
            with open(os.path.join(t, "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(o, meta.name).SerializeToString())
    print("wrote", d)


def prompt():
    B, S, N, KV, H = 2, 8, 4, 2, 16
    cos, sin = caches(16, H // 2)
    n = [gqa(["q", "k", "v", "", "", "seqlens_k", "total", "cos", "sin"],
             ["y1", "present_key1", "present_value1"], num_heads=N, kv_num_heads=KV,
             do_rotary=1),
         gqa(["q", "k", "v", "past_key", "past_value", "seqlens_k", "total", "", "", "",
              "bias"], ["y2", "present_key2", "present_value2"], num_heads=N, kv_num_heads=KV,
             local_window_size=3, softcap=1.5),
         gqa(["q", "k", "v", "", "", "seqlens_k", "total"],
             ["y3", "present_key3", "present_value3"], num_heads=N, kv_num_heads=KV, causal=0,
             scale=0.3)]
    feeds = {"q": f32(B, S, N * H), "k": f32(B, S, KV * H), "v": f32(B, S, KV * H),
             "past_key": np.zeros((B, KV, 0, H), np.float32),
             "past_value": np.zeros((B, KV, 0, H), np.float32),
             "seqlens_k": i32([S - 1] * B), "total": i32(S)}
    save("msft_gqa_prompt", n, feeds, [o for node in n for o in node.output],
         [init("cos", cos), init("sin", sin), init("bias", f32(1, N, S, S, scale=0.5))])


def decode():
    B, P, N, KV, H = 2, 7, 4, 2, 16
    cos, sin = caches(16, H // 2)
    n = [gqa(["qkv", "", "", "past_key", "past_value", "seqlens_k", "total", "cos", "sin"],
             ["y1", "present_key1", "present_value1"], num_heads=N, kv_num_heads=KV,
             do_rotary=1, rotary_interleaved=1, softcap=2.0),
         gqa(["qkv", "", "", "past_key", "past_value", "seqlens_padded", "total"],
             ["y2", "present_key2", "present_value2"], num_heads=N, kv_num_heads=KV,
             scale=0.2, local_window_size=4)]
    feeds = {"qkv": f32(B, 1, (N + 2 * KV) * H), "past_key": f32(B, KV, P, H),
             "past_value": f32(B, KV, P, H), "seqlens_k": i32([P] * B),
             "seqlens_padded": i32([P, 4]), "total": i32(P + 1)}
    save("msft_gqa_decode", n, feeds, [o for node in n for o in node.output],
         [init("cos", cos), init("sin", sin)])


def chunk():
    B, S, P, N, KV, H = 1, 3, 4, 4, 1, 32
    cos, sin = caches(12, 8)
    ins = ["q", "k", "v", "past_key", "past_value"]
    n = [gqa(ins + ["seqlens_const", "total_const", "cos", "sin"],
             ["y1", "present_key1", "present_value1"], num_heads=N, kv_num_heads=KV,
             do_rotary=1),
         gqa(ins + ["seqlens_k", "total_const", "cos", "sin"],
             ["y2", "present_key2", "present_value2"], num_heads=N, kv_num_heads=KV,
             do_rotary=1, rotary_interleaved=1)]
    feeds = {"q": f32(B, S, N * H), "k": f32(B, S, KV * H), "v": f32(B, S, KV * H),
             "past_key": f32(B, KV, P, H), "past_value": f32(B, KV, P, H),
             "seqlens_k": i32([P + S - 1])}
    save("msft_gqa_chunk", n, feeds, [o for node in n for o in node.output],
         [init("cos", cos), init("sin", sin), init("seqlens_const", i32([P + S - 1])),
          init("total_const", i32(P + S))])


def pack4(w, bs):
    """MatMulNBits' 4-bit form of w [K, N] with blocks of bs: (packed, scales, zero points)."""
    k, n = w.shape
    blk = w.T.reshape(n, k // bs, bs)
    lo, hi = blk.min(-1), blk.max(-1)
    scale = np.maximum(hi - lo, 1e-6) / 15.0
    zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    q = np.clip(np.round(blk / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zpp = zp.reshape(n, -1)
    zpp = np.pad(zpp, ((0, 0), (0, zpp.shape[1] % 2)))
    zpack = (zpp[:, 0::2] | (zpp[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
    return packed, scale.astype(np.float32).reshape(-1), zpack


def llama():
    B, S, P, D, N, KV = 1, 4, 3, 64, 4, 2
    H = D // N
    W = (N + 2 * KV) * H
    cos, sin = caches(16, H // 2)
    wq, sq, zq = pack4(f32(D, W, scale=0.2), 32)
    wo, so, zo = pack4(f32(D, D, scale=0.2), 32)
    n = [helper.make_node("SimplifiedLayerNormalization", ["x", "g1"], ["h"], axis=-1,
                          epsilon=1e-5),
         helper.make_node("MatMulNBits", ["h", "wq", "sq", "zq"], ["qkv"], domain=MS, K=D, N=W,
                          bits=4, block_size=32),
         gqa(["qkv", "", "", "past_key", "past_value", "seqlens_k", "total", "cos", "sin"],
             ["attn", "present_key", "present_value"], num_heads=N, kv_num_heads=KV,
             do_rotary=1),
         helper.make_node("MatMulNBits", ["attn", "wo", "so", "zo"], ["o"], domain=MS, K=D,
                          N=D, bits=4, block_size=32),
         helper.make_node("SkipSimplifiedLayerNormalization", ["o", "x", "g2"],
                          ["y", "", "", "resid"], domain=MS, epsilon=1e-5)]
    feeds = {"x": f32(B, S, D), "past_key": f32(B, KV, P, H), "past_value": f32(B, KV, P, H),
             "seqlens_k": i32([P + S - 1]), "total": i32(P + S)}
    save("msft_gqa_llama", n, feeds, ["y", "resid", "present_key", "present_value"],
         [init("g1", 1 + f32(D, scale=0.1)), init("g2", 1 + f32(D, scale=0.1)),
          init("wq", wq), init("sq", sq), init("zq", zq), init("wo", wo), init("so", so),
          init("zo", zo), init("cos", cos), init("sin", sin)])


def dynseq():
    """A prompt of a symbolic sequence_length, one bundle checked at three lengths."""
    B, N, KV, H = 2, 4, 2, 16
    cos, sin = caches(16, H // 2)
    n = [gqa(["q", "k", "v", "", "", "seqlens_k", "total", "cos", "sin"],
             ["y", "present_key", "present_value"], num_heads=N, kv_num_heads=KV,
             do_rotary=1, softcap=3.0)]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("q", f, [B, "sequence_length", N * H]),
              helper.make_tensor_value_info("k", f, [B, "sequence_length", KV * H]),
              helper.make_tensor_value_info("v", f, [B, "sequence_length", KV * H]),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [B]),
              helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    sets = [{"q": f32(B, s, N * H), "k": f32(B, s, KV * H), "v": f32(B, s, KV * H),
             "seqlens_k": i32([s - 1] * B), "total": i32(s)} for s in (3, 9, 16)]
    save("msft_gqa_dynseq", n, sets[0], n[0].output, [init("cos", cos), init("sin", sin)],
         inputs, sets, "models-dyn")
    with open(os.path.join(ROOT, "models-dyn", "msft_gqa_dynseq", "flags"), "w") as fl:
        fl.write("--dim sequence_length=2..16\n")


def malformed():
    """GroupQueryAttention nodes spyrec refuses, one defect each (node named by it)."""
    f, i = TensorProto.FLOAT, TensorProto.INT32
    vi = helper.make_tensor_value_info
    ins = [vi("q", f, [1, 4, 64]), vi("k", f, [1, 4, 32]), vi("v", f, [1, 4, 32]),
           vi("q4", f, [1, 4, 4, 16]), vi("seqlens_k", i, [1]), vi("total", i, []),
           vi("past8", f, [1, 2, 3, 8])]
    qkv = ["q", "k", "v", "", "", "seqlens_k", "total"]
    heads = dict(num_heads=4, kv_num_heads=2)
    cases = [("heads_not_multiple", qkv, dict(num_heads=3, kv_num_heads=2)),
             ("no_kv_num_heads", qkv, dict(num_heads=4)),
             ("query_rank4", ["q4"] + qkv[1:], heads),
             ("key_width", ["q", "q", "v"] + qkv[3:], heads),
             ("past_head_size", ["q", "k", "v", "past8", "past8", "seqlens_k", "total"], heads),
             ("key_without_value", ["q", "k", ""] + qkv[3:], heads),
             ("no_seqlens_k", ["q", "k", "v"], heads),
             ("smooth_softmax", qkv, dict(smooth_softmax=1, **heads)),
             ("rotary_no_cache", qkv, dict(do_rotary=1, **heads)),
             ("position_ids", qkv + ["", "", "seqlens_k"], heads)]
    nodes = [helper.make_node("GroupQueryAttention", ins_, [name], domain=MS, name=name, **a)
             for name, ins_, a in cases]
    d = os.path.join(ROOT, "golden", "passes")
    os.makedirs(d, exist_ok=True)
    onnx.save(model(nodes, ins, [name for name, _, _ in cases]),
              os.path.join(d, "gqa_malformed.onnx"))
    print("wrote", os.path.join(d, "gqa_malformed.onnx"))


if __name__ == "__main__":
    prompt()
    decode()
    chunk()
    llama()
    dynseq()
    malformed()
