#!/usr/bin/env python3
"""Generate tests/models-dyn/msft_gqa_past: onnxruntime's GroupQueryAttention decoding one
token over a KV cache whose length is a bounded dynamic dimension (--dim past=1..7),
for the dynamic-model tests of `make check`.

Two GQA nodes (com.microsoft) read one packed qkv [2, 1, 128] and the past keys and
values [2, 2, past, 16]: one with interleaved rotary embeddings (cos/sin caches [16, 8])
and a logit softcap, one with a local window of 4 and its own scale; seqlens_k differs
per batch row in the first. The decomposition appends the new token to the past by a
Pad that the attention then reads along the symbolic axis (passes/symdim.c
prop_unpadded: the pad's prefix, past + 1). Data sets at past 7, 5, 3 and 1
(onnxruntime's outputs). Needs onnx, onnxruntime and numpy:

    python3 tests/models-dyn/gen_gqa_past.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "msft_gqa_past")


def model():
    """The two-node graph (see the top of the file)."""
    pos = np.arange(16)[:, None] / (10000 ** (np.arange(8)[None, :] / 8))
    inits = [numpy_helper.from_array(np.cos(pos).astype(np.float32), "cos"),
             numpy_helper.from_array(np.sin(pos).astype(np.float32), "sin")]
    ins = ["qkv", "", "", "past_key", "past_value"]
    nodes = [
        helper.make_node("GroupQueryAttention", ins + ["seqlens_k", "total", "cos", "sin"],
                         ["y1", "present_key1", "present_value1"], domain="com.microsoft",
                         num_heads=4, kv_num_heads=2, do_rotary=1, rotary_interleaved=1,
                         softcap=2.0),
        helper.make_node("GroupQueryAttention", ins + ["seqlens_padded", "total"],
                         ["y2", "present_key2", "present_value2"], domain="com.microsoft",
                         num_heads=4, kv_num_heads=2, local_window_size=4, scale=0.2),
    ]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("qkv", f, [2, 1, 128]),
              helper.make_tensor_value_info("past_key", f, [2, 2, "past", 16]),
              helper.make_tensor_value_info("past_value", f, [2, 2, "past", 16]),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [2]),
              helper.make_tensor_value_info("seqlens_padded", TensorProto.INT32, [2]),
              helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    outputs = [helper.make_tensor_value_info(n, f, None)
               for n in ("y1", "present_key1", "present_value1", "y2", "present_key2",
                         "present_value2")]
    graph = helper.make_graph(nodes, "gqa", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


def main():
    os.makedirs(HERE, exist_ok=True)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model(), path)
    with open(os.path.join(HERE, "flags"), "w") as f:
        f.write("--dim past=1..7\n")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for k, past in enumerate((7, 5, 3, 1)):
        feeds = {"qkv": rng.standard_normal((2, 1, 128)).astype(np.float32),
                 "past_key": rng.standard_normal((2, 2, past, 16)).astype(np.float32),
                 "past_value": rng.standard_normal((2, 2, past, 16)).astype(np.float32),
                 "seqlens_k": np.array([past, max(past - 1, 1)], np.int32),
                 "seqlens_padded": np.array([past, past], np.int32),
                 "total": np.array(past + 1, np.int32)}
        d = os.path.join(HERE, "test_data_set_%d" % k)
        os.makedirs(d, exist_ok=True)
        for i, meta in enumerate(sess.get_inputs()):
            onnx.save_tensor(numpy_helper.from_array(feeds[meta.name], meta.name),
                             os.path.join(d, "input_%d.pb" % i))
        for i, (o, meta) in enumerate(zip(sess.run(None, feeds), sess.get_outputs())):
            onnx.save_tensor(numpy_helper.from_array(o, meta.name),
                             os.path.join(d, "output_%d.pb" % i))
    print("wrote", HERE)


if __name__ == "__main__":
    main()
