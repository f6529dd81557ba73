#!/usr/bin/env python3
"""Generate the shipped example model, examples/models/tiny_cnn.

A small image classifier (Conv, Relu, MaxPool, Conv, GlobalAveragePool, Flatten, Gemm,
Softmax; ONNX opset 13) with deterministic random weights, plus one golden test case
in the ONNX model-zoo layout:

    tiny_cnn/model.onnx
    tiny_cnn/test_data_set_0/input_0.pb    x      f32[2,3,32,32]
    tiny_cnn/test_data_set_0/output_0.pb   probs  f32[2,10]   (computed by onnxruntime)

Needs the Python packages onnx, onnxruntime and numpy:
    python3 -m venv build/venv && build/venv/bin/pip install onnx onnxruntime numpy
    build/venv/bin/python examples/gen_tiny_cnn.py [OUTDIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240611
BATCH, CIN, SIZE = 2, 3, 32
C1, C2, CLASSES = 8, 16, 10


def weights(rng, shape, fan_in):
    """He-style normal weights, float32."""
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def build_model(rng):
    """The tiny CNN as an onnx.ModelProto."""
    inits = [
        numpy_helper.from_array(weights(rng, (C1, CIN, 3, 3), CIN * 9), "conv1.weight"),
        numpy_helper.from_array((rng.standard_normal(C1) * 0.1).astype(np.float32), "conv1.bias"),
        numpy_helper.from_array(weights(rng, (C2, C1, 3, 3), C1 * 9), "conv2.weight"),
        numpy_helper.from_array((rng.standard_normal(C2) * 0.1).astype(np.float32), "conv2.bias"),
        numpy_helper.from_array(weights(rng, (CLASSES, C2), C2), "fc.weight"),
        numpy_helper.from_array((rng.standard_normal(CLASSES) * 0.1).astype(np.float32), "fc.bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, CIN, SIZE, SIZE])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [BATCH, CLASSES])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="spyrec-examples",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def save_tensor(arr, name, path):
    """Write one ONNX TensorProto file."""
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "models", "tiny_cnn")
    rng = np.random.default_rng(SEED)
    model = build_model(rng)
    x = rng.standard_normal((BATCH, CIN, SIZE, SIZE)).astype(np.float32)

    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    (probs,) = sess.run(["probs"], {"x": x})

    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    save_tensor(x, "x", os.path.join(data, "input_0.pb"))
    save_tensor(probs, "probs", os.path.join(data, "output_0.pb"))
    print(f"wrote {out}: model.onnx ({os.path.getsize(os.path.join(out, 'model.onnx'))} bytes),"
          f" test_data_set_0/input_0.pb, output_0.pb; argmax {probs.argmax(axis=1).tolist()}")


if __name__ == "__main__":
    main()
