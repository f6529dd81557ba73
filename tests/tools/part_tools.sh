# part_tools.sh: the "tools" part of make check (sourced by tests/tools/check.sh, which
# provides result, skipped, logname, SPYREC, SPYRUN, B, BUILD, W, ROOT, MAKE, SHARED).
#
# What a compiler user works with besides spyrec -o: dependency files (-MD -MF), the
# batch Makefile examples/Makefile (incremental, make -q, failure handling, identical
# bundles at -j1 and -j4, graphs), the compile report (--report), Graphviz and
# assembly output (--emit=dot|asm), spydump, spyrun --trace, progress output only on a
# terminal, make install with a program built against the installed runtime
# through pkg-config (examples/embed.c), and the compile cache (--cache-dir). A check
# that needs a tool this machine lacks (Graphviz, script(1)) is a test of its own,
# counted as skipped without the tool.

TOOLS_TINY=examples/models/tiny_cnn
TOOLS_EXT=tests/tools/extdata              # a model with two external-data files
TOOLS_BAD=tests/golden/cli/unsupported_ops.onnx

# tools_run NAME FUNC: run FUNC with its output in NAME's log; pass when it returns 0,
# skipped (with the reason it gave to cannot) when it returns 77.
tools_run() {
    local log rc
    log=$(logname "tools/$1")
    (set -u; "$2") >"$log" 2>&1 </dev/null
    rc=$?
    if [ $rc = 77 ]; then
        skipped "tools/$1" "$(sed -n 's/^SKIP: //p' "$log" | tail -n 1)"
    else
        result "tools/$1" $rc "$log"
    fi
}

# say MSG: a line in the log; die MSG: a failed check; cannot MSG: the test cannot run
# here (a tool is missing), so it is counted as skipped with MSG as the reason.
say() { echo "+ $*"; }
die() {
    echo "FAIL: $*"
    return 1
}
cannot() {
    echo "SKIP: $*"
    return 77
}

# aged DIR: set the times of everything in DIR an hour back, so that a later touch
# (a change make must notice) is clearly newer than the outputs built meanwhile.
aged() { find "$1" -exec touch -d "@$(($(date +%s) - 3600))" {} +; }

# has FILE TEXT: FILE contains the fixed string TEXT.
has() { grep -qF -- "$2" "$1" || die "$1 lacks '$2'"; }

# emake ARGS: make on examples/Makefile, outside the make that runs the tests.
case $SHARED in /*) TOOLS_SHARED=$SHARED ;; *) TOOLS_SHARED=$ROOT/$SHARED ;; esac
emake() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" --no-print-directory -C "$ROOT/examples" \
    SPYREC="$B/spyrec" SPYRUN="$B/spyrun" SHARED="$TOOLS_SHARED" "$@"; }

JSONCHECK=$B/tests/jsoncheck

# ---- spyrec -MD -MF --------------------------------------------------------------------
t_deps_file() {
    local d=$W/tools/deps self
    rm -rf "$d" && mkdir -p "$d" && cp -r "$TOOLS_EXT" "$d/ext" && aged "$d/ext" || return 1
    say "spyrec $d/ext/model.onnx -o $d/m.sbin -MD -MF $d/m.d --target schemas/spyre32.yaml"
    "$SPYREC" "$d/ext/model.onnx" -o "$d/m.sbin" -MD -MF "$d/m.d" --target schemas/spyre32.yaml || return 1
    cat "$d/m.d"
    self=$(readlink -f "$SPYREC")
    has "$d/m.d" "$d/m.sbin:" && has "$d/m.d" "$d/ext/model.onnx" && has "$d/m.d" "$d/ext/weights.bin" &&
        has "$d/m.d" "$d/ext/bias.bin" && has "$d/m.d" "schemas/spyre32.yaml" && has "$d/m.d" "$self" || return 1
    # make understands it: up to date now, out of date once an external-data file changes
    printf '%s:\n\ttouch $@\ninclude %s\n' "$d/m.sbin" "$d/m.d" >"$d/Makefile"
    make -q -f "$d/Makefile" "$d/m.sbin" || die "make -q: the bundle should be up to date" || return 1
    touch "$d/ext/bias.bin"
    make -q -f "$d/Makefile" "$d/m.sbin" && die "make -q: a newer bias.bin should make the bundle out of date"
    # gcc's default name: OUT with .d
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/tiny.sbin" -MD || return 1
    has "$d/tiny.d" "$d/tiny.sbin:" || return 1
    # the bundle does not depend on -MD: same bytes without it
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/tiny2.sbin" && cmp "$d/tiny.sbin" "$d/tiny2.sbin" || return 1
    # a bundle streamed into its file and one written from memory (standard output)
    # are the same bytes, with external data too
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o - >"$d/tiny3.sbin" && cmp "$d/tiny.sbin" "$d/tiny3.sbin" || return 1
    "$SPYREC" "$d/ext/model.onnx" -o - --target schemas/spyre32.yaml | cmp - "$d/m.sbin"
}

# a bundle larger than several of the file writer's 4 MiB staging buffers (written by its
# thread, with direct I/O where the file system allows it: codegen/cg_out.c) is the same
# bytes as the one written from memory (standard output)
t_big_stream() {
    local d=$W/tools/bigstream big=$MODELS/mobilenet_v2/model.onnx
    rm -rf "$d" && mkdir -p "$d"
    [ -f "$big" ] || cannot "$big not found" || return
    "$SPYREC" "$big" -o "$d/big.sbin" && "$SPYREC" "$big" -o - | cmp - "$d/big.sbin" || return 1
    [ "$(stat -c %s "$d/big.sbin")" -gt $((12 << 20)) ] || die "bundle smaller than 12 MiB"
}

t_deps_failure() {
    local d=$W/tools/depsfail rc
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_BAD" -o "$d/bad.sbin" -MD -MF "$d/bad.d"
    rc=$?
    ls -A "$d"
    [ $rc = 2 ] || die "exit status $rc, expected 2" || return 1
    [ -z "$(ls -A "$d")" ] || die "a failed compile left files behind"
}

# ---- spyrec --report --------------------------------------------------------------------
t_report_ok() {
    local d=$W/tools/report n
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/t.sbin" --report "$d/t.json" || return 1
    "$JSONCHECK" "$d/t.json" --report ok || return 1
    n=$("$JSONCHECK" "$d/t.json" --get decompositions.Conv.by_op.conv) && say "Conv -> conv: $n"
    [ "$n" = 2 ] || die "decompositions: expected 2 conv from 2 Conv nodes, got '$n'" || return 1
    n=$("$JSONCHECK" "$d/t.json" --get kernels.#)
    [ "$n" -gt 0 ] && [ "$n" = "$("$JSONCHECK" "$d/t.json" --get bundle.kernels)" ] ||
        die "kernel count of the plan and of the bundle differ" || return 1
    n=$("$JSONCHECK" "$d/t.json" --get kernels.0.split.items_per_core.#)
    [ "$n" = 32 ] || die "items_per_core has $n entries, expected 32 cores" || return 1
    # the fp16 what-if figure is the modelled time of the fp16 compile of the model
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/h.sbin" --precision=fp16 --report "$d/h.json" || return 1
    n=$("$JSONCHECK" "$d/t.json" --get fp16_what_if.device_us) &&
        [ "$n" = "$("$JSONCHECK" "$d/h.json" --get bundle.device_us)" ] ||
        die "fp16_what_if.device_us '$n' is not the fp16 bundle's modelled time" || return 1
    n=$("$JSONCHECK" "$d/t.json" --get fp16_what_if.this_device_us) &&
        [ "$n" = "$("$JSONCHECK" "$d/t.json" --get bundle.device_us)" ] ||
        die "fp16_what_if.this_device_us '$n' is not this bundle's modelled time"
}

# every ONNX model of tests/models.list: the DRAM activation arena is within 1.1x the
# liveness lower bound the report prints (the planner places lifetimes offline)
t_arena_bound() {
    local d=$W/tools/arena m r n=0
    rm -rf "$d" && mkdir -p "$d"
    [ -d "$MODELS" ] || cannot "$MODELS not found" || return
    for m in $(list_models | awk '$1 !~ /\.pt2$/ {print $1}'); do
        "$SPYREC" "$MODELS/$m/model.onnx" -o "$d/m.sbin" --report "$d/m.json" || return 1
        r=$("$JSONCHECK" "$d/m.json" --get dram.arena_over_bound) || return 1
        say "$m: arena over bound $r"
        awk -v r="$r" 'BEGIN { exit !(r > 0 && r <= 1.1) }' || die "$m: arena $r x the bound" || return 1
        n=$((n + 1))
    done
    [ $n -gt 0 ] || die "no models"
}

t_report_error() {
    local d=$W/tools/reporterr rc ops
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_BAD" -o "$d/bad.sbin" --report "$d/bad.json"
    rc=$?
    [ $rc = 2 ] || die "exit status $rc, expected 2" || return 1
    [ ! -e "$d/bad.sbin" ] || die "a failed compile left a bundle" || return 1
    "$JSONCHECK" "$d/bad.json" --report error || return 1
    ops="$("$JSONCHECK" "$d/bad.json" --get unsupported_ops.0.op) $("$JSONCHECK" "$d/bad.json" --get unsupported_ops.1.op)"
    say "unsupported: $ops"
    [ "$ops" = "FooBar BazQux" ] || die "expected both unsupported operators at once"
}

# ---- --emit=dot and --emit=asm -----------------------------------------------------------
t_emit_dot() {
    local d=$W/tools/dot
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" --emit=dot -o "$d/final.dot" || return 1
    has "$d/final.dot" "digraph" && has "$d/final.dot" "subgraph cluster_k0" &&
        has "$d/final.dot" 'conv\nf32[2,8,32,32]' && has "$d/final.dot" "input x" || return 1
    "$SPYREC" "$TOOLS_TINY/model.onnx" --emit=dot --dump-after=decompose -o "$d/early.dot" || return 1
    has "$d/early.dot" "after decompose" || return 1
    ! grep -q cluster "$d/early.dot" || die "kernels before fusion"
}

# Graphviz renders both graphs of t_emit_dot.
t_emit_dot_svg() {
    local d=$W/tools/dotsvg
    command -v dot >/dev/null 2>&1 || cannot "Graphviz (dot) is not installed" || return
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" --emit=dot -o "$d/final.dot" &&
        "$SPYREC" "$TOOLS_TINY/model.onnx" --emit=dot --dump-after=decompose -o "$d/early.dot" || return 1
    dot -Tsvg "$d/final.dot" -o "$d/final.svg" && has "$d/final.svg" "<svg" &&
        dot -Tsvg "$d/early.dot" -o "$d/early.svg"
}

t_emit_asm() {
    local d=$W/tools/asm k
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" --emit=asm -o "$d/t.s" && "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/t.sbin" || return 1
    LC_ALL=C grep -q '[^[:print:][:space:]]' "$d/t.s" && die "non-printable bytes in the assembly" && return 1
    has "$d/t.s" "core 0:" && has "$d/t.s" "tensor 0 input 'x'" || return 1
    # every kernel spydump lists appears, by name, in the assembly
    k=$("$B/spydump" "$d/t.sbin" | sed -n 's/^ *[0-9][0-9]*  \(k[0-9][0-9]*_[^ ]*\).*/\1/p')
    say "kernels: $k"
    [ -n "$k" ] || die "no kernels listed by spydump" || return 1
    for k in $k; do
        has "$d/t.s" "'$k'" || return 1
    done
}

# ---- spydump -----------------------------------------------------------------------------
t_spydump() {
    local d=$W/tools/spydump
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" -O1 -o "$d/t.sbin" && "$B/spydump" "$d/t.sbin" >"$d/out" || return 1
    cat "$d/out"
    has "$d/out" "magic:     SPYRSBIN" && has "$d/out" "version:   format v" && has "$d/out" "target:    spyre32" &&
        has "$d/out" "CODE" && has "$d/out" "CONSTS" && has "$d/out" "verify: ok" &&
        has "$d/out" "compiler:  spyrec" && has "$d/out" "flags:     -O1" &&
        has "$d/out" "tensors (2):" && has "$d/out" "input  x" && has "$d/out" "kernels (" || return 1
    # --asm: the disassembly of the bundle, the same bytes as spyrec --emit=asm
    "$SPYREC" "$TOOLS_TINY/model.onnx" -O1 --emit=asm -o "$d/t.asm" &&
        "$B/spydump" --asm "$d/t.sbin" >"$d/t2.asm" || return 1
    cmp "$d/t.asm" "$d/t2.asm" || die "spydump --asm differs from spyrec --emit=asm" || return 1
    printf 'not a bundle' >"$d/bad.sbin"
    "$B/spydump" "$d/bad.sbin"
    [ $? = 1 ] || die "spydump of a bad file should exit 1"
    "$B/spydump" --asm "$d/bad.sbin"
    [ $? = 1 ] || die "spydump --asm of a bad file should exit 1"
}

# ---- spyrun --trace ------------------------------------------------------------------------
t_trace() {
    local d=$W/tools/trace
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/t.sbin" || return 1
    "$SPYRUN" "$d/t.sbin" --check "$TOOLS_TINY/test_data_set_0" --trace "$d/trace.json" --threads 2 -q || return 1
    "$JSONCHECK" "$d/trace.json" --trace || return 1
    "$SPYRUN" "$d/t.sbin" --check "$TOOLS_TINY/test_data_set_0" --trace "$d/one.json" --threads 1 -q &&
        "$JSONCHECK" "$d/one.json" --trace
}

# ---- progress: only on a terminal --------------------------------------------------------------
t_progress() {
    local d=$W/tools/progress
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/t.sbin" 2>"$d/err" || return 1
    [ ! -s "$d/err" ] || die "spyrec wrote to a non-terminal stderr: $(cat "$d/err")"
}

# On a terminal (script(1) provides one) spyrec shows its progress line, and the bundle
# is the same bytes.
t_progress_tty() {
    local d=$W/tools/progresstty
    command -v script >/dev/null 2>&1 || cannot "script(1) is not installed" || return
    rm -rf "$d" && mkdir -p "$d"
    "$SPYREC" "$TOOLS_TINY/model.onnx" -o "$d/t.sbin" || return 1
    script -q -e -c "'$SPYREC' '$TOOLS_TINY/model.onnx' -o '$d/tty.sbin'" "$d/tty.log" >/dev/null || return 1
    has "$d/tty.log" "[pass 1/" && cmp "$d/t.sbin" "$d/tty.sbin"
}

# ---- examples/Makefile -----------------------------------------------------------------------------
t_examples_make() {
    local d=$W/tools/examples out models
    rm -rf "$d" && mkdir -p "$d" && cp -r "$TOOLS_EXT" "$d/extdata" && aged "$d/extdata" || return 1
    models="$ROOT/$TOOLS_TINY $d/extdata"
    say "make -C examples -j2 MODELS='$models'"
    emake -j2 BUILD_DIR="$d/build" MODELS="$models" || return 1
    for f in tiny_cnn.sbin tiny_cnn.d tiny_cnn.ok extdata.sbin extdata.d extdata.ok; do
        [ -e "$d/build/$f" ] || die "missing $f" || return 1
    done
    emake -q BUILD_DIR="$d/build" MODELS="$models" || die "make -q: not up to date after a build" || return 1
    out=$(emake BUILD_DIR="$d/build" MODELS="$models") || return 1
    say "second make: $out"
    case $out in *SPYREC* | *CHECK*) die "a second make rebuilt something" && return 1 ;; esac
    touch "$d/extdata/weights.bin"
    emake -q BUILD_DIR="$d/build" MODELS="$models" && die "make -q: up to date after touching weights.bin" && return 1
    out=$(emake BUILD_DIR="$d/build" MODELS="$models") || return 1
    say "after touching extdata/weights.bin: $out"
    case $out in *"SPYREC  $d/build/extdata.sbin"*) ;; *) die "extdata was not rebuilt" && return 1 ;; esac
    case $out in *tiny_cnn.sbin*) die "tiny_cnn was rebuilt too" && return 1 ;; esac
    emake -q BUILD_DIR="$d/build" MODELS="$models" || die "make -q: not up to date after the rebuild"
}

t_examples_fail() {
    local d=$W/tools/examplesfail rc
    rm -rf "$d" && mkdir -p "$d"
    emake BUILD_DIR="$d/build" MODELS="$ROOT/$TOOLS_BAD $ROOT/$TOOLS_TINY" >"$d/out" 2>&1
    rc=$?
    cat "$d/out"
    [ $rc != 0 ] || die "the build of a failing model succeeded" || return 1
    has "$d/out" "unsupported operator FooBar" || return 1
    [ ! -e "$d/build/unsupported_ops.sbin" ] && [ ! -e "$d/build/unsupported_ops.d" ] ||
        die "a failing model left a bundle or a .d file"
}

t_examples_jobs() {
    local d=$W/tools/examplesjobs f n=0
    rm -rf "$d" && mkdir -p "$d"
    emake -j1 bundles BUILD_DIR="$d/j1" >"$d/j1.log" 2>&1 || { cat "$d/j1.log"; return 1; }
    emake -j4 bundles BUILD_DIR="$d/j4" >"$d/j4.log" 2>&1 || { cat "$d/j4.log"; return 1; }
    for f in "$d"/j1/*.sbin; do
        cmp "$f" "$d/j4/$(basename "$f")" || return 1
        n=$((n + 1))
    done
    say "$n bundles identical at -j1 and -j4"
    [ $n -gt 0 ] && [ "$(ls "$d"/j4/*.sbin | wc -l)" = $n ]
}

# Without Graphviz the graphs target writes the .dot files, says so plainly and fails.
t_examples_graphs() {
    local d=$W/tools/graphs rc
    rm -rf "$d" && mkdir -p "$d"
    emake graphs BUILD_DIR="$d/build" MODELS="$ROOT/$TOOLS_TINY" DOT=no-such-dot-program >"$d/out" 2>&1
    rc=$?
    cat "$d/out"
    [ $rc != 0 ] && has "$d/out" "Graphviz is not installed" && [ -e "$d/build/tiny_cnn.dot" ]
}

# With Graphviz the graphs target renders each fused graph as SVG.
t_examples_graphs_svg() {
    local d=$W/tools/graphsvg
    command -v dot >/dev/null 2>&1 || cannot "Graphviz (dot) is not installed" || return
    rm -rf "$d" && mkdir -p "$d"
    emake graphs BUILD_DIR="$d/build" MODELS="$ROOT/$TOOLS_TINY" >"$d/out" 2>&1 || { cat "$d/out"; return 1; }
    cat "$d/out"
    [ -e "$d/build/tiny_cnn.dot" ] || die "no tiny_cnn.dot" || return 1
    has "$d/build/tiny_cnn.svg" "<svg"
}

# ---- make install and a program built against the installed runtime ---------------------------------
t_install_embed() {
    local d=$W/tools/install p f san
    p=$d/prefix
    rm -rf "$d" && mkdir -p "$d"
    "$MAKE" --no-print-directory -s install BUILD="$BUILD" PREFIX="$p" || return 1
    for f in bin/spyrec bin/spyrun bin/spydump lib/libspyrert.a lib/libspyrert.so include/spyrt.h \
        lib/pkgconfig/spyrert.pc share/man/man1/spyrec.1 share/man/man1/spyrun.1 share/man/man1/spydump.1; do
        [ -e "$p/$f" ] || die "not installed: $f" || return 1
    done
    "$p/bin/spyrec" --version || return 1
    command -v pkg-config >/dev/null || die "pkg-config is not installed" || return 1
    # a library built with a sanitizer (make asan/ubsan) needs it in the program too
    san=
    nm -D "$p/lib/libspyrert.so" 2>/dev/null | grep -q __asan_ && san="-fsanitize=address"
    nm -D "$p/lib/libspyrert.so" 2>/dev/null | grep -q __ubsan_ && san="$san -fsanitize=undefined"
    say "cc $san examples/embed.c \$(pkg-config --cflags --libs spyrert)"
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror $san -o "$d/embed" examples/embed.c \
        $(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs spyrert) || return 1
    "$p/bin/spyrec" "$TOOLS_TINY/model.onnx" -o "$d/tiny.sbin" && "$p/bin/spyrec" "$TOOLS_EXT/model.onnx" -o "$d/ext.sbin" || return 1
    LD_LIBRARY_PATH="$p/lib" "$d/embed" "$d/tiny.sbin" >"$d/zeros.out" || return 1
    cat "$d/zeros.out"
    has "$d/zeros.out" "input 0 'x' f32[2,3,32,32]" && has "$d/zeros.out" "output 0 'probs' f32[2,10]:" || return 1
    LD_LIBRARY_PATH="$p/lib" "$d/embed" "$d/ext.sbin" "$TOOLS_EXT/input_0.npy" >"$d/ext.out" || return 1
    "$p/bin/spyrun" "$d/ext.sbin" --input x="$TOOLS_EXT/input_0.npy" >"$d/spyrun.out" || return 1
    cat "$d/ext.out" "$d/spyrun.out"
    [ "$(grep "^output 0 'y' f32\[2,3\]:" "$d/ext.out")" = "$(grep "^output 0 'y' f32\[2,3\]:" "$d/spyrun.out")" ] ||
        die "embed and spyrun print different outputs"
}

# ---- the compile cache (--cache-dir, SPYREC_CACHE_DIR) ------------------------------------------
# cache_use JSON: the "cache" field of a compile report ("hit", "miss", "off").
cache_use() { "$JSONCHECK" "$1" --get cache; }

# cache_expect WANT ARGS...: compile ARGS with --report into $d/r.json; fail unless the
# report says the cache use WANT.
cache_expect() {
    local want=$1 got
    shift
    say "spyrec $* (want cache $want)"
    "$SPYREC" "$@" --report "$d/r.json" || die "compile failed" || return 1
    got=$(cache_use "$d/r.json")
    [ "$got" = "$want" ] || die "cache: $got, expected $want"
}

t_cache_hit() {
    local d=$W/tools/cachehit c
    c=$d/cache
    rm -rf "$d" && mkdir -p "$d" && cp -r "$TOOLS_EXT" "$d/ext" || return 1
    "$SPYREC" "$d/ext/model.onnx" -o "$d/ref.sbin" --no-cache -MD -MF "$d/ref.d" || return 1
    cache_expect miss "$d/ext/model.onnx" -o "$d/cold.sbin" --cache-dir "$c" -MD -MF "$d/cold.d" || return 1
    "$JSONCHECK" "$d/r.json" --get cache_key >"$d/key" || return 1
    cache_expect hit "$d/ext/model.onnx" -o "$d/warm.sbin" --cache-dir "$c" -MD -MF "$d/warm.d" || return 1
    "$JSONCHECK" "$d/r.json" --get cache_key | cmp - "$d/key" || die "the key changed" || return 1
    cmp "$d/ref.sbin" "$d/cold.sbin" && cmp "$d/ref.sbin" "$d/warm.sbin" || return 1
    # the dependency file of a hit names the same files, external data included
    sed 's/warm/cold/g' "$d/warm.d" | cmp - "$d/cold.d" || die "-MD differs on a hit" || return 1
    has "$d/warm.d" "$d/ext/weights.bin" || return 1
    # the same bytes elsewhere, named the same, are the same entry
    mkdir -p "$d/copy" && cp -r "$d/ext" "$d/copy/" || return 1
    cache_expect hit "$d/copy/ext/model.onnx" -o "$d/copy.sbin" --cache-dir "$c" || return 1
    cmp "$d/ref.sbin" "$d/copy.sbin" || return 1
    # another output kind is another entry, and the same text as without the cache
    cache_expect miss "$TOOLS_TINY/model.onnx" --emit=asm -o "$d/a1.s" --cache-dir "$c" &&
        cache_expect hit "$TOOLS_TINY/model.onnx" --emit=asm -o "$d/a2.s" --cache-dir "$c" &&
        "$SPYREC" "$TOOLS_TINY/model.onnx" --emit=asm -o "$d/a0.s" && cmp "$d/a0.s" "$d/a2.s"
}

t_cache_miss() {
    local d=$W/tools/cachemiss c
    c=$d/cache
    rm -rf "$d" && mkdir -p "$d/t" && cp -r "$TOOLS_EXT" "$d/ext" && cp schemas/spyre32.yaml "$d/t/" || return 1
    cache_expect miss "$d/ext/model.onnx" -o "$d/a.sbin" --cache-dir "$c" &&
        cache_expect hit "$d/ext/model.onnx" -o "$d/a.sbin" --cache-dir "$c" || return 1
    # a flag that changes the bundle
    cache_expect miss "$d/ext/model.onnx" -O1 -o "$d/o1.sbin" --cache-dir "$c" || return 1
    "$SPYREC" "$d/ext/model.onnx" -O1 -o "$d/o1ref.sbin" && cmp "$d/o1.sbin" "$d/o1ref.sbin" || return 1
    # flags that do not (report, dependency file) hit
    cache_expect hit "$d/ext/model.onnx" -o "$d/b.sbin" -MD --cache-dir "$c" || return 1
    # other external data: a weight changes
    printf '\077' | dd of="$d/ext/weights.bin" bs=1 seek=5 conv=notrunc 2>/dev/null || return 1
    cache_expect miss "$d/ext/model.onnx" -o "$d/w.sbin" --cache-dir "$c" || return 1
    "$SPYREC" "$d/ext/model.onnx" -o "$d/wref.sbin" && cmp "$d/w.sbin" "$d/wref.sbin" || return 1
    cmp -s "$d/a.sbin" "$d/w.sbin" && die "new weights, same bundle" && return 1
    # the old weights again: the hint guesses the newer entry, wrongly; the old one hits
    cp "$TOOLS_EXT/weights.bin" "$d/ext/weights.bin" || return 1
    cache_expect hit "$d/ext/model.onnx" -o "$d/w.sbin" --cache-dir "$c" && cmp "$d/a.sbin" "$d/w.sbin" || return 1
    cache_expect hit "$d/ext/model.onnx" -o "$d/w2.sbin" --cache-dir "$c" && cmp "$d/a.sbin" "$d/w2.sbin" || return 1
    # another model
    cache_expect miss "$TOOLS_TINY/model.onnx" -o "$d/t.sbin" --cache-dir "$c" || return 1
    # a --target file whose content changes under the same name
    cache_expect miss "$d/ext/model.onnx" -o "$d/y.sbin" --target "$d/t/spyre32.yaml" --cache-dir "$c" &&
        cache_expect hit "$d/ext/model.onnx" -o "$d/y.sbin" --target "$d/t/spyre32.yaml" --cache-dir "$c" || return 1
    echo "# another comment" >>"$d/t/spyre32.yaml"
    cache_expect miss "$d/ext/model.onnx" -o "$d/y.sbin" --target "$d/t/spyre32.yaml" --cache-dir "$c" || return 1
    # a failed compile is not stored
    "$SPYREC" "$TOOLS_BAD" -o "$d/bad.sbin" --cache-dir "$c" --report "$d/bad.json"
    [ "$(cache_use "$d/bad.json")" = miss ] || die "a failed compile: cache $(cache_use "$d/bad.json")" || return 1
    "$SPYREC" "$TOOLS_BAD" -o "$d/bad.sbin" --cache-dir "$c" --report "$d/bad.json"
    [ "$(cache_use "$d/bad.json")" = miss ] || die "a failed compile was cached"
}

# cache_file DIR SUFFIX: the one KEY.SUFFIX file (entry, out) of the cache folder DIR.
cache_file() {
    local e
    e=$(ls "$1"/*."$2")
    [ "$(echo "$e" | wc -l)" = 1 ] || die "expected one .$2 file in $1, found: $e" || return 1
    echo "$e"
}

# flip_bit FILE OFFSET: flip one bit of the byte at OFFSET of FILE, in place.
flip_bit() {
    printf "$(printf '\\%03o' $(($(od -An -tu1 -j "$2" -N1 "$1") ^ 4)))" |
        dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# same_file A B: fail unless A and B are one file (hard links: device and inode).
same_file() {
    [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" ] || die "$1 is not a link to $2"
}

# cache_redo M D FLAGS...: the entry of M in cache folder D was damaged: a compile must
# say so, give the right bundle and store a new entry, which the next compile hits.
cache_redo() {
    local m=$1 c=$2
    shift 2
    cache_expect miss "$m" -o "$d/f.sbin" --cache-dir "$c" "$@" 2>"$d/err" || return 1
    cat "$d/err"
    has "$d/err" "is damaged" && cmp "$d/ref.sbin" "$d/f.sbin" || return 1
    cache_expect hit "$m" -o "$d/f2.sbin" --cache-dir "$c" "$@" && cmp "$d/ref.sbin" "$d/f2.sbin"
}

t_cache_damage() {
    local d=$W/tools/cachedamage c e o size osize m=$TOOLS_TINY/model.onnx damage
    c=$d/cache
    rm -rf "$d" && mkdir -p "$d" || return 1
    "$SPYREC" "$m" -o "$d/ref.sbin" --no-cache || return 1
    # --cache-copy: the entry's output file is not the output, so it can be damaged alone
    "$SPYREC" "$m" -o "$d/first.sbin" --cache-dir "$c" --cache-copy || return 1
    e=$(cache_file "$c" entry) && o=$(cache_file "$c" out) || return 1
    [ "$(stat -c %h "$o")" = 1 ] || die "--cache-copy: the entry's output has other names" || return 1
    size=$(stat -c %s "$e") osize=$(stat -c %s "$o")
    # the entry truncated, a bit flipped in its header and in its payload (the output's
    # length); the output truncated, a bit flipped in its middle: each detected, compiled
    # again, replaced
    for damage in "truncate -s $((size - 10)) $e" "flip_bit $e 20" "flip_bit $e 66" \
        "truncate -s $((osize - 100)) $o" "flip_bit $o $((osize / 2))"; do
        say "$damage"
        $damage || return 1
        cache_redo "$m" "$c" --cache-copy || return 1
        [ "$(stat -c %s "$e")" = "$size" ] && [ "$(stat -c %s "$o")" = "$osize" ] ||
            die "the damaged entry was not replaced" || return 1
    done
    # an entry whose output file is gone: a miss (nothing to report), then stored again
    rm "$o" && cache_expect miss "$m" -o "$d/g.sbin" --cache-dir "$c" --cache-copy &&
        cache_expect hit "$m" -o "$d/g2.sbin" --cache-dir "$c" --cache-copy && cmp "$d/ref.sbin" "$d/g2.sbin"
}

# The output as a hard link to the entry's output file (the default for a bundle on the
# cache's file system), the copy of --cache-copy and of another file system, and an
# output written in place (which damages the entry: found, never used).
t_cache_link() {
    local d=$W/tools/cachelink c o m=$TOOLS_TINY/model.onnx shm
    c=$d/cache
    rm -rf "$d" && mkdir -p "$d" || return 1
    "$SPYREC" "$m" -o "$d/ref.sbin" --no-cache || return 1
    # a miss keeps the output it wrote as the entry's output file: one file, two names
    cache_expect miss "$m" -o "$d/a.sbin" --cache-dir "$c" && o=$(cache_file "$c" out) || return 1
    same_file "$d/a.sbin" "$o" && cmp "$d/ref.sbin" "$d/a.sbin" || return 1
    # a hit makes its output that file too
    cache_expect hit "$m" -o "$d/b.sbin" --cache-dir "$c" && same_file "$d/b.sbin" "$o" &&
        cmp "$d/ref.sbin" "$d/b.sbin" || return 1
    # a hit over an output that is that file already keeps it, made new for make
    touch -d "@$(($(date +%s) - 3600))" "$d/b.sbin" || return 1
    cache_expect hit "$m" -o "$d/b.sbin" --cache-dir "$c" && same_file "$d/b.sbin" "$o" || return 1
    [ "$(stat -c %Y "$d/b.sbin")" -ge $(($(date +%s) - 600)) ] || die "the hit left the output old" || return 1
    # a hit over another file (a plain compile's output) replaces it by the link
    "$SPYREC" "$m" -o "$d/p.sbin" --no-cache && cache_expect hit "$m" -o "$d/p.sbin" --cache-dir "$c" &&
        same_file "$d/p.sbin" "$o" || return 1
    # --cache-copy: a file of its own
    cache_expect hit "$m" -o "$d/c.sbin" --cache-dir "$c" --cache-copy && cmp "$d/ref.sbin" "$d/c.sbin" || return 1
    [ "$(stat -c %h "$d/c.sbin")" = 1 ] || die "--cache-copy gave a link" || return 1
    # other output kinds are copies (text is edited in place)
    cache_expect miss "$m" --emit=asm -o "$d/a.s" --cache-dir "$c" &&
        cache_expect hit "$m" --emit=asm -o "$d/b.s" --cache-dir "$c" || return 1
    [ "$(stat -c %h "$d/a.s")" = 1 ] && [ "$(stat -c %h "$d/b.s")" = 1 ] || die "a text output was linked" || return 1
    [ -z "$(ls -A "$d" "$c" | grep '^\.')" ] || die "temporary files left" || return 1
    # an output written in place changes the entry (and its other links): the next
    # compile finds it damaged by its CRC and compiles again, giving the right bundle
    flip_bit "$d/a.sbin" $(($(stat -c %s "$d/a.sbin") / 2)) || return 1
    cmp -s "$d/ref.sbin" "$d/b.sbin" && die "b.sbin is not a link to a.sbin" && return 1
    cache_redo "$m" "$c" || return 1
    same_file "$d/f.sbin" "$c/$("$JSONCHECK" "$d/r.json" --get cache_key).out" || return 1
    # another file system (tmpfs): the output is copied both ways
    shm=$(mktemp -d /dev/shm/spyrec-test.XXXXXX 2>/dev/null)
    if [ -z "$shm" ] || [ "$(stat -c %d "$shm")" = "$(stat -c %d "$d")" ]; then
        say "no second file system here (/dev/shm): the copy is tested by --cache-copy alone"
        [ -z "$shm" ] || rm -rf "$shm"
        return 0
    fi
    cache_expect miss "$m" -o "$d/x.sbin" --cache-dir "$shm/c" &&
        cache_expect hit "$m" -o "$d/y.sbin" --cache-dir "$shm/c" || { rm -rf "$shm"; return 1; }
    cmp "$d/ref.sbin" "$d/x.sbin" && cmp "$d/ref.sbin" "$d/y.sbin" &&
        [ "$(stat -c %h "$d/x.sbin")" = 1 ] && [ "$(stat -c %h "$d/y.sbin")" = 1 ] ||
        die "across file systems: not a copy"
    local rc=$?
    rm -rf "$shm"
    return $rc
}

# cache_size DIR: bytes of the cache files in DIR, all that --cache-max bounds
# (spyrec_cache.c, is_cache_file), the model's .stat record included
cache_size() { cat "$1"/*.entry "$1"/*.out "$1"/*.files "$1"/*.hint "$1"/*.stat 2>/dev/null | wc -c; }

t_cache_evict() {
    local d=$W/tools/cacheevict c sa sd a=$TOOLS_TINY/model.onnx
    c=$d/cache
    rm -rf "$d" && mkdir -p "$d" || return 1
    # the sizes of the entries of A (tiny_cnn) and D (tiny_cnn at -O1)
    "$SPYREC" "$a" -o "$d/x.sbin" --cache-dir "$d/ca" && "$SPYREC" "$a" -O1 -o "$d/x.sbin" --cache-dir "$d/cd" || return 1
    sa=$(cache_size "$d/ca") && sd=$(cache_size "$d/cd") || return 1
    # A, B, C in the cache; B and C last used long ago, A an hour ago
    "$SPYREC" "$a" -o "$d/x.sbin" --cache-dir "$c" && "$SPYREC" "$TOOLS_EXT/model.onnx" -o "$d/x.sbin" --cache-dir "$c" &&
        "$SPYREC" "$a" -O0 -o "$d/x.sbin" --cache-dir "$c" || return 1
    touch -d "@$(($(date +%s) - 3 * 3600))" "$c"/*
    touch -d "@$(($(date +%s) - 3600))" "$d/ca"/* && for f in "$d/ca"/*; do touch -r "$f" "$c/$(basename "$f")"; done
    # a new entry D past the bound: the least recently used (B, C) go, A stays
    cache_expect miss "$a" -O1 -o "$d/x.sbin" --cache-dir "$c" --cache-max=$((sa + sd)) || return 1
    ls -l "$c"
    [ "$(cache_size "$c")" -le $((sa + sd)) ] || die "the folder is over its bound" || return 1
    cache_expect hit "$a" -o "$d/x.sbin" --cache-dir "$c" && cache_expect hit "$a" -O1 -o "$d/x.sbin" --cache-dir "$c" &&
        cache_expect miss "$TOOLS_EXT/model.onnx" -o "$d/x.sbin" --cache-dir "$c" || return 1
    # a bound below one entry keeps no entry; a bad size is a usage error
    cache_expect miss "$a" -O0 -o "$d/x.sbin" --cache-dir "$d/tiny" --cache-max=1K || return 1
    [ "$(cache_size "$d/tiny")" -le 1024 ] && ! ls "$d/tiny"/*.entry "$d/tiny"/*.out 2>/dev/null ||
        die "an entry left past a 1K bound" || return 1
    "$SPYREC" "$a" -o "$d/x.sbin" --cache-dir "$c" --cache-max=12Q
    [ $? = 2 ] || die "--cache-max=12Q should be a usage error"
}

t_cache_concurrent() {
    local d=$W/tools/cacheconc c m=$TOOLS_SHARED/models/mobilenet_v2/model.onnx i pids=()
    c=$d/cache
    [ -e "$m" ] || m=$ROOT/$TOOLS_TINY/model.onnx
    rm -rf "$d" && mkdir -p "$d" || return 1
    "$SPYREC" "$m" -o "$d/ref.sbin" --no-cache || return 1
    for i in 1 2 3 4; do
        "$SPYREC" "$m" -o "$d/$i.sbin" --cache-dir "$c" &
        pids+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i" || die "a concurrent compile failed" || return 1
    done
    for i in 1 2 3 4; do
        cmp "$d/ref.sbin" "$d/$i.sbin" || return 1
    done
    ls -la "$c"
    # besides them, .stat records of the inputs of 8 MiB or more (the model, a large compiler)
    [ "$(ls "$c" | grep -vc '\.stat$')" = 4 ] && [ -z "$(ls -A "$c" | grep '^\.')" ] || die "expected one .files, one .entry, one .out, one .hint, no temporary files" || return 1
    cache_expect hit "$m" -o "$d/5.sbin" --cache-dir "$c" && cmp "$d/ref.sbin" "$d/5.sbin"
}

t_cache_env() {
    local d=$W/tools/cacheenv a=$TOOLS_TINY/model.onnx
    rm -rf "$d" && mkdir -p "$d" || return 1
    cache_expect off "$a" -o "$d/x.sbin" || return 1
    SPYREC_CACHE_DIR=$d/env cache_expect miss "$a" -o "$d/x.sbin" &&
        SPYREC_CACHE_DIR=$d/env cache_expect hit "$a" -o "$d/x.sbin" || return 1
    # --no-cache wins over the variable and over --cache-dir; --cache-dir over the variable
    SPYREC_CACHE_DIR=$d/env cache_expect off "$a" -O1 -o "$d/x.sbin" --no-cache &&
        cache_expect off "$a" -O1 -o "$d/x.sbin" --cache-dir "$d/env" --no-cache || return 1
    [ "$(ls "$d/env" | grep -vc '\.stat$')" = 4 ] || die "--no-cache wrote to the cache" || return 1
    SPYREC_CACHE_DIR=$d/env cache_expect miss "$a" -o "$d/x.sbin" --cache-dir "$d/flag" &&
        [ -n "$(ls "$d/flag")" ] || return 1
    # --dump-after prints to standard error, which a hit could not: no cache
    SPYREC_CACHE_DIR=$d/env cache_expect off "$a" -o "$d/x.sbin" --dump-after=fuse 2>/dev/null
}

part_tools() {

    $MAKE --no-print-directory -s "$BUILD/tests/jsoncheck" >/dev/null 2>&1 || {
        local log
        log=$(logname tools/jsoncheck)
        $MAKE --no-print-directory "$BUILD/tests/jsoncheck" >"$log" 2>&1
        result tools/jsoncheck 1 "$log"
        return
    }
    tools_run deps-file t_deps_file
    tools_run big-stream t_big_stream
    tools_run deps-failure t_deps_failure
    tools_run report-ok t_report_ok
    tools_run report-error t_report_error
    tools_run arena-bound t_arena_bound
    tools_run emit-dot t_emit_dot
    tools_run emit-dot-svg t_emit_dot_svg
    tools_run emit-asm t_emit_asm
    tools_run spydump t_spydump
    tools_run spyrun-trace t_trace
    tools_run progress t_progress
    tools_run progress-tty t_progress_tty
    tools_run examples-make t_examples_make
    tools_run examples-fail t_examples_fail
    tools_run examples-jobs t_examples_jobs
    tools_run examples-graphs t_examples_graphs
    tools_run examples-graphs-svg t_examples_graphs_svg
    tools_run install-embed t_install_embed
    tools_run cache-hit t_cache_hit
    tools_run cache-miss t_cache_miss
    tools_run cache-damage t_cache_damage
    tools_run cache-link t_cache_link
    tools_run cache-evict t_cache_evict
    tools_run cache-concurrent t_cache_concurrent
    tools_run cache-env t_cache_env
}
