# tests/tests.mk: test and benchmark targets, included from the top-level Makefile.
#
#   make check     everything below; one line per test, then "N passed, N failed" (plus
#                  ", N skipped" when a test could not run here)
#   make unit      cmocka unit tests (tests/unit/test_*.c)
#   make golden    golden text tests (tests/golden/**/NAME.{onnx,ir,pt2} + .expect/.err)
#   make models    numeric golden tests (tests/models.list on ../shared/models, examples/,
#                  tests/models/: the small QDQ models of tests/models/gen_qdq.py, the
#                  depthwise convolutions of tests/models/gen_dwconv.py)
#   make check-PART  one part of check.sh: unit golden models reference cli tools determinism
#                  malformed corpus robust conformance
#   make conformance  the ONNX backend suite: report in BUILD/conformance/report.{md,json}
#   make golden-update   rewrite every .expect file from the current compiler output
#   make bench     compile time and latency per model against onnxruntime (needs PyPI)
#   make bench-cache  per model: a plain compile, a compile-cache miss and a hit, best of 5
#   make bench-dynamic  per model of tests/models-dynamic.list and size: the dynamic bundle
#                  against a static compile of that size (host latency, modelled time)
#   make zoo-large materialise the models of SHARED/models-large into BUILD/zoo-large/NAME
#                  (weights refilled by zoo_regen.py; gigabytes; skips models already there)
#   make bench-large  per large model: compile time and peak RSS, bundle size, load time,
#                  spyrun against onnxruntime, modelled time, --check; then compile time
#                  of generated long chains and the GFLOP/s of large matrix products
#   make zoo-qdq   QDQ (int8) resnet50 and bert_base in BUILD/zoo-qdq/NAME from BUILD/zoo-large
#                  (onnxruntime quantize_static, zoo_qdq.py) with onnxruntime goldens
#   make qdq-check compile them and run spyrun --check against those goldens
#   make fp16-check  accuracy of fp16 bundles against the goldens of every model of
#                  SHARED/models and BUILD/zoo-large, measured with numpy (fp16_check.py)
#   make calib-data  calibration sets for --precision=int8 --calibrate: 8 random input sets
#                  (not the test input) per model of SHARED/models and BUILD/zoo-large in
#                  BUILD/calib/NAME/set_K/input_J.pb (gen_calib.py)
#   make example   regenerate examples/models/tiny_cnn with onnx/onnxruntime (needs PyPI)
#
# Uses the Makefile's BUILD, SHARED, LIBSPYREC, LIBRT_A, COMPILER_LIBS, LDLIBS,
# CPPFLAGS, CFLAGS, LDFLAGS.

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_UTIL_OBJ := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%.o,$(wildcard tests/unit/unit_*.c))
VENV := $(BUILD)/venv
CHECK_ENV = BUILD=$(BUILD) SHARED=$(SHARED) MAKE="$(MAKE)"

.PHONY: unit-bins models golden-update example malformed-gen conformance fp16-check calib-data

# one cmocka program per tests/unit/test_*.c, linked with the shared harness
# (tests/unit/unit_*.c) and both libraries; tests may include any module's header by
# its bare name ("pass.h", "cg.h", "fe.h")
$(UNIT_UTIL_OBJ): $(BUILD)/tests/unit/%.o: tests/unit/%.c | $(GEN_PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Ipasses -Icodegen -Ifrontend $(CFLAGS) -c $< -o $@

$(BUILD)/tests/test_%: tests/unit/test_%.c $(UNIT_UTIL_OBJ) $(LIBSPYREC) $(LIBRT_A) | $(GEN_PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Ipasses -Icodegen -Ifrontend $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(UNIT_UTIL_OBJ) $(LIBSPYREC) $(LIBRT_A) \
	    $(COMPILER_LIBS) -lcmocka $(LDLIBS)

# the unit tests of cli/ code link the tools' objects they use: the compile cache's
# the spyrec helpers, the accuracy metrics' spyrun's metrics
UNIT_CLI_TESTS := $(BUILD)/tests/test_cli_cache $(BUILD)/tests/test_cli_metrics \
                  $(BUILD)/tests/test_cli_buckets $(BUILD)/tests/test_cli_reuse
$(BUILD)/tests/test_cli_cache: $(call obj,cli/spyrec_hash.c cli/spyrec_hashfiles.c cli/spyrec_cache.c cli/spyrec_io.c \
                                cli/spyrec_cachestat.c cli/spyrec_cacheevict.c \
                                cli/spyrec_progress.c cli/spyrec_deps.c)
$(BUILD)/tests/test_cli_metrics: $(call obj,cli/spyrun_metrics.c)
$(BUILD)/tests/test_cli_buckets: $(call obj,cli/spyrec_buckets.c cli/spyrec_bucketgrid.c)
$(BUILD)/tests/test_cli_reuse: $(call obj,cli/spyrec_reuse.c cli/spyrec_io.c cli/spyrec_progress.c)
$(UNIT_CLI_TESTS): $(BUILD)/tests/test_%: tests/unit/test_%.c $(LIBSPYREC) $(LIBRT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(filter %.o,$^) $(LIBSPYREC) $(LIBRT_A) \
	    $(COMPILER_LIBS) -lcmocka $(LDLIBS)

unit-bins: $(UNIT_BIN)

check: all
	@$(CHECK_ENV) bash tests/tools/check.sh
unit: all
	@$(CHECK_ENV) bash tests/tools/check.sh unit
golden: all
	@$(CHECK_ENV) bash tests/tools/check.sh golden
models: all
	@$(CHECK_ENV) bash tests/tools/check.sh models
check-%: all
	@$(CHECK_ENV) bash tests/tools/check.sh $*
conformance: all
	@$(CHECK_ENV) bash tests/tools/check.sh conformance
golden-update: all
	@$(CHECK_ENV) UPDATE_GOLDEN=1 bash tests/tools/check.sh golden

# ---- Python tools (benchmarks, example generation): a virtualenv from PyPI -------------
$(VENV)/.ok:
	@sh tests/tools/venv.sh $(VENV)

bench: all $(VENV)/.ok
	$(VENV)/bin/python tests/bench/bench.py --build $(BUILD) --shared $(SHARED)

# dynamic-shape bundles against static compiles of each size: emulator host latency and
# modelled time per (model, size) of tests/models-dynamic.list, ratios over 1.3 marked
# (tests/bench/bench_dynamic.py; not part of make check)
bench-dynamic: all $(VENV)/.ok
	$(VENV)/bin/python tests/bench/bench_dynamic.py --build $(BUILD) --shared $(SHARED)

# compile-cache timings: a plain compile, a miss (compile and store) and a hit per model,
# best of 5, with the ratios (needs the large models for resnet50 and gpt2_124m)
bench-cache: all
	bash tests/bench/cache_bench.sh $(BUILD)/spyrec $(BUILD)/bench-cache $(SHARED)/models/mobilenet_v2/model.onnx \
		$(ZOO_LARGE)/resnet50/model.onnx $(ZOO_LARGE)/gpt2_124m/model.onnx

# ---- the large models (neither is part of make check; never commit build/zoo-large) ------
# zoo_regen.py refills each skeleton's emptied weights (same bytes on every machine) and
# writes ZOO_LARGE/NAME/model.onnx (+ model.onnx.data) and test_data_set_0. The stamp .ok is
# written only after a successful regen, so an interrupted one is redone; flock keeps to
# one regen at a time under -j (a 1B model holds several GiB while it is written).
ZOO_LARGE_SRC := $(SHARED)/models-large
ZOO_LARGE := $(BUILD)/zoo-large
ZOO_LARGE_NAMES := $(notdir $(patsubst %/skeleton.json,%,$(wildcard $(ZOO_LARGE_SRC)/*/skeleton.json)))
ZOO_LARGE_STAMPS := $(patsubst %,$(ZOO_LARGE)/%/.ok,$(ZOO_LARGE_NAMES))

.PHONY: zoo-large bench-large bench-cache bench-dynamic
zoo-large: $(ZOO_LARGE_STAMPS)
	@test -n "$(ZOO_LARGE_NAMES)" || { echo "no skeletons in $(ZOO_LARGE_SRC)" >&2; exit 1; }

$(ZOO_LARGE)/%/.ok: $(ZOO_LARGE_SRC)/%/skeleton.json $(ZOO_LARGE_SRC)/%/model.skel.onnx | $(VENV)/.ok
	@mkdir -p $(ZOO_LARGE)
	@rm -f $@
	flock $(ZOO_LARGE)/.lock $(VENV)/bin/python $(SHARED)/tools/zoo_regen.py $(ZOO_LARGE_SRC)/$* $(ZOO_LARGE)/$*
	@touch $@

# the fp32 peak probe of bench-large: FMA loops on this host's widest vectors
$(BUILD)/tests/fma_peak: tests/bench/fma_peak.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -std=c11 -O2 -march=native -ffp-contract=fast $(WARN) -o $@ $< -lpthread

# the MATMUL tile kernel alone on resnet50's convolution tiles and bert_base's products,
# the weight warm and cold
# (tests/bench/mm_tiles.c), after one core's FMA peak
$(BUILD)/tests/mm_tiles: tests/bench/mm_tiles.c $(LIBRT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIBRT_A) $(LDLIBS)

.PHONY: bench-tiles
bench-tiles: $(BUILD)/tests/mm_tiles $(BUILD)/tests/fma_peak
	$(BUILD)/tests/fma_peak 1
	$(BUILD)/tests/mm_tiles

bench-large: all $(VENV)/.ok zoo-large $(BUILD)/tests/fma_peak
	$(VENV)/bin/python tests/bench/bench_large.py --build $(BUILD) --zoo $(ZOO_LARGE)

# ---- QDQ (int8) versions of two large models (neither is part of make check) ------------
# zoo_qdq.py quantizes BUILD/zoo-large/NAME with onnxruntime's quantize_static (QDQ,
# per-channel int8 weights, int8 activations with zero points, a calibration set it
# generates) and writes onnxruntime's output on the test input as the golden.
ZOO_QDQ := $(BUILD)/zoo-qdq
.PHONY: zoo-qdq qdq-check
zoo-qdq: $(ZOO_QDQ)/.ok
$(ZOO_QDQ)/.ok: tests/bench/zoo_qdq.py | $(VENV)/.ok
	@test -f $(ZOO_LARGE)/resnet50/.ok -a -f $(ZOO_LARGE)/bert_base/.ok || { echo "run make zoo-large first" >&2; exit 1; }
	@rm -f $@
	$(VENV)/bin/python tests/bench/zoo_qdq.py --zoo $(ZOO_LARGE) --out $(ZOO_QDQ) resnet50 bert_base
	@touch $@

# Tolerances against onnxruntime's run of the same QDQ graph: resnet50, one step of the
# output's quantization (scale 0.8286; float noise on top); bert_base, 0.25 (its
# dequantized output, scale 0.0345, passes through 12 layer norms that magnify one-step
# differences of their inputs: onnxruntime's own fused run differs from its run of the
# graph by 0.24 there).
QDQ_TOL_resnet50 := --rtol 0 --atol 0.8290
QDQ_TOL_bert_base := --rtol 0 --atol 0.25
qdq-check: all zoo-qdq
	$(BUILD)/spyrec $(ZOO_QDQ)/resnet50/model.onnx -o $(ZOO_QDQ)/resnet50.sbin
	$(BUILD)/spyrun $(ZOO_QDQ)/resnet50.sbin --check $(ZOO_QDQ)/resnet50/test_data_set_0 -q $(QDQ_TOL_resnet50)
	$(BUILD)/spyrec $(ZOO_QDQ)/bert_base/model.onnx -o $(ZOO_QDQ)/bert_base.sbin
	$(BUILD)/spyrun $(ZOO_QDQ)/bert_base.sbin --check $(ZOO_QDQ)/bert_base/test_data_set_0 -q $(QDQ_TOL_bert_base)

fp16-check: all $(VENV)/.ok
	$(VENV)/bin/python tests/bench/fp16_check.py --build $(BUILD) --shared $(SHARED) --zoo $(ZOO_LARGE)

calib-data: $(VENV)/.ok
	$(VENV)/bin/python tests/bench/gen_calib.py --out $(BUILD)/calib $(wildcard $(SHARED)/models/*/test_data_set_0/..) $(wildcard $(ZOO_LARGE)/*/test_data_set_0/..)

example: $(VENV)/.ok
	$(VENV)/bin/python examples/gen_tiny_cnn.py
-include $(wildcard $(BUILD)/tests/*.d $(BUILD)/tests/unit/*.d)

# ---- the malformed-input corpus generator (tests/malformed/gen) -----------------------
GEN_MAL_SRC := $(wildcard tests/malformed/gen/*.c)
$(BUILD)/tests/gen_malformed: $(GEN_MAL_SRC) $(wildcard tests/malformed/gen/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(CFLAGS) $(LDFLAGS) -o $@ $(GEN_MAL_SRC) $(LDLIBS)

# rewrite tests/malformed/{onnx,sbin,input,pt2}/ and tests/malformed/expect.tsv
malformed-gen: $(BUILD)/tests/gen_malformed
	$< tests/malformed

# robustness: the strict corpus runner, integrity/concurrency/API/allocation-failure tests,
# ThreadSanitizer, and the libFuzzer targets
-include tests/fuzz/fuzz.mk tests/robust/robust.mk

# ---- JSON checker of the tools' reports and traces (tests/tools/part_tools.sh) ----------
$(BUILD)/tests/jsoncheck: tests/tools/jsoncheck.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(CFLAGS) $(LDFLAGS) -o $@ $< -ljansson $(LDLIBS)

# ---- the reference-evaluator runner (tests/tools/irrun.c): the decomposition's numerics
# checked without the back end (check.sh's "irrun" part) -------------------------------
$(BUILD)/tests/irrun: tests/tools/irrun.c $(BUILD)/obj/cli/spyrun_metrics.o $(LIBSPYREC) $(LIBRT_A) | $(GEN_PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) -Ipasses $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(BUILD)/obj/cli/spyrun_metrics.o $(LIBSPYREC) $(LIBRT_A) $(COMPILER_LIBS) $(LDLIBS)

# the one-row F32 MATMUL (a decode step's products) against a plain read of the same
# DRAM-resident weight, 1 and 2 threads (tests/bench/mm_gemv.c)
$(BUILD)/tests/mm_gemv: tests/bench/mm_gemv.c $(LIBRT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIBRT_A) $(LDLIBS) -lpthread

.PHONY: bench-gemv
bench-gemv: $(BUILD)/tests/mm_gemv
	$(BUILD)/tests/mm_gemv 2

# the F32 MATMUL tile kernel on the products of bench-large's GEMM table, tiled as
# spyrec tiles them, 1 and 2 threads' CPU time (tests/bench/mm_gemm.c), after one
# core's FMA peak
$(BUILD)/tests/mm_gemm: tests/bench/mm_gemm.c $(LIBRT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIBRT_A) $(LDLIBS) -lpthread

.PHONY: bench-gemm
bench-gemm: $(BUILD)/tests/mm_gemm $(BUILD)/tests/fma_peak
	$(BUILD)/tests/fma_peak 1
	$(BUILD)/tests/mm_gemm 1
	$(BUILD)/tests/mm_gemm 2
