#!/usr/bin/env python3
"""scikit-learn models as skl2onnx exports them (ai.onnx.ml domain), with goldens.

skl2onnx writes a batch dimension with no size and imports the default domain twice;
the models here are regressors (TreeEnsembleRegressor: a random forest whose input holds
a NaN, which the trees send down their false branches, gradient boosting, a two-target
decision tree; a Scaler -> Normalizer -> LinearRegressor pipeline) and classifiers with
integer labels and probabilities (zipmap off; TreeEnsembleClassifier: forests and
boosting, binary (one score column) and with three classes; LinearClassifier: logistic
regression, binary and three classes), and preprocessing: a ColumnTransformer of
SimpleImputer (NaN), StandardScaler and OneHotEncoder (an unknown category) before a
logistic regression (ArrayFeatureExtractor, Imputer, Scaler, OneHotEncoder, Concat,
LinearClassifier), a median imputer before a ridge regression, support vector regression
with an RBF and a polynomial kernel (SVMRegressor) and support vector classification
(SVMClassifier: RBF kernel binary, linear kernel three classes with skl2onnx's
one-vs-rest scoring graph), and a fully grown decision tree of over 4000 leaves, too large
for the matrix form, so that its walk form (onnx_ml_walk.c) is tested. tests/models-dyn checks
each with one bundle bounded to 1..8 samples on data sets of 7 and 3 samples.

    python3 tests/models-dyn/gen_sklearn.py [OUTDIR]   (default: this folder)

writes OUTDIR/skl_NAME (model.onnx, flags, test_data_set_0 and _1, outputs computed by
onnxruntime's CPU provider). Needs scikit-learn, skl2onnx, onnx and onnxruntime; the data
and the fits are seeded.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from skl2onnx import to_onnx
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeRegressor

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(0)


def main():
    x = RNG.standard_normal((200, 6)).astype(np.float32)
    y = (x[:, 0] * 2 + np.sin(x[:, 1]) + x[:, 2] * x[:, 3]).astype(np.float32)
    y2 = np.stack([y, x[:, 4] - x[:, 5]], 1)
    models = {
        "skl_forest": RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(x, y),
        "skl_boosting": GradientBoostingRegressor(n_estimators=20, max_depth=3,
                                                  random_state=0).fit(x, y),
        "skl_tree2": DecisionTreeRegressor(max_depth=6, random_state=0).fit(x, y2),
        "skl_linear": make_pipeline(StandardScaler(), Normalizer(), LinearRegression()).fit(x, y),
    }
    y2c = (x[:, 0] + x[:, 2] > 0).astype(int)
    y3c = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
    models.update({
        "skl_forest_c2": RandomForestClassifier(n_estimators=5, max_depth=4,
                                                random_state=0).fit(x, y2c),
        "skl_boosting_c2": GradientBoostingClassifier(n_estimators=10, max_depth=2,
                                                      random_state=0).fit(x, y2c),
        "skl_boosting_c3": GradientBoostingClassifier(n_estimators=10, max_depth=2,
                                                      random_state=0).fit(x, y3c),
        "skl_logistic_c2": LogisticRegression().fit(x, y2c),
        "skl_logistic_c3": LogisticRegression().fit(x, y3c),
    })
    xp = x.copy()                                  # a categorical column, missing values
    xp[:, 3] = RNG.integers(0, 4, len(xp)).astype(np.float32)
    xp[RNG.random(len(xp)) < 0.1, 1] = np.nan
    yp = (xp[:, 0] + (xp[:, 3] == 2) > 0.3).astype(int)
    ct = ColumnTransformer([("num", make_pipeline(SimpleImputer(strategy="mean"),
                                                  StandardScaler()), [0, 1, 2, 4, 5]),
                            ("cat", OneHotEncoder(handle_unknown="ignore"), [3])])
    prep = Pipeline([("ct", ct), ("lr", LogisticRegression())]).fit(xp, yp)
    models.update({
        "skl_prep_c2": prep,
        "skl_impute": make_pipeline(SimpleImputer(strategy="median"), Ridge()).fit(xp, y),
        "skl_svr_rbf": SVR(kernel="rbf", C=2.0).fit(x, y),
        "skl_svr_poly": SVR(kernel="poly", degree=3).fit(x, y),
        "skl_svc_c2": SVC().fit(x, y2c),
        "skl_svc_c3": SVC(kernel="linear").fit(x, y3c),
    })
    xb = RNG.standard_normal((4500, 6)).astype(np.float32)        # one leaf per sample
    models["skl_deep_tree"] = DecisionTreeRegressor(random_state=0).fit(
        xb, (xb[:, 0] * 2 + np.sin(3 * xb[:, 1]) + RNG.standard_normal(4500) * 0.1).astype(np.float32))
    for name, model in models.items():
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        clf = model.steps[-1][1] if isinstance(model, Pipeline) else model
        onnx.save(to_onnx(model, x[:1], target_opset={"": 15, "ai.onnx.ml": 3},
                          options={id(clf): {"zipmap": False}} if "_c" in name else None),
                  os.path.join(d, "model.onnx"))
        with open(os.path.join(d, "flags"), "w") as f:
            f.write("--input-shape X=1..8x6\n")
        s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        for k, n in enumerate((7, 3)):
            xt = RNG.standard_normal((n, 6)).astype(np.float32)
            if name in ("skl_forest", "skl_prep_c2", "skl_impute"):
                xt[0, 1] = np.nan
            if name in ("skl_prep_c2", "skl_impute"):
                xt[:, 3] = RNG.integers(0, 5, n)        # category 4 was never seen
            sd = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(sd, exist_ok=True)
            meta = s.get_inputs()[0]
            with open(os.path.join(sd, "input_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(xt, meta.name).SerializeToString())
            for i, (v, om) in enumerate(zip(s.run(None, {meta.name: xt}), s.get_outputs())):
                with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
                    f.write(numpy_helper.from_array(v, om.name).SerializeToString())
        print("wrote", d)


if __name__ == "__main__":
    main()
