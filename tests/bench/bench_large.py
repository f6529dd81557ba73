#!/usr/bin/env python3
"""Benchmark the large models (make zoo-large), long graphs and large matrix products.

Three tables, after a header naming the host and the onnxruntime version:

1. One row per model of --zoo (BUILD/zoo-large/NAME/model.onnx with test_data_set_0):

   weights MiB   model.onnx plus its external data
   compile s     wall time of `spyrec model.onnx -o NAME.sbin`, default flags, best of
                 --compiles runs (a failed compile: the first line of spyrec's message).
                 Each run starts after os.sync(), so that writeback still pending from
                 earlier work (the previous run's bundle, written over) is not charged to
                 it; the compile's own writes (direct I/O: on the disk before spyrec
                 exits) and the freeing of the bundle it replaces are timed (no fsync:
                 spyrec's default; --fsync would add the disk's cache flush)
   peak RSS MiB  the largest peak resident set of those compiles (wait4 of each child)
   bundle MiB    size of the bundle
   load ms       spy_model_load_file (libspyrert.so through ctypes, in a child process):
                 best of 3; load RSS MiB is that child's peak resident set minus its own
                 before the first load
   spyrun ms     `spyrun --threads T --repeat N --warmup W` (not profiled: see
                 spyrun_stats): median host latency; with --rounds R, the median of R such
                 medians
   ort ms        onnxruntime on the same inputs, intra-op threads T, median of N runs after
                 W warm-up runs (in a child process, so that its memory is given back);
                 likewise the median of R rounds
   ratio         spyrun ms / ort ms, per round (a round runs spyrun, then onnxruntime,
                 right after it), the median of the R rounds' ratios: on a shared host
                 whose speed drifts over minutes, each ratio compares the two under the
                 same conditions, where one spyrun block and one onnxruntime block could
                 fall into a slow and a fast minute
   device ms     modelled device time of one inference (as spyrun prints it: the total
                 of `spyrun --profile`);
                 tok/s is 1 / device time, for a decode-step model (name with "decode")
   eff %         modelled efficiency: the kernels' rooflines over their modelled times
                 (the total row of `spyrun --profile`)
   fp16 ms, fp16 eff %, fp16 x   the same model compiled with --precision=fp16: its
                 modelled device time, efficiency, and the fp32 / fp16 time ratio (one
                 profiled run; the fp16 bundle is removed afterwards)
   check         `spyrun --check test_data_set_0` at the default tolerances: OK,
                 MISMATCH (k of n outputs) or n/a

2. Compile time of a generated chain of alternating Relu / Sigmoid nodes on a 4-element
   tensor, at --chains node counts, each stopped after --chain-timeout seconds.

3. GFLOP/s of a single MatMul (input [M,K] times a constant [K,N]) on the emulator
   (2*M*N*K / spyrun latency, the median of --rounds alternating rounds as for a model's
   row; the outputs checked in one run before them) and on onnxruntime, as a share of
   this host's fp32 peak for T threads: T times one core's peak, measured by
   BUILD/tests/fma_peak (tests/bench/fma_peak.c).

Bundles and generated models stay in --work (default BUILD/bench-large). Not a test:
nothing here asserts on time. Needs numpy, onnx and onnxruntime (make bench-large runs it
in build/venv) and the models of make zoo-large.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time

# numpy's BLAS (OpenBLAS from PyPI) keeps its threads spinning for a while after a call:
# the float64 golden of a GEMM model below left them busy on this 2-CPU host while
# spyrun ran next (128x768x3072: 7.2 ms instead of 3.7; onnxruntime, timed later, was
# spared). One BLAS thread, set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import bench  # noqa: E402  tests/bench/bench.py: fmt, run_ort, write_json

MIB = 1 << 20


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build folder (default build)")
    ap.add_argument("--zoo", help="materialised large models (default BUILD/zoo-large)")
    ap.add_argument("--work", help="bundles and generated models (default BUILD/bench-large)")
    ap.add_argument("--model", action="append", default=[],
                    help="measure only these models of the zoo (default all); repeatable")
    ap.add_argument("--threads", type=int, default=2, help="spyrun and onnxruntime threads (2)")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs (default 10)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up runs (default 2)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating spyrun / onnxruntime rounds per model (default 3)")
    ap.add_argument("--compiles", type=int, default=3, help="compile runs (default 3)")
    ap.add_argument("--compile-timeout", type=float, default=600,
                    help="seconds before a model's compile is stopped (default 600)")
    ap.add_argument("--chains", default="10000,50000,200000",
                    help="node counts of the generated chains (default 10000,50000,200000)")
    ap.add_argument("--chain-timeout", type=float, default=120,
                    help="seconds before a chain's compile is stopped (default 120)")
    ap.add_argument("--gemm", default="1024x1024x1024,128x768x3072",
                    help="MxKxN of the MatMul rows (default 1024x1024x1024,128x768x3072)")
    ap.add_argument("--skip", action="append", default=[], choices=["models", "chains", "gemm"],
                    help="leave out one table; repeatable")
    ap.add_argument("--json", help="also write the results to this JSON file")
    # child modes (the script runs itself so that a child's memory is measured and freed)
    ap.add_argument("--ort-child", nargs=2, metavar=("MODEL", "DATA"), help=argparse.SUPPRESS)
    ap.add_argument("--load-child", metavar="SBIN", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.zoo = args.zoo or os.path.join(args.build, "zoo-large")
    args.work = args.work or os.path.join(args.build, "bench-large")
    return args


# ---- running a child and measuring it ------------------------------------------------

def run_measured(cmd, timeout=None):
    """Run cmd with its output in memory; stop it after timeout seconds. Returns a dict:
    rc, wall_s, rss_mib (peak resident set of this child alone, from wait4), out, err,
    timed_out."""
    import tempfile
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL)
        killed = threading.Event()

        def stop():
            killed.set()
            p.kill()
        timer = threading.Timer(timeout, stop) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if timer:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        return {"rc": p.returncode, "wall_s": wall, "rss_mib": usage.ru_maxrss / 1024.0,
                "out": fo.read().decode(errors="replace"),
                "err": fe.read().decode(errors="replace"), "timed_out": killed.is_set()}


def first_line(text):
    """The first non-empty line of text, or "?"."""
    return (text.strip().splitlines() or ["?"])[0]


def compile_best(args, model, sbin, runs, timeout, slow_s=None):
    """Compile up to runs times, each after os.sync(); a run that fails, times out or
    takes slow_s seconds or more ends it. Returns a dict: best_s, rss_mib (the largest peak), error (None, the
    first line of spyrec's message, or "> N s")."""
    res = {"best_s": None, "rss_mib": None, "error": None}
    for _ in range(max(1, runs)):
        os.sync()                          # earlier writeback is not this compile's cost
        r = run_measured([os.path.join(args.build, "spyrec"), model, "-o", sbin], timeout)
        res["rss_mib"] = max(res["rss_mib"] or 0, r["rss_mib"])
        if r["timed_out"]:
            res["error"] = f"> {timeout:g} s"
            break
        if r["rc"] != 0:
            res["error"] = "spyrec: " + first_line(r["err"])
            break
        res["best_s"] = min(res["best_s"] or r["wall_s"], r["wall_s"])
        if slow_s is not None and r["wall_s"] >= slow_s:
            break
    return res


def spyrun_stats(args, sbin, data, check=True, profile=False):
    """Run the bundle on data's inputs (checking its outputs when check): dict of
    spyrun_ms, device_us (modelled time of one inference), eff_pct (with profile: the
    total row of `spyrun --profile`), check (OK / MISMATCH (k of n outputs) / n/a), error.
    Latencies come from runs without --profile: a profiled session times every kernel
    and does not start a schedule entry's programs before the previous entry is done
    (rt_overlap.c), so its runs are not the ones a user's session makes."""
    cmd = [os.path.join(args.build, "spyrun"), sbin, "-q", "--threads", str(args.threads),
           "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    cmd += ["--profile"] if profile else []
    has_golden = check and os.path.exists(os.path.join(data, "output_0.pb"))
    cmd += ["--check", data] if has_golden else ["--input-dir", data]
    r = run_measured(cmd)
    lat = re.search(r"host latency: median ([0-9.]+) ms", r["out"])
    dev = re.search(r"modelled device time: ([0-9.]+) us", r["out"])
    eff = re.search(r"^total \(\d+ kernels?\)(?:\s+[0-9.]+){4}\s+([0-9.]+)%", r["out"], re.M)
    verdicts = re.findall(r"^output \d+ '.*': .*: (OK|MISMATCH)", r["out"], re.M)
    res = {"spyrun_ms": float(lat.group(1)) if lat else None,
           "device_us": float(dev.group(1)) if dev else None,
           "eff_pct": float(eff.group(1)) if eff else None, "check": "n/a", "error": None}
    if verdicts:
        bad = verdicts.count("MISMATCH")
        res["check"] = f"MISMATCH ({bad} of {len(verdicts)} outputs)" if bad else "OK"
    if not lat:
        res["error"] = "spyrun: " + first_line(r["err"])
    return res


def fp16_stats(args, model, data, sbin):
    """Compile model with --precision=fp16 into sbin, profile one run, remove sbin: dict
    of fp16_device_us and fp16_eff_pct (None when the compile or run fails)."""
    res = {"fp16_device_us": None, "fp16_eff_pct": None}
    c = run_measured([os.path.join(args.build, "spyrec"), model, "--precision=fp16", "-o", sbin],
                     timeout=args.compile_timeout)
    if c["rc"] == 0:
        r = run_measured([os.path.join(args.build, "spyrun"), sbin, "-q", "--threads",
                          str(args.threads), "--input-dir", data, "--profile"])
        tot = re.search(r"^total \(\d+ kernels?\)\s+([0-9.]+)(?:\s+[0-9.]+){3}\s+([0-9.]+)%",
                        r["out"], re.M)
        if tot:
            res = {"fp16_device_us": float(tot.group(1)), "fp16_eff_pct": float(tot.group(2))}
    if os.path.exists(sbin):
        os.remove(sbin)
    return res


def child(args, *extra):
    """Run this script in a child mode; returns run_measured's dict."""
    cmd = [sys.executable, os.path.abspath(__file__), "--build", args.build,
           "--threads", str(args.threads), "--repeat", str(args.repeat),
           "--warmup", str(args.warmup), *extra]
    return run_measured(cmd)


def ort_ms(args, model, data):
    """(median onnxruntime latency ms or None, error or None), measured in a child."""
    r = child(args, "--ort-child", model, data)
    m = re.search(r"^ort_ms ([0-9.]+)", r["out"], re.M)
    if m:
        return float(m.group(1)), None
    last = r["err"].strip().splitlines()[-1:] or [f"exit status {r['rc']}"]
    return None, "onnxruntime: " + last[0]


def load_stats(args, sbin):
    """(load ms best of 3, load RSS MiB) of spy_model_load_file, measured in a child;
    (None, None) when the child fails."""
    r = child(args, "--load-child", sbin)
    m = re.search(r"^load_ms ([0-9.]+) rss_mib ([0-9.]+)", r["out"], re.M)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


# ---- the child modes -----------------------------------------------------------------

def vm_hwm_mib():
    """This process's peak resident set so far, in MiB (VmHWM of /proc/self/status)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def load_child(args):
    """Print "load_ms BEST rss_mib DELTA" for spy_model_load_file of args.load_child."""
    import ctypes
    lib = ctypes.CDLL(os.path.join(args.build, "libspyrert.so"))
    lib.spy_model_load_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.c_char_p, ctypes.c_size_t]
    lib.spy_model_load_file.restype = ctypes.c_int
    lib.spy_model_free.argtypes = [ctypes.c_void_p]
    base = vm_hwm_mib()
    best = None
    for _ in range(3):
        m, err = ctypes.c_void_p(), ctypes.create_string_buffer(512)
        t0 = time.perf_counter()
        st = lib.spy_model_load_file(args.load_child.encode(), ctypes.byref(m), err, len(err))
        ms = (time.perf_counter() - t0) * 1e3
        if st != 0:
            sys.exit(f"spy_model_load_file: status {st}: {err.value.decode(errors='replace')}")
        lib.spy_model_free(m)
        best = ms if best is None else min(best, ms)
    print(f"load_ms {best:.3f} rss_mib {vm_hwm_mib() - base:.1f}")


def ort_child(args):
    """Print "ort_ms MEDIAN" for the model and data of args.ort_child."""
    print(f"ort_ms {bench.run_ort(args, *args.ort_child):.3f}")


# ---- the host ------------------------------------------------------------------------

def cpu_model():
    """The model name of the first CPU in /proc/cpuinfo."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return "?"


def fp32_peak(args):
    """(GFLOP/s or None, how it was obtained): the fp32 peak of args.threads cores, from
    one core's FMA loop (BUILD/tests/fma_peak, tests/bench/fma_peak.c) times the threads.
    One core is measured because the others may be busy on a shared machine; the product
    assumes that each of the threads has a core of its own at that speed."""
    probe = os.path.join(args.build, "tests", "fma_peak")
    r = run_measured([probe, "1"]) if os.path.exists(probe) else {"out": ""}
    m = re.search(r"peak_gflops ([0-9.]+) vector_bits (\d+)", r["out"])
    if not m:
        return None, f"unknown ({probe} did not run: make {probe})"
    one = float(m.group(1))
    return args.threads * one, (f"{args.threads} threads x {one:.1f} GFLOP/s (one core's loop "
                                f"of independent {m.group(2)}-bit FMAs, best of 5) = "
                                f"{args.threads * one:.0f} GFLOP/s")


def print_host(args):
    """The header: machine, threads, runs, onnxruntime version."""
    import onnxruntime
    print(f"host: {os.cpu_count()} CPUs ({cpu_model()}); spyrun and onnxruntime with {args.threads} "
          f"threads; median of {args.repeat} runs after {args.warmup} warm-up runs; "
          f"onnxruntime {onnxruntime.__version__}")
    print(f"load average at the start: {os.getloadavg()[0]:.2f} (other work on the machine "
          f"skews every time below)")


# ---- table 1: the large models ---------------------------------------------------------

def file_mib(*paths):
    """Total size of the paths that exist, in MiB."""
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p)) / MIB


def bench_model(args, name):
    """Measure one model of the zoo; returns its row (a dict)."""
    model = os.path.join(args.zoo, name, "model.onnx")
    data = os.path.join(args.zoo, name, "test_data_set_0")
    sbin = os.path.join(args.work, name + ".sbin")
    row = {"model": name, "weights_mib": file_mib(model, model + ".data"), "bundle_mib": None,
           "load_ms": None, "load_rss_mib": None, "spyrun_ms": None, "ort_ms": None,
           "ratio": None, "device_us": None, "eff_pct": None, "tok_s": None, "check": "n/a",
           "fp16_device_us": None, "fp16_eff_pct": None, "fp16_gain": None}
    c = compile_best(args, model, sbin, args.compiles, args.compile_timeout)
    row.update(compile_s=c["best_s"], rss_mib=c["rss_mib"])
    errors = [c["error"]] if c["error"] else []
    if not c["error"]:
        row["bundle_mib"] = file_mib(sbin)
        row["load_ms"], row["load_rss_mib"] = load_stats(args, sbin)
        s = spyrun_stats(args, sbin, data, profile=True)
        row.update(device_us=s["device_us"], eff_pct=s["eff_pct"], check=s["check"])
        errors += [s["error"]] if s["error"] else []
        row.update(fp16_stats(args, model, data, os.path.join(args.work, name + ".fp16.sbin")))
        if row["device_us"] and row["fp16_device_us"]:
            row["fp16_gain"] = row["device_us"] / row["fp16_device_us"]
    row.update(latency_rounds(args, model, sbin if not c["error"] else None, data, errors))
    if "decode" in name and row["device_us"]:
        row["tok_s"] = 1e6 / row["device_us"]
    row["error"] = "; ".join(errors) or None
    return row


def latency_rounds(args, model, sbin, data, errors):
    """args.rounds rounds of spyrun's median latency (when sbin) then onnxruntime's:
    dict of spyrun_ms, ort_ms (medians over the rounds) and ratio (the median of the
    rounds' ratios); an error of either side is appended to errors once."""
    sp, ort, ratios = [], [], []
    for _ in range(max(1, args.rounds)):
        s = spyrun_stats(args, sbin, data, check=False) if sbin else None
        o, err = ort_ms(args, model, data)
        if s and s["error"] and s["error"] not in errors:
            errors.append(s["error"])
        if err and err not in errors:
            errors.append(err)
        if s and s["spyrun_ms"]:
            sp.append(s["spyrun_ms"])
        if o:
            ort.append(o)
        if s and s["spyrun_ms"] and o:
            ratios.append(s["spyrun_ms"] / o)
    return {"spyrun_ms": median_or_none(sp), "ort_ms": median_or_none(ort),
            "ratio": median_or_none(ratios)}


def median_or_none(xs):
    """The median of xs, None when it is empty."""
    return statistics.median(xs) if xs else None




MODEL_COLS = [  # (key, heading, unit, format, scale)
    ("weights_mib", "weights", "MiB", "8.0f", 1), ("compile_s", "compile", "s", "8.2f", 1),
    ("rss_mib", "peak RSS", "MiB", "9.0f", 1), ("bundle_mib", "bundle", "MiB", "7.0f", 1),
    ("load_ms", "load", "ms", "8.1f", 1), ("load_rss_mib", "load RSS", "MiB", "9.0f", 1),
    ("spyrun_ms", "spyrun", "ms", "9.1f", 1), ("ort_ms", "ort", "ms", "8.1f", 1),
    ("ratio", "ratio", "x", "6.2f", 1), ("device_us", "device", "ms", "8.3f", 1e-3),
    ("eff_pct", "eff", "%", "5.1f", 1), ("tok_s", "tok/s", "", "7.1f", 1),
    ("fp16_device_us", "fp16", "ms", "8.3f", 1e-3), ("fp16_eff_pct", "fp16 eff", "%", "8.1f", 1),
    ("fp16_gain", "fp16 x", "", "6.2f", 1)]


def model_line(row):
    """One printed row of table 1."""
    cells = [bench.fmt(row[k] * s if row[k] is not None else None, f)
             for k, _, _, f, s in MODEL_COLS]
    line = f"{row['model']:<16} " + " ".join(cells) + f"  {row['check']}"
    return line + (f"  ({row['error']})" if row["error"] else "")


def bench_models(args):
    """Table 1; returns its rows."""
    names = args.model or sorted(n for n in os.listdir(args.zoo)
                                 if os.path.exists(os.path.join(args.zoo, n, "model.onnx")))
    widths = [int(f.split(".")[0]) for _, _, _, f, _ in MODEL_COLS]
    print()
    print(f"{'model':<16} " + " ".join(h.rjust(w) for (_, h, _, _, _), w in zip(MODEL_COLS, widths))
          + "  check")
    print(f"{'':<16} " + " ".join(u.rjust(w) for (_, _, u, _, _), w in zip(MODEL_COLS, widths)))
    print("-" * (17 + sum(widths) + len(widths) + 8))
    rows = []
    for name in names:
        rows.append(bench_model(args, name))
        print(model_line(rows[-1]), flush=True)
    return rows


# ---- table 2: long chains -----------------------------------------------------------------

def save_model(graph, path):
    """Write graph as an opset-18 ONNX model at path."""
    from onnx import helper
    model = helper.make_model(graph, producer_name="spyrec-bench",
                              opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def chain_model(n, path):
    """A chain of n nodes, Relu and Sigmoid alternating, on a float[4] tensor."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu" if i % 2 == 0 else "Sigmoid",
                              ["x" if i == 0 else f"t{i - 1}"],
                              ["y" if i == n - 1 else f"t{i}"], name=f"n{i}")
             for i in range(n)]
    graph = helper.make_graph(nodes, f"chain{n}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    save_model(graph, path)


def bench_chains(args):
    """Table 2; returns its rows."""
    print(f"\n{'chain (Relu/Sigmoid on float[4])':<34} {'compile s':>10} {'peak RSS MiB':>13}")
    print("-" * 59)
    rows = []
    for n in [int(x) for x in args.chains.split(",") if x]:
        path = os.path.join(args.work, f"chain{n}.onnx")
        chain_model(n, path)
        # best of --compiles, but a compile of 5 s or more is timed once
        c = compile_best(args, path, path[:-5] + ".sbin", args.compiles, args.chain_timeout, 5)
        rows.append({"nodes": n, "compile_s": c["best_s"], "rss_mib": c["rss_mib"],
                     "error": c["error"]})
        shown = c["error"] if c["error"] else f"{c['best_s']:.2f}"
        print(f"{f'{n} nodes':<34} {shown:>10} {c['rss_mib']:13.0f}", flush=True)
    return rows


# ---- table 3: matrix products -------------------------------------------------------------

def matmul_model(m, k, n, folder):
    """folder/model.onnx: y = x[m,k] @ w[k,n] (w a constant), and test_data_set_0 with a
    non-negative input and the float64 product as golden (so that summation order stays
    within --check's tolerances)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(m * 1000003 + k * 1009 + n)
    x = rng.random((m, k), dtype=np.float32)
    w = rng.random((k, n), dtype=np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                              f"matmul{m}x{k}x{n}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                              [numpy_helper.from_array(w, "w")])
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    save_model(graph, os.path.join(folder, "model.onnx"))
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    for fname, a, name in (("input_0.pb", x, "x"), ("output_0.pb", y, "y")):
        with open(os.path.join(data, fname), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
    return os.path.join(folder, "model.onnx"), data


def bench_gemm(args):
    """Table 3; returns its rows."""
    peak, how = fp32_peak(args)
    print(f"\nfp32 peak of this host: {how}")
    head = (f"{'MatMul MxKxN':<16} {'spyrun ms':>10} {'GFLOP/s':>8} {'% peak':>6} "
            f"{'ort ms':>8} {'GFLOP/s':>8} {'% peak':>6}  check")
    print(head)
    print("-" * len(head))
    rows = []
    for shape in [s for s in args.gemm.split(",") if s]:
        m, k, n = (int(d) for d in shape.split("x"))
        model, data = matmul_model(m, k, n, os.path.join(args.work, f"matmul{shape}"))
        flop = 2.0 * m * n * k
        row = {"shape": shape, "spyrun_ms": None, "ort_ms": None, "check": "n/a", "error": None}
        c = compile_best(args, model, model[:-5] + ".sbin", 1, args.compile_timeout)
        errors = [c["error"]] if c["error"] else []
        if not c["error"]:    # the check once; its time is not one of the rounds'
            s = spyrun_stats(args, model[:-5] + ".sbin", data)
            row["check"] = s["check"]
            errors += [s["error"]] if s["error"] else []
        # the same alternating rounds as a model's row: one spyrun process that ran
        # slow throughout (twice in ten bench runs the 1024^3 product ran at about half
        # its rate for a whole process; cause not found) is then one round of three,
        # not the row
        lat = latency_rounds(args, model, model[:-5] + ".sbin" if not c["error"] else None,
                             data, errors)
        row.update(spyrun_ms=lat["spyrun_ms"], ort_ms=lat["ort_ms"])
        row["error"] = "; ".join(errors) or None
        gf = {key: flop / (row[key] * 1e6) if row[key] else None for key in ("spyrun_ms", "ort_ms")}
        pct = {key: 100 * v / peak if v and peak else None for key, v in gf.items()}
        line = (f"{shape:<16} {bench.fmt(row['spyrun_ms'], '10.2f')} "
                f"{bench.fmt(gf['spyrun_ms'], '8.1f')} {bench.fmt(pct['spyrun_ms'], '6.1f')} "
                f"{bench.fmt(row['ort_ms'], '8.2f')} {bench.fmt(gf['ort_ms'], '8.1f')} "
                f"{bench.fmt(pct['ort_ms'], '6.1f')}  {row['check']}")
        print(line + (f"  ({row['error']})" if row["error"] else ""), flush=True)
        row.update(spyrun_gflops=gf["spyrun_ms"], ort_gflops=gf["ort_ms"])
        rows.append(row)
    return rows


def main():
    args = parse_args()
    if args.ort_child:
        return ort_child(args)
    if args.load_child:
        return load_child(args)
    os.makedirs(args.work, exist_ok=True)
    print_host(args)
    out = {}
    if "models" not in args.skip:
        if os.path.isdir(args.zoo):
            out["models"] = bench_models(args)
        else:
            print(f"{args.zoo} not found (make zoo-large): no model rows", file=sys.stderr)
    if "chains" not in args.skip:
        out["chains"] = bench_chains(args)
    if "gemm" not in args.skip:
        out["gemm"] = bench_gemm(args)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    bench.write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
