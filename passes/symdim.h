/* symdim.h: the state of pass_symdim (passes/symdim.c), shared with its masks
 * (passes/symdim_mask.c): every symbolic axis of every value as a list of factors. */
#ifndef SPYREC_PASSES_SYMDIM_H
#define SPYREC_PASSES_SYMDIM_H

#include "pass.h"

#define SD_MAXF 4                          /* factors per axis */

typedef struct {                           /* one axis: factors, outermost first */
    int n;
    int64_t size[SD_MAXF];
    int sym[SD_MAXF];                      /* symbol, or -1 for a static factor */
    int64_t plo, phi;                      /* a padded axis (one symbolic factor): the
                                              data starts at plo, zeros follow it; only a
                                              convolution or pooling window may read it */
} SdAxis;

#define SD_MAXDER 256                      /* derived sizes (convolution outputs) */

typedef struct {                           /* a derived size: (parent + add) / div + 1 */
    int parent;
    int64_t add, div;
} SdDerived;

typedef struct {                           /* a sum over symbolic axes, maybe of a mean */
    double bound_count;                    /* elements summed at the bounds */
    int64_t static_count;                  /* the product of its static reduced extents */
    int nsym;
    int sym[IR_MAX_RANK];
} SdSum;

typedef struct {                           /* a value's axes; NULL when none is symbolic */
    SdAxis ax[IR_MAX_RANK];
} SdVal;

#define SD_MAXMASKS 64                     /* masks of windows' and reductions' inputs, kept */

typedef struct {                           /* one kept mask: its shape and symbols */
    int rank;
    int64_t dims[IR_MAX_RANK];             /* 1 on an axis it does not mask */
    int sym[IR_MAX_RANK];                  /* the symbol of a masked axis, else -1 */
    ValId mask;                            /* bool, true on the valid positions */
} SdMask;

typedef struct {
    IrGraph *g;
    SdVal **val;                           /* per value id of the original graph */
    uint32_t nvals;
    ValId syms;                            /* the hidden input: int32 per symbol */
    int nbase;                             /* symbols of the inputs; derived ones follow */
    ValId *count;                          /* per symbol: its actual size, i32 [1] */
    SdDerived der[SD_MAXDER];
    int nder;
    SdSum **sum;                           /* per value: a sum over symbolic axes */
    SdMask masks[SD_MAXMASKS];             /* pass_symdim_mask_pad's, for reuse */
    int nmasks;
} Sd;

/* The axes of value v (NULL: none symbolic, or a value made by the pass itself). */
static inline SdVal *sd_get(const Sd *d, ValId v)
{
    return v < d->nvals ? d->val[v] : NULL;
}

/* The actual size of symbol k (derived ones computed from their parent) as an i32
 * tensor of rank r with every dim 1, made once per symbol. */
ValId pass_symdim_count(Sd *d, int k, int r, const IrOrigin *og);
/* v with its padding along axis a (factors x) replaced by the scalar neutral, masked
 * where the value it views is computed when it is a view; IR_NONE for a dtype without
 * such a constant. */
ValId pass_symdim_mask(Sd *d, ValId v, const SdAxis *x, int a, double neutral,
                       const IrOrigin *og);
/* v (not a view; the input of a padded window or of a reduction) with its padding
 * along every axis a with axes[a] (one symbolic
 * factor each) replaced by the scalar neutral in one SELECT, whose mask (the AND of
 * the axes' masks, shaped 1 on the other axes) is made once per shape and symbols and
 * shared by every such SELECT; v itself for a graph input padded with zeros (the
 * runtime zeroes its padding); IR_NONE when it cannot be (the caller masks axis by
 * axis). */
ValId pass_symdim_mask_pad(Sd *d, ValId v, const SdVal *s, const bool *axes, double neutral,
                           const IrOrigin *og);
/* Node n multiplies a sum over symbolic axes by 1 / (its count at the bounds): the
 * constant becomes 1 / the actual count. false when n is no such product. */
bool pass_symdim_mean(Sd *d, IrNode *n);

#endif
