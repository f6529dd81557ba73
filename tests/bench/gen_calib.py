#!/usr/bin/env python3
"""gen_calib.py: calibration sets for spyrec --precision=int8 --calibrate (make calib-data).

For every model folder given (NAME/model.onnx with NAME/test_data_set_0/input_K.pb), writes
OUT/NAME/set_S/input_K.pb for S < --sets: inputs of the test input's dtype and shape but
not the test input. Float inputs are random normal values with the test input's mean and
standard deviation per channel (axis 1 when the input has rank 4, else per tensor);
integer inputs holding only 0 and 1 (attention masks) are copied (they say which tokens
exist, not what they are); other integer inputs (token ids, positions) are random in the
test input's [min, max] range, except inputs whose values are 0, 1, 2, ... along the last
axis (position ids), which are kept. Seeded: the same files on every machine.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import numpy_helper


def make_input(x, rng):
    """One calibration tensor shaped and typed like the test input x."""
    if np.issubdtype(x.dtype, np.floating):
        if x.ndim == 4:
            axes = (0, 2, 3)
            mean = x.mean(axis=axes, keepdims=True)
            std = x.std(axis=axes, keepdims=True)
        else:
            mean, std = x.mean(), x.std()
        return (rng.standard_normal(x.shape) * std + mean).astype(x.dtype)
    if np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_:
        flat = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
        if x.size == 0 or set(np.unique(x).tolist()) <= {0, 1}:
            return x.copy()
        ar = np.arange(flat.shape[1]) + flat[:, :1]
        if np.array_equal(flat, ar):
            return x.copy()
        lo, hi = int(x.min()), int(x.max())
        return rng.integers(lo, hi + 1, size=x.shape).astype(x.dtype)
    return x.copy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sets", type=int, default=8)
    ap.add_argument("models", nargs="+", help="model folders")
    a = ap.parse_args()
    for d in a.models:
        name = os.path.basename(os.path.normpath(d))
        tdir = os.path.join(d, "test_data_set_0")
        k = 0
        tests = []
        while os.path.exists(os.path.join(tdir, f"input_{k}.pb")):
            t = onnx.TensorProto()
            with open(os.path.join(tdir, f"input_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            tests.append((t.name, numpy_helper.to_array(t)))
            k += 1
        seed = sum(name.encode())
        for s in range(a.sets):
            rng = np.random.default_rng(seed * 1000 + s)
            sd = os.path.join(a.out, name, f"set_{s}")
            os.makedirs(sd, exist_ok=True)
            for k, (tname, x) in enumerate(tests):
                t = numpy_helper.from_array(make_input(x, rng), tname)
                with open(os.path.join(sd, f"input_{k}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
        print(f"{name}: {a.sets} calibration sets in {os.path.join(a.out, name)}")


if __name__ == "__main__":
    main()
