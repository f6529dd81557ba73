#!/bin/sh
# run_one.sh DIR/NAME.{onnx|ir|pt2}: one golden text test (see tests/golden/README.md).
#
#   NAME.args    spyrec flags (default: --emit=ir); optional
#   NAME.expect  spyrec's standard output and error, run from DIR with "-o -", must be
#                exactly this (diff -u); exit status 0
#   NAME.err     spyrec must exit with status 2, leave no output file, and print every
#                non-empty line of this file somewhere in its messages
#
# SPYREC names the compiler (default build/spyrec). With UPDATE_GOLDEN=1 the .expect
# file is rewritten from the actual output instead of compared.
set -u
src=$1
SPYREC=${SPYREC:-$(pwd)/build/spyrec}
dir=$(dirname "$src")
file=$(basename "$src")
base=${src%.*}
args="--emit=ir"
[ -e "$base.args" ] && args=$(sed 's/#.*//' "$base.args")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -e "$base.err" ]; then
    # shellcheck disable=SC2086
    (cd "$dir" && timeout 120 "$SPYREC" "$file" -o "$tmp/out.sbin" $args) >"$tmp/log" 2>&1
    rc=$?
    cat "$tmp/log"
    [ "$rc" = 2 ] || { echo "FAIL: exit status $rc, expected 2"; exit 1; }
    [ ! -e "$tmp/out.sbin" ] || { echo "FAIL: a failed compile left $tmp/out.sbin"; exit 1; }
    [ "$(ls -A "$tmp")" = log ] || { echo "FAIL: files left behind:"; ls -A "$tmp"; exit 1; }
    status=0
    while IFS= read -r frag; do
        [ -n "$frag" ] || continue
        grep -qF -- "$frag" "$tmp/log" || { echo "FAIL: message not found: $frag"; status=1; }
    done <"$base.err"
    exit $status
fi

# shellcheck disable=SC2086
(cd "$dir" && timeout 120 "$SPYREC" "$file" -o - $args) >"$tmp/out" 2>&1
rc=$?
if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$tmp/out" "$base.expect"
    echo "updated $base.expect (exit status $rc)"
    exit 0
fi
[ "$rc" = 0 ] || { cat "$tmp/out"; echo "FAIL: exit status $rc, expected 0"; exit 1; }
diff -u "$base.expect" "$tmp/out"
