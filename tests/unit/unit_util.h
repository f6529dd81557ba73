/* unit_util.h: the harness shared by the cmocka unit tests (tests/unit/unit_util.c).
 *
 * A fixture holding one graph and its diagnostics; builders of types, inputs,
 * constants and foreign ONNX nodes; pass_decompose with its checks; evaluation of a
 * decomposed graph node by node with ir_eval_node; comparisons of results; and
 * compiling a graph with the whole pipeline and running it on the emulator.
 * Every check fails the current cmocka test (so these are only for use inside one).
 */
#ifndef SPYREC_UNIT_UTIL_H
#define SPYREC_UNIT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "passes/pass.h"
#include "spyrt.h"
#include "target.h"

/* ---- fixture ---- */

/* One graph under test: diagnostics of file "test.onnx", pass options at -O2. */
typedef struct {
    IrDiag d;
    IrGraph *g;
    PassOptions opt;
} UtFx;

void ut_fx_begin(UtFx *f);
void ut_fx_end(UtFx *f);
UtFx *ut_fx_new(void);
void ut_fx_free(UtFx *f);
/* cmocka setup / teardown: *state is a UtFx from ut_fx_new. */
int ut_setup(void **state);
int ut_teardown(void **state);

/* ---- building graphs ---- */

IrType ut_type(IrDType dt, int rank, const int64_t *dims);
IrType ut_vec(IrDType dt, int64_t n);
/* Graph input; a NULL name is replaced by "in<K>" (K: the input's index). */
ValId ut_input(IrGraph *g, const char *name, IrDType dt, int rank, const int64_t *dims);
ValId ut_const(IrGraph *g, IrDType dt, int rank, const int64_t *dims, const void *v);
/* NCHW convolution of x by w (stride 1), x padded by p on both sides of H and W first. */
ValId ut_conv(IrGraph *g, ValId x, ValId w, int p);
/* Foreign default-domain ONNX node named "n<K>" (K counts the calls); returns it. */
NodeId ut_onnx_node(IrGraph *g, const char *op, int64_t opset, const ValId *in, int nin,
                    int nout, const IrAttr *a, int na);
/* The same with one output; returns the output. */
ValId ut_onnx_op(IrGraph *g, const char *op, int64_t opset, const ValId *in, int nin,
                 const IrAttr *a, int na);
IrAttr ut_graph_attr(const char *name, IrGraph *sub);
ValId ut_capture(IrGraph *sub, IrGraph *outer, ValId v);

/* ---- decomposition and diagnostics ---- */

void ut_dump_diag(const IrDiag *d);
bool ut_has_msg(const IrDiag *d, const char *want);
void ut_decompose_ok(UtFx *f);
void ut_decompose_fails(UtFx *f, const char *want);
int ut_count_op(IrGraph *g, IrOp op);

/* ---- evaluation and comparison ---- */

const void *ut_run_graph(IrGraph *g, const void *const *inputs, uint32_t k);
void ut_expect_shape(IrGraph *g, uint32_t k, int rank, const int64_t *dims);
void ut_expect_close(const float *got, const float *want, int64_t n, double tol);
void ut_expect_i64(const int64_t *got, const int64_t *want, int64_t n);
void ut_fill(float *v, int64_t n, float scale, float off);
char *ut_print_str(IrGraph *g);
/* The peak resident bytes of this process since the last ut_reset_peak (Linux
 * /proc/self/status VmHWM), 0 when unknown; ut_reset_peak sets the peak to the
 * current size, false when the kernel cannot. */
size_t ut_peak_resident(void);
bool ut_reset_peak(void);

/* ---- the whole pipeline and the emulator ---- */

uint8_t *ut_compile(IrGraph *g, size_t *len);
uint8_t *ut_compile_for(IrGraph *g, const SpyTarget *t, size_t *len);
/* Recompute every section CRC and the table CRC of a bundle edited in place. */
void ut_fix_crcs(uint8_t *buf);
spy_status ut_compile_run(IrGraph *g, const void *const *inputs, void *const *outs, char *err,
                          size_t errlen);
/* Compile g and load the bundle (*buf: free it after the model). */
spy_model *ut_compile_load(IrGraph *g, uint8_t **buf);
/* Load bundle buf (malloc'ed; freed) and open a session (2 threads, LX poisoned). */
void ut_open(uint8_t *buf, size_t len, spy_model **m, spy_session **s);
/* Loading the bundle must fail with a message containing needle. */
void ut_expect_refused(const uint8_t *buf, size_t len, const char *needle);

#endif
