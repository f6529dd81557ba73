#!/usr/bin/env python3
"""Shared by the test model generators of tests/models (gen_*.py): writing a model and
its data sets with onnxruntime's outputs."""
import os

import onnx
import onnxruntime as ort
from onnx import numpy_helper


def save_with_sets(model, folder, inputs):
    """model.onnx in folder and, per input array K (fed as 'x'), test_data_set_K with
    it and onnxruntime's output 'y' on it."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path)
    for k, xv in enumerate(inputs):
        out = sess.run(None, {"x": xv})[0]
        ds = os.path.join(folder, "test_data_set_%d" % k)
        os.makedirs(ds, exist_ok=True)
        for name, arr in (("input_0", numpy_helper.from_array(xv, "x")),
                          ("output_0", numpy_helper.from_array(out, "y"))):
            with open(os.path.join(ds, name + ".pb"), "wb") as f:
                f.write(arr.SerializeToString())
