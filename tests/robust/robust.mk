# tests/robust/robust.mk: robustness tests (included from tests/tests.mk).
#
#   make corpus       the malformed-input corpus (tests/malformed/expect.tsv) under strict
#                     limits with tests/tools/run_malformed.sh: exit status, message, no
#                     output file, 1 s and 256 MiB per case (make check runs the same
#                     cases through check.sh's "corpus" part, with looser limits)
#   make robust       bundle integrity (truncations, bit flips), concurrency (16 threads x
#                     200 runs), API misuse, allocation-failure injection (make check runs
#                     the same programs through check.sh's "robust" part, the allocation-
#                     failure sweep on a few more small models)
#   make tsan         the concurrency test under ThreadSanitizer (build-tsan)
#   make robust-asan  `make robust` under AddressSanitizer + LeakSanitizer (build-asan)
# (make malformed-gen, in tests.mk, rebuilds the corpus files from tests/malformed/gen.)

ROBUST_DIR := $(BUILD)/tests/robust
ROBUST_BINS := $(patsubst tests/robust/%.c,$(ROBUST_DIR)/%,$(wildcard tests/robust/*.c))
ROBUST_BUNDLES := $(ROBUST_DIR)/bundles
ROBUST_MODELS := examples/models/tiny_cnn/model.onnx \
                 $(wildcard $(SHARED)/models/mlp/model.onnx $(SHARED)/models/lenet_bn/model.onnx)
ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free \
              -Wl,--wrap=strdup,--wrap=strndup
TINY := examples/models/tiny_cnn

.PHONY: corpus robust robust-bins tsan robust-asan

$(ROBUST_DIR)/%: tests/robust/%.c $(LIBSPYREC) $(LIBRT_A) | $(GEN_PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSPYREC) $(LIBRT_A) \
	    $(COMPILER_LIBS) $(LDLIBS)

# every allocation of compiler, runtime and protobuf-c (linked statically) goes
# through the test's wrappers
$(ROBUST_DIR)/allocfail: tests/robust/allocfail.c $(LIBSPYREC) $(LIBRT_A) | $(GEN_PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(ALLOC_WRAP) -o $@ $< $(LIBSPYREC) $(LIBRT_A) \
	    -Wl,-Bstatic -lprotobuf-c -Wl,-Bdynamic -lyaml -lzip -ljansson $(LDLIBS)

robust-bins: $(ROBUST_BINS)

corpus: $(BUILD)/spyrec $(BUILD)/spyrun
	@bash tests/tools/run_malformed.sh $(BUILD)

# Bundles of three models (tiny_cnn, and mlp and lenet_bn from $(SHARED) when present)
# plus the corpus's hand-made reference bundles feed the integrity test.
robust: $(BUILD)/spyrec $(ROBUST_BINS)
	@mkdir -p $(ROBUST_BUNDLES); fail=0; \
	for m in $(ROBUST_MODELS); do \
	    $(BUILD)/spyrec $$m -o $(ROBUST_BUNDLES)/$$(basename $$(dirname $$m)).sbin || fail=1; \
	done; \
	echo "== integrity"; \
	timeout 1800 $(ROBUST_DIR)/integrity $(ROBUST_BUNDLES)/*.sbin tests/malformed/sbin/ok/*.sbin \
	    || { fail=1; echo "FAIL integrity"; }; \
	echo "== concurrency"; \
	timeout 1200 $(ROBUST_DIR)/concurrency $(ROBUST_BUNDLES)/tiny_cnn.sbin $(TINY)/test_data_set_0 \
	    || fail=1; \
	echo "== api"; \
	timeout 120 $(ROBUST_DIR)/api $(ROBUST_BUNDLES)/tiny_cnn.sbin || { fail=1; echo "FAIL api"; }; \
	echo "== allocfail"; \
	timeout 1800 $(ROBUST_DIR)/allocfail tests/malformed/onnx/valid_base.onnx || fail=1; \
	exit $$fail

tsan:
	$(MAKE) --no-print-directory BUILD=build-tsan SANITIZER=thread MODE=debug \
	    build-tsan/spyrec build-tsan/tests/robust/concurrency
	build-tsan/spyrec $(TINY)/model.onnx -o build-tsan/tiny_cnn.sbin
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	    build-tsan/tests/robust/concurrency build-tsan/tiny_cnn.sbin $(TINY)/test_data_set_0

robust-asan:
	$(MAKE) --no-print-directory BUILD=build-asan SANITIZER=address MODE=debug robust
