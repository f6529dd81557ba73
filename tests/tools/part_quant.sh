# part_quant.sh: the tests of the int8 and fp8 precision modes (spyrec --precision=int8
# --calibrate, --precision=fp8), sourced by check.sh and run from part_cli.
#
# The calibration sets are tests/calib/NAME/set_K/input_J.pb: random inputs made by
# tests/bench/gen_calib.py (make calib-data) with the statistics of each model's test
# input, not the test input itself. Accuracy bounds are spyrun's defaults for the
# bundle's precision (int8: rel-l2 <= 0.1, cosine >= 0.99; fp8: rel-l2 <= 0.05,
# cosine >= 0.99, read from the bundle's META flags), checked against the fp32 goldens.
# gpt2_tiny has 16 sets (--sets 16), 256 token rows: GPTQ's second moments need more
# rows than the products' inputs have components (128, 512) to fit the inputs the
# test data has rather than those of the calibration set alone.
# A model of SHARED/models that is absent is skipped.

# quant_model NAME: the model file of NAME (tiny_cnn: the shipped example), or "".
quant_model() {
    case $1 in
    tiny_cnn) echo examples/models/tiny_cnn/model.onnx ;;
    *) [ -e "$MODELS/$1/model.onnx" ] && echo "$MODELS/$1/model.onnx" ;;
    esac
}

# quant_int8 NAME: a calibrated int8 compile of NAME passes its goldens by the int8
# defaults, fails a tight bound (the quantization error is there), quantizes at least
# one contraction (report) and differs from the fp16 bundle.
quant_int8() {
    local m d=$W/quant log
    m=$(quant_model "$1")
    [ -n "$m" ] || { skipped "quant/int8-$1" "$MODELS/$1/model.onnx not found"; return; }
    local td; td=$(dirname "$m")/test_data_set_0
    expect_rc "quant/int8-$1-compile" 0 "$SPYREC" "$m" --precision=int8 \
        --calibrate tests/calib/$1/set_* --report "$d/$1.json" -o "$d/$1.i8.sbin"
    expect_rc "quant/int8-$1-check" 0 "$SPYRUN" "$d/$1.i8.sbin" --input-dir "$td" --check "$td"
    expect_rc "quant/int8-$1-tight-metric-fails" 1 "$SPYRUN" "$d/$1.i8.sbin" --input-dir "$td" \
        --check "$td" --metric rel-l2=1e-6
    log=$(logname "quant/int8-$1-report")
    {
        n=$("$JSONCHECK" "$d/$1.json" --get quantization.contractions) && [ "$n" -gt 0 ] &&
            a=$("$JSONCHECK" "$d/$1.json" --get quantization.activations.#) && [ "$a" -gt 0 ] &&
            "$JSONCHECK" "$d/$1.json" --get quantization.activations.0.zero_point &&
            "$SPYREC" "$m" --precision=fp16 -o "$d/$1.f16.sbin" &&
            ! cmp -s "$d/$1.f16.sbin" "$d/$1.i8.sbin"
    } >"$log" 2>&1
    result "quant/int8-$1-report" $? "$log"
}

# quant_fp8 NAME: an fp8 compile of NAME passes its goldens by the fp8 defaults, its
# asm reads float8 weights (MATMUL b:f8e4m3fn) and its bundle is smaller than fp16's.
quant_fp8() {
    local m d=$W/quant log
    m=$(quant_model "$1")
    [ -n "$m" ] || { skipped "quant/fp8-$1" "$MODELS/$1/model.onnx not found"; return; }
    local td; td=$(dirname "$m")/test_data_set_0
    expect_rc "quant/fp8-$1-compile" 0 "$SPYREC" "$m" --precision=fp8 -o "$d/$1.f8.sbin"
    expect_rc "quant/fp8-$1-check" 0 "$SPYRUN" "$d/$1.f8.sbin" --input-dir "$td" --check "$td"
    log=$(logname "quant/fp8-$1-weights")
    {
        "$SPYREC" "$m" --precision=fp8 --emit=asm -o "$d/$1.f8.s" &&
            grep -q 'matmul .* b:f8e4m3fn' "$d/$1.f8.s" &&
            "$SPYREC" "$m" --precision=fp16 -o "$d/$1.f16.sbin" &&
            [ "$(stat -c %s "$d/$1.f8.sbin")" -lt "$(stat -c %s "$d/$1.f16.sbin")" ]
    } >"$log" 2>&1
    result "quant/fp8-$1-weights" $? "$log"
}

# quant_rell2 LOG: the first rel-l2 figure of a spyrun --check log.
quant_rell2() {
    sed -n 's/^  rel-l2 \([0-9.e+-]*\),.*/\1/p' "$1" | head -1
}

# quant_fp8_calib NAME [better]: an fp8 compile of NAME with --calibrate (GPTQ rounding
# and the bias correction of passes/fp8.c) passes its goldens by the fp8 defaults and
# its report lists calibrated weights; with "better", its rel-l2 is also below that of
# the fp8 bundle without calibration (quant_fp8's), and that of the bias correction
# alone (--calibrate-method=bias) with weights rounded by GPTQ: this fails if either
# stops removing error.
quant_fp8_calib() {
    local m d=$W/quant log td
    m=$(quant_model "$1")
    [ -n "$m" ] || { skipped "quant/fp8-calib-$1" "$MODELS/$1/model.onnx not found"; return; }
    td=$(dirname "$m")/test_data_set_0
    expect_rc "quant/fp8-calib-$1-compile" 0 "$SPYREC" "$m" --precision=fp8 \
        --calibrate tests/calib/$1/set_* --report "$d/$1.f8c.json" -o "$d/$1.f8c.sbin"
    expect_rc "quant/fp8-calib-$1-check" 0 "$SPYRUN" "$d/$1.f8c.sbin" --input-dir "$td" --check "$td"
    log=$(logname "quant/fp8-calib-$1-report")
    {
        n=$("$JSONCHECK" "$d/$1.f8c.json" --get quantization.weights_calibrated) && [ "$n" -gt 0 ] &&
            "$JSONCHECK" "$d/$1.f8c.json" --get quantization.bias_corrected
    } >"$log" 2>&1
    result "quant/fp8-calib-$1-report" $? "$log"
    [ "${2:-}" = better ] || return 0
    log=$(logname "quant/fp8-calib-$1-better")
    {
        a=$(quant_rell2 "$(logname "quant/fp8-calib-$1-check")") &&
            b=$(quant_rell2 "$(logname "quant/fp8-$1-check")") && echo "calibrated $a, plain $b" &&
            awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && b > 0 && a < b) }'
    } >"$log" 2>&1
    result "quant/fp8-calib-$1-better" $? "$log"
    log=$(logname "quant/fp8-calib-$1-gptq")
    {
        n=$("$JSONCHECK" "$d/$1.f8c.json" --get quantization.gptq_rounded) && echo "gptq $n" &&
            [ "$n" -gt 0 ] &&
            "$SPYREC" "$m" --precision=fp8 --calibrate tests/calib/$1/set_* \
                --calibrate-method=bias --report "$d/$1.f8b.json" -o "$d/$1.f8b.sbin" &&
            [ "$("$JSONCHECK" "$d/$1.f8b.json" --get quantization.gptq_rounded)" = 0 ] &&
            { "$SPYRUN" "$d/$1.f8b.sbin" --input-dir "$td" --check "$td" >"$d/$1.f8b.log" 2>&1 ||
                true; } &&
            a=$(quant_rell2 "$(logname "quant/fp8-calib-$1-check")") &&
            b=$(quant_rell2 "$d/$1.f8b.log") && echo "gptq $a, bias only $b" &&
            awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && b > 0 && a < b) }'
    } >"$log" 2>&1
    result "quant/fp8-calib-$1-gptq" $? "$log"
}

# quant_qdq_fp16 DIR: a QDQ model of the tree's own (tests/models/DIR) compiled with
# --precision=fp16 keeps its quantizations' float32 regions: the same number of kernels
# as in the default precision, and onnxruntime's output to float32 rounding.
quant_qdq_fp16() {
    local m=tests/models/$1 d=$W/quant log k32 k16
    log=$(logname "quant/qdq-fp16-$1")
    {
        "$SPYREC" $m/model.onnx -o "$d/$1.q32.sbin" &&
            "$SPYREC" $m/model.onnx --precision=fp16 -o "$d/$1.q16.sbin" &&
            k32=$("$SPYRUN" "$d/$1.q32.sbin" --input-dir $m/test_data_set_0 -q |
                  sed -n 's/.*per inference (\([0-9]*\) kernels).*/\1/p') &&
            "$SPYRUN" "$d/$1.q16.sbin" --check $m/test_data_set_0 -q \
                --metric rel-l2=1e-4 --metric cosine=0.99999 >"$d/$1.q16.out" &&
            k16=$(sed -n 's/.*per inference (\([0-9]*\) kernels).*/\1/p' "$d/$1.q16.out") &&
            echo "kernels: $k32 (default precision), $k16 (fp16)" &&
            [ -n "$k32" ] && [ "$k32" = "$k16" ]
    } >"$log" 2>&1
    result "quant/qdq-fp16-$1" $? "$log"
}

# quant_qdq_chunked DIR BUDGET: a QDQ model of the tree's own compiled for a scratchpad
# of BUDGET bytes (the reference target otherwise), small enough that a product whose
# zero-point corrections' row and column sums its kernel computes (prologue members,
# passes/plan/plan_sums.c) splits its depth into chunks ("inner [K/k]", k < K): the
# sums accumulate over the chunks like the product, and the outputs are onnxruntime's.
quant_qdq_chunked() {
    local m=tests/models/$1 d=$W/quant log
    log=$(logname "quant/qdq-chunked-$1")
    {
        sed "s/^lx_budget_bytes:.*/lx_budget_bytes: $2/" schemas/spyre32.yaml >"$d/lx$2.yaml" &&
            "$SPYREC" $m/model.onnx --target "$d/lx$2.yaml" --dump-after=tile \
                -o "$d/$1.lx.sbin" 2>"$d/$1.lx.plan" &&
            awk '/^kernel /    { side = 0; con = / \(contract\)/ }
                 /^    nodes:/ { side = con && /prologue/ }
                 side && match($0, /inner \[[0-9]+\/[0-9]+\]/) {
                     split(substr($0, RSTART + 7, RLENGTH - 8), kk, "/")
                     if (kk[2] + 0 < kk[1] + 0) found = 1 }
                 END { exit !found }' "$d/$1.lx.plan" &&
            "$SPYRUN" "$d/$1.lx.sbin" --check $m/test_data_set_0 -q
    } >"$log" 2>&1
    result "quant/qdq-chunked-$1" $? "$log"
}

part_cli_quant() {
    local ex=examples/models/tiny_cnn d=$W/quant log
    mkdir -p "$d"
    $MAKE --no-print-directory -s "$BUILD/tests/jsoncheck" >/dev/null 2>&1
    expect_rc quant/int8-needs-calibrate 2 "$SPYREC" $ex/model.onnx --precision=int8 -o "$d/x.sbin"
    expect_rc quant/calibrate-needs-int8 2 "$SPYREC" $ex/model.onnx --precision=fp16 \
        --calibrate tests/calib/tiny_cnn/set_0 -o "$d/x.sbin"
    expect_rc quant/calibrate-not-a-folder 2 "$SPYREC" $ex/model.onnx --precision=int8 \
        --calibrate=$ex/model.onnx -o "$d/x.sbin"
    expect_rc quant/calibrate-method-bad 2 "$SPYREC" $ex/model.onnx --precision=int8 \
        --calibrate tests/calib/tiny_cnn/set_0 --calibrate-method=percentile:100 -o "$d/x.sbin"
    expect_rc quant/calibrate-wrong-input 2 "$SPYREC" $ex/model.onnx --precision=int8 \
        --calibrate tests/calib/mlp/set_0 -o "$d/x.sbin"
    grep -q "not of the type of input" "$(logname quant/calibrate-wrong-input)"
    result quant/calibrate-wrong-input-message $? "$(logname quant/calibrate-wrong-input)"
    for m in tiny_cnn mlp lenet_bn bert_tiny gpt2_tiny; do quant_int8 $m; done
    # percentile ranges: another bundle, still within the bounds
    expect_rc quant/int8-percentile 0 "$SPYREC" $ex/model.onnx --precision=int8 \
        --calibrate tests/calib/tiny_cnn/set_* --calibrate-method=percentile:99.9 -o "$d/p.sbin"
    expect_rc quant/int8-percentile-check 0 "$SPYRUN" "$d/p.sbin" \
        --input-dir $ex/test_data_set_0 --check $ex/test_data_set_0
    log=$(logname quant/int8-percentile-differs)
    ! cmp "$d/p.sbin" "$d/tiny_cnn.i8.sbin" >"$log" 2>&1
    result quant/int8-percentile-differs $? "$log"
    # --keep-fp16 by operator type: no contraction quantized (a warning says so); the
    # bundle is fp16's
    log=$(logname quant/int8-keep-fp16)
    {
        "$SPYREC" $ex/model.onnx --precision=int8 --calibrate tests/calib/tiny_cnn/set_* \
            --keep-fp16=Conv,Gemm,MatMul --report "$d/k.json" -o "$d/k.sbin" &&
            [ "$("$JSONCHECK" "$d/k.json" --get quantization.contractions)" = 0 ] &&
            "$SPYREC" $ex/model.onnx --precision=fp16 --emit=asm -o "$d/k16.s" &&
            "$SPYREC" $ex/model.onnx --precision=int8 --calibrate tests/calib/tiny_cnn/set_* \
                --keep-fp16=Conv,Gemm,MatMul --emit=asm -o "$d/k8.s" 2>"$d/k8.err" &&
            grep -q "no contraction to quantize" "$d/k8.err" && cmp "$d/k16.s" "$d/k8.s"
    } >"$log" 2>&1
    result quant/int8-keep-fp16 $? "$log"
    quant_merged_qkv
    quant_int8_attention
    for m in qdq_attn qdq_attn_long qdq_cnn; do quant_qdq_fp16 $m; done
    quant_qdq_chunked qdq_attn_deep 1024
    for m in gpt2_tiny bert_tiny llama_tiny; do quant_fp8 $m; done
    quant_fp8_calib gpt2_tiny better
    quant_fp8_calib llama_tiny
}

# quant_int8_attention: in the int8 IR of tests/models/attn_long_f32 (one attention head
# over 72 positions) the weighted sum P.V, a product of two activations 72 deep, is an
# int32 product of symmetric int8 operands (no zero-point correction products: 4 int32
# products in all, with the merged Q/K and separate V projections and the output one),
# the scores Q.K^T (16 deep) stay float, and the bundle passes its fp32 goldens by the
# int8 defaults; --keep-fp16=weighted_sum leaves P.V float (and V merged: 2 int32
# products).
quant_int8_attention() {
    local m=tests/models/attn_long_f32 d=$W/quant log
    local cal=(tests/calib/attn_long_f32/set_*)
    expect_rc quant/int8-attention-compile 0 "$SPYREC" $m/model.onnx --precision=int8 \
        --calibrate "${cal[@]}" -o "$d/attn.i8.sbin"
    expect_rc quant/int8-attention-check 0 "$SPYRUN" "$d/attn.i8.sbin" \
        --input-dir $m/test_data_set_0 --check $m/test_data_set_0
    log=$(logname quant/int8-attention-ir)
    {
        "$SPYREC" $m/model.onnx --precision=int8 --calibrate "${cal[@]}" --emit=ir \
            -o "$d/attn.ir" &&
            grep -q "i32\[1,72,16\] = matmul(.*# 'weighted_sum'" "$d/attn.ir" &&
            grep -q "f32\[1,72,72\] = matmul(%q, %kt)" "$d/attn.ir" &&
            [ "$(grep -c 'i32\[.*= matmul(' "$d/attn.ir")" = 4 ] &&
            "$SPYREC" $m/model.onnx --precision=int8 --calibrate "${cal[@]}" --emit=ir \
                --keep-fp16=weighted_sum -o "$d/attn.k.ir" &&
            grep -q "f32\[1,72,16\] = matmul(.*# 'weighted_sum'" "$d/attn.k.ir" &&
            [ "$(grep -c 'i32\[.*= matmul(' "$d/attn.k.ir")" = 2 ]
    } >"$log" 2>&1
    result quant/int8-attention-ir $? "$log"
}

# quant_merged_qkv: in the int8 IR of bert_tiny (2 layers) the Q, K and V projections of
# a layer are one int8 product of the concatenated weights, read through three slices:
# 8 int32 products (Q/K/V, output, FFN in, FFN out per layer), not 12.
quant_merged_qkv() {
    local m d=$W/quant log
    m=$(quant_model bert_tiny)
    [ -n "$m" ] || { skipped quant/int8-merged-qkv "$MODELS/bert_tiny/model.onnx not found"; return; }
    log=$(logname quant/int8-merged-qkv)
    {
        "$SPYREC" "$m" --precision=int8 --calibrate tests/calib/bert_tiny/set_* --emit=ir \
            -o "$d/bt.ir" &&
            [ "$(grep -c 'i32\[.*= matmul(' "$d/bt.ir")" = 8 ] &&
            [ "$(grep -c '= slice(' "$d/bt.ir")" -ge 6 ]
    } >"$log" 2>&1
    result quant/int8-merged-qkv $? "$log"
}
