#!/bin/sh
# venv.sh DIR: create the Python virtualenv DIR with numpy, onnx and onnxruntime from
# PyPI (used by `make bench` and `make example`, never by the build or `make check`).
# As root, a missing python3-venv package is installed first.
set -eu
dir=$1
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    sh "$(dirname "$0")/deps.sh" python3 python3-venv
fi
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install -q --disable-pip-version-check numpy onnx onnxruntime
touch "$dir/.ok"
echo "created $dir with numpy, onnx, onnxruntime"
