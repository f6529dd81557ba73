#!/bin/bash
# run_one.sh BUILD OUTDIR TESTDIR: compile one ONNX backend test case with spyrec, run every
# test_data_set_N with spyrun --check, and print one tab-separated result line:
#   folder/name  outcome  ops  detail  computes  fp16_outcome  fp16_detail  flagless
# outcome: pass | wrong | unsupported | compile_error | runtime_error | no_data
# A crash (signal) or a hang (timeout) is reported as such in the detail, never as a pass;
# a case without any test_data_set_N checks nothing and is reported as no_data (a failure).
# computes (passes only): "no" when the bundle never reads its inputs, so that every
# output was folded to a constant when compiling and the run checked only the folding;
# "yes" otherwise.
# fp16_outcome, fp16_detail (cases that use float16 only, else empty): the same case
# compiled again with --precision=fp16 (and the same specialisation) and checked with the
# bundle's fp16 metric defaults; the outcome is one of the above.
# flagless: "yes" when the case was compiled once with no --bind, --input-shape or
# --input-seq (the first, flag-less compile succeeded), "no" when it was specialised.
build=$1 out=$2 dir=$3
name="$(basename "$(dirname "$dir")")/$(basename "$dir")"
safe=${name//\//__}
sbin="$out/$safe.sbin"
sbin16="$out/$safe.fp16.sbin"
declare -A dsargs   # data set -> its specialisation arguments (newline-separated)
tol_file="$(dirname "$0")/tolerances.txt"
rtol=1e-3 atol=1e-4
if [ -f "$tol_file" ]; then
    line=$(grep -E "^$(basename "$dir")[[:space:]]" "$tol_file" | head -1)
    if [ -n "$line" ]; then read -r _ rtol atol _ <<<"$line"; fi
fi
ops=$(timeout 20 "$build/spyrec" --print-ops "$dir/model.onnx" 2>/dev/null | tr '\n' ',' | sed 's/,$//')
[ -n "$ops" ] || ops="?"
# one_line TEXT: TEXT on one line without tabs, at most 300 characters.
one_line() { echo "$1" | tr '\t\n' '  ' | cut -c1-300; }

# emit OUTCOME DETAIL [COMPUTES]: print the result line, with the fp16 run's outcome and
# detail when the case uses float16.
emit() {
    local f16="" f16d=""
    if uses_fp16; then
        f16=$(fp16_run); f16d=$(one_line "${f16#*$'\t'}"); f16=${f16%%$'\t'*}
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$1" "$ops" "$(one_line "$2")" "${3:-}" "$f16" "$f16d" "$flagless"
}
no_data() { emit no_data "no test_data_set_N folder: nothing was checked"; }

# computes SBIN: "yes" when the compiled bundle SBIN reads one of its inputs (an
# instruction names an input's segment, or an output shares it), "no" when its outputs
# depend on constants only. Reads the bundle's disassembly (spydump --asm).
computes() {
    timeout 30 "$build/spydump" --asm "$1" 2>/dev/null | gawk '
        /^tensor [0-9]+ (input|output) / {
            if (!match($0, / device [^ ]+ seg([0-9]+)/, m)) reads = 1   # unknown: assume so
            else if ($3 == "input") inp["seg" m[1]] = 1
            else outseg["seg" m[1]] = 1
            next
        }
        /^ / { while (match($0, /seg[0-9]+\[/)) {
                   s = substr($0, RSTART, RLENGTH - 1); if (s in inp) reads = 1
                   $0 = substr($0, RSTART + RLENGTH) } }
        END { for (s in outseg) if (s in inp) reads = 1
              if (NR == 0) reads = 1              # no disassembly: do not claim folding
              print reads ? "yes" : "no" }'
}

# spec_args DS MSG: spyrec options that specialise the compile on data set DS for every
# graph input that MSG reports as deciding a shape (--bind NAME=FILE), and for inputs with
# dynamic dimensions (--input-shape NAME=D0x... from the file's shape), and for sequence
# or optional inputs (--input-seq NAME=FILE: a SequenceProto/OptionalProto fixes the length
# and element shapes).
spec_args() {
    local ds=$1 m=$2 f desc nm dt dims derived=0
    # a shape-deciding value computed from inputs (not an input itself): bind the small
    # parameter-like inputs (scalars and vectors of at most 8 elements)
    grep -E "unsupported: dynamic .* input '" <<<"$m" | grep -qvF "(a graph input" && derived=1
    for f in "$ds"/input_*.pb; do
        [ -f "$f" ] || continue
        desc=$("$build/spyrun" --describe "$f" 2>/dev/null) || continue
        IFS=$'\t' read -r nm dt dims <<<"$desc"
        [ -n "$nm" ] || continue
        if grep -qF "input '$nm' has no fixed structure" <<<"$m"; then
            printf -- '--input-seq\n%s=%s\n' "$nm" "$f"
        elif grep -qF "input '$nm' (a graph input" <<<"$m" ||
           { [ "$derived" = 1 ] && small_dims "$dims"; }; then
            printf -- '--bind\n%s=%s\n' "$nm" "$f"
        elif grep -qF "of input '$nm'" <<<"$m"; then
            printf -- '--input-shape\n%s=%s\n' "$nm" "$dims"
        fi
    done
}

# small_dims D0xD1...: true for a scalar or a vector of at most 8 elements.
small_dims() {
    case $1 in "" | [0-8]) return 0 ;; *x*) return 1 ;; *) return 1 ;; esac
}

# check_ds SBIN DS: run one data set; prints nothing and returns 0 on a match, else
# prints the outcome and detail (tab-separated) and returns 1.
check_ds() {
    local out rc
    out=$(timeout 60 "$build/spyrun" "$1" --check "$2" --rtol "$rtol" --atol "$atol" --threads 1 2>&1)
    rc=$?
    [ $rc -eq 0 ] && return 0
    if [ $rc -eq 1 ]; then printf 'wrong\t%s: %s' "$(basename "$2")" "$(echo "$out" | grep -m1 MISMATCH)"
    elif [ $rc -eq 124 ]; then printf 'runtime_error\t%s: hang: spyrun timed out' "$(basename "$2")"
    elif [ $rc -gt 128 ]; then printf 'runtime_error\t%s: crash: spyrun killed by signal %d' "$(basename "$2")" $((rc-128))
    else printf 'runtime_error\t%s: exit %d: %s' "$(basename "$2")" $rc "$(echo "$out" | grep -v '^output' | head -2)"; fi
    return 1
}

# compile_class RC MSG: the outcome and detail (tab-separated) of a failed compile.
compile_class() {
    local rc=$1 m=$2 first
    # exit 2 with "unsupported", "not supported" or an unknown domain: a known gap
    first=$(echo "$m" | grep -m1 -i -E "unsupported|not supported|unknown domain" || true)
    if [ $rc -eq 124 ]; then printf 'compile_error\thang: spyrec timed out'
    elif [ $rc -gt 128 ]; then printf 'compile_error\tcrash: spyrec killed by signal %d: %s' $((rc-128)) "$m"
    elif [ $rc -eq 2 ] && [ -n "$first" ]; then printf 'unsupported\t%s' "$first"
    else printf 'compile_error\texit %d: %s' $rc "$(echo "$m" | head -2)"
    fi
}

# compile_fail RC MSG: report a failed compile.
compile_fail() {
    local res
    res=$(compile_class "$1" "$2")
    emit "${res%%$'\t'*}" "${res#*$'\t'}"
}

# uses_fp16: true when a tensor of the first data set (an input or an output) is float16.
# A byte pre-filter (a TensorProto's data_type field set to FLOAT16 is the bytes 0x10 0x0a)
# keeps spyrun --describe, which decides, to the few candidate files.
uses_fp16() {
    local f
    for f in $(LC_ALL=C grep -lP '\x10$' "$dir"/test_data_set_0/*.pb 2>/dev/null); do
        [ "$("$build/spyrun" --describe "$f" 2>/dev/null | cut -f2)" = f16 ] && return 0
    done
    return 1
}

# fp16_run: compile the case with --precision=fp16 (with each data set's specialisation
# of the fp32 run, if any: a specialised case is compiled once per data set) and check
# every data set with the bundle's fp16 metric defaults; prints the outcome and detail
# (tab-separated).
fp16_run() {
    local ds m rc nds=0 res args
    for ds in "$dir"/test_data_set_*; do
        [ -d "$ds" ] || continue
        nds=$((nds + 1))
        if [ "$nds" = 1 ] || [ ${#dsargs[@]} -gt 0 ]; then
            mapfile -t args < <(printf '%s' "${dsargs[$ds]:-}")
            m=$(timeout 30 "$build/spyrec" "$dir/model.onnx" -o "$sbin16" --precision=fp16 "${args[@]}" 2>&1 >/dev/null)
            rc=$?
            if [ $rc -ne 0 ]; then compile_class $rc "$m"; return; fi
        fi
        if ! res=$(check_ds "$sbin16" "$ds"); then rm -f "$sbin16"; printf '%s' "$res"; return; fi
    done
    rm -f "$sbin16"
    if [ $nds = 0 ]; then printf 'no_data\tno test_data_set_N folder'; return; fi
    printf 'pass\t'
}

msg=$(timeout 30 "$build/spyrec" "$dir/model.onnx" -o "$sbin" 2>&1 >/dev/null)
rc=$?
# compile errors that a specialisation on the data set resolves
spec_re="unsupported: dynamic .* input '|dynamic dimension|input '.*' has no fixed structure"
flagless=yes
if [ $rc -eq 2 ] && grep -qE "$spec_re" <<<"$msg"; then
    flagless=no
    # The model has inputs that decide shapes: an AOT compile specialises on them, so
    # every data set is compiled with its own values (reported as "specialised").
    bound="" nds=0 comp=no
    for ds in "$dir"/test_data_set_*; do
        [ -d "$ds" ] || continue
        nds=$((nds + 1))
        # each compile names the next input it needs: accumulate them over rounds
        mall=$msg
        for round in 1 2 3 4 5 6; do
            mapfile -t args < <(spec_args "$ds" "$mall")
            m2=$(timeout 30 "$build/spyrec" "$dir/model.onnx" -o "$sbin" "${args[@]}" 2>&1 >/dev/null)
            rc=$?
            [ $rc -eq 2 ] && grep -qE "unsupported: dynamic|$spec_re" <<<"$m2" || break
            mall="$mall
$m2"
        done
        dsargs[$ds]=$(printf '%s\n' "${args[@]}")
        if [ $rc -ne 0 ]; then compile_fail $rc "$m2"; exit 0; fi
        bound=$(printf '%s ' "${args[@]}" | sed -E 's/=[^ ]*//g; s/--bind /bound:/g; s/--input-shape /shape:/g; s/--input-seq /seq:/g')
        if res=$(check_ds "$sbin" "$ds"); then :; else
            rm -f "$sbin"; emit "${res%%$'\t'*}" "${res#*$'\t'} (specialised: $bound)"; exit 0
        fi
        [ "$(computes "$sbin")" = no ] || comp=yes
    done
    rm -f "$sbin"
    if [ $nds = 0 ]; then no_data; exit 0; fi
    emit pass "specialised: $bound" $comp
    exit 0
fi
if [ $rc -ne 0 ]; then
    compile_fail $rc "$msg"
    exit 0
fi
nds=0
for ds in "$dir"/test_data_set_*; do
    [ -d "$ds" ] || continue
    nds=$((nds + 1))
    if ! res=$(check_ds "$sbin" "$ds"); then
        rm -f "$sbin"; emit "${res%%$'\t'*}" "${res#*$'\t'}"; exit 0
    fi
done
comp=$(computes "$sbin")
rm -f "$sbin"
if [ $nds = 0 ]; then no_data; exit 0; fi
emit pass "" "$comp"
