#!/usr/bin/env python3
"""XGBoost and LightGBM models as onnxmltools converts them (ai.onnx.ml), with goldens.

Classifiers (binary and three classes, zipmap off for LightGBM) and regressors of each,
trained on data with missing values (NaN: each tree's default direction), converted by
onnxmltools; LightGBM's classifiers declare their label output [1] whatever the batch.
tests/models-dyn checks each with one bundle bounded to 1..8 samples on data sets of 7
and 3 samples (the first holding a NaN).

    python3 tests/models-dyn/gen_gbm.py [OUTDIR]   (default: this folder)

writes OUTDIR/gbm_NAME (model.onnx, flags, test_data_set_0 and _1, outputs computed by
onnxruntime's CPU provider). Needs xgboost, lightgbm, onnxmltools, onnx and onnxruntime;
the data and the fits are seeded.
"""
import os
import sys
import warnings

import lightgbm as lgb
import numpy as np
import onnx
import onnxruntime as ort
import xgboost as xgb
from onnx import numpy_helper
from onnxmltools import convert_lightgbm, convert_xgboost
from onnxmltools.convert.common.data_types import FloatTensorType

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(0)


def main():
    warnings.filterwarnings("ignore")
    x = RNG.standard_normal((300, 6)).astype(np.float32)
    x[RNG.random(300) < 0.05, 2] = np.nan
    y2 = (np.nan_to_num(x[:, 0]) + x[:, 1] > 0).astype(int)
    y3 = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
    yr = (x[:, 0] * 2 + x[:, 3]).astype(np.float32)
    it = [("X", FloatTensorType([None, 6]))]
    xc = lambda m, y: convert_xgboost(m.fit(x, y), initial_types=it, target_opset=15)
    lc = lambda m, y: convert_lightgbm(m.fit(x, y), initial_types=it, target_opset=15,
                                       zipmap=False)
    models = {
        "gbm_xgb_c2": xc(xgb.XGBClassifier(n_estimators=8, max_depth=3), y2),
        "gbm_xgb_c3": xc(xgb.XGBClassifier(n_estimators=8, max_depth=3), y3),
        "gbm_xgb_r": xc(xgb.XGBRegressor(n_estimators=8, max_depth=3), yr),
        "gbm_lgb_c2": lc(lgb.LGBMClassifier(n_estimators=8, num_leaves=7, verbose=-1), y2),
        "gbm_lgb_c3": lc(lgb.LGBMClassifier(n_estimators=8, num_leaves=7, verbose=-1), y3),
        "gbm_lgb_r": lc(lgb.LGBMRegressor(n_estimators=8, num_leaves=7, verbose=-1), yr),
    }
    for name, model in models.items():
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        with open(os.path.join(d, "flags"), "w") as f:
            f.write("--input-shape X=1..8x6\n")
        s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        for k, n in enumerate((7, 3)):
            xt = RNG.standard_normal((n, 6)).astype(np.float32)
            if k == 0:
                xt[0, 2] = np.nan
            sd = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(sd, exist_ok=True)
            with open(os.path.join(sd, "input_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(xt, "X").SerializeToString())
            for i, (v, om) in enumerate(zip(s.run(None, {"X": xt}), s.get_outputs())):
                with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
                    f.write(numpy_helper.from_array(v, om.name).SerializeToString())
        print("wrote", d)


if __name__ == "__main__":
    main()
