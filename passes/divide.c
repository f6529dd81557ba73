/* divide.c: split every kernel's iteration space over the cores.
 *
 * Each kernel gets a work grid (kernel.h: the grid dims by kind) whose chunks are the
 * work items; core c runs a contiguous range of items. The grid is chosen for
 * parallelism only: at least `cores` items when the tensor has enough work (a work
 * item is never smaller than MIN_ITEM_ELEMS elements), balanced so that the busiest
 * core's share is smallest. pass_tile then shrinks chunks until the tiles fit LX.
 *   ELEM, MOVE, COPY, REDUCE: boxes of the grid (fixed outer indices, a range along
 *                             one dim, whole inner dims)
 *   MATMUL                    batch x M tiles x N tiles
 *   CONV                      batch x group x output-channel tiles x output-row chunks
 */
#include <string.h>

#include "kernel.h"
#include "pass.h"

#define MIN_ITEM_ELEMS 32        /* one fp32 stick: smaller work items are not worth a core */

/* Items wanted for `work` elements of work on `cores` cores. */
static int64_t want_items(int64_t work, uint32_t cores)
{
    int64_t w = (work + MIN_ITEM_ELEMS - 1) / MIN_ITEM_ELEMS;
    return w < (int64_t)cores ? (w > 0 ? w : 1) : (int64_t)cores;
}

/* Box division: whole grid, then cut the outermost dims to single indices and one dim
 * into chunks until there are `want` items; chunk length chosen to minimise the
 * largest per-core share. */
static void box_parallel(IrGrid *gr, int64_t want, uint32_t cores)
{
    for (int d = 0; d < gr->rank; d++)
        gr->chunk[d] = gr->ext[d] > 0 ? gr->ext[d] : 1;
    if (want <= 1 || pass_grid_items(gr) == 0)
        return;
    int64_t outer = 1;
    for (int s = 0; s < gr->rank; s++) {
        int64_t e = gr->ext[s];
        if (outer * e >= want) {
            int64_t best_t = e, best_cost = INT64_MAX;
            int64_t c0 = (want + outer - 1) / outer, c1 = 4 * (int64_t)cores;
            for (int64_t c = c0; c <= e && c <= c0 + c1; c++) {
                int64_t t = (e + c - 1) / c, n = outer * ((e + t - 1) / t);
                int64_t cost = (n + cores - 1) / cores * t;
                if (cost < best_cost || (cost == best_cost && t > best_t)) {
                    best_cost = cost;
                    best_t = t;
                }
            }
            for (int d = 0; d < s; d++)
                gr->chunk[d] = 1;
            gr->chunk[s] = best_t;
            return;
        }
        outer *= e;
    }
    for (int d = 0; d < gr->rank; d++)
        gr->chunk[d] = 1;
}

/* Halve x (at least by one granule gran when x > gran); returns x when it cannot. */
static int64_t halve(int64_t x, int64_t gran)
{
    if (x <= 1)
        return x;
    int64_t h = (x + 1) / 2;
    if (x > gran) {
        h = (h + gran - 1) / gran * gran;
        if (h >= x)
            h = x - gran;
    }
    return h < 1 ? 1 : h;
}

/* MATMUL: split M (multiples of 8 rows) and N (multiples of one stick) until enough
 * items, the larger tile side first. */
static void matmul_parallel(IrGrid *gr, int64_t want)
{
    int r = gr->rank;
    int64_t batch = 1;
    for (int d = 0; d < r - 2; d++) {
        gr->chunk[d] = 1;
        batch *= gr->ext[d];
    }
    int64_t m = gr->ext[r - 2] > 0 ? gr->ext[r - 2] : 1, n = gr->ext[r - 1] > 0 ? gr->ext[r - 1] : 1;
    int64_t mt = m, nt = n;
    while (batch * ((m + mt - 1) / mt) * ((n + nt - 1) / nt) < want) {
        if (mt >= 16 && mt / 8 >= nt / 32)
            mt = halve(mt, 8);
        else if (nt >= 64)
            nt = halve(nt, 32);
        else if (mt > 1 && mt >= nt)
            mt = halve(mt, 1);
        else if (nt > 1)
            nt = halve(nt, 1);
        else if (mt > 1)
            mt = halve(mt, 1);
        else
            break;
    }
    gr->chunk[r - 2] = mt;
    gr->chunk[r - 1] = nt;
}

/* CONV: after batch and groups, split output channels or output rows, whichever
 * tile side (channels vs pixels) is larger. */
static void conv_parallel(IrGrid *gr, int64_t want)
{
    int64_t pix = 1;
    for (int d = 4; d < gr->rank; d++)
        pix *= gr->ext[d];
    for (int d = 0; d < gr->rank; d++)
        gr->chunk[d] = gr->ext[d] > 0 ? gr->ext[d] : 1;
    gr->chunk[0] = gr->chunk[1] = 1;
    int64_t mt = gr->chunk[2], rows = gr->chunk[3];
    for (;;) {
        int64_t items = pass_grid_items(gr);
        if (items == 0 || items >= want)
            break;
        if (mt >= 16 && mt >= rows * pix)
            mt = halve(mt, 8);
        else if (rows > 1)
            rows = halve(rows, 1);
        else if (mt > 1)
            mt = halve(mt, 1);
        else
            break;
        gr->chunk[2] = mt;
        gr->chunk[3] = rows;
    }
}

/* Choose the work grid of kernel k and assign item ranges to cores. */
static void divide_kernel(IrGraph *g, IrKernel *k, uint32_t cores)
{
    IrGeom geo;
    pass_geom(g, k, &geo);
    IrGrid *gr = &k->grid;
    memset(gr, 0, sizeof *gr);
    gr->rank = geo.ngrid;
    int64_t work = 1, inner = 1;
    for (int d = 0; d < geo.ngrid; d++) {
        gr->ext[d] = geo.gext[d];
        gr->chunk[d] = geo.gext[d] > 0 ? geo.gext[d] : 1;
        work *= geo.gext[d];
    }
    for (int d = 0; d < geo.ninner; d++)
        inner *= geo.iext[d];
    memset(&k->inner, 0, sizeof k->inner);
    k->inner.rank = geo.ninner;
    for (int d = 0; d < geo.ninner; d++) {
        k->inner.ext[d] = geo.iext[d];
        k->inner.chunk[d] = geo.iext[d] > 0 ? geo.iext[d] : 1;
    }
    int64_t want = want_items(work * (inner > 0 ? inner : 1), cores);
    if (k->kind == IR_KK_CONTRACT && ir_node(g, k->anchor)->op == IR_OP_CONV)
        conv_parallel(gr, want);
    else if (k->kind == IR_KK_CONTRACT)
        matmul_parallel(gr, want);
    else if (k->kind == IR_KK_ELEM && k->nred > 0) {   /* reduced rows stay whole */
        gr->rank -= k->nred;
        box_parallel(gr, want, cores);
        gr->rank += k->nred;
    } else
        box_parallel(gr, want, cores);
    pass_assign_cores(g, k, cores);
}

bool pass_divide(IrGraph *g, const PassOptions *opt)
{
    IR_ASSERT(opt->target && opt->target->cores > 0);
    for (uint32_t i = 0; i < g->nkernels; i++)
        divide_kernel(g, &g->kernels[i], opt->target->cores);
    return true;
}
