/* symdim.h: the state of pass_symdim (passes/symdim.c), shared with its masks
 * (passes/symdim_mask.c) and the sources it masks for all their users
 * (passes/symdim_source.c): every symbolic axis of every value as a list of factors. */
#ifndef SPYREC_PASSES_SYMDIM_H
#define SPYREC_PASSES_SYMDIM_H

#include "pass.h"

#define SD_MAXF 4                          /* factors per axis */

#define SD_MAXP 4                          /* pieces of a concatenated axis */

typedef struct {                           /* one piece of a concatenated axis: factors,
                                              outermost first, every one at its bound */
    int n;
    int64_t size[SD_MAXF];
    int sym[SD_MAXF];                      /* symbol, or -1 for a static factor */
} SdPiece;

typedef struct {                           /* one axis: factors, outermost first */
    int n;
    int64_t size[SD_MAXF];
    int sym[SD_MAXF];                      /* symbol, or -1 for a static factor */
    int64_t plo, phi;                      /* a padded axis (one symbolic factor): the
                                              data starts at plo, zeros follow it; only a
                                              convolution or pooling window may read it */
    bool cover;                            /* padding computed from the extent (ceil_mode)
                                              that is none at the bound: the window that
                                              reads the axis must cover it exactly */
    int np;                                /* > 0 (n is 0 then): a concatenation of np
                                              pieces, each laid out at its bound after the
                                              ones before it (a detector's three flattened
                                              feature maps): its valid positions are no
                                              prefix, so only ops that keep the axis whole
                                              may read it, until an output compacts it */
    SdPiece pc[SD_MAXP];
} SdAxis;

#define SD_MAXDER 256                      /* derived sizes (convolution outputs) */

typedef struct {                           /* a derived size: (parent * mul + add) / div + 1 */
    int parent;
    int64_t mul, add, div;                 /* mul > 1: an axis upsampled by interior padding */
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

#define SD_MAXSRCSYM 8                     /* symbols masked at one source */
#define SD_MAXEQ 64                        /* pairs of joined symbols (sd_join) */

typedef struct {                           /* a source masked for all users (symdim_source.c) */
    double neutral;                        /* the padding's value */
    int nsym;
    int sym[SD_MAXSRCSYM];                 /* the symbols whose padding it masks */
    ValId masked;                          /* the SELECT's result once made, else IR_NONE */
} SdSource;

typedef struct {
    IrGraph *g;
    bool plan;                             /* the planning walk: follow axes, make no node */
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
    SdSource **src;                        /* per value: masked for all its users */
    struct {                               /* symbols an op joins (sd_join): equal at
                                              every size the model takes; or, mod > 0, a
                                              window covering a exactly: (a + add) % mod
                                              == 0 at every such size (sd_cover) */
        int a, b;
        int64_t add, mod;
        IrOrigin og;
    } eq[SD_MAXEQ];
    int neq;
} Sd;

/* The axes of value v (NULL: none symbolic, or a value made by the pass itself). */
static inline SdVal *sd_get(const Sd *d, ValId v)
{
    return v < d->nvals ? d->val[v] : NULL;
}

/* The name of symbol k (a derived size: the dimension it is of), for messages. */
const char *pass_symdim_name(const Sd *d, int k);

/* Node n's constant inputs computed from extents folded at the bounds (ir.h IrExt) that
 * lie along a symbolic axis (symdim_ext.c): one that is such an extent, a single
 * element, replaced by the actual size (in the rewriting walk); any other use refused.
 * False when refused. */
bool pass_symdim_ext_inputs(Sd *d, IrNode *n);

/* The actual size of symbol k (derived ones computed from their parent) as an i32
 * tensor of rank r with every dim 1, made once per symbol. */
ValId pass_symdim_count(Sd *d, int k, int r, const IrOrigin *og);
/* The actual extent of an axis (factors x; NULL: static, ext) as an i32 [1]: the
 * product of its factors, a symbol's actual size for each symbolic one, plus the
 * padding of a padded axis (plo + phi). */
ValId pass_symdim_extent(Sd *d, const SdAxis *x, int64_t ext, const IrOrigin *og);
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
 * runtime zeroes its padding), its masked value when v is a source masked so for all
 * its users (symdim_source.c); IR_NONE when it cannot be (the caller masks axis by
 * axis). */
ValId pass_symdim_mask_pad(Sd *d, ValId v, const SdVal *s, const bool *axes, double neutral,
                           const IrOrigin *og);
/* The bool mask of the valid positions of axis a (factors x) of a rank-r value whose
 * axis a has len elements: shape [1.., len, ..1]. */
ValId pass_symdim_axis_mask(Sd *d, const SdAxis *x, int a, int r, int64_t len,
                            const IrOrigin *og);
/* The scalar constant neutral of v's dtype (f32, i32, i64), or IR_NONE for another. */
ValId pass_symdim_neutral(Sd *d, ValId v, double neutral);

/* symdim_source.c. The planning walk: v, masked along the symbols of factors x with
 * neutral, is a view whose source is to be masked for all its users. */
void pass_symdim_plan_source(Sd *d, ValId v, const SdAxis *x, double neutral);
/* The rewriting walk: v masked along the symbols of x with neutral where the value it
 * views is computed (v itself when that source is masked so for all its users, which
 * is also the answer for such a source itself); IR_NONE when v is no view or its
 * source lacks the symbols. */
ValId pass_symdim_at_source(Sd *d, ValId v, const SdAxis *x, double neutral,
                            const IrOrigin *og);
/* The masked value of source v when it is masked along every symbol ks with neutral,
 * else IR_NONE. */
ValId pass_symdim_masked(Sd *d, ValId v, const int *ks, int nk, double neutral);
/* What users of v read: its masked value when it is a masked source, else v. */
ValId pass_symdim_now(const Sd *d, ValId v);
/* Node n (re-added next) reads the masked value of each masked source it reads. */
void pass_symdim_redirect(Sd *d, IrNode *n);
/* Node n was re-added: each planned source among its outputs gets its SELECT. */
void pass_symdim_mask_outputs(Sd *d, const IrNode *n);

/* Node n multiplies a sum over symbolic axes by 1 / (its count at the bounds): the
 * constant becomes 1 / the actual count. false when n is no such product. */
bool pass_symdim_mean(Sd *d, IrNode *n);

/* The derived size (parent * mul + add) / div + 1 (symdim.c), made once; -1 when the
 * table is full or it would not give out at the bound max pmax of the parent. */
int pass_symdim_derived(Sd *d, int parent, int64_t mul, int64_t add, int64_t div,
                        int64_t pmax, int64_t out);
/* symdim_pool.c. Node n (a BINARY MUL or DIV) scales a WINDOW sum by its input ci, a
 * constant of an average pool's divisors for the bound (IR_EXT_BOUND): in the rewriting
 * walk, the divisors computed on the device from the actual sizes (the same window over
 * a mask of the valid positions), in the planning walk n->in[ci]; IR_NONE when n is no
 * such product (the caller refuses it). */
ValId pass_symdim_pool_counts(Sd *d, const IrNode *n, int ci, const IrOrigin *og);
/* Whether axis a holds a symbolic factor (a concatenated axis always does). */
bool pass_symdim_ax_sym(const SdAxis *a);
/* symdim_out.c. Graph output v (axes s) with several symbolic axes, some of derived
 * sizes: the row-major prefix of its actual shape gathered from the box, that shape
 * its data-dependent shape (ir_dyn_add_shape), under v's name; IR_NONE when too
 * large. */
ValId pass_symdim_compact_output(Sd *d, ValId v, const SdVal *s, const IrOrigin *og);
/* symdim_steps.c. Node n is a SYMLEN or SYMLIKE (the marker ops of a computation
 * unrolled along a symbolic axis): its output's axes recorded and, in the rewriting
 * walk, the node made the view that replaces it (*ok false, reported, when its axis
 * cannot be derived); false for any other node. */
bool pass_symdim_steps(Sd *d, IrNode *n, bool *ok);
#endif
