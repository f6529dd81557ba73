#!/bin/bash
# run_one.sh BUILD OUTDIR TESTDIR: compile one ONNX backend test case with spyrec, run every
# test_data_set_N with spyrun --check, and print one tab-separated result line:
#   folder/name  outcome  ops  detail
# outcome: pass | wrong | unsupported | compile_error | runtime_error
# A crash (signal) or a hang (timeout) is reported as such in the detail, never as a pass.
build=$1 out=$2 dir=$3
name="$(basename "$(dirname "$dir")")/$(basename "$dir")"
safe=${name//\//__}
sbin="$out/$safe.sbin"
tol_file="$(dirname "$0")/tolerances.txt"
rtol=1e-3 atol=1e-4
if [ -f "$tol_file" ]; then
    line=$(grep -E "^$(basename "$dir")[[:space:]]" "$tol_file" | head -1)
    if [ -n "$line" ]; then read -r _ rtol atol _ <<<"$line"; fi
fi
ops=$(timeout 20 "$build/spyrec" --print-ops "$dir/model.onnx" 2>/dev/null | tr '\n' ',' | sed 's/,$//')
[ -n "$ops" ] || ops="?"
emit() { printf '%s\t%s\t%s\t%s\n' "$name" "$1" "$ops" "$(echo "$2" | tr '\t\n' '  ' | cut -c1-300)"; }

msg=$(timeout 30 "$build/spyrec" "$dir/model.onnx" -o "$sbin" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 0 ]; then
    # exit 2 with "unsupported", "not supported" or an unknown domain: a known gap
    first=$(echo "$msg" | grep -m1 -i -E "unsupported|not supported|unknown domain" || true)
    if [ $rc -eq 124 ]; then emit compile_error "hang: spyrec timed out"
    elif [ $rc -gt 128 ]; then emit compile_error "crash: spyrec killed by signal $((rc-128)): $msg"
    elif [ $rc -eq 2 ] && [ -n "$first" ]; then emit unsupported "$first"
    else emit compile_error "exit $rc: $(echo "$msg" | head -2)"
    fi
    exit 0
fi
for ds in "$dir"/test_data_set_*; do
    [ -d "$ds" ] || continue
    msg=$(timeout 60 "$build/spyrun" "$sbin" --check "$ds" --rtol "$rtol" --atol "$atol" --threads 1 2>&1)
    rc=$?
    if [ $rc -eq 1 ]; then emit wrong "$(basename "$ds"): $(echo "$msg" | grep -m1 MISMATCH)"; rm -f "$sbin"; exit 0; fi
    if [ $rc -ne 0 ]; then
        if [ $rc -eq 124 ]; then d="hang: spyrun timed out"
        elif [ $rc -gt 128 ]; then d="crash: spyrun killed by signal $((rc-128))"
        else d="exit $rc: $(echo "$msg" | grep -v '^output' | head -2)"; fi
        emit runtime_error "$(basename "$ds"): $d"; rm -f "$sbin"; exit 0
    fi
done
rm -f "$sbin"
emit pass ""
