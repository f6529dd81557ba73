#!/bin/bash
# check.sh [PART...]: the test suite behind `make check` (run from the repository root).
#
# PART is any of unit golden models reference cli tools determinism malformed corpus
# robust conformance (default: all).
# Prints one line per test ("PASS name" / "FAIL name", with the tail of its log, or
# "SKIP name (reason)" for a test that could not run here: a missing model zoo, tool or
# file) and closes with "N passed, N failed" (plus ", N skipped" when any was skipped);
# exits 1 if any test failed. No test is dropped without a SKIP line.
#
# Environment: BUILD (build), SHARED (../shared), MAKE (make), UPDATE_GOLDEN=1 to
# rewrite the .expect files of the golden text tests instead of comparing, KEEP=1 to
# keep the run's scratch folder (BUILD/tests/work.*: bundles and outputs).
set -u
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
MAKE=${MAKE:-make}
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
SPYREC=$B/spyrec
SPYRUN=$B/spyrun
T=$B/tests
LOGS=$T/logs
MODELS=$SHARED/models
mkdir -p "$LOGS"
# scratch files of this run (bundles, outputs), private so that runs do not collide;
# removed at the end unless KEEP=1
W=$(mktemp -d "$T/work.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
npass=0 nfail=0 nskip=0
# the tests choose where the compile cache is used; a cache of the caller's is not
unset SPYREC_CACHE_DIR

# result NAME RC LOG: count and print one test's outcome; on failure show its log.
result() {
    if [ "$2" = 0 ]; then
        npass=$((npass + 1))
        echo "PASS $1"
    else
        nfail=$((nfail + 1))
        echo "FAIL $1 (log: ${3#"$ROOT"/})"
        tail -n 25 "$3" | sed 's/^/    | /'
    fi
}

# skipped NAME REASON: count and print a test that could not run here, and why.
skipped() {
    nskip=$((nskip + 1))
    echo "SKIP $1 ($2)"
}

# logname NAME: the log file of test NAME.
logname() { echo "$LOGS/$(echo "$1" | tr '/ ' '__').log"; }

# ---- (a) cmocka unit tests: one program per tests/unit/test_*.c --------------------
part_unit() {
    local src name log
    for src in tests/unit/test_*.c; do
        [ -e "$src" ] || { echo "(no unit tests in tests/unit)"; return; }
        name=$(basename "$src" .c)
        log=$(logname "unit/$name")
        if ! $MAKE --no-print-directory -s "$BUILD/tests/$name" >"$log" 2>&1; then
            echo "build of $BUILD/tests/$name failed" >>"$log"
            result "unit/$name" 1 "$log"
            continue
        fi
        timeout 300 "$BUILD/tests/$name" >>"$log" 2>&1
        result "unit/$name" $? "$log"
        unit_skips "unit/$name" "$log"
    done
}

# unit_skips NAME LOG: count each cmocka test of program NAME that called skip() as
# skipped, with the "skipped: REASON" line the test printed before it.
unit_skips() {
    local t why
    while IFS=$'\t' read -r t why; do
        skipped "$1/$t" "${why:-no reason printed}"
    done < <(awk '/^skipped: / { why = substr($0, 10) }
        /^\[  SKIPPED \] [0-9]+ test/ { exit }     # the summary lists them again
        /^\[  SKIPPED \] [^ ]+$/ { print $4 "\t" why; why = "" }' "$2")
}

# ---- (b) golden text tests ------------------------------------------------------------
part_golden() {
    local f n=0
    for f in tests/golden/*.onnx tests/golden/*.ir tests/golden/*.pt2 \
        tests/golden/*/*.onnx tests/golden/*/*.ir tests/golden/*/*.pt2; do
        [ -e "$f" ] || continue
        local base=${f%.*}
        n=$((n + 1))
        local log
        log=$(logname "golden/${base#tests/golden/}")
        # an input without its expectation is a broken test, unless this run writes it
        if [ ! -e "$base.expect" ] && [ ! -e "$base.err" ] && [ "${UPDATE_GOLDEN:-0}" != 1 ]; then
            echo "$f has neither $base.expect nor $base.err (make golden-update writes the .expect)" >"$log"
            result "golden/${base#tests/golden/}" 1 "$log"
            continue
        fi
        SPYREC=$SPYREC sh tests/golden/run_one.sh "$f" >"$log" 2>&1
        result "golden/${base#tests/golden/}" $? "$log"
    done
    [ $n -gt 0 ] || echo "(no golden text tests in tests/golden)"
}

# model_test NAME MODEL DATADIR [SPYRUN-ARGS...]: compile MODEL, run it on DATADIR.
model_test() {
    local name=$1 model=$2 data=$3
    shift 3
    model_check "$name" "$model" "$data" "" "$@"
}

# model_check NAME MODEL DATADIR SPYREC-FLAG [SPYRUN-ARGS...]: compile MODEL (with the
# one extra spyrec flag, none when empty) and check the bundle on DATADIR.
model_check() {
    local name=$1 model=$2 data=$3 flag=$4 log sbin
    shift 4
    log=$(logname "$name")
    sbin=$W/models/$(echo "$name" | tr '/' '_').sbin
    mkdir -p "$W/models"
    {
        echo "+ spyrec $model ${flag:+$flag }-o $sbin"
        timeout 300 "$SPYREC" "$model" ${flag:+"$flag"} -o "$sbin" &&
            echo "+ spyrun $sbin --check $data $*" &&
            timeout 600 "$SPYRUN" "$sbin" --check "$data" "$@"
    } >"$log" 2>&1
    result "$name" $? "$log"
}

# model_test_fp16 NAME MODEL DATADIR [ARGS...]: the same model compiled with
# --precision=fp16 passes its golden outputs by the fp16 metric defaults (the bundle's
# META names the precision; the fp32 tolerance overrides in ARGS do not apply).
# The QDQ test models (tests/models) are left out: their outputs are dequantized 8-bit
# values, where DLFloat16 rounding of the float parts between quantizations moves an
# element by a whole step, which the float metric defaults do not allow for.
model_test_fp16() {
    case $1 in fp16/test/*) return ;; esac
    model_check "$1" "$2" "$3" --precision=fp16 -q
}

# list_models: entries of tests/models.list as "PATH ARGS..." (comments dropped).
# An entry is a model name under ../shared/models (NAME -> NAME/model.onnx) or a
# path below it (NAME/model.pt2); the rest of the line is extra spyrun flags.
list_models() {
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' tests/models.list
}

# each_model PREFIX FUNC: FUNC NAME MODEL DATADIR [ARGS...] for each shipped example
# (NAME PREFIXexample/DIR), each small model of the tree's own (tests/models/DIR, NAME
# PREFIXtest/DIR: the QDQ models of gen_qdq.py, gen_attn_f32.py's float attention, other
# exporters' and opsets' models of gen_torch.py) and each entry of tests/models.list
# (NAME PREFIXmodel/ENTRY); without the model zoo those are counted as skipped.
each_model() {
    local pre=$1 fn=$2 d entry args path count
    for d in tests/models/*/; do
        "$fn" "${pre}test/$(basename "$d")" "$d/model.onnx" "$d/test_data_set_0"
    done
    for d in examples/models/*/; do
        if [ ! -e "$d/model.onnx" ] || [ ! -d "$d/test_data_set_0" ]; then
            skipped "${pre}example/$(basename "$d")" "no model.onnx or test_data_set_0 in $d"
            continue
        fi
        "$fn" "${pre}example/$(basename "$d")" "$d/model.onnx" "$d/test_data_set_0"
    done
    if [ ! -d "$MODELS" ]; then
        count=$(list_models | wc -l)
        echo "$SHARED not found: skipping the $count ${pre}model tests (they need $SHARED/models)"
        nskip=$((nskip + count))
        return
    fi
    while read -r entry args; do
        case $entry in
        */*) path=$MODELS/$entry ;;
        *) path=$MODELS/$entry/model.onnx ;;
        esac
        # shellcheck disable=SC2086
        "$fn" "${pre}model/$entry" "$path" "$(dirname "$path")/test_data_set_0" $args </dev/null
    done < <(list_models)
}

# dyn_model_test NAME MODEL SPYREC-FLAGS...: compile MODEL once with bounds on its
# symbolic dimensions, then check the one bundle on every test_data_set_K beside it.
dyn_model_test() {
    local name=$1 model=$2 log sbin d rc=0
    shift 2
    log=$(logname "$name")
    sbin=$W/models/$(echo "$name" | tr '/' '_').sbin
    mkdir -p "$W/models"
    {
        echo "+ spyrec $model -o $sbin $*"
        timeout 300 "$SPYREC" "$model" -o "$sbin" "$@" || rc=1
        for d in "$(dirname "$model")"/test_data_set_*; do
            [ $rc = 0 ] || break
            echo "+ spyrun $sbin --check $d"
            timeout 600 "$SPYRUN" "$sbin" --check "$d" -q || rc=1
        done
    } >"$log" 2>&1
    result "$name" $rc "$log"
}

# size buckets: gpt2_tiny_dyn's bundle (compiled by dyn_model_test) run at its smallest
# data set ([1, 5]) must take a size bucket whose modelled time is under a quarter of the
# bounds' (spydump lists that one)
bucket_test() {
    local name=dynbucket/gpt2_tiny_dyn sbin=$W/models/dynmodel_gpt2_tiny_dyn.sbin log rc=0
    local out small bound
    log=$(logname "$name")
    {
        out=$("$SPYRUN" "$sbin" --check "$SHARED/models-dynamic/gpt2_tiny_dyn/test_data_set_1" \
              -q) || rc=1
        echo "$out"
        small=$(echo "$out" | sed -n 's/^modelled device time: \([0-9.]*\) us.* in size bucket .*/\1/p')
        bound=$("$B/spydump" "$sbin" | sed -n 's/.* \([0-9.]*\)  (the bounds)$/\1/p')
        echo "bucket: $small us, bounds: $bound us"
        [ -n "$small" ] && [ -n "$bound" ] &&
            awk -v a="$small" -v b="$bound" 'BEGIN { exit !(a * 4 < b) }' || rc=1
    } >"$log" 2>&1
    result "$name" $rc "$log"
}

# the models of tests/models-dynamic.list (../shared/models-dynamic)
each_dyn_model() {
    local entry flags count
    if [ ! -d "$SHARED/models-dynamic" ]; then
        count=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' tests/models-dynamic.list | wc -l)
        skipped "dynmodel ($count models)" "$SHARED/models-dynamic not found"
        return
    fi
    while read -r entry flags; do
        # shellcheck disable=SC2086
        dyn_model_test "dynmodel/$entry" "$SHARED/models-dynamic/${entry%%:*}/model.onnx" \
            $flags </dev/null
    done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' tests/models-dynamic.list)
    bucket_test
}

# the tree's own dynamic models (tests/models-dyn/DIR: model.onnx or a torch.export
# archive model.pt2, flags, several data sets; made by the gen_*.py beside them)
each_tree_dyn_model() {
    local d m
    for d in tests/models-dyn/*/; do
        m=$d/model.onnx
        [ -e "$m" ] || m=$d/model.pt2
        # shellcheck disable=SC2046
        dyn_model_test "dyntest/$(basename "$d")" "$m" $(cat "$d/flags") </dev/null
    done
}

# ---- (c) numeric golden tests: the shared models and the shipped examples ---------
part_models() {
    each_model "" model_test
    each_model "fp16/" model_test_fp16
    each_dyn_model
    each_tree_dyn_model
}

# ---- the same models through the front-end passes, on the reference evaluator -------
# (tests/tools/irrun.c): the decomposition's numerics, independently of the back end
# ref_test NAME MODEL DATADIR [ARGS...]: run irrun on MODEL and DATADIR (ARGS are
# tolerances, --rtol R --atol A, as for spyrun).
ref_test() {
    local name=$1 log
    log=$(logname "$name")
    shift
    echo "+ irrun $*" >"$log"
    timeout 300 "$B/tests/irrun" "$@" >>"$log" 2>&1
    result "$name" $? "$log"
}

part_reference() {
    local log
    log=$(logname reference/build)
    if ! $MAKE --no-print-directory -s "$BUILD/tests/irrun" >"$log" 2>&1; then
        result reference/build 1 "$log"
        return
    fi
    each_model reference/ ref_test
}

# ---- spyrec/spyrun behaviour: usage, exit codes, tolerances -------------------------
# expect_rc NAME WANT CMD...: run CMD, pass if its exit status is WANT.
expect_rc() {
    local name=$1 want=$2 log rc
    shift 2
    log=$(logname "$name")
    echo "+ $* (want exit $want)" >"$log"
    timeout 300 "$@" >>"$log" 2>&1
    rc=$?
    echo "exit $rc" >>"$log"
    [ "$rc" = "$want" ]
    result "$name" $? "$log"
}

part_cli() {
    local ex=examples/models/tiny_cnn sbin=$W/cli/tiny_cnn.sbin
    mkdir -p "$W/cli"
    rm -f "$sbin"
    expect_rc cli/spyrec-help 0 "$SPYREC" --help
    expect_rc cli/spyrec-bad-flag 2 "$SPYREC" $ex/model.onnx --no-such-flag -o "$sbin"
    expect_rc cli/spyrec-missing-model 2 "$SPYREC" "$W/cli/none.onnx" -o "$sbin"
    expect_rc cli/spyrec-bad-target 2 "$SPYREC" $ex/model.onnx --target tests/cli/bad_target.yaml -o "$sbin"
    expect_rc cli/spyrec-compile 0 "$SPYREC" $ex/model.onnx -o "$sbin"
    expect_rc cli/spyrec-fsync 0 "$SPYREC" $ex/model.onnx --fsync -o "$W/cli/tiny_cnn_fsync.sbin"
    cmp "$sbin" "$W/cli/tiny_cnn_fsync.sbin" > "$(logname cli/spyrec-fsync-same)" 2>&1
    result cli/spyrec-fsync-same $? "$(logname cli/spyrec-fsync-same)"
    expect_rc cli/spyrec-emit-ir 0 "$SPYREC" $ex/model.onnx --emit=ir -o "$W/cli/tiny_cnn.ir"
    expect_rc cli/spyrec-emit-asm 0 "$SPYREC" $ex/model.onnx --emit=asm -o "$W/cli/tiny_cnn.s"
    expect_rc cli/spyrec-print-ops 0 "$SPYREC" $ex/model.onnx --print-ops
    grep -qx 'Conv' "$(logname cli/spyrec-print-ops)"
    result cli/spyrec-print-ops-lists-conv $? "$(logname cli/spyrec-print-ops)"
    expect_rc cli/spyrun-help 0 "$SPYRUN" --help
    expect_rc cli/spyrun-missing-bundle 2 "$SPYRUN" "$W/cli/none.sbin"
    expect_rc cli/spyrun-not-a-bundle 2 "$SPYRUN" $ex/model.onnx
    expect_rc cli/spyrun-outputs 0 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --output-dir "$W/cli/out" --profile
    grep -Eq '^load_ms=[0-9.]+ rss_mib=[0-9.]+ bundle_mib=[0-9.]+$' "$(logname cli/spyrun-outputs)" &&
        grep -Eq '^first_run_ms=[0-9.]+$' "$(logname cli/spyrun-outputs)"
    result cli/spyrun-profile-load-line $? "$(logname cli/spyrun-outputs)"
    expect_rc cli/spyrun-npy 0 "$SPYRUN" "$sbin" --input x=$ex/test_data_set_0/input_0.pb \
        --output-dir "$W/cli/npy" --format npy --repeat 3 --warmup 1
    expect_rc cli/spyrun-check-own-output 0 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --check "$W/cli/out" --rtol 0 --atol 0
    expect_rc cli/spyrun-wrong-shape 2 "$SPYRUN" "$sbin" --check tests/cli/wrong_shape
    expect_rc cli/spyrun-wrong-dtype 2 "$SPYRUN" "$sbin" --check tests/cli/wrong_dtype
    expect_rc cli/spyrun-mismatch 1 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --check tests/cli/mismatch
    expect_rc cli/spyrun-mismatch-tolerated 0 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --check tests/cli/mismatch --atol 0.01
    expect_rc cli/spyrun-metric-pass 0 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --check tests/cli/mismatch --metric rel-l2=0.02 --metric cosine=0.999 --metric top1=1
    expect_rc cli/spyrun-metric-rel-l2-fail 1 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --check tests/cli/mismatch --metric rel-l2=1e-3
    expect_rc cli/spyrun-metric-top1-fail 1 "$SPYRUN" "$sbin" --input-dir $ex/test_data_set_0 \
        --check tests/cli/top1_swap --metric top1=1
    expect_rc cli/spyrun-metric-bad 2 "$SPYRUN" "$sbin" --metric cosine=2
    # float16 outputs: checked by the fp16 metrics unless a tolerance is given
    if "$SPYREC" tests/cli/half/model.onnx -o "$W/cli/half.sbin" >"$LOGS/cli_half.log" 2>&1; then
        expect_rc cli/spyrun-half-metrics 0 "$SPYRUN" "$W/cli/half.sbin" \
            --check tests/cli/half/test_data_set_0
        expect_rc cli/spyrun-half-rtol 1 "$SPYRUN" "$W/cli/half.sbin" \
            --check tests/cli/half/test_data_set_0 --rtol 1e-3
        expect_rc cli/spyrun-half-wrong 1 "$SPYRUN" "$W/cli/half.sbin" \
            --input-dir tests/cli/half/test_data_set_0 --check tests/cli/half/wrong
    else
        result cli/spyrec-half 1 "$LOGS/cli_half.log"
    fi
    part_cli_halfweight
    part_cli_fp16
    part_cli_quant
    part_cli_compare
    part_cli_steps
    expect_rc cli/spyrun-unknown-input 2 "$SPYRUN" "$sbin" --input nope=$ex/test_data_set_0/input_0.pb
    expect_rc cli/spyrun-no-input 2 "$SPYRUN" "$sbin"
}

# Sizes a bundle with joined lengths does not take (tests/cli/hw30: x[1, 3, 30, 32], h
# not a multiple of 4) are refused at run time, by the ONNX U-Net and by the .pt2 one
# (whose h is 4 times a Dim); --input-shape fixes a .pt2 input's symbolic sizes, and
# one of 30 = 4 * 7.5 is refused when compiling. A --dim naming no dimension warns.
part_cli_steps() {
    local u=tests/models-dyn/unet_hw p=tests/models-dyn/pt2_unet_hw
    # shellcheck disable=SC2046
    expect_rc cli/steps-onnx-compile 0 "$SPYREC" $u/model.onnx -o "$W/cli/unet_hw.sbin" \
        $(cat $u/flags)
    expect_rc cli/steps-onnx-refused 2 "$SPYRUN" "$W/cli/unet_hw.sbin" --input-dir tests/cli/hw30
    expect_rc cli/steps-pt2-compile 0 "$SPYREC" $p/model.pt2 -o "$W/cli/pt2_unet_hw.sbin"
    expect_rc cli/steps-pt2-refused 2 "$SPYRUN" "$W/cli/pt2_unet_hw.sbin" --input-dir tests/cli/hw30
    grep -q 'by steps of 4' "$(logname cli/steps-pt2-refused)"
    result cli/steps-pt2-refused-names-step $? "$(logname cli/steps-pt2-refused)"
    expect_rc cli/pt2-input-shape 0 "$SPYREC" $p/model.pt2 -o "$W/cli/pt2_unet_32.sbin" \
        --input-shape x=1x3x32x32
    expect_rc cli/pt2-input-shape-check 0 "$SPYRUN" "$W/cli/pt2_unet_32.sbin" \
        --check $p/test_data_set_1
    expect_rc cli/pt2-input-shape-refused 2 "$SPYREC" $p/model.pt2 -o "$W/cli/pt2_unet_30.sbin" \
        --input-shape x=1x3x30x32
    # a --dim that names no dimension warns (ONNX: no such dim_param; .pt2: no such symbol)
    expect_rc cli/dim-unknown-onnx 0 "$SPYREC" $u/model.onnx -o "$W/cli/unet_hw2.sbin" \
        --dim-buckets=1 --dim batch=1 --dim h=16..64 --dim w=16..64 --dim hieght=32
    grep -q 'no input dimension of the model is named hieght' "$(logname cli/dim-unknown-onnx)"
    result cli/dim-unknown-onnx-warns $? "$(logname cli/dim-unknown-onnx)"
    expect_rc cli/dim-unknown-pt2 0 "$SPYREC" $p/model.pt2 -o "$W/cli/pt2_unet_hw2.sbin" \
        --dim-buckets=1 --dim batch=2
    grep -q 'no dynamic dimension of that name' "$(logname cli/dim-unknown-pt2)"
    result cli/dim-unknown-pt2-warns $? "$(logname cli/dim-unknown-pt2)"
}

# float16/bfloat16 weights of matrix products (passes/halfweight.c): the bundle stores
# them in their own dtype (its constants are exactly the two weights' 2 x 131072 bytes,
# where widened copies would take twice that) and the outputs match a float64 golden
# within an ulp of the output dtype.
part_cli_halfweight() {
    local d=tests/cli/halfweight h=$W/cli/halfweight.sbin log
    expect_rc cli/spyrec-halfweight 0 "$SPYREC" $d/model.onnx -o "$h"
    expect_rc cli/spyrun-halfweight-check 0 "$SPYRUN" "$h" --check $d/test_data_set_0 \
        --rtol 8e-3 --atol 1e-3
    log=$(logname cli/spyrec-halfweight)
    "$B/spydump" "$h" >"$log" 2>&1 && awk '$2 == "CONSTS" {print $4}' "$log" | grep -qx 262144
    result cli/halfweight-consts-own-dtype $? "$log"
}

# --precision: fp16 bundles pass the golden outputs by the fp16 metric defaults (read
# from the bundle), fail a tighter metric; the default bundle is what --precision=fp32
# gives (listings equal) and an fp16 bundle differs from it.
part_cli_fp16() {
    local ex=examples/models/tiny_cnn h=$W/cli/tiny_cnn_fp16.sbin log
    expect_rc cli/spyrec-precision-bad 2 "$SPYREC" $ex/model.onnx --precision=int4 -o "$h"
    expect_rc cli/spyrec-precision-fp16 0 "$SPYREC" $ex/model.onnx --precision=fp16 -o "$h"
    expect_rc cli/spyrun-fp16-default-metrics 0 "$SPYRUN" "$h" --input-dir $ex/test_data_set_0 \
        --check $ex/test_data_set_0
    grep -q '^fp16 bundle: float outputs pass by rel-l2' "$(logname cli/spyrun-fp16-default-metrics)"
    result cli/spyrun-fp16-default-metrics-line $? "$(logname cli/spyrun-fp16-default-metrics)"
    expect_rc cli/spyrun-fp16-tight-metric-fails 1 "$SPYRUN" "$h" --input-dir $ex/test_data_set_0 \
        --check $ex/test_data_set_0 --metric rel-l2=1e-7
    log=$(logname cli/spyrec-precision-default-unchanged)
    {
        "$SPYREC" $ex/model.onnx --emit=asm -o "$W/cli/p_default.s" &&
            "$SPYREC" $ex/model.onnx --precision=fp32 --emit=asm -o "$W/cli/p_fp32.s" &&
            "$SPYREC" $ex/model.onnx --precision=fp16 --emit=asm -o "$W/cli/p_fp16.s" &&
            cmp "$W/cli/p_default.s" "$W/cli/p_fp32.s" && ! cmp -s "$W/cli/p_default.s" "$W/cli/p_fp16.s"
    } >"$log" 2>&1
    result cli/spyrec-precision-default-unchanged $? "$log"
    expect_rc cli/spyrec-keep-fp32 0 "$SPYREC" $ex/model.onnx --precision=fp16 \
        --keep-fp32=Relu,NoSuchOp -o "$W/cli/tiny_cnn_keep.sbin"
    grep -q "keep-fp32: no node has the name or operator type 'NoSuchOp'" \
        "$(logname cli/spyrec-keep-fp32)"
    result cli/spyrec-keep-fp32-warns $? "$(logname cli/spyrec-keep-fp32)"
    expect_rc cli/spyrun-keep-fp32-check 0 "$SPYRUN" "$W/cli/tiny_cnn_keep.sbin" \
        --input-dir $ex/test_data_set_0 --check $ex/test_data_set_0
}

# spyrun --compare: fp16 against fp32 of one model lists the dlf16 kernel outputs and the
# graph output with small, finite errors, worst first; an -O0 compile against -O2 gives
# zero error; a bundle compiled with --strip has no DEBUG section and is refused, as is
# a bundle of another model (other inputs).
part_cli_compare() {
    local ex=examples/models/tiny_cnn d=$W/cli log
    "$SPYREC" $ex/model.onnx -o $d/cmp32.sbin && "$SPYREC" $ex/model.onnx --precision=fp16 \
        -o $d/cmp16.sbin && "$SPYREC" $ex/model.onnx -O0 -o $d/cmp0.sbin &&
        "$SPYREC" $ex/model.onnx --strip -o $d/cmps.sbin
    expect_rc cli/spyrun-compare-fp16-fp32 0 "$SPYRUN" $d/cmp16.sbin --compare $d/cmp32.sbin \
        --input-dir $ex/test_data_set_0
    log=$(logname cli/spyrun-compare-fp16-fp32)
    awk '/^compared: / { n = $2 } /^[0-9]+ / { rows++; if ($4 ~ /^dlf16\//) dl++
            if ($3 == "output" && $2 == "probs") out++
            if (!($7 >= 0 && $7 < 0.02 && $8 > 0.999) || (rows > 1 && $7 > last)) bad++
            last = $7 }
         END { exit !(n >= 2 && rows == n && dl >= 1 && out == 1 && !bad) }' "$log"
    result cli/spyrun-compare-fp16-fp32-table $? "$log"
    expect_rc cli/spyrun-compare-O0-O2 0 "$SPYRUN" $d/cmp0.sbin --compare $d/cmp32.sbin \
        --input-dir $ex/test_data_set_0
    log=$(logname cli/spyrun-compare-O0-O2)
    awk '/^[0-9]+ / { rows++; if ($6 != 0 || $7 != 0) bad++ } END { exit !(rows >= 1 && !bad) }' "$log"
    result cli/spyrun-compare-O0-O2-exact $? "$log"
    expect_rc cli/spyrun-compare-stripped 2 "$SPYRUN" $d/cmp16.sbin --compare $d/cmps.sbin \
        --input-dir $ex/test_data_set_0
    log=$(logname cli/spyrun-compare-stripped)
    grep -q "cmps.sbin has no debug info (compiled with spyrec --strip)" "$log" &&
        "$B/spydump" $d/cmps.sbin | grep -q "^debug info: none" &&
        "$B/spydump" $d/cmp32.sbin | grep -q "^debug tensors (" >>"$log" 2>&1
    result cli/spyrun-compare-stripped-message $? "$log"
    "$SPYREC" tests/tools/extdata/model.onnx -o $d/cmpx.sbin
    expect_rc cli/spyrun-compare-other-inputs 2 "$SPYRUN" $d/cmp32.sbin --compare $d/cmpx.sbin \
        --input-dir $ex/test_data_set_0
    grep -q "do not have the same inputs" "$(logname cli/spyrun-compare-other-inputs)"
    result cli/spyrun-compare-other-inputs-message $? "$(logname cli/spyrun-compare-other-inputs)"
}

# ---- (d) determinism: the same model compiled twice gives the same bytes ------------
det_test() {
    local name=$1 model=$2 log d=$W/det/$1 abs
    log=$(logname "determinism/$name")
    case $model in /*) abs=$model ;; *) abs=$ROOT/$model ;; esac
    rm -rf "$d"
    mkdir -p "$d/a" "$d/b"
    {
        timeout 300 "$SPYREC" "$model" -o "$d/a/first.sbin" &&
            (cd "$d/b" && timeout 300 "$SPYREC" "$abs" -o second.sbin) &&
            cmp "$d/a/first.sbin" "$d/b/second.sbin"
    } >"$log" 2>&1
    result "determinism/$name" $? "$log"
}

# the shipped example and the first two ONNX models of tests/models.list
part_determinism() {
    det_test tiny_cnn examples/models/tiny_cnn/model.onnx
    local entry n=0
    while read -r entry _; do
        [ $n -lt 2 ] || break
        case $entry in */*) continue ;; esac
        n=$((n + 1))
        if [ ! -e "$MODELS/$entry/model.onnx" ]; then
            skipped "determinism/$entry" "$MODELS/$entry/model.onnx not found"
            continue
        fi
        det_test "$entry" "$MODELS/$entry/model.onnx" </dev/null
    done < <(list_models)
}

# ---- (e) malformed inputs: exit 2, the expected message, and no output file ---------
part_malformed() {
    local f n=0
    for f in tests/malformed/*; do
        case $f in *.onnx | *.pt2 | *.ir | *.sbin) ;; *) continue ;; esac
        n=$((n + 1))
        local name log out=$W/malformed/out
        name=malformed/$(basename "$f")
        log=$(logname "$name")
        rm -rf "$out"
        mkdir -p "$out"
        SPYREC=$SPYREC SPYRUN=$SPYRUN sh tests/tools/malformed_one.sh "$f" "$out" >"$log" 2>&1
        result "$name" $? "$log"
    done
    [ $n -gt 0 ] || echo "(no malformed inputs in tests/malformed)"
}

# ---- the generated malformed-input corpus: tests/malformed/expect.tsv ---------------
# Lines "FILE<TAB>TOOL<TAB>STATUS<TAB>FRAGMENT[<TAB>ARGS]" (paths relative to the
# corpus folder; ARGS for spyrun, {} standing for FILE; default just FILE).
corpus_case() {
    local dir=$1 file=$2 tool=$3 status=$4 frag=$5 args=$6 out=$W/corpus/out rc
    rm -rf "$out"
    mkdir -p "$out"
    [ -n "$args" ] || args="{}"
    args=${args//\{\}/$file}
    echo "+ (cd $dir) $tool $args (want exit $status, message '$frag')"
    if [ "$tool" = spyrec ]; then
        (cd "$dir" && timeout 60 "$SPYREC" "$file" -o "$out/model.sbin") >"$out.log" 2>&1
    else
        # shellcheck disable=SC2086
        (cd "$dir" && timeout 60 "$SPYRUN" $args) >"$out.log" 2>&1
    fi
    rc=$?
    cat "$out.log"
    echo "exit $rc"
    [ "$rc" = "$status" ] || { echo "FAIL: exit status $rc, expected $status"; return 1; }
    if [ -n "$frag" ] && ! grep -qF -- "$frag" "$out.log"; then
        echo "FAIL: message not found: $frag"
        return 1
    fi
    if [ "$status" != 0 ] && [ -n "$(ls -A "$out")" ]; then
        echo "FAIL: a failed run left files behind: $(ls -A "$out")"
        return 1
    fi
}

part_corpus() {
    local dir=tests/malformed tsv=tests/malformed/expect.tsv file tool status frag args log
    [ -e "$tsv" ] || { skipped corpus "no generated corpus: $tsv (make malformed-gen)"; return; }
    # tabs become \037 so that empty fields survive read (tab is IFS white space)
    while IFS=$'\037' read -r file tool status frag args; do
        case $file in '#'* | '') continue ;; esac
        log=$(logname "corpus/$file")
        corpus_case "$dir" "$file" "$tool" "$status" "$frag" "$args" </dev/null >"$log" 2>&1
        result "corpus/$file" $? "$log"
    done < <(tr '\t' '\037' <"$tsv")
}

# ---- robustness: bundle integrity, concurrency, API misuse, allocation failure --------
# (tests/robust; `make robust` runs the same programs with longer limits)
# robust_run NAME CMD...: run one robustness program (10 min at most), log and count it.
robust_run() {
    local name=$1 log
    shift
    log=$(logname "robust/$name")
    echo "+ $*" >"$log"
    timeout 600 "$@" >>"$log" 2>&1
    local rc=$?
    [ $rc = 124 ] && echo "timed out after 600 s" >>"$log"
    result "robust/$name" $rc "$log"
}

part_robust() {
    local d=$W/robust log m name progs="integrity concurrency api allocfail"
    local tiny=examples/models/tiny_cnn bundles=() p
    mkdir -p "$d"
    log=$(logname robust/build)
    # shellcheck disable=SC2046
    if ! $MAKE --no-print-directory -s \
        $(for p in $progs; do echo "$BUILD/tests/robust/$p"; done) >"$log" 2>&1; then
        result robust/build 1 "$log"
        return
    fi
    # bundles of the shipped example and two shared models, plus the corpus's reference
    # bundles, for the integrity test; a shared model that is absent is a skipped case
    for m in $tiny/model.onnx "$MODELS/mlp/model.onnx" "$MODELS/lenet_bn/model.onnx"; do
        name=$(basename "$(dirname "$m")")
        if [ ! -e "$m" ]; then
            skipped "robust/integrity/$name" "$m not found"
            continue
        fi
        echo "+ spyrec $m -o $d/$name.sbin" >>"$log"
        timeout 300 "$SPYREC" "$m" -o "$d/$name.sbin" >>"$log" 2>&1 || {
            result robust/bundles 1 "$log"
            return
        }
        bundles+=("$d/$name.sbin")
    done
    robust_run integrity "$B/tests/robust/integrity" "${bundles[@]}" tests/malformed/sbin/ok/*.sbin
    robust_run concurrency "$B/tests/robust/concurrency" "$d/tiny_cnn.sbin" \
        $tiny/test_data_set_0 16 200
    robust_run api "$B/tests/robust/api" "$d/tiny_cnn.sbin"
    # every allocation of compile, load and run fails in turn: small models covering the
    # frontend, the passes (float16 widening, data-dependent shapes) and the backend
    for m in tests/malformed/onnx/valid_base.onnx $tiny/model.onnx "$MODELS/lenet_bn/model.onnx" \
        "$SHARED/onnx-tests/node/test_attention_4d_fp16/model.onnx" \
        "$SHARED/onnx-tests/node/test_nonzero_example/model.onnx"; do
        case $m in
        */model.onnx) name=$(basename "$(dirname "$m")") ;;
        *) name=$(basename "$m" .onnx) ;;
        esac
        if [ ! -e "$m" ]; then
            skipped "robust/allocfail/$name" "$m not found"
            continue
        fi
        robust_run "allocfail/$name" "$B/tests/robust/allocfail" "$m"
    done
}

# ---- (h) ONNX conformance suite: the pass counts must not fall below the ratchet --------
part_conformance() {
    local log
    log=$(logname conformance)
    if [ ! -d "$SHARED/onnx-tests" ]; then
        skipped conformance "$SHARED/onnx-tests not found: the ONNX conformance suite needs it"
        return
    fi
    bash tests/conformance/run.sh "$BUILD" "$SHARED" 2 >"$log" 2>&1
    local rc=$?
    sed 's/^/    /' "$log"
    result "conformance (report: ${BUILD}/conformance/report.md)" $rc "$log"
}

# ---- (i) the tools around the compiler: tests/tools/part_tools.sh ---------------------
# shellcheck source=tests/tools/part_tools.sh
. tests/tools/part_tools.sh
# ---- the int8 and fp8 precision modes (run from part_cli): tests/tools/part_quant.sh --
# shellcheck source=tests/tools/part_quant.sh
. tests/tools/part_quant.sh

parts=${*:-unit golden models reference cli tools determinism malformed corpus robust conformance}
for p in $parts; do
    case $p in
    unit | golden | models | reference | cli | tools | determinism | malformed | corpus | robust | \
        conformance)
        "part_$p" ;;
    *) echo "check.sh: unknown part '$p'" >&2; exit 2 ;;
    esac
done
if [ $nskip -gt 0 ]; then
    echo "$npass passed, $nfail failed, $nskip skipped"
else
    echo "$npass passed, $nfail failed"
fi
[ $nfail = 0 ]
