#!/bin/bash
# run_malformed.sh [BUILD] [PATTERN]: run the malformed-input corpus (tests/malformed).
#
# Every line of tests/malformed/expect.tsv names a case file, the tool that reads it
# (spyrec or spyrun), the exit status it must end with, a fragment its messages must
# contain, and for spyrun the arguments ({} = the case file; paths are relative to
# tests/malformed). Each case runs with a time limit (1 s) and a memory limit
# (ulimit -v, 256 MiB); it passes when the exit status and the message match, nothing
# was killed by a signal or a timeout, no sanitizer spoke, and no output file was left
# behind (spyrec writes into an empty folder, spyrun gets --output-dir there).
# Prints one line per failure, then "N passed, N failed"; exits 1 if any failed.
# PATTERN (a grep -E expression) selects cases by file name.
#
# Environment: MALFORMED_TIMEOUT (seconds), MALFORMED_VMEM_KB (or "unlimited"),
# VERBOSE=1 to print every case. Sanitizer builds (ASan, TSan, MSan) reserve huge
# address ranges and run slower: for them the memory limit is lifted and the time
# limit raised to 30 s unless set explicitly.
set -u
BUILD=${1:-build}
PATTERN=${2:-}
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
CORPUS=$ROOT/tests/malformed
SPYREC=$B/spyrec
SPYRUN=$B/spyrun
WORK=$B/tests/malformed
TIMEOUT=${MALFORMED_TIMEOUT:-}
VMEM=${MALFORMED_VMEM_KB:-}

for tool in "$SPYREC" "$SPYRUN"; do
    [ -x "$tool" ] || { echo "run_malformed.sh: $tool not built" >&2; exit 2; }
done
if grep -qa -m1 -e __asan_init -e __tsan_init -e __msan_init "$SPYREC"; then
    TIMEOUT=${TIMEOUT:-30}
    VMEM=${VMEM:-unlimited}
fi
TIMEOUT=${TIMEOUT:-1}
VMEM=${VMEM:-262144}
mkdir -p "$WORK/logs"
npass=0 nfail=0

# fail NAME LOG WHY...: report one failed case with the tail of its log.
fail() {
    local name=$1 log=$2
    shift 2
    nfail=$((nfail + 1))
    echo "FAIL $name: $*"
    tail -n 8 "$log" | sed 's/^/    | /'
}

# run_case FILE TOOL STATUS FRAGMENT ARGS: run one case in the corpus folder.
run_case() {
    local file=$1 tool=$2 want=$3 frag=$4 args=$5
    local out=$WORK/out log
    log=$WORK/logs/$(echo "$file" | tr '/' '_').log
    rm -rf "$out"
    mkdir -p "$out"
    local -a cmd
    case $tool in
    spyrec) cmd=("$SPYREC" "$file" -o "$out/model.sbin") ;;
    spyrun)
        [ -n "$args" ] || args='{}'
        # shellcheck disable=SC2206
        # two emulator threads: one per host CPU would not fit the memory limit on big hosts
        cmd=("$SPYRUN" ${args//\{\}/$file} --threads 2 --output-dir "$out/results")
        ;;
    *) echo "bad tool '$tool' for $file" >"$log"; fail "$file" "$log" "bad tool"; return ;;
    esac
    {
        (
            cd "$CORPUS" || exit 99
            ulimit -v "$VMEM" 2>/dev/null
            echo "+ ${cmd[*]}"
            exec timeout -k 2 "$TIMEOUT" "${cmd[@]}" </dev/null
        ) >"$log" 2>&1
    } 2>/dev/null
    local rc=$?
    local bad=""
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        bad="timed out after ${TIMEOUT}s"
    elif [ "$rc" -gt 128 ]; then
        bad="killed by signal $((rc - 128))"
    elif [ "$rc" != "$want" ]; then
        bad="exit status $rc, expected $want"
    elif ! grep -qF -- "$frag" "$log"; then
        bad="message lacks '$frag'"
    elif grep -qE 'Sanitizer|runtime error:|internal error' "$log"; then
        bad="sanitizer report or internal error"
    elif [ "$want" != 0 ] && [ -n "$(ls -A "$out")" ]; then
        bad="left files behind: $(ls -A "$out" | tr '\n' ' ')"
    fi
    if [ -n "$bad" ]; then
        fail "$file" "$log" "$bad"
    else
        npass=$((npass + 1))
        [ -z "${VERBOSE:-}" ] || echo "PASS $file"
    fi
}

while IFS=$'\t' read -r file tool status frag args; do
    case $file in '#'* | '') continue ;; esac
    if [ -n "$PATTERN" ] && ! echo "$file" | grep -qE -- "$PATTERN"; then
        continue
    fi
    run_case "$file" "$tool" "$status" "$frag" "${args:-}"
done <"$CORPUS/expect.tsv"
rm -rf "$WORK/out"
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
