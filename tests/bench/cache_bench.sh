#!/usr/bin/env bash
# cache_bench.sh: compile-cache timings per model (make bench-cache).
#
#   bash tests/bench/cache_bench.sh [-n REPEATS] SPYREC WORKDIR MODEL...
#
# For each model, REPEATS times (default 5), in this order:
#   nocache  spyrec MODEL --no-cache                         (a plain compile)
#   cold     spyrec MODEL --cache-dir EMPTY                  (a miss: compile and store)
#   warm     spyrec MODEL --cache-dir SAME                   (a hit)
# Every run writes over the same output file, as a rebuild does. Prints the best time
# of each, the ratio warm/cold (the issue's measure) and warm/nocache, and checks that
# the bundle of every hit is byte-identical to the plain compile's and (one more hit,
# untimed, with --report) that the report says "hit". Exit status 1 when
# a hit was not byte-identical or was not reported as a hit.
# Two more columns, measured after the warm run so that it is measured as before:
#   fresh    a hit into an output path that does not exist (make clean; make): where the
#            cache folder shares the output's file system the output is a hard link to
#            the entry's file either way, and warm rewrites an output that is already
#            that file, so this shows that warm is not cheap only for that reason
#   copy     a hit with --cache-copy: the output's bytes are written (as when the cache
#            folder is on another file system)
set -u
reps=5
if [ "${1:-}" = -n ]; then
    reps=$2
    shift 2
fi
spyrec=$1 work=$2
shift 2
mkdir -p "$work" || exit 1

# now_ns: the monotonic-enough wall clock in nanoseconds.
now_ns() { date +%s%N; }

# best_of VAR T: keep in VAR the smaller of its value and T.
best_of() { if [ -z "${!1}" ] || [ "$2" -lt "${!1}" ]; then printf -v "$1" %s "$2"; fi; }

# ms NS: nanoseconds as milliseconds with one decimal.
ms() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1e6 }'; }

status=0
printf '%-16s %10s %10s %10s %10s %12s %10s %10s\n' model nocache_ms cold_ms warm_ms warm/cold warm/nocache \
    fresh_ms copy_ms
for m in "$@"; do
    name=$(basename "$(dirname "$m")")
    if [ ! -e "$m" ]; then
        printf '%-16s skipped: %s is not present\n' "$name" "$m"
        continue
    fi
    out=$work/$name.sbin ref=$work/$name.ref.sbin fresh=$work/$name.fresh.sbin
    "$spyrec" "$m" -o "$ref" --no-cache || { status=1; continue; }
    bn= bc= bw= bf= bp=
    for _ in $(seq "$reps"); do
        rm -rf "$work/cache"
        t0=$(now_ns)
        "$spyrec" "$m" -o "$out" --no-cache || status=1
        t1=$(now_ns)
        "$spyrec" "$m" -o "$out" --cache-dir "$work/cache" || status=1
        t2=$(now_ns)
        "$spyrec" "$m" -o "$out" --cache-dir "$work/cache" || status=1
        t3=$(now_ns)
        cmp -s "$ref" "$out" || { echo "$name: the hit's bundle differs" >&2; status=1; }
        rm -f "$fresh"
        t4=$(now_ns)
        "$spyrec" "$m" -o "$fresh" --cache-dir "$work/cache" || status=1
        t5=$(now_ns)
        "$spyrec" "$m" -o "$out" --cache-dir "$work/cache" --cache-copy || status=1
        t6=$(now_ns)
        best_of bn $((t1 - t0))
        best_of bc $((t2 - t1))
        best_of bw $((t3 - t2))
        best_of bf $((t5 - t4))
        best_of bp $((t6 - t5))
        cmp -s "$ref" "$fresh" && cmp -s "$ref" "$out" || { echo "$name: a hit's bundle differs" >&2; status=1; }
    done
    # untimed (a report costs time of its own): the last compile was a hit
    "$spyrec" "$m" -o "$out" --cache-dir "$work/cache" --report "$work/r.json" || status=1
    grep -q '"cache": *"hit"' "$work/r.json" || { echo "$name: not a hit" >&2; status=1; }
    printf '%-16s %10s %10s %10s %9.1f%% %11.1f%% %10s %10s\n' "$name" "$(ms "$bn")" "$(ms "$bc")" "$(ms "$bw")" \
        "$(awk -v a="$bw" -v b="$bc" 'BEGIN { print 100 * a / b }')" \
        "$(awk -v a="$bw" -v b="$bn" 'BEGIN { print 100 * a / b }')" "$(ms "$bf")" "$(ms "$bp")"
done
rm -rf "$work/cache" "$work"/*.sbin "$work/r.json"
echo "load: $(uptime)"
exit $status
