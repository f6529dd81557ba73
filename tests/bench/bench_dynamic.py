#!/usr/bin/env python3
"""Dynamic-shape bundles against static compiles of the same size, in the same run.

For each model of tests/models-dynamic.list (../shared/models-dynamic) the model is
compiled ONCE with the flags of that list (bounds, size buckets), and for each size
(every test_data_set_K shape, the smallest size in the bounds, and sizes just above the
box of two size buckets, which run in the next larger box) a static bundle of exactly
that size is compiled (spyrec --input-shape). One row per (model, size):

    model  size  bucket  host ms dyn / static / ratio  modelled us dyn / static / ratio

host ms      the emulator's median host latency (spyrun --repeat N), the dynamic and
             the static bundle alternating, best of --rounds medians each
modelled us  the modelled device time of one inference (spyrun's "modelled device
             time"; for the dynamic bundle: of the bucket that ran, with its guards)
A '*' marks a ratio over 1.3 (the aim: within 1.3x of a static compile).

Sizes without a data set run on generated inputs (token ids drawn from the ids of the
model's first data set, masks of ones, images of normal noise; seeded). Results are not
checked here: make check checks every data set at every size mechanism.
Not a test: nothing here asserts on time. Needs numpy and onnx (build/venv).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build folder (default build)")
    ap.add_argument("--shared", default="../shared", help="folder with models-dynamic/")
    ap.add_argument("--list", default="tests/models-dynamic.list", help="model list file")
    ap.add_argument("--only", action="append", default=[], help="only this list entry")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--threads", type=int, default=0,
                    help="spyrun --threads (default: spyrun's, one per CPU); 1 is steadier "
                         "on a loaded machine")
    ap.add_argument("--budget-ms", type=float, default=600.0,
                    help="host time per timed spyrun call, sets --repeat (default 600)")
    return ap.parse_args()


def list_entries(path, only):
    """(entry, model name, spyrec flags) per line of the list (NAME or NAME:LABEL)."""
    out = []
    with open(path) as f:
        for line in f:
            words = line.split("#")[0].split()
            if not words or (only and words[0] not in only):
                continue
            out.append((words[0], words[0].split(":")[0], words[1:]))
    return out


def run(cmd):
    """Run cmd; its stdout, or exit naming the command on failure."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_dynamic: %s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode,
                                                          p.stdout, p.stderr))
    return p.stdout


class Model:
    """A model's graph inputs: names, dims (int or dim_param name), dtypes."""

    def __init__(self, path):
        m = onnx.load(path, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        self.inputs = []
        for v in m.graph.input:
            if v.name in inits:
                continue
            t = v.type.tensor_type
            dims = [d.dim_param if d.dim_param else d.dim_value for d in t.shape.dim]
            self.inputs.append((v.name, dims, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)))

    def syms(self):
        """The symbols in order of first appearance."""
        out = []
        for _, dims, _ in self.inputs:
            for d in dims:
                if isinstance(d, str) and d not in out:
                    out.append(d)
        return out

    def shape(self, i, size):
        return [size[d] if isinstance(d, str) else d for d in self.inputs[i][1]]

    def size_of(self, i, shape):
        """Symbol values read from input i's shape."""
        return {d: s for d, s in zip(self.inputs[i][1], shape) if isinstance(d, str)}


def bounds(flags):
    """{symbol: (min, max)} from --dim NAME=MAX / NAME=MIN..MAX flags."""
    out = {}
    for i, f in enumerate(flags):
        if f == "--dim":
            name, rng = flags[i + 1].split("=")
            lo, _, hi = rng.rpartition("..")
            out[name] = (int(lo) if lo else 1, int(hi))
    return out


def data_sets(model_dir, model):
    """(label, {symbol: size}, input dir) per test_data_set_K."""
    out = []
    for d in sorted(os.listdir(model_dir)):
        if d.startswith("test_data_set_"):
            t = onnx.TensorProto()
            with open(os.path.join(model_dir, d, "input_0.pb"), "rb") as f:
                t.ParseFromString(f.read())
            out.append((d[len("test_data_set_"):], model.size_of(0, list(t.dims)),
                        os.path.join(model_dir, d)))
    return out


def bucket_boxes(spydump_out, model):
    """The buckets' boxes ({symbol: max}) from spydump's size-bucket table."""
    out = []
    for line in spydump_out.splitlines():
        m = re.match(r"\s+\d+\s+(\S+) (\d+(?:x\d+)*)[, ].*\s\d+\s+\d+\s+[\d.]+$", line)
        if m and m.group(1) == model.inputs[0][0]:
            out.append(model.size_of(0, [int(x) for x in m.group(2).split("x")]))
    return out


def chosen_sizes(model, bnd, sets, boxes):
    """Data sets, the smallest size, and just above the boxes of two buckets."""
    sizes = [("set%s" % k, s, d) for k, s, d in sets]
    sizes.append(("min", {s: lo for s, (lo, _) in bnd.items()}, None))
    for box in [boxes[len(boxes) // 2], boxes[(3 * len(boxes)) // 4]] if boxes else []:
        above = dict(box)
        for s in reversed(model.syms()):  # one past the box along the last symbol that can
            if above[s] < bnd[s][1]:
                above[s] += 1
                break
        sizes.append(("above", above, None))
    return sizes


def gen_inputs(model, size, ref_dir, out_dir):
    """Seeded inputs of size for every graph input; returns spyrun --input flags."""
    rng = np.random.default_rng(0)
    flags = []
    for i, (name, _, dt) in enumerate(model.inputs):
        shape = model.shape(i, size)
        ref = numpy_helper.to_array(onnx.load_tensor(os.path.join(ref_dir, "input_%d.pb" % i)))
        if np.issubdtype(dt, np.floating):
            a = rng.standard_normal(shape).astype(dt)
        elif ref.min() == ref.max():
            a = np.full(shape, ref.flat[0], dtype=dt)  # a mask of ones
        else:
            a = rng.integers(int(ref.min()), int(ref.max()) + 1, size=shape).astype(dt)
        path = os.path.join(out_dir, "in%d.npy" % i)
        np.save(path, a)
        flags += ["--input", "%s=%s" % (name, path)]
    return flags


def spyrun_once(args, sbin, inflags, repeat):
    """(median host ms, modelled us, bucket text) of one spyrun --repeat call."""
    threads = ["--threads", str(args.threads)] if args.threads else []
    out = run([os.path.join(args.build, "spyrun"), sbin, "-q", "--repeat", str(repeat)]
              + threads + inflags)
    ms = float(re.search(r"host latency: median ([\d.]+) ms", out).group(1))
    m = re.search(r"modelled device time: ([\d.]+) us.*?(?:in size bucket \d+ of \d+ \((.*)\))?$",
                  out, re.M)
    return ms, float(m.group(1)), (m.group(2) or "bounds")


def measure(args, dyn, stat, inflags):
    """Alternating best-of medians of the dynamic and the static bundle."""
    probe = spyrun_once(args, dyn, inflags, 1)[0]
    repeat = max(3, min(40, int(args.budget_ms / max(probe, 0.01))))
    best = {}
    for _ in range(args.rounds):
        for key, sbin in (("dyn", dyn), ("stat", stat)):
            r = spyrun_once(args, sbin, inflags, repeat)
            if key not in best or r[0] < best[key][0]:
                best[key] = (r[0], r[1], r[2])
    return best, repeat


def flag(r):
    return "%.2f%s" % (r, "*" if r > 1.3 else " ")


def bench_entry(args, tmp, entry, name, flags):
    """Compile once, then one row per size."""
    mdir = os.path.join(args.shared, "models-dynamic", name)
    path = os.path.join(mdir, "model.onnx")
    model = Model(path)
    dyn = os.path.join(tmp, entry.replace(":", "_") + ".sbin")
    run([os.path.join(args.build, "spyrec"), path, "-o", dyn] + flags)
    bnd = bounds(flags)
    sets = data_sets(mdir, model)
    boxes = bucket_boxes(run([os.path.join(args.build, "spydump"), dyn]), model)
    static_flags = [f for i, f in enumerate(flags)
                    if not (f.startswith("--dim") or (i and flags[i - 1] == "--dim"))]
    for label, size, ddir in chosen_sizes(model, bnd, sets, boxes):
        shape = model.shape(0, size)
        stat = os.path.join(tmp, "static.sbin")
        shapes = []
        for i, (iname, _, _) in enumerate(model.inputs):
            shapes += ["--input-shape", "%s=%s" % (iname, "x".join(map(str, model.shape(i, size))))]
        run([os.path.join(args.build, "spyrec"), path, "-o", stat] + static_flags + shapes)
        if ddir:
            inflags = ["--input-dir", ddir]
        else:
            gdir = tempfile.mkdtemp(dir=tmp)
            inflags = gen_inputs(model, size, sets[0][2], gdir)
        best, repeat = measure(args, dyn, stat, inflags)
        hd, hs, md, ms = best["dyn"][0], best["stat"][0], best["dyn"][1], best["stat"][1]
        print("%-18s %-6s %-16s %-22s %8.3f %8.3f %6s  %9.1f %9.1f %6s  x%d" % (
            entry, label, str(shape).replace(" ", ""), best["dyn"][2], hd, hs,
            flag(hd / hs), md, ms, flag(md / ms), repeat), flush=True)


def main():
    args = parse_args()
    print("%-18s %-6s %-16s %-22s %8s %8s %6s  %9s %9s %6s  %s" % (
        "model", "size", "shape", "bucket (box)", "dyn ms", "stat ms", "ratio",
        "dyn us", "stat us", "ratio", "repeat"))
    with tempfile.TemporaryDirectory(prefix="bench-dynamic-") as tmp:
        for entry, name, flags in list_entries(args.list, args.only):
            bench_entry(args, tmp, entry, name, flags)


if __name__ == "__main__":
    main()
