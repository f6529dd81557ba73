#!/bin/sh
# deps.sh PKG...: make sure the Debian packages the build needs are installed.
# As root, missing packages are installed with apt-get; otherwise the exact command
# to run is printed and the build stops.
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing missing build dependencies:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq $missing >/dev/null || {
        echo "error: apt-get install failed for:$missing" >&2; exit 1; }
    exit 0
fi
echo "error: missing build dependencies:$missing" >&2
echo "install them with:  sudo apt-get install -y$missing" >&2
exit 1
