/* cg_reduce.c: REDUCE, ARGREDUCE, WINDOW and CUMSUM work items.
 *
 * A work item is a box of the kept dims (rows of the tile). For each chunk of the
 * reduced dims the prologue tile program loads the input box with the reduced dims
 * innermost (the DMA permutes through strides; for pooling the window taps are
 * strided dims of the same load, im2col-like) and applies the prologue; one VREDUCE
 * folds each row into the accumulator (ISA_F_ACCUM after the first chunk), or one
 * VSCAN scans each row (CUMSUM, whole axis). The epilogue program then runs on the
 * accumulator and stores the result.
 *
 * A 2-d MAX / MIN pooling window without a prologue instead loads its patch of input
 * rows (long DRAM runs; the im2col load of a strided window reads a few elements per
 * stick) and folds the kernel taps with one VEC MAX / MIN each over a block of output
 * rows, or, for a tiny item, each output row with one VREDUCE per kernel row
 * (window_patch_item).
 */
#include <string.h>

#include "cg_internal.h"

/* VREDUCE function of a REDUCE/ARGREDUCE/WINDOW node. */
static uint8_t red_fn(const IrNode *a)
{
    int fn = (int)ir_attr_get_int(a, "fn", 0);
    if (a->op == IR_OP_ARGREDUCE)
        return fn == IR_RED_MAX ? ISA_RF_ARGMAX : ISA_RF_ARGMIN;
    switch (fn) {
    case IR_RED_SUM: return ISA_RF_SUM;
    case IR_RED_PROD: return ISA_RF_PROD;
    case IR_RED_MAX: return ISA_RF_MAX;
    default: return ISA_RF_MIN;
    }
}

/* Row and element strides of the prologue result of class cls in a rows x len tile. */
static void src_strides(uint8_t cls, int64_t len, int32_t *rs, int32_t *cs)
{
    *rs = cls == IR_TC_FULL ? (int32_t)len : cls == IR_TC_ROW ? 1 : 0;
    *cs = (cls & IR_TC_COL) ? 1 : 0;
}

/* The reduction (or scan) instruction for one chunk. */
static void reduce_chunk(CgEmit *e, const IrKernel *k, const IrNode *a, int64_t rows,
                         int64_t len, bool accum)
{
    const IrTileVal *x = &k->tp[0].vals[k->tp[0].result];
    SpyInsn in;
    memset(&in, 0, sizeof in);
    if (a->op == IR_OP_CUMSUM) {
        SpyVScan *s = &in.scan;
        s->opcode = ISA_VSCAN;
        s->dtype = x->dtype;
        s->flags = (ir_attr_get_int(a, "exclusive", 0) ? ISA_F_EXCL : 0) |
                   (ir_attr_get_int(a, "reverse", 0) ? ISA_F_REV : 0);
        s->dst = k->buf[0];
        s->src = x->lx;
        s->rows = (uint32_t)rows;
        s->len = (uint32_t)len;
        s->src_rs = (int32_t)len;
        s->dst_rs = (int32_t)len;
    } else {
        SpyVReduce *r = &in.red;
        r->opcode = ISA_VREDUCE;
        r->dtype = x->dtype;
        r->fn = red_fn(a);
        bool arg = a->op == IR_OP_ARGREDUCE;
        r->flags = (accum && !arg ? ISA_F_ACCUM : 0) |
                   (arg && ir_attr_get_int(a, "select_last", 0) ? ISA_F_LAST : 0);
        r->dst = k->buf[0];
        r->src = x->lx;
        r->rows = (uint32_t)rows;
        r->len = (uint32_t)len;
        src_strides(x->cls, len, &r->src_rs, &r->src_cs);
        r->dst_rs = 1;
    }
    cg_push(e, &in);
}

/* One VREDUCE of `rows` rows of `len` elements (strides src_rs, 1) into dst. */
static void push_reduce(CgEmit *e, const IrTileVal *x, uint8_t fn, uint32_t dst, uint32_t src,
                        int64_t rows, int64_t len, int64_t src_rs, bool accum)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVReduce *r = &in.red;
    r->opcode = ISA_VREDUCE;
    r->dtype = x->dtype;
    r->fn = fn;
    r->flags = accum ? ISA_F_ACCUM : 0;
    r->dst = dst;
    r->src = src;
    r->rows = (uint32_t)rows;
    r->len = (uint32_t)len;
    r->src_rs = (int32_t)src_rs;
    r->src_cs = 1;
    r->dst_rs = 1;
    cg_push(e, &in);
}

/* The rows form of a loaded pooling patch, for items so small that it takes no more
 * instructions than the taps: each output row folded one kernel row at a time
 * (VREDUCE of its ow windows with the window stride, ACCUM after the first). */
static void window_rows(CgEmit *e, const IrTileVal *x, uint8_t fn, uint32_t dst, int64_t outer,
                        int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sr, int64_t sw,
                        int64_t rows, int64_t cols)
{
    uint32_t es = x->esize;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t r = 0; r < oh; r++)
            for (int64_t t = 0; t < kh; t++)
                push_reduce(e, x, fn, dst + (uint32_t)(es * (o * oh + r) * ow),
                            x->lx + (uint32_t)(es * (o * rows * cols + (r * sr + t) * cols)),
                            ow, kw, sw, t > 0);
}

/* One VEC MAX / MIN (vf) of one pooling tap into the accumulator: rows x cols results
 * at dst (row stride drs), operand 0 the first tap at s0 (or, with s0 == dst, the
 * accumulator in place), operand 1 the tap at s1; both taps read with row stride srs
 * and column stride scs. */
static void push_tap(CgEmit *e, const IrTileVal *x, uint16_t vf, uint32_t dst, int64_t drs,
                     uint32_t s0, uint32_t s1, int64_t rows, int64_t cols, int64_t srs,
                     int64_t scs)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    bool acc = s0 == dst;
    v->opcode = ISA_VEC;
    v->dtype = x->dtype;
    v->fn = vf;
    v->nsrc = 2;
    v->rows = (uint32_t)rows, v->cols = (uint32_t)cols;
    v->dst = dst, v->dst_rs = (int32_t)drs;
    v->src[0] = s0, v->src_rs[0] = (int32_t)(acc ? drs : srs);
    v->src_cs[0] = (int32_t)(acc ? 1 : scs);
    v->src[1] = s1, v->src_rs[1] = (int32_t)srs, v->src_cs[1] = (int32_t)scs;
    cg_push(e, &in);
}

/* The taps of a loaded pooling patch (window_patch_item): for each of `groups` groups
 * of `rows` output rows (the group's results at dst + i * gd, its patch at src + i * gs,
 * in elements) one VEC per kernel tap after the first, MAX / MIN of the first two taps,
 * then of the accumulator and each further tap in row-major tap order. Operand 0 is the
 * result so far: a NaN seen first stays, as in a VREDUCE over the taps. */
static void window_taps(CgEmit *e, const IrTileVal *x, uint16_t vf, uint32_t dst,
                        uint32_t src, int64_t groups, int64_t gd, int64_t gs, int64_t rows,
                        int64_t drs, int64_t srs, int64_t ow, int64_t sw, int64_t kh,
                        int64_t kw, int64_t cols)
{
    uint32_t es = x->esize;
    for (int64_t g = 0; g < groups; g++) {
        uint32_t d = dst + (uint32_t)(es * g * gd), s = src + (uint32_t)(es * g * gs);
        for (int64_t tap = 1; tap < kh * kw; tap++) {
            uint32_t at = s + (uint32_t)(es * ((tap / kw) * cols + tap % kw));
            push_tap(e, x, vf, d, drs, tap == 1 ? s : d, at, rows, ow, srs, sw);
        }
    }
}

static void window_fold(CgEmit *e, const IrKernel *k, const IrTileVal *x, uint8_t fn,
                        int64_t outer, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                        int64_t sr, int64_t sw, int64_t rows, int64_t cols);

/* 2-d MAX / MIN pooling, and SUM pooling of F32 (average pooling's sums), from a
 * patch: when the window's tile is the input itself (no prologue), rows contiguous
 * along the width and the patch of input rows no larger than the im2col tile, the item
 * loads the patch (long DRAM runs; the im2col load of a strided window reads a few
 * elements per stick: Inception's 3 x 3 average pooling ran at a sixteenth of
 * onnxruntime's speed) into the tile's buffer and folds the kernel taps with VEC MAX /
 * MIN / ADD over whole blocks of output rows (window_taps:
 * the planes of the item's outer dims and their output rows form one block when the
 * planes follow each other at the window's row stride, else the blocks run over the
 * fewer of the two), or, when that takes no fewer instructions, each output row one
 * kernel row at a time (window_rows). MAX and MIN are exact in any order, so the
 * result is the same; a SUM adds the taps one after the other in row-major tap order
 * (a VREDUCE over the im2col tile keeps 8 partial sums: the last bits may differ). Other
 * dtypes' sums stay on the im2col path, whose VREDUCE accumulates in F32 (VEC ADDs
 * would round each partial sum to the dtype).
 * st / ln: the item's box over grid and inner dims (one inner chunk). */
static bool window_patch_item(CgEmit *e, const IrKernel *k, const IrNode *a, const int64_t *st,
                              const int64_t *ln)
{
    const IrTileProg *tp = &k->tp[0];
    const IrTileVal *x = &tp->vals[tp->result];
    int ng = k->grid.rank, nd = tp->nd;
    uint8_t fn = red_fn(a);
    bool sum = fn == ISA_RF_SUM && x->dtype == ISA_DT_F32;
    if (a->op != IR_OP_WINDOW || (fn != ISA_RF_MAX && fn != ISA_RF_MIN && !sum) ||
        k->inner.rank != 2 ||
        ng < 2 || nd != ng + 2 || tp->nsteps != 0 || x->src != IR_TV_LOAD || x->cls != IR_TC_FULL)
        return false;
    for (int i = 0; i < nd; i++)
        if (tp->order[i] != i)
            return false;
    const int64_t *is = x->acc.is;
    int64_t pitch = is[ng], sh = is[ng - 2], sw = is[ng - 1], outer = 1;
    if (is[ng + 1] != 1 || pitch <= 0 || sh <= 0 || sw <= 0 || sh % pitch != 0)
        return false;
    int64_t oh = ln[ng - 2], ow = ln[ng - 1], kh = ln[ng], kw = ln[ng + 1], sr = sh / pitch;
    int64_t rows = (oh - 1) * sr + kh, cols = (ow - 1) * sw + kw;
    for (int d = 0; d < ng - 2; d++)
        outer *= ln[d];
    if (cols > pitch || rows * cols > oh * ow * kh * kw || kh * kw < 2)
        return false;
    CgDims dd = {0};
    for (int d = 0; d < ng - 2; d++)
        cg_dims_add(&dd, ln[d], is[d], 0);
    cg_dims_add(&dd, rows, pitch, 0);
    cg_dims_add(&dd, cols, 1, 0);
    cg_dims_dense_lx(&dd);
    uint32_t seg, es = x->esize;
    int64_t off;
    cg_access_at(e, &x->acc, st, nd, es, &seg, &off);
    cg_load_cached(e, seg, off, x->lx, es, &dd);
    window_fold(e, k, x, fn, outer, oh, ow, kh, kw, sr, sw, rows, cols);
    return true;
}

/* The taps of a pooling patch [outer planes, rows, cols] at the window tile's buffer
 * folded into the accumulator (outer * oh output rows of ow): one VEC per tap after
 * the first over blocks of output rows (window_taps: the planes and their output rows
 * one block when the planes follow each other at the window's row stride, else blocks
 * over the fewer of the two), or, when that takes no fewer instructions, each output
 * row one kernel row at a time (window_rows). sr, sw: the window's strides. */
static void window_fold(CgEmit *e, const IrKernel *k, const IrTileVal *x, uint8_t fn,
                        int64_t outer, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                        int64_t sr, int64_t sw, int64_t rows, int64_t cols)
{
    bool one = outer == 1 || rows == oh * sr;
    if (outer * oh * kh <= (kh * kw - 1) * (one ? 1 : outer < oh ? outer : oh)) {
        window_rows(e, x, fn, k->buf[0], outer, oh, ow, kh, kw, sr, sw, rows, cols);
        return;
    }
    uint16_t vf = fn == ISA_RF_MAX ? ISA_VF_MAX : fn == ISA_RF_MIN ? ISA_VF_MIN : ISA_VF_ADD;
    if (one)                                 /* planes at the row stride: one block */
        window_taps(e, x, vf, k->buf[0], x->lx, 1, 0, 0, outer * oh, ow, sr * cols, ow, sw,
                    kh, kw, cols);
    else if (outer <= oh)                    /* a block per plane */
        window_taps(e, x, vf, k->buf[0], x->lx, outer, oh * ow, rows * cols, oh, ow,
                    sr * cols, ow, sw, kh, kw, cols);
    else                                     /* a block per output row, over the planes */
        window_taps(e, x, vf, k->buf[0], x->lx, oh, ow, sr * cols, outer, oh * ow,
                    rows * cols, ow, sw, kh, kw, cols);
}

/* 2-d MAX / MIN pooling whose input PAD the kernel absorbed (plan_window_pad): the
 * item's patch of padded rows [outer planes, rows, cols] at the window tile's buffer
 * (which holds the im2col tile: the patch fits, the stride being at most the kernel,
 * fuse.c absorb_window_pad) is filled with the pad value where it reaches past the
 * input, then the input rows and columns inside it are loaded straight from the
 * PAD's input, and the taps folded (window_fold). Grid dim d is input dim d, the
 * last two through the window's strides; st / ln: the item's box over the grid and
 * the whole kernel. */
static void window_pad_item(CgEmit *e, const IrKernel *k, const IrNode *a, const IrNode *pad,
                            const int64_t *st, const int64_t *ln)
{
    const IrTileVal *x = &k->tp[0].vals[k->tp[0].result];
    const IrView *xv = &e->s->val[pad->in[0]].view;
    const IrType *xt = ir_vtype(e->g, pad->in[0]);
    const int64_t *pads = NULL, *s = NULL;
    int ng = k->grid.rank, r = xt->rank, h = r - 2, w = r - 1;
    IR_ASSERT(ng == r && k->inner.rank == 2 && ir_attr_get_ints(pad, "pads", &pads) == 2 * r);
    int ns = ir_attr_get_ints(a, "strides", &s);
    int64_t sr = ns == 2 ? s[0] : 1, sw = ns == 2 ? s[1] : 1;
    int64_t oh = ln[h], ow = ln[w], kh = ln[ng], kw = ln[ng + 1], outer = 1;
    int64_t rows = (oh - 1) * sr + kh, cols = (ow - 1) * sw + kw;
    int64_t r0 = st[h] * sr - pads[h], c0 = st[w] * sw - pads[w];   /* input coordinates */
    int64_t rlo = r0 > 0 ? r0 : 0, rhi = r0 + rows < xt->dims[h] ? r0 + rows : xt->dims[h];
    int64_t clo = c0 > 0 ? c0 : 0, chi = c0 + cols < xt->dims[w] ? c0 + cols : xt->dims[w];
    for (int d = 0; d < h; d++)
        outer *= ln[d];
    uint32_t es = x->esize;
    if (rlo > r0 || rhi < r0 + rows || clo > c0 || chi < c0 + cols)
        cg_push_fill(e, x->dtype, x->lx, (uint32_t)(outer * rows * cols),
                     cg_value_bits(x->dtype, ir_attr_get_float(pad, "value", 0.0)));
    if (rhi > rlo && chi > clo) {
        CgDims dd = {0};
        int64_t el = xv->off + rlo * xv->stride[h] + clo * xv->stride[w], ls[IR_MAX_RANK];
        for (int d = h - 1; d >= 0; d--) {   /* the patch's planes dense in LX */
            ls[d] = d == h - 1 ? rows * cols : ls[d + 1] * ln[d + 1];
            el += st[d] * xv->stride[d];
        }
        for (int d = 0; d < h; d++)
            cg_dims_add(&dd, ln[d], xv->stride[d], ls[d]);
        cg_dims_add(&dd, rhi - rlo, xv->stride[h], cols);
        cg_dims_add(&dd, chi - clo, xv->stride[w], 1);
        uint32_t seg;
        int64_t off;
        cg_root(e, xv->root, &seg, &off);
        cg_load_cached(e, seg, off + el * es,
                       x->lx + (uint32_t)(es * ((rlo - r0) * cols + (clo - c0))), es, &dd);
    }
    window_fold(e, k, x, red_fn(a), outer, oh, ow, kh, kw, sr, sw, rows, cols);
}

void cg_reduce_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    const IrNode *a = ir_node(e->g, k->anchor);
    const IrNode *pad = plan_window_pad(e->g, k);
    int ng = k->grid.rank, ni = k->inner.rank;
    int64_t st[IR_ITER_MAX] = {0}, ln[IR_ITER_MAX] = {0}, rows = 1;
    for (int d = 0; d < ng; d++) {
        st[d] = start[d];
        ln[d] = len[d];
        rows *= len[d];
    }
    int64_t nchunks = plan_grid_items(&k->inner);
    for (int64_t j = 0; j < nchunks; j++) {
        int64_t len_red = 1;
        plan_grid_item(&k->inner, (uint64_t)j, st + ng, ln + ng);
        for (int d = 0; d < ni; d++)
            len_red *= ln[ng + d];
        if (pad) {                           /* tile.c keeps its taps whole */
            IR_ASSERT(nchunks == 1);
            window_pad_item(e, k, a, pad, st, ln);
            break;
        }
        if (nchunks == 1 && window_patch_item(e, k, a, st, ln))
            break;
        cg_tp_run(e, &k->tp[0], st, ln);
        reduce_chunk(e, k, a, rows, len_red, j > 0);
    }
    if (nchunks == 0 && a->op != IR_OP_CUMSUM) {   /* empty reduction: the identity */
        SpyInsn in;
        memset(&in, 0, sizeof in);
        in.red.opcode = ISA_VREDUCE;
        in.red.dtype = (uint8_t)pass_dev_dtype(ir_vtype(e->g, a->in[0])->dtype);
        in.red.fn = red_fn(a);
        in.red.dst = k->buf[0];
        in.red.src = k->buf[0];
        in.red.rows = (uint32_t)rows;
        in.red.dst_rs = 1;
        cg_push(e, &in);
    }
    if (a->op == IR_OP_CUMSUM)
        cg_tp_run(e, &k->tp[1], st, ln);
    else
        cg_tp_run(e, &k->tp[1], start, len);
}
