/* divide.c: split every kernel's iteration space over the cores.
 *
 * Each kernel gets a work grid (plan.h: the grid dims by kind) whose chunks are the
 * work items; core c runs a contiguous range of items. pass_tile then shrinks chunks
 * until the tiles fit LX.
 *   ELEM, MOVE, COPY, REDUCE: boxes of the grid (fixed outer indices, a range along
 *       one dim, whole inner dims); at least `cores` items when the tensor has enough
 *       work (an item is never smaller than MIN_ITEM_ELEMS elements), the chunk length
 *       chosen so that the busiest core's share is smallest. Their DRAM traffic does
 *       not depend on the split, so more cores help, down to items of MIN_ITEM_ELEMS
 *       (below, a core's fixed costs outweigh its share).
 *   MATMUL: batch x M tiles x N tiles; CONV: batch x group x output-channel tiles x
 *       output-row chunks. Here every core loads its own A and B panels (weights,
 *       im2col rows), so the split changes the DRAM traffic: the tile sizes are the
 *       ones with the least modelled time (schemas/costmodel.h, the model the runtime
 *       reports: per-core compute at the operand dtype's rate plus shared-bandwidth
 *       DRAM time charged by whole sticks, with overlap), which uses every core when
 *       compute dominates and fewer when replicated panels would cost more. In a
 *       bundle with symbolic dims a product's M tiles keep within the blocks of its
 *       symbolic rows and the tiling is chosen over several sizes, not the box alone
 *       (sym_block, sym_contract_time; isa.md "Guards").
 */
#include <string.h>

#include "convcost.h"
#include "costmodel.h"
#include "devtype.h"
#include "fusecost.h"
#include "pass.h"
#include "plan/plan.h"

#define MIN_ITEM_ELEMS 256       /* eight fp32 sticks: smaller work items are not worth a
                                    core; 32 (one stick) spread a 512-element gate of an LSTM
                                    step over 16 cores, whose programs' fixed costs (device:
                                    DMA set-up, modelled 208 -> 195 us for 50 steps of H 128;
                                    emulator: 0.62 -> 0.18 ms on 2 threads) were the step */

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
    if (want <= 1 || plan_grid_items(gr) == 0)
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

/* Modelled time (seconds) of the busiest core of a kernel (schemas/costmodel.h):
 * compute cycles, ld bytes loaded and st bytes stored by that core (the bandwidth is
 * the one-way or mixed rate as their mix says), `active` cores moving data. */
static double model_time(const SpyTarget *t, double cycles, double ld, double st,
                         uint64_t active, double ring)
{
    double comp = cycles / (t->clock_mhz * 1e6);
    double dram = cost_dram_s(ld + st, (double)active, cost_dram_bw(t, ld, st)) +
                  cost_ring_s(t, ring);
    return cost_core_s(t, comp, dram);
}

/* One contraction tiling to estimate: items in row-major order over
 * [outer, a-tiles, b-tiles]; per item an A tile of a bytes (reused by consecutive
 * items of one a-tile when there is one depth chunk), a B tile of b bytes (reused
 * when shared is set and there is one b-tile), c bytes of output stored and ce bytes
 * of epilogue inputs loaded, and macs multiply-accumulates in m-row passes. Byte
 * figures are whole sticks (cost_rows_bytes). With ring set, the nb items of one A tile
 * share it over the core ring (codegen/cg_contract.c load_a): its pieces (nck depth
 * chunks of up to 8 row pieces) come from DRAM round-robin over the sharers, the rest
 * over the ring. */
typedef struct {
    uint64_t outer, na, nb;
    double a, b, c, ce, macs, m;
    bool one_chunk, shared;
    double vec;                  /* extra vector-unit bytes per item */
    unsigned dt;                 /* operand ISA dtype: the matrix rate */
    bool ring;                   /* A shared over the ring by the items of its N tiles */
    double nck;                  /* depth chunks */
    bool arow;                   /* A's rows step over whole sticks: shared in one-row
                                    pieces (cg_load_shared), else in pieces of 8 rows */
    double bpieces;              /* pieces B's depth chunk can be cut into (its rows, one
                                    each when they step over whole sticks, else 8 each) */
    double valid;                /* share of a core's items that run (0: all; see
                                    sym_contract_time): scales its compute, A, output
                                    and epilogue bytes, not its B tiles */
} CEst;

/* Modelled time of the busiest core for tiling e on target t. */
static double contract_time(const SpyTarget *t, const CEst *e)
{
    uint64_t items = e->outer * e->na * e->nb, cores = t->cores;
    if (items == 0)
        return 0;
    uint64_t q = (items + cores - 1) / cores, active = items < cores ? items : cores;
    double na = e->one_chunk ? (double)(q < q / e->nb + 1 ? q : q / e->nb + 1) : (double)q;
    double nb = e->one_chunk && e->nb == 1 ? (e->shared ? 1.0 : (double)(q < q / e->na + 1
                                                                      ? q : q / e->na + 1))
                                           : (double)q;
    double floor;
    double per = cost_matmul_cycles(t, e->dt, e->m, e->m > 0 ? e->macs / e->m : 0, 1, &floor);
    double vec = cost_vec_cycles(t, e->c + e->ce + e->vec, false);
    double cycles = (double)q * (per + vec), a = e->a, b = e->b, ring = 0;
    uint64_t sa = e->nb / q, sb = e->na / q;     /* cores sharing one A / B tile */
    if (e->ring && sa > 1) {
        double rows = e->arow ? e->m : (double)(((uint64_t)e->m + 7) / 8);
        a = e->a * pass_fusecost_ring_share(sa, rows, e->nck);
        ring += na * (e->a - a);
    }
    if (e->ring && sb > 1) {
        b = e->b * pass_fusecost_ring_share(sb, e->bpieces, e->nck);
        ring += nb * (e->b - b);
    }
    if (e->valid > 0)                          /* a share of the items (sym_contract_time) */
        return model_time(t, e->valid * cycles, e->valid * (na * a + (double)q * e->ce) +
                          nb * b, e->valid * (double)q * e->c, active, ring);
    return model_time(t, cycles, na * a + nb * b + (double)q * e->ce, (double)q * e->c,
                      active, ring);
}

/* Candidate tile sizes of an extent: whole, then halvings (multiples of gran). */
static int candidates(int64_t ext, int64_t gran, int64_t *out)
{
    int n = 0;
    for (int64_t x = ext > 0 ? ext : 1;; ) {
        out[n++] = x;
        int64_t h = halve(x, gran);
        if (h == x || n == 40)
            return n;
        x = h;
    }
}

/* Adds to out[0..n) (at most max entries) the tile sizes of ext that split it into
 * c = 2..cmax tiles of whole granules (ceil(ext / c) rounded up to gran), which the
 * halvings miss (a 2304-column product in 12 tiles of 192), and with exact_ok (rows)
 * ceil(ext / c) itself when it is not a whole number of granules but at least one
 * (3136 rows in 32 tiles of 98: rounded up to 104 they leave a core idle, and the
 * only even split left was 2 rows, 49 MATMULs a core); sorts them largest first (the
 * last, smallest, is the fallback when none fits LX); returns the count. */
static int even_candidates(int64_t ext, int64_t gran, int64_t cmax, bool exact_ok,
                           int64_t *out, int n, int max)
{
    for (int64_t c = 2; c <= cmax && n < max; c++)
        for (int exact = 0; exact < (exact_ok ? 2 : 1) && n < max; exact++) {
            int64_t x = (ext + c - 1) / c;
            if (!exact)
                x = (x + gran - 1) / gran * gran;
            else if (x < gran || x % gran == 0)
                continue;
            bool seen = x >= ext;
            for (int i = 0; i < n && !seen; i++)
                seen = out[i] == x;
            if (!seen)
                out[n++] = x;
        }
    for (int i = 1; i < n; i++)          /* largest first, as the halvings: the last is */
        for (int j = i; j > 0 && out[j - 1] < out[j]; j--) {   /* the fallback */
            int64_t x = out[j];
            out[j] = out[j - 1];
            out[j - 1] = x;
        }
    return n;
}

/* Element sizes of a contraction (the split estimate charges what the kernel really
 * moves): operand elements es and the matrix rate of the operands' device dtype dt
 * (DLFloat16 in fp16 mode), output and epilogue-input elements eo. */
typedef struct {
    double es, eo;
    unsigned dt;
} CSizes;

/* The element sizes and operand dtype of contraction kernel k. */
static CSizes contract_sizes(IrGraph *g, const IrKernel *k)
{
    IrDType it = ir_vtype(g, ir_node(g, k->anchor)->in[0])->dtype;
    int es = pass_dev_esize(it), eo = pass_dev_esize(ir_vtype(g, k->out)->dtype);
    int dt = pass_dev_dtype(it);
    CSizes s = {es > 0 ? es : 4.0, eo > 0 ? eo : 4.0, dt > 0 ? (unsigned)dt : ISA_DT_F32};
    return s;
}

/* Whether value v is an operand of contraction kernel k: read by its anchor or by a
 * prologue node. */
static bool operand_of(IrGraph *g, const IrKernel *k, ValId v)
{
    const IrNode *a = ir_node(g, k->anchor);
    for (int i = 0; i < a->nin; i++)
        if (a->in[i] == v)
            return true;
    for (uint32_t p = 0; p < k->npro; p++) {
        const IrNode *n = ir_node(g, k->pro[p]);
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] == v)
                return true;
    }
    return false;
}

/* Epilogue input elements a contraction loads per output element (besides A and B):
 * a tensor of the output's size (a residual) counts one, a per-channel vector (a
 * requantization's scales and zero points, a bias) its share of the output, a scalar
 * nothing (an immediate). */
static double epi_loads(IrGraph *g, const IrKernel *k)
{
    double out = (double)ir_type_numel(ir_vtype(g, k->out)), sum = 0;
    for (uint32_t i = 0; i < k->nins; i++) {
        double n = (double)ir_type_numel(ir_vtype(g, k->ins[i]));
        if (n > 1 && !operand_of(g, k, k->ins[i]))
            sum += out > 0 && n < out ? n / out : 1.0;
    }
    return sum;
}

/* Scratchpad bytes per output element of a contraction's epilogue: the float32
 * accumulator and one buffer per epilogue load. */
static double epi_lx_bytes(const IrKernel *k, const CSizes *s)
{
    return 4.0 + s->eo * (k->nins > 2 ? k->nins - 2 : 0);
}

/* Vector-unit bytes of an int8 contraction's epilogue over `outs` output elements: its
 * steps work on int32/float32 values (requantization: scale, round, zero point,
 * saturate), several passes over the tile where a float epilogue has one or two; 0
 * for float operands (their estimate is the stored bytes alone). */
static double int_epi_bytes(const IrKernel *k, const CSizes *s, double outs)
{
    return s->dt == ISA_DT_I8 ? 4.0 * (double)k->nepi * outs : 0.0;
}

/* Bytes charged for `rows` rows of one column tile of `tile` bytes, the tiles of a row
 * of `row` bytes side by side: a tile whose width is not a whole number of sticks
 * starts inside a stick and may touch one more (an int8 tile of 96 columns touches two
 * sticks in three of its positions); averaged over the tiles' positions in the row
 * (rows start on a stick boundary when their pitch is whole sticks, else as
 * cost_rows_bytes takes them). */
static double col_tile_bytes(const SpyTarget *t, double rows, double tile, double row)
{
    uint64_t s = t->stick_bytes ? t->stick_bytes : 1, tb = (uint64_t)tile;
    uint64_t rb = (uint64_t)row, n = tb ? (rb + tb - 1) / tb : 0, sticks = 0;
    if (n <= 1 || rb % s != 0 || n > 4096)
        return cost_rows_bytes(t, rows, tile);
    for (uint64_t j = 0; j < n; j++) {
        uint64_t w = (j + 1) * tb <= rb ? tb : rb - j * tb;
        sticks += cost_run_sticks(t, (j * tb) % s, w);
    }
    return rows * (double)sticks / (double)n * (double)s;
}

/* Depth chunk pass_tile keeps for an mt x nt tile of a kk-deep product (passes/tile.c
 * fit_matmul: the whole depth, halved while the A and B tiles and the epilogue's
 * epi bytes per output element exceed the budget, never below 256): the ring shares
 * its operands in pieces per depth chunk, so the estimates (here and in fusecost.c)
 * need the real count. */
int64_t pass_divide_fit_depth(double es, int64_t mt, int64_t nt, int64_t kk, double epi,
                         double budget)
{
    int64_t kt = kk;
    while (kt > 256 && es * (double)(mt * kt + kt * nt) + epi * (double)(mt * nt) > budget)
        kt = halve(kt, 32);
    return kt;
}

/* The block of a product's M rows in a bundle with symbolic dims: its rows are often
 * the flattened [.., symbolic axis] of the box (GPT-2's rows b * S_box + s), a block of
 * P rows per index of the axes outside. A tile within one block has valid rows that
 * form a prefix of it at every size, which a row clamp on that symbol
 * (codegen/cg_guard_rows.c) can follow; a tile across two blocks runs the padding
 * between them. P: the largest box extent of a symbol, of at least 8 rows (the row
 * granule), that divides m (the innermost block, a sequence rather than its batch),
 * m itself when m is one block (attention's products, M the query rows of one head);
 * 0 when there is none. Attention's tiles of one query row (what the plain tiling
 * chose there) shared each head's K^T over the ring in one-column pieces, and took
 * the emulator 11x the host time of a static compile's (gpt2_tiny, 2x28 box). */
static int64_t sym_block(const IrGraph *g, int64_t m)
{
    int64_t pb = 0;
    for (uint32_t i = 0; i < g->nsymdims; i++) {
        int64_t p = g->symdims[i].max;
        if (p >= 8 && p <= m && m % p == 0 && p > pb)
            pb = p;
    }
    return pb;
}

/* The M tile sizes of m that keep to its block (sym_block): the divisors of the block
 * of at least 8 rows, largest first, into out (at most max); returns the count, 0
 * when m has no block. Smaller tiles model a little faster still at small sizes (the
 * matrix time is charged per row), but their many short items double the emulator's
 * host time. */
static int sym_m_candidates(const IrGraph *g, int64_t m, int64_t *out, int max)
{
    int n = 0;
    int64_t p = sym_block(g, m);
    for (int64_t x = p; x >= 8 && n < max; x--)
        if (p % x == 0)
            out[n++] = x;
    return n;
}

/* The time of tiling e over the sizes a bundle with symbolic rows runs at (its M
 * tiles aligned, sym_m_candidates): the mean of contract_time with all of its M tiles
 * valid (the box), half and a quarter of them, the valid rows a prefix of the tiles.
 * Items are dealt over the cores (plan_assign_cores), so at a fraction of the tiles a
 * core runs ceil(valid items / cores) of its q items, and its compute, A, output and
 * epilogue traffic shrink by that share; its B tiles do not (a core whose item is
 * skipped still loads the B pieces it forwards over the ring to the others), nor does
 * the number of cores moving data. A tiling planned for the box alone, one item per
 * core, then runs a small size as slowly as the box. */
static double sym_contract_time(const SpyTarget *t, const CEst *e)
{
    uint64_t cores = t->cores, items = e->outer * e->na * e->nb;
    uint64_t q = (items + cores - 1) / cores;
    double sum = 0;
    for (uint64_t d = 1; d <= 4 && q > 0; d *= 2) {
        CEst f = *e;
        uint64_t vi = e->outer * ((e->na + d - 1) / d) * e->nb;
        f.valid = (double)((vi + cores - 1) / cores) / (double)q;
        sum += contract_time(t, &f);
    }
    return sum / 3;
}

/* MATMUL: the M and N tiles (multiples of 8 rows / one stick) with the least
 * modelled time, all cores or fewer: loading A or B once per core can cost more than
 * the parallelism gains. */
static void matmul_divide(IrGraph *g, const IrKernel *k, IrGrid *gr, const SpyTarget *t)
{
    int r = gr->rank;
    const IrNode *a = ir_node(g, k->anchor);
    const IrType *bt = ir_vtype(g, a->in[1]);
    int64_t batch = 1, m = gr->ext[r - 2], n = gr->ext[r - 1];
    int64_t kk = ir_vtype(g, a->in[0])->dims[ir_vtype(g, a->in[0])->rank - 1];
    for (int d = 0; d < r - 2; d++) {
        gr->chunk[d] = 1;
        batch *= gr->ext[d];
    }
    int64_t mc[120], nc[120], kt = kk < 256 ? kk : 256;
    CSizes sz = contract_sizes(g, k);
    int64_t sg = (int64_t)(t->stick_bytes / sz.es) > 0 ? (int64_t)(t->stick_bytes / sz.es) : 1;
    int nm = candidates(m, 8, mc), nn = candidates(n, 32, nc);
    nm = even_candidates(m, 8, t->cores, true, mc, nm, 120);
    int64_t am[120];
    int na = sym_m_candidates(g, m, am, 120);
    bool sym = na > 0;                         /* rows in blocks: tiles within one */
    if (sym) {
        memcpy(mc, am, (size_t)na * sizeof *am);
        nm = na;
    }
    nn = even_candidates(n, sg, t->cores, false, nc, nn, 120);   /* whole sticks */
    if (k->nred > 0)                           /* epilogue reduces whole rows: nc[0] = n */
        nn = 1;
    double best = -1, budget = 0.8 * t->lx_budget_bytes;
    gr->chunk[r - 2] = mc[nm - 1];
    gr->chunk[r - 1] = nc[nn - 1];
    for (int i = 0; i < nm; i++)
        for (int j = 0; j < nn; j++) {
            int64_t mt = mc[i], nt = nc[j];
            if (sz.es * (mt * kt + kt * nt) + epi_lx_bytes(k, &sz) * mt * nt > budget &&
                (i + 1 < nm || j + 1 < nn))
                continue;
            int64_t kf = pass_divide_fit_depth(sz.es, mt, nt, kk, epi_lx_bytes(k, &sz),
                                               budget);
            double c = col_tile_bytes(t, (double)mt, sz.eo * nt, sz.eo * n);
            CEst e = {(uint64_t)batch, (uint64_t)((m + mt - 1) / mt),
                      (uint64_t)((n + nt - 1) / nt), cost_rows_bytes(t, (double)mt, sz.es * kk),
                      col_tile_bytes(t, (double)kk, sz.es * nt, sz.es * n), c, c * epi_loads(g, k),
                      (double)mt * nt * kk, (double)mt, kf >= kk, bt->rank == 2,
                      int_epi_bytes(k, &sz, (double)mt * nt), sz.dt, true,
                      (double)((kk + kf - 1) / kf), sz.es * (double)kk >= t->stick_bytes,
                      sz.es * (double)nt >= t->stick_bytes ? (double)kf : (double)((kf + 7) / 8),
                      0};
            double tm = sym ? sym_contract_time(t, &e) : contract_time(t, &e);
            if (best < 0 || tm < best * 0.99) {
                best = tm;
                gr->chunk[r - 2] = mt;
                gr->chunk[r - 1] = nt;
            }
        }
}

/* Whether CONV grid gr divides the work of one image rather than of its whole batch:
 * when its batch extent may be symbolic, the box of a symbol that can be smaller (the
 * symbol's max, above its min). Its images, dealt over the cores (plan_assign_cores),
 * then each take every core, so that a run of fewer images shortens every core's
 * work. A batch that is fixed in a bundle whose other dims are symbolic (an image's
 * height and width) is divided as a whole, as in a static compile: its runs always
 * have every image (MobileNet V2 with 4 images of 32..192 pixels a side, at 4 x 192 x
 * 192: 1785 us modelled instead of 1863, static 1769). */
static bool conv_per_image(const IrGraph *g, const IrGrid *gr)
{
    for (uint32_t i = 0; i < g->nsymdims; i++)
        if (g->symdims[i].max == gr->ext[0] && g->symdims[i].min < gr->ext[0])
            return true;
    return false;
}

/* CONV: output-channel tiles and output-row chunks with the least modelled time; for
 * a batch that may be symbolic (conv_per_image), that of one image. */
static void conv_divide(IrGraph *g, const IrKernel *k, IrGrid *gr, const SpyTarget *t)
{
    bool per_image = conv_per_image(g, gr);
    IrGeom geo;
    plan_geom(g, k, &geo);
    int64_t pix = 1, taps = 1;
    for (int d = 4; d < gr->rank; d++)
        pix *= gr->ext[d];
    for (int i = 0; i < geo.nsp; i++)
        taps *= geo.taps[i];
    for (int d = 0; d < gr->rank; d++)
        gr->chunk[d] = gr->ext[d] > 0 ? gr->ext[d] : 1;
    gr->chunk[0] = gr->chunk[1] = 1;
    int64_t mc[40], rc[40], kk = geo.cg * taps, kt = kk < 512 ? kk : 512;
    int nm = candidates(gr->ext[2], 8, mc), nr = candidates(gr->ext[3], 1, rc);
    double best = -1, budget = 0.8 * t->lx_budget_bytes;
    CSizes sz = contract_sizes(g, k);
    double wp = (double)(geo.in_ext[1] + geo.pad_lo[1] + geo.pad_hi[1]);
    for (int i = 0; i < nm; i++)
        for (int j = 0; j < nr; j++) {
            int64_t mt = mc[i], p = rc[j] * pix;
            /* B traffic: the im2col matrix, or in patch form the input rows (the
             * window MATMUL then charges staging its window as vector time, counted
             * as output-like bytes) */
            double rows_in = (double)plan_patch_rows(&geo, rc[j]);
            double bb = geo.patch || taps == 1
                            ? pass_conv_rows_bytes(t, &geo, (int64_t)sz.es, rc[j], gr->ext[3])
                            : cost_rows_bytes(t, (double)kk, sz.es * (double)p);
            double patch = geo.patch ? sz.es * (kt / taps + 1) * rows_in * wp : 0;
            double bbuf = geo.patch ? 0 : sz.es * kt * p;  /* patch form: B is a window */
            if (sz.es * mt * kt + bbuf + patch + epi_lx_bytes(k, &sz) * mt * p > budget &&
                (i + 1 < nm || j + 1 < nr))
                continue;
            double c = pass_conv_out_bytes(t, (int64_t)sz.eo, gr->ext[2], mt, rc[j], gr->ext[3],
                                      pix);
            CEst e = {(uint64_t)(per_image ? gr->ext[1] : gr->ext[0] * gr->ext[1]),
                      (uint64_t)((gr->ext[2] + mt - 1) / mt),
                      (uint64_t)((gr->ext[3] + rc[j] - 1) / rc[j]),
                      cost_rows_bytes(t, (double)mt, sz.es * kk), bb, c, c * epi_loads(g, k),
                      (double)mt * p * kk, (double)mt, kk <= 512, false,
                      (geo.patch ? sz.es * kk * p : 0) + int_epi_bytes(k, &sz, (double)mt * p),
                      sz.dt, true, (double)((kk + kt - 1) / kt), false, 8, 0};
            double tm = contract_time(t, &e);
            if (best < 0 || tm < best * 0.99) {
                best = tm;
                gr->chunk[2] = mt;
                gr->chunk[3] = rc[j];
            }
        }
}

/* Depthwise form (plan.h IrGeom.dw): after conv_divide chose the output-row chunks,
 * give each item a block of channels, as many as leave about one item per core: an
 * item's instructions (one FMA per tap) do not grow with its channels, while the
 * vector and DRAM work per core stays the same. A block of one channel keeps the patch
 * form's window MATMUL (fewer instructions than taps + 1 VECs); pass_tile shrinks the
 * block to fit LX (plan_dw_form). */
static void dw_divide(IrGrid *gr, uint32_t cores, bool per_image)
{
    int64_t other = 1;
    for (int d = 0; d < gr->rank; d++)
        if (d != 1 && !(d == 0 && per_image))
            other *= (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
    int64_t slots = (int64_t)cores / (other > 0 ? other : 1);
    slots = slots > 1 ? slots : 1;
    int64_t gl = (gr->ext[1] + slots - 1) / slots;
    gr->chunk[1] = gl >= 2 ? gl : 1;     /* one channel: the window MATMUL is shorter */
}

/* Choose the work grid of kernel k and assign item ranges to cores. */
static void divide_kernel(IrGraph *g, IrKernel *k, const SpyTarget *t)
{
    uint32_t cores = t->cores;
    IrGeom geo;
    plan_geom(g, k, &geo);
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
    if (k->kind == IR_KK_MOVE && ir_node(g, k->anchor)->op == IR_OP_SCATTER)
        want = 1;                              /* runs on one core (plan_assign_cores) */
    if (k->kind == IR_KK_CONTRACT && ir_node(g, k->anchor)->op == IR_OP_CONV) {
        conv_divide(g, k, gr, t);
        if (geo.dw)
            dw_divide(gr, cores, conv_per_image(g, gr));
    } else if (k->kind == IR_KK_CONTRACT)
        matmul_divide(g, k, gr, t);
    else if (k->kind == IR_KK_ELEM && k->nred > 0) {   /* reduced rows stay whole */
        gr->rank -= k->nred;
        box_parallel(gr, want, cores);
        gr->rank += k->nred;
    } else
        box_parallel(gr, want, cores);
    plan_assign_cores(g, k, cores);
}

bool pass_divide(IrGraph *g, const PassOptions *opt)
{
    IR_ASSERT(opt->target && opt->target->cores > 0);
    for (uint32_t i = 0; i < g->plan->nkernels; i++)
        divide_kernel(g, &g->plan->kernels[i], opt->target);
    return true;
}
