#!/usr/bin/env python3
"""QDQ (int8) versions of the large models, made by onnxruntime's quantize_static.

For each NAME given (default: resnet50 bert_base), reads ZOO/NAME/model.onnx (the
materialised fp32 model) and writes OUT/NAME/model.onnx: onnxruntime.quantization.
quantize_static in QDQ format, per-channel symmetric int8 weights, activations with
onnxruntime's defaults (int8 with a zero point, min-max calibration). The calibration set
is CALIB_N inputs generated here with a fixed seed, shaped and distributed like the
model's test input but never equal to it (images: normal noise with the test input's
mean and spread; token ids: uniform over the test input's id range, attention masks of
ones with a random padded tail).

OUT/NAME/test_data_set_0 holds the test input (copied) and, as golden, onnxruntime's
output of the QDQ model on it, run as the graph says (graph optimizations off; its fused
QLinearConv/QLinearAdd/... kernels round differently: on resnet50 up to two output
steps from the graph's result, on bert_base as far as 0.24), so `spyrun --check`
compares the int8 bundle with onnxruntime's int8 result. The fp32 goldens stay in
ZOO/NAME/test_data_set_0.
Needs numpy, onnx, onnxruntime (build/venv).
"""
import argparse
import glob
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

CALIB_N = 8


def read_inputs(model_dir, model):
    """The test input of model_dir/test_data_set_0 as {graph input name: array}."""
    names = [i.name for i in model.graph.input]
    files = sorted(glob.glob(os.path.join(model_dir, "test_data_set_0", "input_*.pb")))
    return {names[k]: numpy_helper.to_array(onnx.load_tensor(f)) for k, f in enumerate(files)}


def calib_inputs(test, seed):
    """One calibration input like `test` (dict of arrays), different from it."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, t in test.items():
        if t.dtype.kind == "f":
            out[name] = rng.normal(t.mean(), t.std(), t.shape).astype(t.dtype)
        elif "mask" in name:
            m = np.ones(t.shape, t.dtype)
            keep = int(rng.integers(t.shape[-1] // 2, t.shape[-1] + 1))
            m[..., keep:] = 0
            out[name] = m
        else:
            out[name] = rng.integers(int(t.min()), int(t.max()) + 1, t.shape).astype(t.dtype)
    return out


class Reader(CalibrationDataReader):
    """The calibration set for quantize_static."""

    def __init__(self, test):
        self.items = iter([calib_inputs(test, 1000 + i) for i in range(CALIB_N)])

    def get_next(self):
        return next(self.items, None)


def make(zoo, out, name):
    """Quantize ZOO/name into OUT/name with its onnxruntime golden."""
    src = os.path.join(zoo, name)
    dst = os.path.join(out, name)
    model = onnx.load(os.path.join(src, "model.onnx"), load_external_data=False)
    test = read_inputs(src, model)
    os.makedirs(dst, exist_ok=True)
    tmp = os.path.join(dst, "model.tmp.onnx")
    quantize_static(os.path.join(src, "model.onnx"), tmp, Reader(test),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    os.replace(tmp, os.path.join(dst, "model.onnx"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(os.path.join(dst, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    res = sess.run(None, test)
    ds = os.path.join(dst, "test_data_set_0")
    shutil.rmtree(ds, ignore_errors=True)
    os.makedirs(ds)
    for f in sorted(glob.glob(os.path.join(src, "test_data_set_0", "input_*.pb"))):
        shutil.copy(f, ds)
    for k, (o, r) in enumerate(zip(sess.get_outputs(), res)):
        t = numpy_helper.from_array(np.asarray(r), o.name)
        with open(os.path.join(ds, "output_%d.pb" % k), "wb") as fh:
            fh.write(t.SerializeToString())
    print("%s: %s (%d nodes)" % (name, os.path.join(dst, "model.onnx"),
                                 len(onnx.load(os.path.join(dst, "model.onnx")).graph.node)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", required=True, help="folder of the materialised fp32 models")
    ap.add_argument("--out", required=True, help="folder for the QDQ models")
    ap.add_argument("names", nargs="*", default=["resnet50", "bert_base"])
    a = ap.parse_args()
    for n in a.names:
        if not os.path.exists(os.path.join(a.zoo, n, "model.onnx")):
            sys.exit("%s: no %s (run make zoo-large)" % (n, os.path.join(a.zoo, n, "model.onnx")))
        make(a.zoo, a.out, n)


if __name__ == "__main__":
    main()
