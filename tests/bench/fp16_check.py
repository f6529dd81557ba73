#!/usr/bin/env python3
"""Accuracy of fp16 bundles against the fp32 goldens, measured with numpy.

An independent check of spyrun --check's metrics (cli/spyrun_metrics.c): each model is
compiled with `spyrec --precision=fp16`, run by `spyrun --output-dir` on
test_data_set_0's inputs, and its outputs (TensorProto files) are compared here, in
float64 with numpy, with the golden outputs of the data set:

    rel-l2   ||got - golden|| / ||golden||
    cosine   got . golden / (||got|| ||golden||)
    top1     per row of the last axis (when it has at least 2 elements): rows whose
             top-1 index agrees, counted on the rows whose golden top-1 and top-2 differ
             by at least 1% of |top-1| (the others are ambiguous)
    max abs  largest |got - golden|

A model passes with rel-l2 <= 0.02, cosine >= 0.999 and every counted row agreeing on
its top-1 (issue 11's bounds); integer and bool outputs must be equal. Models: every
folder of SHARED/models with a model.onnx and a test_data_set_0, and every folder of
--zoo (the materialised large models) that has them. Needs numpy and onnx (build/venv).
Exit status 1 when a model fails or cannot be compiled or run.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

REL_L2, COSINE = 2e-2, 0.999


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build folder (default build)")
    ap.add_argument("--shared", default="../shared", help="folder with models/ (../shared)")
    ap.add_argument("--zoo", default=None, help="folder of large models (build/zoo-large)")
    ap.add_argument("--model", action="append", default=[],
                    help="only the models whose folder name is this (repeatable)")
    ap.add_argument("--threads", type=int, default=0, help="spyrun --threads (0: default)")
    return ap.parse_args()


def models(args):
    """(name, folder) of every model to check."""
    roots = [os.path.join(args.shared, "models")]
    if args.zoo and os.path.isdir(args.zoo):
        roots.append(args.zoo)
    found = []
    for root in roots:
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if (os.path.isfile(os.path.join(d, "model.onnx"))
                    and os.path.isdir(os.path.join(d, "test_data_set_0"))
                    and (not args.model or name in args.model)):
                found.append((name, d))
    return found


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def top1(got, gold):
    """(agreeing rows, counted rows, ambiguous rows) over the last axis."""
    n = gold.shape[-1]
    g = got.reshape(-1, n)
    e = gold.reshape(-1, n)
    part = np.sort(e, axis=1)
    first, second = part[:, -1], part[:, -2]
    counted = (first - second) >= 0.01 * np.abs(first)
    agree = (np.argmax(g, axis=1) == np.argmax(e, axis=1)) & counted
    return int(agree.sum()), int(counted.sum()), int((~counted).sum())


def metrics(got, gold):
    """Row of figures for one float output, and whether it passes."""
    g = got.astype(np.float64).ravel()
    e = gold.astype(np.float64).ravel()
    d = g - e
    ne, ng = np.linalg.norm(e), np.linalg.norm(g)
    rel = np.linalg.norm(d) / ne if ne > 0 else (0.0 if not d.any() else np.inf)
    cos = float(g @ e / (ng * ne)) if ne > 0 and ng > 0 else (1.0 if ne == ng else 0.0)
    row = {"rel_l2": rel, "cosine": cos, "max_abs": float(np.abs(d).max()) if d.size else 0.0}
    ok = rel <= REL_L2 and cos >= COSINE
    if gold.ndim >= 1 and gold.shape[-1] >= 2 and gold.size:
        a, c, amb = top1(got.astype(np.float64), gold.astype(np.float64))
        row["top1"] = "%d/%d (%d ambiguous)" % (a, c, amb)
        ok = ok and a == c
    return row, ok


def run(cmd, log):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        log.append("$ " + " ".join(cmd) + "\n" + r.stdout[-2000:])
    return r.returncode == 0


def check_model(args, name, folder, tmp):
    """Compile, run and compare one model; returns (rows, ok)."""
    spyrec = os.path.join(args.build, "spyrec")
    spyrun = os.path.join(args.build, "spyrun")
    sbin = os.path.join(tmp, name + ".sbin")
    out = os.path.join(tmp, name + ".out")
    ds = os.path.join(folder, "test_data_set_0")
    log = []
    cmd = [spyrun, sbin, "--input-dir", ds, "--output-dir", out, "-q"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if not (run([spyrec, os.path.join(folder, "model.onnx"), "--precision=fp16", "-o", sbin],
                log) and run(cmd, log)):
        print("\n".join(log))
        return [], False
    rows, ok = [], True
    k = 0
    while os.path.exists(os.path.join(ds, "output_%d.pb" % k)):
        gname, gold = read_pb(os.path.join(ds, "output_%d.pb" % k))
        gotp = os.path.join(out, "output_%d.pb" % k)
        if not os.path.exists(gotp):
            print("%s: output %d '%s' missing" % (name, k, gname))
            return rows, False
        _, got = read_pb(gotp)
        if got.shape != gold.shape:
            print("%s: output %d shape %s, golden %s" % (name, k, got.shape, gold.shape))
            return rows, False
        if np.issubdtype(gold.dtype, np.floating):
            row, good = metrics(got, gold)
        else:
            good = bool(np.array_equal(got, gold))
            row = {"exact": good}
        row["output"] = "%d '%s'" % (k, gname)
        rows.append(row)
        ok = ok and good
        k += 1
    os.remove(sbin)
    return rows, ok


def main():
    args = parse_args()
    failed = 0
    print("%-18s %-28s %10s %12s %10s  %s" % ("model", "output", "rel-l2", "cosine", "max abs",
                                             "top1 (agree/counted)"))
    with tempfile.TemporaryDirectory(prefix="fp16check") as tmp:
        for name, folder in models(args):
            rows, ok = check_model(args, name, folder, tmp)
            for r in rows:
                if "exact" in r:
                    print("%-18s %-28s %s" % (name, r["output"], "equal" if r["exact"]
                                              else "DIFFERS"))
                else:
                    print("%-18s %-28s %10.3g %12.8f %10.3g  %s" % (
                        name, r["output"][:28], r["rel_l2"], r["cosine"], r["max_abs"],
                        r.get("top1", "-")))
            print("%-18s %s" % (name, "PASS" if ok else "FAIL"))
            failed += not ok
            sys.stdout.flush()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
