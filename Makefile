# spyrec: ahead-of-time graph compiler for a 32-core Spyre-like accelerator.
#
#   make            build build/spyrec, build/spyrun, build/spydump, build/libspyrert.{a,so}
#   make demo       compile the shipped example model, run it, check it against its golden
#   make check      every test (unit, golden text, golden numeric, determinism, malformed)
#   make bench      compile time, host latency and onnxruntime ratio per model (needs PyPI)
#   make zoo-large  materialise the large models (../shared/models-large) in build/zoo-large
#   make bench-large  compile, memory, load and latency of the large models, long chains, GFLOP/s
#   make bench-tiles  GFLOP/s of the MATMUL tile kernel alone on resnet50's and bert_base's tiles
#   make bench-gemv   GB/s of the one-row MATMUL (a decode step) against a plain read of B
#   make bench-gemm   GFLOP/s of the MATMUL tile kernel on bench-large's GEMM products
#   make bench-cache  compile-cache timings: plain compile, miss and hit per model, best of 5
#   make bench-dynamic  dynamic bundles against static compiles of each size
#   make zoo-qdq    QDQ (int8) resnet50 and bert_base from build/zoo-large in build/zoo-qdq
#   make qdq-check  compile them and check them against onnxruntime's output
#   make asan|ubsan make check under sanitizers;  SANITIZER=address|undefined
#   make format     clang-format the sources
#   make install    tools, libspyrert, spyrt.h, spyrert.pc and man pages under PREFIX
#
# Dependencies are Debian packages; `make deps` installs missing ones when run as root.

CC ?= cc
BUILD ?= build
SHARED ?= ../shared
PREFIX ?= /usr/local
MODE ?= release

PKGS := libprotobuf-c yaml-0.1 cmocka
DEB_PKGS := protobuf-c-compiler libprotobuf-c-dev libonnx-dev libyaml-dev libcmocka-dev pkg-config gawk libzip-dev libjansson-dev
# needed only by tests (`make check` counts them as skipped without): `make deps` installs them
TEST_DEB_PKGS := graphviz
ONNX_PROTO ?= $(firstword $(wildcard /usr/include/onnx/onnx.proto /usr/local/include/onnx/onnx.proto))

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror \
        -Wno-unused-parameter
OPT_release := -O2 -g -DNDEBUG_IR_VERIFY=0
OPT_debug := -O0 -g3 -DSPY_DEBUG=1
SAN_address := -fsanitize=address -fno-omit-frame-pointer
SAN_undefined := -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_thread := -fsanitize=thread
SANFLAGS := $(if $(SANITIZER),$(SAN_$(SANITIZER)))

CPPFLAGS += -I. -Iir -Ischemas -Iruntime -I$(BUILD)/gen -MMD -MP
CFLAGS += -std=c11 -D_GNU_SOURCE -fPIC $(WARN) $(OPT_$(MODE)) $(SANFLAGS)
LDFLAGS += $(SANFLAGS)
LDLIBS += -lm -lpthread

GEN_PROTO_C := $(BUILD)/gen/onnx/onnx.pb-c.c
GEN_PROTO_H := $(BUILD)/gen/onnx/onnx.pb-c.h

RT_SRC := $(wildcard runtime/*.c)
IR_SRC := $(wildcard ir/*.c)
FE_SRC := $(wildcard frontend/*.c)
PASS_SRC := $(wildcard passes/*.c passes/plan/*.c passes/decompose/*.c passes/decompose/*/*.c)
CG_SRC := $(wildcard codegen/*.c)
COMPILER_SRC := $(IR_SRC) $(FE_SRC) $(PASS_SRC) $(CG_SRC)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
RT_OBJ := $(call obj,$(RT_SRC))
COMPILER_OBJ := $(call obj,$(COMPILER_SRC)) $(BUILD)/obj/gen/onnx.pb-c.o

LIBRT_A := $(BUILD)/libspyrert.a
LIBRT_SO := $(BUILD)/libspyrert.so
LIBSPYREC := $(BUILD)/libspyrec.a
BINS := $(BUILD)/spyrec $(BUILD)/spyrun $(BUILD)/spydump

COMPILER_LIBS = $(shell pkg-config --libs libprotobuf-c yaml-0.1 2>/dev/null || echo -lprotobuf-c -lyaml) -lzip -ljansson

.PHONY: all deps demo check unit golden bench clean format asan ubsan tsan install
all: deps-ok $(BINS) $(LIBRT_A) $(LIBRT_SO)

# ---- dependencies -------------------------------------------------------------
DEPS_STAMP := $(BUILD)/.deps-ok
deps-ok: $(DEPS_STAMP)
$(DEPS_STAMP):
	@mkdir -p $(BUILD)
	@sh tests/tools/deps.sh $(DEB_PKGS)
	@touch $@
deps:
	@sh tests/tools/deps.sh $(DEB_PKGS) $(TEST_DEB_PKGS)

# ---- generated protobuf-c code (never committed) -------------------------------
$(GEN_PROTO_C) $(GEN_PROTO_H): | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/gen
	@test -n "$(ONNX_PROTO)" || { echo "error: onnx/onnx.proto not found; install libonnx-dev" >&2; exit 1; }
	protoc-c --c_out=$(BUILD)/gen -I$(dir $(ONNX_PROTO)).. onnx/onnx.proto

$(BUILD)/obj/gen/onnx.pb-c.o: $(GEN_PROTO_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 -fPIC -O2 -g $(SANFLAGS) -c $< -o $@

# every frontend object may include the generated header
$(call obj,$(FE_SRC)) $(call obj,$(wildcard cli/*.c)): $(GEN_PROTO_H)

# GPTQ's loops (passes/fp8_gptq.c) need the vectoriser's full cost model: 4x faster
$(BUILD)/obj/passes/fp8_gptq.o: CFLAGS += $(if $(filter release,$(MODE)),-O3)
# the SIMD matrix kernels take KERN_SANFLAGS after the others: the fuzz build
# (tests/fuzz/fuzz.mk) drops UBSan there, whose checks of their inlined micro-kernels
# make one file take minutes to compile (make ubsan still checks them)
$(call obj,runtime/rt_kern_mm512.c runtime/rt_kern_mm256.c): CFLAGS += $(KERN_SANFLAGS)
$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# ---- libraries and binaries -------------------------------------------------------
$(LIBRT_A): $(RT_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(LIBRT_SO): $(RT_OBJ)
	$(CC) -shared -o $@ $^ $(LDFLAGS) $(LDLIBS)
$(LIBSPYREC): $(COMPILER_OBJ)
	@rm -f $@
	ar rcs $@ $^

# cli/spyrec_*.c link into spyrec, cli/spyrun_*.c into spyrun (helpers: cli/cli.h)
$(BUILD)/spyrec: $(BUILD)/obj/cli/spyrec.o $(call obj,$(wildcard cli/spyrec_*.c)) $(LIBSPYREC) $(LIBRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(COMPILER_LIBS) $(LDLIBS)
$(BUILD)/spyrun: $(BUILD)/obj/cli/spyrun.o $(call obj,$(wildcard cli/spyrun_*.c)) $(LIBSPYREC) $(LIBRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(COMPILER_LIBS) $(LDLIBS)
$(BUILD)/spydump: $(BUILD)/obj/cli/spydump.o $(LIBSPYREC) $(LIBRT_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(COMPILER_LIBS) $(LDLIBS)

# ---- install: tools, runtime library and header, pkg-config file, man pages -----------
#   make install PREFIX=/opt/spyrec [DESTDIR=/staging]
RT_VERSION = $(shell sed -n 's/^#define SPYRT_VERSION "\(.*\)"/\1/p' runtime/rt_api.c)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIBRT_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBRT_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 runtime/spyrt.h $(DESTDIR)$(PREFIX)/include/spyrt.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(RT_VERSION)|g' runtime/spyrert.pc.in \
	    >$(DESTDIR)$(PREFIX)/lib/pkgconfig/spyrert.pc
	install -m 644 cli/man/spyrec.1 cli/man/spyrun.1 cli/man/spydump.1 \
	    $(DESTDIR)$(PREFIX)/share/man/man1/

# ---- the main job on the shipped example --------------------------------------------
demo: all
	$(BUILD)/spyrec examples/models/tiny_cnn/model.onnx -o $(BUILD)/tiny_cnn.sbin
	$(BUILD)/spyrun $(BUILD)/tiny_cnn.sbin --check examples/models/tiny_cnn/test_data_set_0 --profile

# ---- tests --------------------------------------------------------------------------
include tests/tests.mk

# ---- sanitizers: the whole of make check in a separate build tree ----------------------
asan:
	$(MAKE) check BUILD=build-asan SANITIZER=address MODE=debug
ubsan:
	$(MAKE) check BUILD=build-ubsan SANITIZER=undefined MODE=debug

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-ubsan build-tsan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
