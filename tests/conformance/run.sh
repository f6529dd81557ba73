#!/bin/bash
# run.sh [BUILD] [SHARED] [JOBS]: the ONNX backend conformance suite.
# Runs every case of SHARED/onnx-tests/{node,pytorch-converted,pytorch-operator,simple}
# through spyrec + spyrun --check, then writes BUILD/conformance/report.{md,json} with one
# outcome per test, totals per folder (with the passes whose bundle does no computation)
# and per ONNX operator, and the out-of-scope list. Cases that use float16 also run in
# fp16 mode (--precision=fp16), counted in a column of their own.
# Exits 1 if a pass count (node, total, fp16 mode) falls below the ratchet in
# tests/conformance/ratchet.txt, and says so when it rises above it (the ratchet is then
# to be raised).
set -u
build=${1:-build} shared=${2:-../shared} jobs=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
suite="$shared/onnx-tests"
out="$build/conformance"
if [ ! -d "$suite" ]; then
    echo "conformance: $suite not found: skipping the ONNX backend suite (it needs ../shared/onnx-tests)"
    exit 0
fi
mkdir -p "$out/tmp"
find "$suite/node" "$suite/pytorch-converted" "$suite/pytorch-operator" "$suite/simple" \
    -mindepth 1 -maxdepth 1 -type d | sort >"$out/cases.txt"
xargs -a "$out/cases.txt" -P "$jobs" -I{} "$here/run_one.sh" "$build" "$out/tmp" {} \
    | sort >"$out/results.tsv"
gawk -F'\t' -v oos="$here/out_of_scope.txt" -v md="$out/report.md" -v js="$out/report.json" \
    -v ratchet="$here/ratchet.txt" -f "$here/report.awk" "$out/results.tsv"
