#!/bin/sh
# malformed_one.sh FILE OUTDIR: one case of the malformed-input corpus (tests/malformed).
#
# A model (.onnx, .pt2, .ir) must make spyrec exit with status 2 and leave nothing in
# OUTDIR (an empty folder); a bundle (.sbin) must make spyrun exit with status 2.
# If FILE.err or FILE's name with the extension replaced by .err exists, each non-empty line of it
# must appear in the messages. Crashes (signals) and hangs (timeout) fail.
set -u
f=$1
out=$2
SPYREC=${SPYREC:-build/spyrec}
SPYRUN=${SPYRUN:-build/spyrun}
log=$out/../malformed.log
case $f in
*.sbin) echo "+ spyrun $f"
        timeout 60 "$SPYRUN" "$f" >"$log" 2>&1 ;;
*)      echo "+ spyrec $f -o $out/model.sbin"
        timeout 60 "$SPYREC" "$f" -o "$out/model.sbin" >"$log" 2>&1 ;;
esac
rc=$?
cat "$log"
status=0
[ "$rc" = 2 ] || { echo "FAIL: exit status $rc, expected 2"; status=1; }
if [ -n "$(ls -A "$out")" ]; then
    echo "FAIL: files left in the output folder:"
    ls -A "$out"
    status=1
fi
err=${f%.*}.err
[ -e "$f.err" ] && err=$f.err
if [ -e "$err" ]; then
    while IFS= read -r frag; do
        [ -n "$frag" ] || continue
        grep -qF -- "$frag" "$log" || { echo "FAIL: message not found: $frag"; status=1; }
    done <"$err"
fi
grep -q . "$log" || { echo "FAIL: no message at all"; status=1; }
exit $status
