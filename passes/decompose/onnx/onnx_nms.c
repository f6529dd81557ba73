/* onnx_nms.c: NonMaxSuppression (opsets 10, 11) with a data-dependent result.
 *
 * Per batch b and class c the boxes are taken in decreasing score order (equal scores:
 * lower box index first); a box is selected when its score passes score_threshold
 * (strictly greater, when given), no selected box of the same (b, c) overlaps it with
 * IoU > iou_threshold, and fewer than max_output_boxes_per_class boxes were selected.
 * IoU follows the reference: corners from [y1, x1, y2, x2] in any order
 * (center_point_box 0) or [xc, yc, w, h] (1); no overlap, or a non-positive area or
 * union, is never a suppression.
 *
 * Static form (S boxes, BC = batches x classes):
 *   over[b,i,j]   box i suppresses box j: [B, S, S], shared by the classes
 *   rank[b,c,i]   boxes ahead of box i, from score comparisons in chunks of boxes
 *   order         one SCATTER of the box indices (and scores) to row bc*S + rank:
 *                 order[bc, t] is the box at sorted position t
 *   greedy        S unrolled steps over the sorted positions t: the box order[:, t] is
 *                 selected when it is valid, not yet suppressed (sup, [BC, S], gathered
 *                 at its index), and under the limit; a selection adds its row of over
 *                 (a GATHER) to sup
 *   result        rows (b, c, index) of the selected positions, in (b, c, t) order,
 *                 compacted by SCATTER: [BC * min(max, S), 3] upper bound (BC * S when
 *                 the limit is a run-time input) and a device-computed count
 */
#include "onnx_dynamic.h"

#define NMS_MAX_BOXES 4096                 /* boxes per class the unrolled loop takes */

typedef struct {
    int64_t b, cl, s, bc;
    ValId xmin, ymin, xmax, ymax;          /* [B, S] corners in input order */
    ValId over;                            /* [B*S, S] i32: 1 when box i suppresses j */
    ValId order;                           /* [BC, S] i32: box at each sorted position */
    ValId valid;                           /* [BC, S] bool, in sorted order */
    ValId limit;                           /* i32 scalar: max boxes per class */
} Nms;

/* Coordinate k of every box: [B, S]. */
static ValId coord(DecCtx *c, const Nms *n, ValId boxes, int k)
{
    int64_t dims[2] = {n->b, n->s};
    return dec_reshape(c, dec_slice_axis(c, boxes, 2, k, 1, 1), dims, 2);
}

/* Corners of the boxes in input order. */
static void corners(DecCtx *c, Nms *n, ValId boxes, bool center)
{
    ValId a = coord(c, n, boxes, 0), b = coord(c, n, boxes, 1), d = coord(c, n, boxes, 2),
          e = coord(c, n, boxes, 3);
    if (!center) {                         /* [y1, x1, y2, x2], corners in any order */
        n->ymin = dec_bin(c, IR_BIN_MIN, a, d);
        n->ymax = dec_bin(c, IR_BIN_MAX, a, d);
        n->xmin = dec_bin(c, IR_BIN_MIN, b, e);
        n->xmax = dec_bin(c, IR_BIN_MAX, b, e);
        return;
    }
    ValId hw = dec_bin_s(c, IR_BIN_DIV, d, 2.0), hh = dec_bin_s(c, IR_BIN_DIV, e, 2.0);
    n->xmin = dec_bin(c, IR_BIN_SUB, a, hw);
    n->xmax = dec_bin(c, IR_BIN_ADD, a, hw);
    n->ymin = dec_bin(c, IR_BIN_SUB, b, hh);
    n->ymax = dec_bin(c, IR_BIN_ADD, b, hh);
}

/* over (i32 [B*S, S]): box i suppresses box j when their IoU exceeds iou_thr. */
static void overlaps(DecCtx *c, Nms *n, ValId iou_thr)
{
    int64_t di[3] = {n->b, n->s, 1}, dj[3] = {n->b, 1, n->s}, flat[2] = {n->b * n->s, n->s};
    ValId k4[4] = {n->xmin, n->ymin, n->xmax, n->ymax}, v[2][4];
    for (int k = 0; k < 4; k++) {
        v[0][k] = dec_reshape(c, k4[k], di, 3);
        v[1][k] = dec_reshape(c, k4[k], dj, 3);
    }
    ValId zero = dec_scalar(c->g, IR_DT_F32, 0), area[2];
    for (int q = 0; q < 2; q++)
        area[q] = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_SUB, v[q][2], v[q][0]),
                          dec_bin(c, IR_BIN_SUB, v[q][3], v[q][1]));
    ValId iw = dec_bin(c, IR_BIN_SUB, dec_bin(c, IR_BIN_MIN, v[0][2], v[1][2]),
                       dec_bin(c, IR_BIN_MAX, v[0][0], v[1][0]));
    ValId ih = dec_bin(c, IR_BIN_SUB, dec_bin(c, IR_BIN_MIN, v[0][3], v[1][3]),
                       dec_bin(c, IR_BIN_MAX, v[0][1], v[1][1]));
    ValId inter = dec_bin(c, IR_BIN_MUL, iw, ih);
    ValId uni = dec_bin(c, IR_BIN_SUB, dec_bin(c, IR_BIN_ADD, area[0], area[1]), inter);
    ValId t[7] = {iw, ih, inter, area[0], area[1], uni, IR_NONE}, ok = IR_NONE;
    for (int k = 0; t[k] != IR_NONE; k++) {
        ValId pos = dec_bin(c, IR_BIN_GT, t[k], zero);
        ok = ok == IR_NONE ? pos : dec_bin(c, IR_BIN_AND, ok, pos);
    }
    ValId big = dec_bin(c, IR_BIN_GT, dec_bin(c, IR_BIN_DIV, inter, uni), iou_thr);
    n->over = dec_reshape(c, dec_cast(c, dec_bin(c, IR_BIN_AND, ok, big), IR_DT_I32), flat, 2);
}

/* rank[b,c,i] (i32 [B, C, S]): boxes with a higher score, or an equal one and a lower
 * index; compared against chunks of at most `chunk` boxes j at a time. */
static ValId score_rank(DecCtx *c, const Nms *n, ValId scores, int64_t chunk)
{
    int64_t di[4] = {n->b, n->cl, n->s, 1}, ax = 3;
    ValId si = dec_reshape(c, scores, di, 4), rank = IR_NONE;
    for (int64_t j0 = 0; j0 < n->s; j0 += chunk) {
        int64_t nj = n->s - j0 < chunk ? n->s - j0 : chunk;
        int64_t dj[4] = {n->b, n->cl, 1, nj}, sq[2] = {n->s, nj};
        ValId sj = dec_reshape(c, dec_slice_axis(c, scores, 2, j0, 1, nj), dj, 4);
        double *low = ir_scratch(c->g, (size_t)(n->s * nj + 1) * sizeof *low);
        for (int64_t i = 0; i < n->s; i++)
            for (int64_t j = 0; j < nj; j++)
                low[i * nj + j] = j0 + j < i;
        ValId earlier = dec_bin(c, IR_BIN_AND, dec_bin(c, IR_BIN_EQ, sj, si),
                                dec_const(c->g, IR_DT_BOOL, sq, 2, low));
        ValId ahead = dec_bin(c, IR_BIN_OR, dec_bin(c, IR_BIN_GT, sj, si), earlier);
        ValId part = dec_reduce(c, IR_RED_SUM, dec_cast(c, ahead, IR_DT_I32), &ax, 1, false);
        rank = rank == IR_NONE ? part : dec_bin(c, IR_BIN_ADD, rank, part);
    }
    return rank;
}

/* Constant [B, C, S] i32 whose entry (b, c, i) is b (which 0), c (1), (b*C + c)*S (2)
 * or b*S (3). */
static ValId index_const(DecCtx *c, const Nms *n, int which)
{
    double *v = ir_scratch(c->g, (size_t)(n->bc * n->s + 1) * sizeof *v);
    for (int64_t b = 0; b < n->b; b++)
        for (int64_t k = 0; k < n->cl; k++)
            for (int64_t i = 0; i < n->s; i++) {
                int64_t x = which == 0 ? b : which == 1 ? k : which == 2 ? (b * n->cl + k) * n->s
                                                                          : b * n->s;
                v[(b * n->cl + k) * n->s + i] = (double)x;
            }
    int64_t dims[3] = {n->b, n->cl, n->s};
    return dec_const(c->g, IR_DT_I32, dims, 3, v);
}

/* order and valid: one SCATTER of (index, score) rows to row bc*S + rank. */
static void sort_boxes(DecCtx *c, Nms *n, ValId scores, ValId sthr, int64_t chunk)
{
    int64_t n1 = n->bc * n->s, d3[3] = {n->b, n->cl, n->s}, rows[2] = {n1, 2};
    int64_t bs[2] = {n->bc, n->s}, one[4] = {n->b, n->cl, n->s, 1};
    ValId dest = dec_bin(c, IR_BIN_ADD, score_rank(c, n, scores, chunk), index_const(c, n, 2));
    ValId idx = dec_expand(c, dec_dyn_iota(c, n->s, IR_DT_F32), d3, 3);
    ValId cols[2] = {dec_reshape(c, idx, one, 4), dec_reshape(c, scores, one, 4)};
    ValId pairs = dec_reshape(c, dec_concat(c, cols, 2, 3), rows, 2);   /* exact < 2^24 */
    ValId sorted = dec_dyn_scatter(c, pairs, dec_reshape(c, dest, &n1, 1), n1);
    n->order = dec_reshape(c, dec_cast(c, dec_slice_axis(c, sorted, 1, 0, 1, 1), IR_DT_I32),
                           bs, 2);
    ValId ss = dec_reshape(c, dec_slice_axis(c, sorted, 1, 1, 1, 1), bs, 2);
    n->valid = sthr == IR_NONE ? dec_expand(c, dec_scalar(c->g, IR_DT_BOOL, 1), bs, 2)
                               : dec_bin(c, IR_BIN_GT, ss, sthr);
}

/* Column t of x [BC, S] as [BC]. */
static ValId column(DecCtx *c, const Nms *n, ValId x, int64_t t)
{
    return dec_reshape(c, dec_slice_axis(c, x, 1, t, 1, 1), &n->bc, 1);
}

/* The greedy selection over the sorted positions: sel [BC, S] i32 (1: selected). */
static ValId greedy(DecCtx *c, const Nms *n)
{
    int64_t bs[2] = {n->bc, n->s}, b1[2] = {n->bc, 1}, n1 = n->bc * n->s;
    ValId zero = dec_scalar(c->g, IR_DT_I32, 0), cnt = IR_NONE;
    ValId sup = dec_expand(c, zero, bs, 2);          /* selected boxes overlapping j */
    ValId base_b = column(c, n, dec_reshape(c, index_const(c, n, 3), bs, 2), 0);
    ValId base_bc = column(c, n, dec_reshape(c, index_const(c, n, 2), bs, 2), 0);
    ValId *cols = ir_scratch(c->g, (size_t)(n->s + 1) * sizeof *cols);
    for (int64_t t = 0; t < n->s && !ir_failed(c->g); t++) {
        ValId box = column(c, n, n->order, t);        /* [BC]: the box at position t */
        ValId hit = dec_gather(c, dec_reshape(c, sup, &n1, 1),
                               dec_bin(c, IR_BIN_ADD, box, base_bc), 0);
        ValId keep = dec_bin(c, IR_BIN_AND, column(c, n, n->valid, t),
                             dec_bin(c, IR_BIN_EQ, hit, zero));
        keep = dec_bin(c, IR_BIN_AND, keep,
                       dec_bin(c, IR_BIN_LT, cnt != IR_NONE ? cnt : zero, n->limit));
        ValId k32 = dec_cast(c, keep, IR_DT_I32);
        cnt = cnt == IR_NONE ? k32 : dec_bin(c, IR_BIN_ADD, cnt, k32);
        cols[t] = dec_reshape(c, k32, b1, 2);
        if (t + 1 < n->s) {
            ValId row = dec_gather(c, n->over, dec_bin(c, IR_BIN_ADD, box, base_b), 0);
            sup = dec_bin(c, IR_BIN_ADD, sup, dec_bin(c, IR_BIN_MUL, cols[t], row));
        }
    }
    return dec_concat(c, cols, (int)n->s, 1);
}

/* Optional scalar input i of dtype t reshaped to rank 0 (IR_NONE when absent). */
static ValId scalar_in(DecCtx *c, int i, IrDType t)
{
    ValId v = dec_in(c, i);
    if (v == IR_NONE)
        return IR_NONE;
    if (dec_numel(dec_ty(c, v)) != 1) {
        dec_err(c, "input %d must hold one value, not %lld", i, (long long)dec_numel(dec_ty(c, v)));
        return IR_NONE;
    }
    int64_t none[1] = {1};
    return dec_cast(c, dec_reshape(c, v, none, 0), t);
}

/* The selected (batch, class, index) rows, compacted: [bound, 3] int64. */
static ValId result(DecCtx *c, const Nms *n, ValId sel, int64_t bound)
{
    int64_t n1 = n->bc * n->s, row[2] = {n1, 1};
    ValId keep = dec_bin(c, IR_BIN_NE, dec_reshape(c, sel, &n1, 1), dec_scalar(c->g, IR_DT_I32, 0));
    ValId cols[3] = {dec_reshape(c, index_const(c, n, 0), row, 2),
                     dec_reshape(c, index_const(c, n, 1), row, 2),
                     dec_reshape(c, n->order, row, 2)};
    ValId rows = dec_cast(c, dec_concat(c, cols, 3, 1), IR_DT_I64);
    ValId count, slots = dec_dyn_slots(c, keep, &count);
    ValId out = dec_dyn_scatter(c, rows, slots, bound);
    if (!ir_failed(c->g))
        ir_dyn_add(c->g, out, 0, count);
    return out;
}

/* Checks the sizes the static form can take; chunk gets the boxes compared at once. */
static bool sizes_ok(DecCtx *c, const Nms *n, int64_t *chunk)
{
    int64_t per = n->bc * n->s;                   /* elements per compared box */
    *chunk = per > 0 ? DEC_DYN_MAX_TABLE / per : n->s;
    *chunk = *chunk > n->s ? n->s : *chunk;
    if (n->s <= NMS_MAX_BOXES && n->b * n->s * n->s <= DEC_DYN_MAX_TABLE &&
        *chunk * 64 >= n->s && n->s < (1 << 24))
        return true;
    dec_err(c, "unsupported: NonMaxSuppression of %lld boxes in %lld batches and %lld classes "
            "(at most %d boxes, %lld box pairs per batch and 64 score chunks)", (long long)n->s,
            (long long)n->b, (long long)n->cl, NMS_MAX_BOXES, (long long)DEC_DYN_MAX_TABLE);
    return false;
}

/* NonMaxSuppression(boxes, scores, max_output_boxes_per_class?, iou_threshold?,
 * score_threshold?) -> selected_indices [num_selected, 3] int64. */
bool dec_nms(DecCtx *c)
{
    ValId boxes = dec_in(c, 0), scores = dec_in(c, 1);
    IrType bt = *dec_ty(c, boxes), st = *dec_ty(c, scores);
    if (bt.rank != 3 || st.rank != 3 || bt.dims[2] != 4 || bt.dims[0] != st.dims[0] ||
        bt.dims[1] != st.dims[2]) {
        dec_err(c, "boxes must be [B, S, 4] and scores [B, C, S]");
        return false;
    }
    Nms n = {.b = bt.dims[0], .cl = st.dims[1], .s = bt.dims[1]};
    n.bc = n.b * n.cl;
    int64_t limit = n.s, empty[2] = {0, 3}, chunk;
    ValId mx = scalar_in(c, 2, IR_DT_I64), thr = scalar_in(c, 3, IR_DT_F32);
    ValId sthr = scalar_in(c, 4, IR_DT_F32);
    if (ir_failed(c->g))
        return false;
    if (mx == IR_NONE || ir_is_const(c->g, mx)) {   /* absent: 0, no output */
        limit = mx == IR_NONE ? 0 : *(const int64_t *)ir_val(c->g, mx)->data;
        limit = limit < 0 ? 0 : limit > n.s ? n.s : limit;
    }
    if (limit == 0 || n.bc * n.s == 0) {
        c->out[0] = dec_const_i64(c->g, empty, 2, NULL);
        return true;
    }
    if (!sizes_ok(c, &n, &chunk))
        return false;
    n.limit = ir_is_const(c->g, mx) ? dec_scalar(c->g, IR_DT_I32, (double)limit)
                                    : dec_cast(c, mx, IR_DT_I32);
    corners(c, &n, boxes, dec_ai(c, "center_point_box", 0) != 0);
    overlaps(c, &n, thr != IR_NONE ? thr : dec_scalar(c->g, IR_DT_F32, 0));
    sort_boxes(c, &n, scores, sthr, chunk);
    ValId sel = greedy(c, &n);
    if (ir_failed(c->g))
        return false;
    c->out[0] = result(c, &n, sel, n.bc * limit);
    return !ir_failed(c->g);
}
