# tests/fuzz/fuzz.mk: libFuzzer targets (included from tests/tests.mk).
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="onnx pt2 bundle tensor"]
#
# Builds the libraries with clang and -fsanitize=fuzzer-no-link,address,undefined in
# their own tree (FUZZ_BUILD, build-fuzz; the SIMD matrix kernels without UBSan, whose
# instrumentation of them takes minutes to compile), links one fuzzer per target and runs each
# for FUZZ_SECONDS, seeded from ../shared (the model zoo, the ONNX node tests, their
# tensor files, bundles compiled from them) when present, from the tree's own test
# models (tests/models, tests/models-dyn: other exporters, onnxruntime's contrib
# operators, ai.onnx.ml) and from the malformed-input corpus. Prints executions per second and total executions per target. A crash
# leaves FUZZ_BUILD/fuzz/crash-TARGET-* (add it to the corpus: see tests/malformed).
#   onnx    fe_load_model + pass pipeline + codegen on a model.onnx
#   pt2     the same on a model.pt2 (torch.export archives as seeds, dynamic ones too)
#   bundle  spy_model_load_memory (as given and with CRCs fixed) + a run of what loads
#   tensor  fe_tensor_read_mem (.pb/.npy) + write/read round trips

FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= onnx pt2 bundle tensor
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
            -fno-omit-frame-pointer
FUZZ_LINK := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_VARS = BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) MODE=release SANFLAGS="$(FUZZ_SAN)" \
            KERN_SANFLAGS=-fno-sanitize=undefined WARN="-Wall -Wno-unused-parameter"

.PHONY: fuzz fuzz-bins fuzz-run

# the fuzzers themselves, built inside the fuzz tree (BUILD=FUZZ_BUILD)
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_model.h $(LIBSPYREC) $(LIBRT_A) \
    | $(GEN_PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_LINK) -o $@ $< $(LIBSPYREC) $(LIBRT_A) \
	    $(COMPILER_LIBS) $(LDLIBS)

fuzz-bins: $(BINS) $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))

fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz needs $(FUZZ_CC)"; exit 2; }
	@ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || \
	    [ "$$(uname -m)" != x86_64 ] || \
	    { echo "libFuzzer runtime missing: apt-get install -y libclang-rt-14-dev"; exit 2; }
	$(MAKE) --no-print-directory $(FUZZ_VARS) fuzz-bins
	@$(MAKE) --no-print-directory $(FUZZ_VARS) fuzz-run

# Run every fuzzer (BUILD is the fuzz tree here) in libFuzzer's fork mode, which goes
# on after a crash, timeout or out-of-memory and keeps every finding. Seeds are
# symbolic links gathered into one folder per target; new inputs go to
# FUZZ_BUILD/fuzz/corpus-TARGET.
fuzz-run:
	@F=$(BUILD)/fuzz; fail=0; \
	for t in $(FUZZ_TARGETS); do \
	    seeds=$$F/seeds-$$t; corpus=$$F/corpus-$$t; rm -rf $$seeds; mkdir -p $$seeds $$corpus; \
	    $(MAKE) --no-print-directory -s fuzz-seeds-$$t SEEDS=$$seeds; \
	    rm -f $$F/crash-$$t-*; \
	    echo "== fuzz $$t: $$(ls $$seeds | wc -l) seeds, $(FUZZ_SECONDS) s"; \
	    rm -rf $$F/tmp; mkdir -p $$F/tmp; \
	    TMPDIR=$$(realpath $$F/tmp) $$F/fuzz_$$t -fork=1 \
	        -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
	        -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=2560 \
	        -max_len=$$(case $$t in tensor|pt2) echo 1048576;; *) echo 400000;; esac) \
	        -artifact_prefix=$$F/crash-$$t- $$corpus $$seeds >$$F/fuzz-$$t.log 2>&1; \
	    last=$$(grep -E '^#[0-9]+: cov:' $$F/fuzz-$$t.log | tail -1); \
	    runs=$$(echo "$$last" | sed -n 's/^#\([0-9]*\):.*/\1/p'); \
	    secs=$$(echo "$$last" | sed -n 's/.* time: \([0-9]*\)s.*/\1/p'); \
	    eps=$$([ -n "$$runs" ] && [ "$${secs:-0}" -gt 0 ] && echo $$((runs / secs))); \
	    rm -rf $$F/tmp; n=$$(ls $$F/crash-$$t-* 2>/dev/null | wc -l); \
	    echo "fuzz $$t: $${runs:-?} executions in $${secs:-?} s, $${eps:-?} exec/s," \
	        "$$n finding(s) (log: $$F/fuzz-$$t.log)"; \
	    if [ $$n != 0 ]; then fail=1; ls $$F/crash-$$t-* | head -10 | sed 's/^/    /'; fi; \
	done; exit $$fail

# seed folders: links to the files that `find` lists, named after their paths
fuzz_link = i=0; find $(1) 2>/dev/null | while read -r f; do i=$$((i+1)); \
	ln -sf "$$(realpath "$$f")" "$(SEEDS)/$$i-$$(basename "$$(dirname "$$f")")-$$(basename "$$f")"; \
	done

.PHONY: fuzz-seeds-onnx fuzz-seeds-pt2 fuzz-seeds-bundle fuzz-seeds-tensor
fuzz-seeds-onnx:
	@$(call fuzz_link,tests/malformed/onnx examples/models tests/models tests/models-dyn \
	    $(SHARED)/onnx-tests/node $(SHARED)/models -name '*.onnx' -size -600k)
fuzz-seeds-pt2:
	@$(call fuzz_link,tests/malformed/pt2 examples/models tests/models-dyn $(SHARED)/models \
	    -name '*.pt2' -size -1000k)
fuzz-seeds-bundle:
	@mkdir -p $(BUILD)/fuzz/bundles
	@for m in examples/models/tiny_cnn/model.onnx tests/malformed/onnx/valid_base.onnx \
	    $(SHARED)/onnx-tests/node/test_gather_0/model.onnx \
	    $(SHARED)/onnx-tests/node/test_softmax_axis_0/model.onnx \
	    $(SHARED)/onnx-tests/node/test_matmul_2d/model.onnx \
	    $(SHARED)/onnx-tests/node/test_reduce_sum_keepdims_example/model.onnx; do \
	    [ -f $$m ] && [ -x $(BUILD)/spyrec ] && $(BUILD)/spyrec $$m \
	        -o $(BUILD)/fuzz/bundles/$$(basename $$(dirname $$m)).sbin \
	        >/dev/null 2>&1; done; true
	@$(call fuzz_link,tests/malformed/sbin $(BUILD)/fuzz/bundles -name '*.sbin')
fuzz-seeds-tensor:
	@$(call fuzz_link,tests/malformed/input examples/models $(SHARED)/models \
	    $(SHARED)/onnx-tests/node -path '*input*' -size -200k \( -name '*.pb' -o -name '*.npy' \))
