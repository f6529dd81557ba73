#!/usr/bin/env python3
"""Generate the view-store test model of `make check` (tests/models/viewstore).

Two places where a materialised RESHAPE (a move kernel) must store its result through
the view that an in-place consumer gives it, not densely:
  fold: MobileViT's unpatching, [4,16,64] -> Reshape [1,4,16,64] -> Transpose(0,3,2,1)
        -> Reshape [256,4,2,2] -> Transpose(0,2,1,3) -> Reshape [1,64,8,8] -> Conv 1x1;
        the first Reshape-of-transpose is materialised and the second Transpose would be
        done in place in its store order, which the move cannot express (fuse.c gives
        that transpose a kernel);
  cat:  Transpose(0,2,1) of a kernel result, Reshape [4,48] (materialised), Concat on
        axis 1 with a Sigmoid result, the concat done in place (the move stores into
        its column slice).
Fixed-seed weights; test_data_set_0 = random inputs and onnxruntime's outputs. Run in
build/venv (numpy, onnx, onnxruntime): build/venv/bin/python tests/models/gen_viewstore.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "viewstore")


def shape(name, dims):
    return numpy_helper.from_array(np.array(dims, np.int64), name)


def main():
    """Write model.onnx and test_data_set_0."""
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((48, 64, 1, 1)) * 0.2).astype(np.float32)
    inits = [shape("s1", [1, 4, 16, 64]), shape("s2", [256, 4, 2, 2]),
             shape("s3", [1, 64, 8, 8]), shape("s4", [4, 48]),
             numpy_helper.from_array(w, "w")]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "s1"], ["a"]),
             helper.make_node("Transpose", ["a"], ["b"], perm=[0, 3, 2, 1]),
             helper.make_node("Reshape", ["b", "s2"], ["c"]),
             helper.make_node("Transpose", ["c"], ["d"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["d", "s3"], ["e"]),
             helper.make_node("Conv", ["e", "w"], ["fold"]),
             helper.make_node("Relu", ["z"], ["zr"]),
             helper.make_node("Transpose", ["zr"], ["zt"], perm=[0, 2, 1]),
             helper.make_node("Reshape", ["zt", "s4"], ["zf"]),
             helper.make_node("Sigmoid", ["q"], ["qs"]),
             helper.make_node("Concat", ["zf", "qs"], ["k"], axis=1),
             helper.make_node("Relu", ["k"], ["cat"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16, 64]),
           helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 6, 8]),
           helper.make_tensor_value_info("q", TensorProto.FLOAT, [4, 16])]
    outs = [helper.make_tensor_value_info("fold", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("cat", TensorProto.FLOAT, None)]
    model = helper.make_model(helper.make_graph(nodes, "viewstore", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(HERE, "test_data_set_0"), exist_ok=True)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model, path)
    feeds = {"x": rng.standard_normal((4, 16, 64)).astype(np.float32),
             "z": rng.standard_normal((4, 6, 8)).astype(np.float32),
             "q": rng.standard_normal((4, 16)).astype(np.float32)}
    res = ort.InferenceSession(path).run(None, feeds)
    files = [("input_%d" % i, numpy_helper.from_array(v, k))
             for i, (k, v) in enumerate(feeds.items())]
    files += [("output_%d" % i, numpy_helper.from_array(v, n))
              for i, (n, v) in enumerate(zip(("fold", "cat"), res))]
    for name, arr in files:
        with open(os.path.join(HERE, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(arr.SerializeToString())


if __name__ == "__main__":
    main()
