/* pass.h: the compiler pipeline (passes/pipeline.c holds the table).
 *
 * Each pass is a plain function over the graph; it reports user errors through
 * g->diag and returns false to stop the pipeline. ir_verify() and plan_verify() run
 * after every pass when PassOptions.verify is set (always in debug builds). Passes
 * never print to stdout or exit.
 */
#ifndef SPYREC_PASS_H
#define SPYREC_PASS_H

#include <stdio.h>

#include "ir.h"
#include "target.h"

/* --precision: the model's own types (default), fp16 (passes/fp16.c), int8 (W8A8:
 * passes/quant.c, the rest as fp16) or fp8 (e4m3 matrix weights: passes/fp8.c, the
 * rest as fp16) */
typedef enum {
    PASS_PREC_MODEL = 0, PASS_PREC_FP16 = 1, PASS_PREC_INT8 = 2, PASS_PREC_FP8 = 3
} PassPrecision;

/* The quantization parameters of one activation tensor (calibration, --precision=int8):
 * the observed range [lo, hi] (after the percentile clip), and the int8 scale and zero
 * point chosen from it. */
typedef struct {
    const char *name;              /* the model's tensor name */
    double lo, hi;
    double scale;
    int zero_point;
} PassQParam;

/* One weight quantized per output channel: its name, channel count and axis, and the
 * smallest and largest channel scale (max|w|/127). */
typedef struct {
    const char *name;
    int64_t channels;
    int axis;
    double scale_min, scale_max;
} PassQWeight;

/* --precision=int8: the calibration's activation parameters (in), and the weights the
 * quantize pass quantized (out: malloc'd, freed with pass_quant_free). */
typedef struct PassQuant {
    const PassQParam *act;
    uint32_t nact;
    const char *keep_fp16;         /* --keep-fp16 LIST (NULL: none) */
    PassQWeight *w;
    uint32_t nw;
    uint32_t nquantized;           /* contractions given Q/DQ pairs */
} PassQuant;

/* --precision=fp8 --calibrate: per weight (a matrix product's constant B [K, N], by
 * its name after the passes before fp16), the mean over the calibration set of each of
 * the K columns of the product's data input A, and the variance of that estimate; the
 * fp8 pass adds the mean error mean(A) (B - dequant(B8)) to the product (bias
 * correction), shrunk by how much of it the estimate's noise may be. */
typedef struct {
    const char *name;              /* the weight's value name */
    int64_t k;
    const double *mean, *var;      /* [k] */
    const float *h;                /* [k, k] sum of x x^T over the calibration rows, for
                                      GPTQ rounding (passes/fp8_gptq.c); NULL: none */
    double shrink;                 /* how much of h to replace by a multiple of I
                                      (gptq_shrinkage: few rows, less trust in h) */
} PassFp8Mean;

typedef struct PassFp8Calib {
    const PassFp8Mean *w;
    uint32_t nw;
    uint32_t ncorrected;           /* out: products given a bias correction */
    uint32_t ngptq;                /* out: products whose weight got GPTQ rounding */
    uint32_t nhskipped;            /* observed inputs without H (K or memory cap) */
} PassFp8Calib;

typedef struct {
    int opt_level;                 /* 0, 1, 2 */
    const SpyTarget *target;
    const char *dump_after;        /* pass names (comma-separated), "all", or NULL */
    FILE *dump_file;               /* where --dump-after prints (stderr by default) */
    bool verify;                   /* ir_verify and plan_verify after every pass */
    int precision;                 /* PassPrecision: how float32 tensors live on the card */
    const char *keep_fp32;         /* --keep-fp32: comma-separated node names / op types
                                      kept in float32 in fp16 mode (NULL: none) */
    PassQuant *quant;              /* --precision=int8: calibration (NULL: none) */
    PassFp8Calib *fp8cal;          /* --precision=fp8 --calibrate: input means (NULL: none) */
    /* optional observer (progress display, compile reports, --emit=dot): called before
     * (done = false) and after (done = true, the pass succeeded) each pass that runs;
     * index is the pass's position in pass_pipeline[] */
    void (*hook)(IrGraph *g, int index, bool done, void *ctx);
    void *hook_ctx;
    /* size buckets (spyrec --dim-buckets): the constant pool the buckets of one bundle
     * share (passes/cpool.h); NULL: constants laid out for this graph alone */
    struct PassConstPool *cpool;
} PassOptions;

typedef bool (*PassFn)(IrGraph *g, const PassOptions *opt);

typedef struct {
    const char *name;              /* as used by --dump-after */
    PassFn run;
    int min_opt;                   /* run only at -O >= min_opt */
    const char *what;              /* one line for --help / reports */
} PassInfo;

extern const PassInfo pass_pipeline[];
extern const int pass_pipeline_len;

/* Run the whole pipeline; false if any pass reported an error. */
bool pass_run_pipeline(IrGraph *g, const PassOptions *opt);
/* Lookup by name (for --dump-after validation); NULL if unknown. */
const PassInfo *pass_find(const char *name);
/* --dump-after: whether list ("all", or pass names separated by commas) names pass
 * name; whether every name of list is a pass. */
bool pass_dump_wanted(const char *list, const char *name);
bool pass_dump_list_ok(const char *list);
/* Whether the comma-separated list names s (an exact entry). */
bool pass_list_has(const char *list, const char *s);

/* individual passes (one file each) */
bool pass_decompose(IrGraph *g, const PassOptions *opt);   /* foreign ops -> core ops */
bool pass_fold(IrGraph *g, const PassOptions *opt);        /* constant folding */
bool pass_dce(IrGraph *g, const PassOptions *opt);         /* dead-code elimination */
bool pass_dynamic(IrGraph *g, const PassOptions *opt);     /* data-dependent extents */
bool pass_symdim(IrGraph *g);      /* bounded symbolic input dims (symdim.c), from pass_dynamic */
bool pass_simplify(IrGraph *g, const PassOptions *opt);    /* algebraic/movement cleanups */
void pass_rowsel(IrGraph *g);                              /* row selections pushed up (rowsel.c) */
void pass_readd_reshape(IrGraph *g, const IrNode *n, ValId v); /* n re-added as reshape(v) (rowsel.c) */
void pass_rotary(IrGraph *g, const PassOptions *opt);      /* rotary embeddings: halves or R product (rotary.c) */
void pass_gqa(IrGraph *g);                                 /* grouped-query attention on split heads (gqa.c) */
void pass_siblings(IrGraph *g, const PassOptions *opt);    /* sibling products merged (siblings.c) */
bool pass_flatmm(IrGraph *g);                              /* few-row batched products flattened (flatmm.c): any */
bool pass_requant_id(IrGraph *g, const PassOptions *opt);  /* requantization identities (requant_id.c) */
bool pass_qsiblings(IrGraph *g, const PassOptions *opt);   /* int8 siblings merged (qsiblings.c) */
bool pass_bnfold(IrGraph *g, const PassOptions *opt);      /* fold per-channel affine into conv/matmul */
bool pass_convtrim(IrGraph *g, const PassOptions *opt);    /* drop taps that read only zero pads */
bool pass_window(IrGraph *g, const PassOptions *opt);      /* reads within core windows */
bool pass_dequant(IrGraph *g, const PassOptions *opt);     /* dequantize per consumer */
bool pass_fuse(IrGraph *g, const PassOptions *opt);        /* group nodes into kernels */
bool pass_layout(IrGraph *g, const PassOptions *opt);      /* stick layouts */
bool pass_divide(IrGraph *g, const PassOptions *opt);      /* split kernels over cores */
bool pass_tile(IrGraph *g, const PassOptions *opt);        /* LX tiling */
bool pass_dram_plan(IrGraph *g, const PassOptions *opt);   /* DRAM planning */
bool pass_halfwiden(IrGraph *g, const PassOptions *opt);   /* f16/bf16 arithmetic in f32 */
bool pass_halfweight(IrGraph *g, const PassOptions *opt);  /* f16/bf16 weights kept half */
bool pass_fp16(IrGraph *g, const PassOptions *opt);        /* --precision=fp16 */
bool pass_quantize(IrGraph *g, const PassOptions *opt);    /* --precision=int8 (quant.c) */
bool pass_fp8(IrGraph *g, const PassOptions *opt);         /* --precision=fp8 (fp8.c) */
/* fp8 calibration (fp8.c): make the data input of every matrix product of g (lowered as
 * far as the passes before fp16) whose B is a constant float32 matrix an extra graph
 * output; *wnames[i], *outs[i]: the weight's name and the output index of its input
 * (-1: a weight read by two products, left out). Returns the number of weights. */
uint32_t pass_fp8_observe(IrGraph *g, const char ***wnames, int64_t **outs);
/* Calibration (quant.c): make the activation tensors that pass_quantize would quantize
 * extra graph outputs of g (a graph straight from the frontend); returns their count
 * and their names in *names (g's arena), in the order of the new outputs; (*symmetric)[i]
 * says that tensor i is to be quantized symmetrically (zero point 0: an operand of a
 * product of two activations). */
uint32_t pass_quant_observe(IrGraph *g, const char *keep_fp32, const char *keep_fp16,
                            const char ***names, uint8_t **symmetric);
/* Whether precision p stores float tensors on the card as DLFloat16 (fp16, int8, fp8). */
static inline bool pass_prec_half(int p) { return p != PASS_PREC_MODEL; }

#endif
