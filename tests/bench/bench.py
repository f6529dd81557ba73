#!/usr/bin/env python3
"""Benchmark spyrec/spyrun against onnxruntime on the same machine, in the same run.

For each model (tests/models.list on ../shared/models, the shipped examples, and any
--model PATH given) prints one row:

    model  compile ms  spyrun ms  ort ms  spyrun/ort  device us  eff %

compile ms   wall time of `spyrec model.onnx -o x.sbin` (median of --compiles runs)
spyrun ms    host latency of one inference on the emulator: median of N runs after
             --warmup runs (spyrun --repeat N), emulator threads = host CPUs
ort ms       onnxruntime CPU latency on the same inputs, median of N runs after
             --warmup runs, intra-op threads = host CPUs
             (N: --repeat, or for a fast model as many as fill --budget-ms by
             onnxruntime's warm-up runs, at most 3000; the same N on both sides)
             Both in --rounds alternating rounds (onnxruntime, then spyrun right after
             it): the columns give the medians over the rounds, and spyrun/ort the
             median of the rounds' ratios, each taken under one moment's conditions of
             a shared host whose speed drifts over minutes
device us    modelled time of one inference on the accelerator (timing model)
eff %        modelled efficiency: the sum of the kernels' rooflines over the sum of their
             modelled times (the total row of `spyrun --profile`)
The last line is the geometric mean of spyrun/ort over the rows that have one.

Not a test: nothing here asserts on time. Needs numpy, onnx and onnxruntime (make bench
creates build/venv with them).
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build folder (default build)")
    ap.add_argument("--shared", default="../shared", help="folder with models/ (../shared)")
    ap.add_argument("--list", default="tests/models.list", help="model list file")
    ap.add_argument("--model", action="append", default=[],
                    help="extra model.onnx (its test_data_set_0 beside it); repeatable")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs, at least (default 20)")
    ap.add_argument("--budget-ms", type=float, default=300.0,
                    help="more timed runs for a fast model, up to this much time per side "
                         "(estimated from onnxruntime's warm-up runs; default 300, at most "
                         "3000 runs): a median of 20 runs of 0.05 ms moved by half on a "
                         "shared host")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up runs (default 3)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating onnxruntime / spyrun rounds per model (default 3)")
    ap.add_argument("--compiles", type=int, default=3, help="compile runs (default 3)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    return ap.parse_args()


def list_models(args):
    """(name, model path, data dir) for every model to measure."""
    out = []
    ex = os.path.join("examples", "models")
    for name in sorted(os.listdir(ex)) if os.path.isdir(ex) else []:
        path = os.path.join(ex, name, "model.onnx")
        if os.path.exists(path):
            out.append((name, path))
    models = os.path.join(args.shared, "models")
    if os.path.isdir(models):
        with open(args.list) as f:
            for line in f:
                entry = line.split("#")[0].split()
                if not entry:
                    continue
                name = entry[0]
                path = os.path.join(models, name if "/" in name else os.path.join(name, "model.onnx"))
                out.append((name, path))
    else:
        print(f"{args.shared} not found: only the shipped examples are measured", file=sys.stderr)
    for path in args.model:
        out.append((os.path.basename(os.path.dirname(os.path.abspath(path))), path))
    return [(n, p, os.path.join(os.path.dirname(p), "test_data_set_0")) for n, p in out]


def compile_model(args, model, sbin):
    """Compile; returns the median wall time in ms. Raises on failure."""
    times = []
    for _ in range(max(1, args.compiles)):
        t0 = time.perf_counter()
        r = subprocess.run([os.path.join(args.build, "spyrec"), model, "-o", sbin],
                           capture_output=True, text=True)
        times.append((time.perf_counter() - t0) * 1e3)
        if r.returncode != 0:
            raise RuntimeError("spyrec failed: " + (r.stderr.strip().splitlines() or ["?"])[0])
    return statistics.median(times)


def run_spyrun(args, sbin, data, repeat=None):
    """(median host latency ms, modelled device us) from spyrun --repeat (repeat, else
    args.repeat, timed runs)."""
    r = subprocess.run([os.path.join(args.build, "spyrun"), sbin, "--input-dir", data, "-q",
                        "--repeat", str(repeat or args.repeat), "--warmup", str(args.warmup)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("spyrun failed: " + (r.stderr.strip().splitlines() or ["?"])[0])
    lat = re.search(r"host latency: median ([0-9.]+) ms", r.stdout)
    dev = re.search(r"modelled device time: ([0-9.]+) us", r.stdout)
    if not lat:
        raise RuntimeError("spyrun printed no latency")
    return float(lat.group(1)), float(dev.group(1)) if dev else float("nan")


def run_profile(args, sbin, data):
    """Modelled efficiency in percent (the total row of one `spyrun --profile` run)."""
    r = subprocess.run([os.path.join(args.build, "spyrun"), sbin, "--input-dir", data, "-q",
                        "--profile"], capture_output=True, text=True)
    m = re.search(r"^total \(\d+ kernels?\)(?:\s+[0-9.]+){4}\s+([0-9.]+)%", r.stdout, re.M)
    return float(m.group(1)) if m else float("nan")


def geomean(values):
    """Geometric mean of the positive values (None when there is none)."""
    v = [x for x in values if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def timed_runs(args, est_ms):
    """Timed runs for a model whose one run takes about est_ms: args.repeat, or more up
    to args.budget_ms of runs (when the caller has it), at most 3000."""
    budget = getattr(args, "budget_ms", 0) or 0
    more = int(budget / est_ms) if est_ms > 0 else 0
    return max(args.repeat, min(3000, more))


def run_ort(args, model, data, stats=None):
    """Median onnxruntime latency in ms on the inputs of data/input_K.pb (intra-op threads:
    args.threads when the caller has one, else the host CPUs); timed_runs of them, after
    the warm-up runs that estimate one (their number in stats["runs"] when given)."""
    import numpy as np  # noqa: F401  (onnxruntime needs it)
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = getattr(args, "threads", None) or os.cpu_count() or 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, inp in enumerate(sess.get_inputs()):
        t = onnx.TensorProto()
        with open(os.path.join(data, f"input_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[inp.name] = numpy_helper.to_array(t)
    warm = []
    for _ in range(max(1, args.warmup)):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        warm.append((time.perf_counter() - t0) * 1e3)
    runs = timed_runs(args, statistics.median(warm))
    if stats is not None:
        stats["runs"] = runs
    times = []
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def write_json(path, data):
    """Write data as indented JSON to path (nothing when path is None)."""
    if path:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)


def latency_rounds(args, ort_model, sbin, data):
    """args.rounds rounds of onnxruntime's median latency, then spyrun's over the same
    number of runs right after it: dict of ort_ms and spyrun_ms (the medians over the
    rounds), ratio (the median of the rounds' spyrun / ort: each compares the two under
    the conditions of one moment of a shared host whose speed drifts) and device_us."""
    ort, sp, ratios, dev = [], [], [], None
    for _ in range(max(1, args.rounds)):
        stats = {}
        o = run_ort(args, ort_model, data, stats)
        t, dev = run_spyrun(args, sbin, data, stats["runs"])
        ort.append(o)
        sp.append(t)
        ratios.append(t / o)
    return {"ort_ms": statistics.median(ort), "spyrun_ms": statistics.median(sp),
            "ratio": statistics.median(ratios), "device_us": dev}


def fmt(v, spec):
    """v formatted by spec ("10.3f"), or a right-aligned "-" when missing."""
    return "-".rjust(int(spec.split(".")[0])) if v is None else format(v, spec)


def main():
    args = parse_args()
    rows = []
    models = list_models(args)
    print(f"host: {os.cpu_count()} CPUs; {args.repeat} timed runs (more for a fast model: "
          f"up to {args.budget_ms:g} ms of them, the same number on both sides) after "
          f"{args.warmup} warm-up runs")
    head = f"{'model':<24} {'compile ms':>10} {'spyrun ms':>10} {'ort ms':>9} {'spyrun/ort':>10} {'device us':>11} {'eff %':>6}"
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, data in models:
            row = {"model": name, "compile_ms": None, "spyrun_ms": None, "ort_ms": None,
                   "ratio": None, "device_us": None, "eff_pct": None, "error": None}
            sbin = os.path.join(tmp, name.replace("/", "_") + ".sbin")
            # a .pt2 entry is compared with the ONNX export of the same module beside it
            ort_model = model if model.endswith(".onnx") else os.path.join(
                os.path.dirname(model), "model.onnx")
            try:
                row["compile_ms"] = compile_model(args, model, sbin)
                row.update(latency_rounds(args, ort_model, sbin, data))
                row["eff_pct"] = run_profile(args, sbin, data)
            except Exception as e:  # one model failing must not stop the table
                row["error"] = str(e)
            rows.append(row)
            line = (f"{name:<24} {fmt(row['compile_ms'], '10.1f')} {fmt(row['spyrun_ms'], '10.3f')}"
                    f" {fmt(row['ort_ms'], '9.3f')} {fmt(row['ratio'], '10.2f')}"
                    f" {fmt(row['device_us'], '11.1f')} {fmt(row['eff_pct'], '6.1f')}")
            if row["error"]:
                line += f"  ({row['error']})"
            print(line, flush=True)
    g = geomean([r["ratio"] for r in rows])
    print(f"geometric mean of spyrun/ort over {sum(1 for r in rows if r['ratio'])} models: "
          f"{fmt(g, '5.2f')}")
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
