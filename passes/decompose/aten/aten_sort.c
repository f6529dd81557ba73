/* aten_sort.c: ATen topk, sort and argsort with a static k, as the pairwise-rank
 * selection of ONNX TopK (dec_topk_axis, onnx_topk.c): values and int64 indices,
 * sorted, ties in index order (which is torch's stable sort order).
 */
#include "aten.h"
#include "passes/decompose/onnx/onnx.h"

/* The axis "dim" (default -1) of x; a rank-0 x is treated as one element. */
static bool sort_axis(DecCtx *c, ValId x, int *ax)
{
    int r = dec_ty(c, x)->rank;
    if (r == 0) {
        dec_err(c, "sorting a rank-0 tensor is not supported");
        return false;
    }
    return dec_axis(c, dec_ai(c, "dim", -1), r, ax);
}

/* topk(self, k, dim=-1, largest=True, sorted=True) -> (values, indices). */
bool aten_topk(DecCtx *c)
{
    ValId x;
    int ax;
    if (!aten_need(c, "self", &x) || !sort_axis(c, x, &ax))
        return false;
    double k;
    int64_t n = dec_ty(c, x)->dims[ax];
    if (!aten_num(c, "k", &k) || k < 0 || k > (double)n) {
        dec_err(c, "topk needs a constant k in [0, %lld]", (long long)n);
        return false;
    }
    return dec_topk_axis(c, x, ax, (int64_t)k, IR_NONE, dec_ai(c, "largest", 1) != 0,
                         &c->out[0], &c->out[1]);
}

/* sort(self, [stable,] dim=-1, descending=False) -> (values, indices);
 * argsort(...) -> indices. */
bool aten_sort(DecCtx *c)
{
    ValId x, v, i;
    int ax;
    if (!aten_need(c, "self", &x) || !sort_axis(c, x, &ax))
        return false;
    int64_t n = dec_ty(c, x)->dims[ax];
    if (!dec_topk_axis(c, x, ax, n, IR_NONE, dec_ai(c, "descending", 0) != 0, &v, &i))
        return false;
    if (c->n->nout == 1) {              /* argsort */
        c->out[0] = i;
    } else {
        c->out[0] = v;
        c->out[1] = i;
    }
    return true;
}
