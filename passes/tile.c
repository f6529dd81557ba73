/* tile.c: per-core tiles that fit the scratchpad budget, and the LX plan.
 *
 * Starting from pass_divide's work grid, each kernel's per-item LX need (anchor
 * buffers + tile programs, see tile_prog.c) is computed; while it exceeds the budget
 * (target.lx_budget_bytes) chunks shrink: first the contraction depth (K chunks
 * accumulated with ISA_F_ACCUM) or the reduced extent (VREDUCE with ACCUM), then the
 * work tile, then the depth down to 1. LX is laid out once per kernel, identically on
 * every core: [anchor buffers][prologue program][epilogue/body program], each buffer
 * on a stick boundary. The result is recorded in IrKernel (grid, inner, tp, buf, acc,
 * lx_bytes, reads) and item ranges are reassigned to the cores.
 */
#include <stdlib.h>
#include <string.h>

#include "isa.h"
#include "pass.h"
#include "tile.h"

#define DEPTH_MIN 256            /* contraction depth kept per chunk before tiles shrink */
#define BT_ROWS_M 4              /* rows of C at most of a product streaming a B^T ... */
#define BT_NT_MIN 64             /* ... whose columns shrink to this before its depth */
#define BT_UNEVEN 3              /* ... while the busiest core's columns grow at most this % */
#define RED_MIN_ELEMS 4096       /* reduced elements per row kept before tiles shrink */

typedef struct {
    IrGraph *g;
    IrKernel *k;
    const SpyTarget *t;
    uint64_t budget;
    IrGeom geo;
} Tctx;

/* Halve the box tile of grid gr (keeping its box shape); false if it is one element. */
static bool box_shrink(IrGrid *gr)
{
    int s = plan_grid_split(gr);
    for (int d = s < 0 ? 0 : s; d < gr->rank; d++)
        if (gr->chunk[d] > 1) {
            gr->chunk[d] = (gr->chunk[d] + 1) / 2;
            return true;
        }
    return false;
}

/* Halve x towards 1 keeping multiples of gran while x > gran. */
static int64_t shrink(int64_t x, int64_t gran)
{
    if (x <= 1)
        return 1;
    if (x <= gran)
        return (x + 1) / 2;
    int64_t h = ((x + 1) / 2 + gran - 1) / gran * gran;
    return h >= x ? x - gran : h;
}

/* Report a kernel whose smallest tile does not fit. */
static bool too_big(Tctx *c, uint64_t need)
{
    const IrNode *n = ir_node(c->g, c->k->root != IR_NONE ? c->k->root : c->k->anchor);
    ir_error(c->g, &n->origin, "kernel %s needs %llu bytes of scratchpad for its smallest "
             "tile, more than the %llu-byte budget", c->k->name, (unsigned long long)need,
             (unsigned long long)c->budget);
    return false;
}

/* Tile spec over grid dims with rows = dims up to the grid's split. */
static void spec_box(TileSpec *sp, const TileMap *m, const IrGrid *gr)
{
    memset(sp, 0, sizeof *sp);
    sp->map = m;
    sp->nrow = plan_grid_split(gr) + 1;
    for (int d = 0; d < gr->rank; d++) {
        sp->order[d] = d;
        sp->cap[d] = gr->chunk[d];
    }
    sp->seed = sp->xseed[0] = sp->xseed[1] = IR_NONE;
}

/* ELEM: one tile program over a box of ref's shape; with row-resident reductions the
 * tile rows are the kept dims and the columns the (whole) reduced dims. */
static bool fit_elem(Tctx *c)
{
    IrKernel *k = c->k;
    TileMap m;
    tile_map_identity(&m, ir_vtype(c->g, k->ref));
    for (;;) {
        TileSpec sp;
        spec_box(&sp, &m, &k->grid);
        if (k->nred > 0)
            sp.nrow = k->grid.rank - k->nred;
        sp.steps = k->epi;
        sp.nsteps = k->nepi;
        sp.result = k->out;
        sp.store = true;
        if (!tile_prog_build(c->g, &sp, 0, &k->tp[0]))
            return false;
        uint64_t need = k->tp[0].lx_hi;
        if (need <= c->budget) {
            k->lx_bytes = (uint32_t)need;
            return true;
        }
        tile_prog_free(&k->tp[0]);
        k->grid.rank -= k->nred;               /* never split the reduced dims */
        bool shrunk = box_shrink(&k->grid);
        k->grid.rank += k->nred;
        if (!shrunk)
            return too_big(c, need);
    }
}

/* Epilogue program of a contraction whose result tile sits at lx seed_lx. */
static bool contract_epi(Tctx *c, const TileMap *m, int nrow, uint32_t seed_lx, uint32_t base)
{
    IrKernel *k = c->k;
    TileSpec sp;
    spec_box(&sp, m, &k->grid);
    sp.nrow = nrow;
    sp.steps = k->epi;
    sp.nsteps = k->nepi;
    sp.seed = ir_node(c->g, k->anchor)->out[0];
    sp.seed_lx = seed_lx;
    sp.xseed[0] = plan_side_sum(c->g, k, PLAN_SUM_ROWS);
    sp.xseed_lx[0] = k->buf[4];
    sp.xseed[1] = plan_side_sum(c->g, k, PLAN_SUM_COLS);
    sp.xseed_lx[1] = k->buf[5];
    sp.result = k->out;
    sp.store = true;
    return tile_prog_build(c->g, &sp, base, &k->tp[1]);
}

/* Side-sum buffers (plan_sums.c) of a matmul kernel at its current chunks, in bytes:
 * a row of kt int8 ones, mt int32 row sums, nt int32 column sums (0: none). */
static void side_sizes(Tctx *c, uint64_t *sz)
{
    IrKernel *k = c->k;
    ValId rs = plan_side_sum(c->g, k, PLAN_SUM_ROWS), cs = plan_side_sum(c->g, k, PLAN_SUM_COLS);
    int r = k->grid.rank;
    bool any = rs != IR_NONE || cs != IR_NONE;
    sz[0] = any ? (uint64_t)k->inner.chunk[0] : 0;
    sz[1] = rs != IR_NONE ? 4 * (uint64_t)k->grid.chunk[r - 2] : 0;
    sz[2] = cs != IR_NONE ? 4 * (uint64_t)k->grid.chunk[r - 1] : 0;
}

/* Place the contraction buffers A, B, C, the conv input patch or a matmul's half B
 * tile (size d, if any) or the matmul's side-sum buffers (side: ones, row sums, column
 * sums). */
static uint32_t place_abc(IrKernel *k, uint64_t a, uint64_t b, uint64_t cc, uint64_t d,
                          const uint64_t *side)
{
    uint64_t sz[IR_KBUF_MAX] = {tile_align(a), tile_align(b), tile_align(cc),
                                tile_align(d ? d : side[0]), tile_align(side[1]),
                                tile_align(side[2])}, cur = 0;
    for (int i = 0; i < IR_KBUF_MAX; i++) {
        k->buf[i] = cur > UINT32_MAX ? UINT32_MAX : (uint32_t)cur;
        k->buf_bytes[i] = sz[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)sz[i];
        cur += sz[i];
    }
    return cur > UINT32_MAX ? UINT32_MAX : (uint32_t)cur;
}

/* Try the current contraction chunks; true if they fit (program kept). */
static bool contract_try(Tctx *c, const TileMap *m, int nrow, uint64_t a, uint64_t b,
                         uint64_t cc, uint64_t d, bool *err, uint64_t *need)
{
    IrKernel *k = c->k;
    uint64_t side[3];
    side_sizes(c, side);
    uint32_t base = place_abc(k, a, b, cc, d, side);
    if (!contract_epi(c, m, nrow, k->buf[2], base)) {
        *err = true;
        return false;
    }
    *need = k->tp[1].lx_hi;
    if (*need <= c->budget) {
        k->lx_bytes = (uint32_t)*need;
        return true;
    }
    tile_prog_free(&k->tp[1]);
    return false;
}

/* Bytes of an operand element of the kernel's contraction (2 for DLFloat16, 4 for
 * float32); C accumulates in float32 either way. */
static uint64_t operand_es(Tctx *c)
{
    return (uint64_t)pass_dev_esize(ir_vtype(c->g, ir_node(c->g, c->k->anchor)->in[0])->dtype);
}

/* Whether the MATMUL's B (access space [grid..., K], grid rank r) is read from DRAM
 * along K: a weight stored transposed, [N, K] (a tied LM head reading the embedding
 * table). */
static bool b_along_k(const Tctx *c, int r)
{
    const IrAccess *b = &c->k->acc[1];
    return b->root != IR_NONE && b->is[r] == 1 && b->is[r - 1] != 0 && b->is[r - 1] != 1 &&
           b->is[r - 1] != -1;
}

/* Columns of C the busiest core computes when grid gr's columns (dim d) are cut into
 * chunks of nt, the items dealt evenly over the cores. */
static int64_t busiest_cols(const IrGrid *gr, int d, int64_t nt, uint32_t cores)
{
    int64_t items = 1;
    for (int i = 0; i < gr->rank; i++) {
        int64_t ch = i == d ? nt : gr->chunk[i];
        items *= (gr->ext[i] + ch - 1) / ch;
    }
    return (items + (int64_t)cores - 1) / (int64_t)cores * nt;
}

/* MATMUL: A [mt,kt], B [kt,nt], C [mt,nt] + epilogue; a half B (plan_half_b) also
 * its tile before widening [kt,nt] (buf[3]). The depth shrinks first (every row of
 * B is then read in long runs), but for a product of a few rows (a decode step) whose
 * B is stored transposed: there each column of B is a run of its depth in DRAM, so
 * the columns shrink first (to BT_NT_MIN) and every LOAD reads whole rows of the
 * stored weight, not pieces of a few hundred bytes pages apart; so long as the busiest
 * core gets at most BT_UNEVEN percent more columns than at first (GPT-2's LM head of
 * 50257 columns: halving 800-column chunks to 416 left 4 chunks on some cores and 3 on
 * others, 4% more modelled time). */
static bool fit_matmul(Tctx *c)
{
    IrKernel *k = c->k;
    IrGrid *gr = &k->grid;
    int r = gr->rank;
    TileMap m;
    tile_map_identity(&m, ir_vtype(c->g, ir_node(c->g, k->anchor)->out[0]));
    bool bt = gr->chunk[r - 2] <= BT_ROWS_M && b_along_k(c, r);   /* (rows only shrink) */
    int64_t busy0 = busiest_cols(gr, r - 1, gr->chunk[r - 1], c->t->cores);
    for (;;) {
        int64_t mt = gr->chunk[r - 2], nt = gr->chunk[r - 1], kt = k->inner.chunk[0];
        bool err = false;
        uint64_t need = 0;
        uint64_t es = operand_es(c), hb = plan_half_b(c->g, k);  /* + B before widening */
        if (contract_try(c, &m, r - 1, es * (uint64_t)(mt * kt), es * (uint64_t)(kt * nt),
                         4 * (uint64_t)(mt * nt), hb * (uint64_t)(kt * nt), &err, &need))
            return true;
        if (err)
            return false;
        int64_t nt2 = shrink(nt, 32);
        if (bt && nt > BT_NT_MIN && k->nred == 0 &&
            busiest_cols(gr, r - 1, nt2, c->t->cores) * 100 <= busy0 * (100 + BT_UNEVEN))
            gr->chunk[r - 1] = nt2;
        else if (kt > DEPTH_MIN)
            k->inner.chunk[0] = shrink(kt, 32);
        else if (mt > 1 && mt * 4 >= nt)
            gr->chunk[r - 2] = shrink(mt, 8);
        else if (nt > 1 && k->nred == 0)      /* row-reducing epilogues keep rows whole */
            gr->chunk[r - 1] = shrink(nt, 32);
        else if (kt > 1)
            k->inner.chunk[0] = shrink(kt, 1);
        else if (mt > 1)
            gr->chunk[r - 2] = shrink(mt, 1);
        else
            return too_big(c, need);
    }
}

/* Depthwise form (plan.h IrGeom.dw): A = weights [gl, taps], B = the accumulator
 * [gl, rows, pitch], C [gl, rows*OW] (compacted from B), the patch [gl, s0 phase
 * planes, ww] (plan_dw_patch); the channel block shrinks (to two) before the rows. False with
 * the block set to one channel when nothing fits (or a tile program fails: the
 * MATMUL form then reports it). */
static bool fit_dw(Tctx *c, const TileMap *m, int64_t taps, int64_t inner)
{
    IrKernel *k = c->k;
    IrGrid *gr = &k->grid;
    uint64_t es = operand_es(c);
    for (;;) {
        int64_t gl = gr->chunk[1], rows = gr->chunk[3], pitch, ww;
        int64_t patch = gl * plan_dw_patch(&c->geo, rows, &pitch, &ww);
        bool err = false;
        uint64_t need = 0;
        if (contract_try(c, m, 3, es * (uint64_t)(gl * taps), 4 * (uint64_t)(gl * rows * pitch),
                         4 * (uint64_t)(gl * rows * inner), es * (uint64_t)patch, &err, &need))
            return true;
        if (err)
            break;
        if (gl > 2)
            gr->chunk[1] = shrink(gl, 1) > 2 ? shrink(gl, 1) : 2;
        else if (rows > 1)
            gr->chunk[3] = shrink(rows, 1);
        else
            break;
    }
    gr->chunk[1] = 1;                  /* not even two channels fit: the window MATMUL */
    return false;
}

/* Shrinks the first output dim past the rows (grid dim 4 on) that is not down to one:
 * an im2col convolution of three spatial dims (a video's) whose every row of frames
 * (grid dim 3 at one) still needs more than the scratchpad, which splitting the
 * frame's own rows fits (its windows are one N-d LOAD of any box of outputs). */
static void shrink_inner(IrGrid *gr)
{
    for (int d = 4; d < gr->rank; d++)
        if (gr->chunk[d] > 1) {
            gr->chunk[d] = shrink(gr->chunk[d], 1);
            return;
        }
}

/* CONV: A = weights [mt, cc*taps], B = im2col [cc*taps, rows*OW'], C [mt, rows*OW'];
 * in patch form the input rows [cc, rows_in, padded width] instead of B (the MATMUL
 * reads B as a window of them). */
static bool fit_conv(Tctx *c)
{
    IrKernel *k = c->k;
    IrGrid *gr = &k->grid;
    const IrGeom *geo = &c->geo;
    const IrType *ot = ir_vtype(c->g, ir_node(c->g, k->anchor)->out[0]);
    TileMap m;
    memset(&m, 0, sizeof m);
    m.nd = geo->ngrid;
    m.rrank = ot->rank;
    for (int j = 0; j < ot->rank; j++)
        m.rdims[j] = ot->dims[j];
    m.coef[0][0] = 1;
    m.coef[1][1] = geo->mg;
    m.coef[1][2] = 1;
    for (int i = 0; i < geo->nsp; i++)
        m.coef[2 + i][3 + i] = 1;
    int64_t taps = 1, inner = 1;
    for (int i = 0; i < geo->nsp; i++)
        taps *= geo->taps[i];
    for (int d = 4; d < gr->rank; d++)
        inner *= gr->chunk[d];
    if (plan_dw_form(k, geo) && fit_dw(c, &m, taps, inner))
        return true;
    for (;;) {
        int64_t mt = gr->chunk[2], rows = gr->chunk[3], cc = k->inner.chunk[0];
        inner = 1;                                 /* shrink_inner may lower it */
        for (int d = 4; d < gr->rank; d++)
            inner *= gr->chunk[d];
        int64_t kk = cc * taps, p = rows * inner, patch = 0;
        if (geo->patch)
            patch = cc * plan_patch_rows(geo, rows) *
                    (geo->in_ext[1] + geo->pad_lo[1] + geo->pad_hi[1]);
        bool err = false;
        uint64_t need = 0;
        uint64_t es = operand_es(c);
        uint64_t bbuf = geo->patch ? 0 : es * (uint64_t)(kk * p); /* patch: B a window */
        uint64_t abuf = es * (uint64_t)(mt * plan_conv_lda(kk, (unsigned)es));
        if (contract_try(c, &m, 3, abuf, bbuf,
                         4 * (uint64_t)(mt * p), es * (uint64_t)patch, &err, &need))
            return true;
        if (err)
            return false;
        if (kk > 2 * DEPTH_MIN && cc > 1)
            k->inner.chunk[0] = shrink(cc, 8);
        else if (p > mt && rows > 1)
            gr->chunk[3] = shrink(rows, 1);
        else if (!geo->patch && p > mt && inner > 1)  /* a 3-d image: the 2nd output dim */
            shrink_inner(gr);
        else if (mt > 1)
            gr->chunk[2] = shrink(mt, 8);
        else if (rows > 1)
            gr->chunk[3] = shrink(rows, 1);
        else if (cc > 1)
            k->inner.chunk[0] = shrink(cc, 1);
        else
            return too_big(c, need);
    }
}

/* Map of a reduction's prologue space [grid..., inner...] onto its input shape. */
static void reduce_pro_map(Tctx *c, TileMap *m)
{
    const IrGeom *geo = &c->geo;
    const IrNode *pad = plan_window_pad(c->g, c->k);     /* its input, at padded coordinates */
    const IrType *x = ir_vtype(c->g, pad ? pad->in[0] : ir_node(c->g, c->k->anchor)->in[0]);
    memset(m, 0, sizeof *m);
    m->nd = geo->ngrid + geo->ninner;
    m->rrank = x->rank;
    for (int j = 0; j < x->rank; j++)
        m->rdims[j] = x->dims[j];
    int lead = x->rank - geo->nsp;
    for (int d = 0; d < geo->ngrid; d++) {
        if (geo->kept[d] >= 0)
            m->coef[geo->kept[d]][d] = 1;
        else                                    /* window output dim */
            m->coef[d][d] = geo->wstride[d - lead];
    }
    for (int j = 0; j < geo->ninner; j++)
        m->coef[geo->red[j]][geo->ngrid + j] = geo->nsp ? geo->wdil[j] : 1;
}

/* Map of a REDUCE/ARGREDUCE/WINDOW epilogue (grid dims) onto the output shape. */
static void reduce_epi_map(Tctx *c, TileMap *m)
{
    const IrGeom *geo = &c->geo;
    const IrNode *a = ir_node(c->g, c->k->anchor);
    const IrType *o = ir_vtype(c->g, a->out[0]);
    bool keep = a->op != IR_OP_WINDOW && ir_attr_get_int(a, "keepdims", 1) &&
                o->rank != geo->ngrid;
    memset(m, 0, sizeof *m);
    m->nd = geo->ngrid;
    m->rrank = o->rank;
    for (int j = 0; j < o->rank; j++)
        m->rdims[j] = o->dims[j];
    for (int d = 0; d < geo->ngrid; d++)
        m->coef[keep ? geo->kept[d] : d][d] = 1;
}

/* Build the prologue, accumulator and epilogue of a reduction; *need = LX bytes. */
static bool reduce_build(Tctx *c, const TileMap *pm, const TileMap *em, uint64_t *need)
{
    IrKernel *k = c->k;
    const IrNode *a = ir_node(c->g, k->anchor);
    bool scan = a->op == IR_OP_CUMSUM, arg = a->op == IR_OP_ARGREDUCE;
    TileSpec pro, epi;
    spec_box(&pro, pm, &k->grid);
    pro.nrow = k->grid.rank;
    uint64_t rows = 1, cols = 1;
    for (int d = 0; d < k->grid.rank; d++)
        rows *= (uint64_t)k->grid.chunk[d];
    for (int j = 0; j < k->inner.rank; j++) {
        pro.order[k->grid.rank + j] = k->grid.rank + j;
        pro.cap[k->grid.rank + j] = k->inner.chunk[j];
        cols *= (uint64_t)k->inner.chunk[j];
    }
    const IrNode *pad = plan_window_pad(c->g, k);        /* loaded by the codegen itself */
    pro.steps = k->pro;                                  /* none of them with a pad */
    pro.nsteps = pad ? 0 : k->npro;
    pro.result = pad ? pad->in[0] : a->in[0];
    pro.force_full = scan;
    uint64_t es = arg ? 4 : (uint64_t)pass_dev_esize(ir_vtype(c->g, a->out[0])->dtype);
    uint64_t acc = tile_align(rows * (scan ? cols : 1) * es);
    k->buf[0] = 0;
    k->buf_bytes[0] = acc > UINT32_MAX ? UINT32_MAX : (uint32_t)acc;
    uint32_t base = acc > UINT32_MAX ? UINT32_MAX : (uint32_t)acc;
    if (!tile_prog_build(c->g, &pro, base, &k->tp[0]))
        return false;
    if (scan) {
        epi = pro;
        epi.map = em;
        epi.force_full = false;
    } else {
        spec_box(&epi, em, &k->grid);
    }
    epi.steps = k->epi;
    epi.nsteps = k->nepi;
    epi.seed = a->out[0];
    epi.seed_lx = 0;
    epi.result = k->out;
    epi.store = true;
    if (!tile_prog_build(c->g, &epi, k->tp[0].lx_hi, &k->tp[1])) {
        tile_prog_free(&k->tp[0]);
        return false;
    }
    *need = k->tp[1].lx_hi;
    return true;
}

/* Inner (reduced) elements per row of the current tile. */
static int64_t inner_elems(const IrGrid *gr)
{
    int64_t n = 1;
    for (int d = 0; d < gr->rank; d++)
        n *= gr->chunk[d];
    return n;
}

/* REDUCE family: shrink the reduced chunk to RED_MIN_ELEMS, then the kept box, then
 * the reduced chunk further (ARGREDUCE and CUMSUM keep the whole axis). */
static bool fit_reduce(Tctx *c)
{
    IrKernel *k = c->k;
    const IrNode *a = ir_node(c->g, k->anchor);
    bool whole = a->op == IR_OP_ARGREDUCE || a->op == IR_OP_CUMSUM ||
                 plan_window_pad(c->g, k);              /* window_pad_item: all taps */
    TileMap pm, em;
    reduce_pro_map(c, &pm);
    if (a->op == IR_OP_CUMSUM)
        em = pm;
    else
        reduce_epi_map(c, &em);
    for (;;) {
        uint64_t need = 0;
        if (!reduce_build(c, &pm, &em, &need))
            return false;
        if (need <= c->budget) {
            k->lx_bytes = (uint32_t)need;
            return true;
        }
        tile_prog_free(&k->tp[0]);
        tile_prog_free(&k->tp[1]);
        if (!whole && inner_elems(&k->inner) > RED_MIN_ELEMS && box_shrink(&k->inner))
            continue;
        if (box_shrink(&k->grid))
            continue;
        if (whole || !box_shrink(&k->inner))
            return too_big(c, need);
    }
}

/* Access over an identity map of shape t through an explicit view. */
static void view_access(const IrType *t, const IrView *vw, IrAccess *a)
{
    memset(a, 0, sizeof *a);
    a->root = vw->root;
    a->base = vw->off;
    for (int d = 0; d < t->rank; d++)
        a->is[d] = t->dims[d] == 1 ? 0 : vw->stride[d];
}

/* Source and destination accesses of a MOVE or COPY kernel over its grid. */
static void move_accesses(Tctx *c)
{
    IrKernel *k = c->k;
    IrGraph *g = c->g;
    Plan *s = g->plan;
    const IrType *ot = ir_vtype(g, k->out);
    view_access(ot, &s->val[k->out].view, &k->acc[1]);
    k->acc[0].root = IR_NONE;
    if (k->kind == IR_KK_COPY) {
        view_access(ot, &s->val[k->out].view, &k->acc[0]);
        IrView dense = {.root = IR_NONE};
        plan_dense_strides(ot, dense.stride);
        view_access(ot, &dense, &k->acc[1]);
        return;
    }
    const IrNode *n = ir_node(g, k->anchor);
    if (n->op == IR_OP_RESHAPE) {              /* iterate the input's dims */
        const IrType *it = ir_vtype(g, n->in[0]);
        view_access(it, &s->val[n->in[0]].view, &k->acc[0]);
        IrView dst;                            /* the output's view (a slice of an in-place
                                                  concat, an in-place transpose's order)
                                                  over the input's dims; fuse.c checked it */
        IR_ASSERT(plan_view_reshape(ot, &s->val[k->out].view, it, &dst));
        view_access(it, &dst, &k->acc[1]);
    } else if (ir_op_info[n->op].flags & IR_OPF_VIEW) {
        IrView vw;
        IR_ASSERT(plan_view_apply(g, n, &s->val[n->in[0]].view, &vw));
        view_access(ot, &vw, &k->acc[0]);
    }
}

/* GATHER reads its table with single instructions: the rows of one outer index must
 * lie inside one core's DRAM window. pass_window has cut larger tables into parts
 * where it can (isa.md, "DRAM windows"); what is left here cannot be cut. */
static bool gather_window_ok(Tctx *c, const IrNode *n, uint64_t es)
{
    const IrType *dt = ir_vtype(c->g, n->in[0]);
    const IrView *dv = &c->g->plan->val[n->in[0]].view;
    int ax = (int)ir_attr_get_int(n, "axis", 0);
    uint64_t inner = 1, rows = (uint64_t)dt->dims[ax];
    for (int i = ax + 1; i < dt->rank; i++)
        inner *= (uint64_t)dt->dims[i];
    int64_t st = dv->stride[ax] < 0 ? -dv->stride[ax] : dv->stride[ax];
    uint64_t span = ((rows ? rows - 1 : 0) * (uint64_t)st + inner) * es;
    if (span <= ((uint64_t)c->t->core_window_mib << 20))
        return true;
    ir_error(c->g, &n->origin, "gather table of %llu bytes exceeds the %u MiB of device memory "
             "one core can address and cannot be read in window-sized parts",
             (unsigned long long)span, c->t->core_window_mib);
    return false;
}

/* SCATTER writes its whole output with single instructions: it must lie inside one
 * core's DRAM window. */
static bool scatter_window_ok(Tctx *c, const IrNode *n, uint64_t es)
{
    uint64_t span = (uint64_t)plan_numel(ir_vtype(c->g, n->out[0])) * es;
    if (span <= ((uint64_t)c->t->core_window_mib << 20))
        return true;
    ir_error(c->g, &n->origin, "scatter result of %llu bytes exceeds the %u MiB of device "
             "memory one core can address", (unsigned long long)span, c->t->core_window_mib);
    return false;
}

/* MOVE/COPY: one LX tile of the output box (GATHER: plus its indices; SCATTER: a tile
 * of the updates plus its row indices). */
static bool fit_move(Tctx *c)
{
    IrKernel *k = c->k;
    IrGraph *g = c->g;
    const IrNode *n = k->anchor != IR_NONE ? ir_node(g, k->anchor) : NULL;
    uint64_t es = (uint64_t)pass_dev_esize(ir_vtype(g, k->out)->dtype);
    int ax = n && n->op == IR_OP_GATHER ? (int)ir_attr_get_int(n, "axis", 0) : 0;
    int nidx = n && n->op == IR_OP_GATHER ? ir_vtype(g, n->in[1])->rank
               : n && n->op == IR_OP_SCATTER ? 1 : 0;
    if (n && n->op == IR_OP_GATHER && !gather_window_ok(c, n, es))
        return false;
    if (n && n->op == IR_OP_SCATTER && !scatter_window_ok(c, n, es))
        return false;
    move_accesses(c);
    for (;;) {
        uint64_t tile = es, idx = 0;
        for (int d = 0; d < k->grid.rank; d++)
            tile *= (uint64_t)k->grid.chunk[d];
        if (n && (n->op == IR_OP_GATHER || n->op == IR_OP_SCATTER)) {
            idx = 4;
            for (int d = ax; d < ax + nidx; d++)
                idx *= (uint64_t)k->grid.chunk[d];
        }
        uint64_t need = tile_align(tile) + tile_align(idx);
        if (need <= c->budget) {
            k->buf[0] = 0;
            k->buf_bytes[0] = (uint32_t)tile_align(tile);
            k->buf[1] = k->buf_bytes[0];
            k->buf_bytes[1] = (uint32_t)tile_align(idx);
            k->lx_bytes = (uint32_t)need;
            return true;
        }
        if (!box_shrink(&k->grid))
            return too_big(c, need);
    }
}

/* Matmul operand accesses over [C dims..., K]: A [..., M, K] and B [..., K, N] with
 * batch dims broadcast (stride 0). */
static void matmul_accesses(Tctx *c)
{
    IrKernel *k = c->k;
    Plan *s = c->g->plan;
    const IrNode *n = ir_node(c->g, k->anchor);
    int r = k->grid.rank;
    for (int op = 0; op < 2; op++) {
        ValId v = n->in[op];
        const IrType *t = ir_vtype(c->g, v);
        const IrView *vw = &s->val[v].view;
        IrAccess *a = &k->acc[op];
        memset(a, 0, sizeof *a);
        a->root = vw->root;
        a->base = vw->off;
        for (int j = 0; j < t->rank - 2; j++)
            if (t->dims[j] != 1)
                a->is[j + (r - 2) - (t->rank - 2)] = vw->stride[j];
        int rows = op == 0 ? r - 2 : r, cols = op == 0 ? r : r - 1;
        a->is[rows] = t->dims[t->rank - 2] == 1 ? 0 : vw->stride[t->rank - 2];
        a->is[cols] = t->dims[t->rank - 1] == 1 ? 0 : vw->stride[t->rank - 1];
    }
}

/* Conv operand accesses over [N, G, Mg, O..., Cg, K...]: X (im2col) and W. */
static void conv_accesses(Tctx *c)
{
    IrKernel *k = c->k;
    Plan *s = c->g->plan;
    const IrGeom *geo = &c->geo;
    const IrNode *n = ir_node(c->g, k->anchor);
    int ns = geo->nsp, ic = 3 + ns, ik = 4 + ns;
    const IrView *x = &s->val[geo->x].view, *w = &s->val[n->in[1]].view;
    IrAccess *ax = &k->acc[0], *aw = &k->acc[1];
    memset(ax, 0, sizeof *ax);
    memset(aw, 0, sizeof *aw);
    ax->root = x->root;
    ax->base = x->off;
    ax->is[0] = x->stride[0];
    ax->is[1] = geo->cg * x->stride[1];
    ax->is[ic] = x->stride[1];
    aw->root = w->root;
    aw->base = w->off;
    aw->is[1] = geo->mg * w->stride[0];
    aw->is[2] = w->stride[0];
    aw->is[ic] = w->stride[1];
    for (int i = 0; i < ns; i++) {
        ax->is[3 + i] = geo->wstride[i] * x->stride[2 + i];
        ax->is[ik + i] = geo->wdil[i] * x->stride[2 + i];
        aw->is[ik + i] = w->stride[2 + i];
    }
}

/* Add root r to the sorted set reads (size *n). */
static void add_read(ValId *reads, uint32_t *n, ValId r)
{
    if (r == IR_NONE)
        return;
    uint32_t i = 0;
    while (i < *n && reads[i] < r)
        i++;
    if (i < *n && reads[i] == r)
        return;
    memmove(reads + i + 1, reads + i, (*n - i) * sizeof *reads);
    reads[i] = r;
    (*n)++;
}

/* Record the root values kernel k reads from DRAM. */
static void collect_reads(IrGraph *g, IrKernel *k)
{
    Plan *s = g->plan;
    uint32_t cap = 4 + k->nins + k->tp[0].nvals + k->tp[1].nvals, n = 0;
    ValId *r = ir_alloc(g, cap * sizeof *r);
    for (int t = 0; t < 2; t++)
        for (uint32_t i = 0; i < k->tp[t].nvals; i++)
            if (k->tp[t].vals[i].src == IR_TV_LOAD)
                add_read(r, &n, k->tp[t].vals[i].acc.root);
    if (k->kind == IR_KK_CONTRACT || k->kind == IR_KK_COPY ||
        (k->kind == IR_KK_MOVE && k->acc[0].root != IR_NONE))
        add_read(r, &n, k->acc[0].root);
    if (k->kind == IR_KK_CONTRACT)
        add_read(r, &n, k->acc[1].root);
    if (k->kind == IR_KK_MOVE && k->acc[0].root == IR_NONE) {
        const IrNode *nd = ir_node(g, k->anchor);
        for (int i = 0; i < nd->nin; i++)
            add_read(r, &n, s->val[nd->in[i]].view.root);
    }
    k->reads = r;
    k->nreads = n;
}

/* Tile kernel k and lay out its LX. */
static bool tile_kernel(IrGraph *g, IrKernel *k, const SpyTarget *t)
{
    Tctx c = {g, k, t, t->lx_budget_bytes, {0}};
    plan_geom(g, k, &c.geo);
    memset(k->tp, 0, sizeof k->tp);
    memset(k->buf, 0, sizeof k->buf);
    memset(k->buf_bytes, 0, sizeof k->buf_bytes);
    for (int i = 0; i < 3; i++)
        k->acc[i].root = IR_NONE;
    bool ok;
    switch (k->kind) {
    case IR_KK_ELEM: ok = fit_elem(&c); break;
    case IR_KK_CONTRACT:
        if (ir_node(g, k->anchor)->op == IR_OP_CONV) {
            conv_accesses(&c);
            ok = fit_conv(&c);
        } else {
            matmul_accesses(&c);
            ok = fit_matmul(&c);
        }
        break;
    case IR_KK_REDUCE: ok = fit_reduce(&c); break;
    default: ok = fit_move(&c); break;
    }
    if (!ok)
        return false;
    IR_ASSERT(k->lx_bytes <= t->lx_budget_bytes);
    tile_prog_keep(g, &k->tp[0]);
    tile_prog_keep(g, &k->tp[1]);
    collect_reads(g, k);
    plan_assign_cores(g, k, t->cores);
    return true;
}

bool pass_tile(IrGraph *g, const PassOptions *opt)
{
    bool ok = true;
    for (uint32_t i = 0; i < g->plan->nkernels; i++)
        ok &= tile_kernel(g, &g->plan->kernels[i], opt->target);
    return ok;
}
