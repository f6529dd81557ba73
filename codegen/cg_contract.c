/* cg_contract.c: MATMUL and CONV work items -> LOAD, MATMUL (accumulating over depth
 * chunks), epilogue tile program, STORE.
 *
 * MATMUL item (batch index, M tile, N tile): per K chunk, A [m,k] and B [k,n] tiles
 * are loaded (strides from the operands' views: broadcast batch dims have stride 0)
 * and multiplied into C [m,n] (ISA_F_ACCUM after the first chunk). A tile identical
 * to the one already in LX (same rows, single K chunk) is not reloaded.
 *
 * CONV item (n, group, output-channel tile, output-row chunk) is an im2col matmul:
 * A = weights [m, c*taps] (the weight tensor read as a matrix), B = one N-d LOAD of
 * the input windows: dims [c, k1..ks, o1 rows, o2..os] with DRAM strides
 * [C stride, dilation*stride per tap, conv stride*stride per output dim], LX dense,
 * giving [c*taps, pixels]; C = [m, pixels] is already the NCHW output tile.
 *
 * Patch form (the input rows are loaded once into an LX patch with the padding
 * filled in): the padding is filled only when the patch's border is not already the
 * pad value from the previous item of the same core program. Stride-1 convolutions
 * with few output channels per tile (depthwise ones) skip im2col: the taps of one
 * (channel, kernel row) are consecutive patch columns, so one MATMUL per pair reads
 * the patch in place (ldb = the column dilation) and accumulates on the padded-width
 * grid of output pixels in the im2col buffer; one VEC copy per output channel then
 * compacts the grid into C. The products are summed in the same order as the im2col
 * MATMUL, so the results are the same bit for bit.
 */
#include <string.h>

#include "cg_internal.h"

/* Device dtype of kernel k's contraction operands: F32, or DLF16 in fp16 mode (the
 * operand tiles then take 2 bytes an element; C accumulates in F32 either way). */
static int op_dtype(CgEmit *e, const IrKernel *k)
{
    return pass_dev_dtype(ir_vtype(e->g, ir_node(e->g, k->anchor)->in[0])->dtype);
}

/* Bytes of an operand element of kernel k. */
static uint32_t op_es(CgEmit *e, const IrKernel *k)
{
    return op_dtype(e, k) == ISA_DT_DLF16 ? 2 : 4;
}

/* One MATMUL instruction on the kernel's A, B, C buffers. */
static void matmul(CgEmit *e, const IrKernel *k, int64_t m, int64_t n, int64_t kk, bool acc)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyMatmul *mm = &in.mm;
    mm->opcode = ISA_MATMUL;
    mm->dtype = (uint8_t)op_dtype(e, k);
    mm->out_dtype = ISA_DT_F32;
    mm->flags = acc ? ISA_F_ACCUM : 0;
    mm->a = k->buf[0];
    mm->b = k->buf[1];
    mm->c = k->buf[2];
    mm->m = (uint32_t)m;
    mm->n = (uint32_t)n;
    mm->k = (uint32_t)kk;
    mm->lda = (uint32_t)kk;
    mm->ldb = (uint32_t)n;
    mm->ldc = (uint32_t)n;
    cg_push(e, &in);
}

/* Load a tile of access a (elements of es bytes) at point st over dims (len,
 * iteration dim) pairs. */
static void load_tile(CgEmit *e, const IrAccess *a, unsigned es, const int64_t *st, int nd,
                      uint32_t lx, const int64_t *len, const int *dim, int n)
{
    CgDims d = {0};
    for (int i = 0; i < n; i++)
        cg_dims_add(&d, len[i], a->is[dim[i]], 0);
    cg_dims_dense_lx(&d);
    uint32_t seg;
    int64_t off;
    cg_access_at(e, a, st, nd, es, &seg, &off);
    cg_load_cached(e, seg, off, lx, es, &d);
}

/* MATMUL work item; grid dims [batch..., M, N], inner [K]. */
static void matmul_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    int r = k->grid.rank, M = r - 2, N = r - 1, K = r;
    int64_t st[IR_ITER_MAX] = {0};
    memcpy(st, start, (size_t)r * sizeof *st);
    int64_t kext = k->inner.ext[0], kt = k->inner.chunk[0];
    if (kext == 0)
        matmul(e, k, len[M], len[N], 0, false);
    for (int64_t k0 = 0; k0 < kext; k0 += kt) {
        int64_t kl = kext - k0 < kt ? kext - k0 : kt;
        st[K] = k0;
        int64_t la[2] = {len[M], kl}, lb[2] = {kl, len[N]};
        int da[2] = {M, K}, db[2] = {K, N};
        load_tile(e, &k->acc[0], op_es(e, k), st, r + 1, k->buf[0], la, da, 2);
        load_tile(e, &k->acc[1], op_es(e, k), st, r + 1, k->buf[1], lb, db, 2);
        matmul(e, k, len[M], len[N], kl, k0 > 0);
    }
    cg_tp_run(e, &k->tp[1], start, len);
}

/* One VEC copy of a rows x cols block of dtype dt (column strides: 1 in dst, src_cs
 * in src). */
static void vcopy(CgEmit *e, int dt, uint32_t dst, int64_t drs, uint32_t src, int64_t srs,
                  int64_t scs, int64_t rows, int64_t cols)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC;
    v->fn = ISA_VF_COPY;
    v->dtype = v->src_dtype = (uint8_t)dt;
    v->nsrc = 1;
    v->dst = dst;
    v->dst_rs = (int32_t)drs;
    v->src[0] = src;
    v->src_rs[0] = (int32_t)srs;
    v->src_cs[0] = (int32_t)scs;
    v->rows = (uint32_t)rows;
    v->cols = (uint32_t)cols;
    cg_push(e, &in);
}

/* Patch rows of an item with on output rows. */
static int64_t patch_rows(const IrGeom *geo, int64_t on)
{
    return (on - 1) * geo->s2[0] + (geo->k2[0] - 1) * geo->d2[0] + 1;
}

/* Padded width of the patch. */
static int64_t patch_width(const IrGeom *geo)
{
    return geo->in_ext[1] + geo->pad_lo[1] + geo->pad_hi[1];
}

/* Fill the patch [cl, rin, wp] with the pad value unless its border already holds it:
 * the last patch of this program had the same geometry and its loaded rows
 * [rlo, rhi) lie inside this item's (which the load overwrites). */
static void patch_fill(CgEmit *e, int dt, uint32_t patch, const IrGeom *geo, int64_t cl,
                       int64_t rin, int64_t wp, int64_t rlo, int64_t rhi)
{
    uint32_t value = cg_value_bits(dt, geo->pad_value);
    const CgPatch *p = &e->patch;
    bool inside = p->rlo >= p->rhi || (rlo <= p->rlo && p->rhi <= rhi);
    if (p->valid && p->lx == patch && p->value == value && p->cl == cl && p->rin == rin &&
        p->wp == wp && inside)
        return;
    SpyInsn in;
    memset(&in, 0, sizeof in);
    in.fill.opcode = ISA_VFILL;
    in.fill.dtype = (uint8_t)dt;
    in.fill.dst = patch;
    in.fill.n = (uint32_t)(cl * rin * wp);
    in.fill.value = value;
    cg_push(e, &in);
}

/* One MATMUL with explicit operands and strides (elements). */
static void matmul_at(CgEmit *e, int dt, uint32_t a, uint32_t b, uint32_t c, int64_t m,
                      int64_t n, int64_t kk, int64_t lda, int64_t ldb, int64_t ldc, bool acc)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyMatmul *mm = &in.mm;
    mm->opcode = ISA_MATMUL;
    mm->dtype = (uint8_t)dt;
    mm->out_dtype = ISA_DT_F32;
    mm->flags = acc ? ISA_F_ACCUM : 0;
    mm->a = a, mm->b = b, mm->c = c;
    mm->m = (uint32_t)m, mm->n = (uint32_t)n, mm->k = (uint32_t)kk;
    mm->lda = (uint32_t)lda, mm->ldb = (uint32_t)ldb, mm->ldc = (uint32_t)ldc;
    cg_push(e, &in);
}

/* Pixels of the padded-width grid of an item with on output rows: every patch
 * column of the first on - 1 rows, the O1 real ones of the last. */
static int64_t grid_pixels(const IrGeom *geo, int64_t on)
{
    return (on - 1) * patch_width(geo) + geo->out2[1];
}

/* Whether a CONV item (output channel tile m, on output rows, channel chunk ct) takes
 * the grid form: stride 1, few output channels (im2col copies cost more than reading
 * C once per kernel row), and the grid fits the im2col buffer. */
static bool grid_form(const IrKernel *k, const IrGeom *geo, int64_t m, int64_t on, int64_t ct)
{
    if (!geo->patch || geo->s2[0] != 1 || geo->s2[1] != 1 || m > 4 || m > geo->k2[1] ||
        ct * geo->k2[0] > 64 || k->inner.ext[0] == 0)
        return false;
    return (uint64_t)(4 * m * grid_pixels(geo, on)) <= k->buf_bytes[1];
}

/* Grid form of one channel chunk [c0, c0+cl): a MATMUL per (channel, kernel row) from
 * the patch into the grid at buf[1] (accumulating after the conv's first one). */
static void conv_grid(CgEmit *e, const IrKernel *k, const IrGeom *geo, int64_t m, int64_t on,
                      int64_t c0, int64_t cl)
{
    int64_t k0 = geo->k2[0], k1 = geo->k2[1], rin = patch_rows(geo, on), wp = patch_width(geo);
    int64_t n = grid_pixels(geo, on), kk = cl * k0 * k1, es = op_es(e, k);
    for (int64_t a = 0; a < cl; a++)
        for (int64_t i = 0; i < k0; i++) {
            uint32_t wa = k->buf[0] + (uint32_t)(es * (a * k0 + i) * k1);
            uint32_t xb = k->buf[3] + (uint32_t)(es * (a * rin + i * geo->d2[0]) * wp);
            matmul_at(e, op_dtype(e, k), wa, xb, k->buf[1], m, n, k1, kk, geo->d2[1], n,
                      c0 > 0 || a > 0 || i > 0);
        }
}

/* Grid form: copy the real pixels of the grid rows into C [m, on*O1]. */
static void grid_compact(CgEmit *e, const IrKernel *k, const IrGeom *geo, int64_t m, int64_t on)
{
    int64_t o1 = geo->out2[1], n = grid_pixels(geo, on);
    for (int64_t r = 0; r < m; r++)
        vcopy(e, ISA_DT_F32, k->buf[2] + (uint32_t)(4 * r * on * o1), o1, k->buf[1] + (uint32_t)(4 * r * n),
              patch_width(geo), 1, on, o1);
}

/* Patch form (plan.h IrGeom.patch) of one channel chunk [c0, c0+cl): load the item's
 * input rows into the patch (filling the padding), then build the im2col matrix
 * B [cl*k0*k1, rows*O1] with one VEC copy per (channel or output row, tap), or (grid
 * form) multiply straight from the patch. */
static void conv_patch(CgEmit *e, const IrKernel *k, const IrGeom *geo, const int64_t *start,
                       const int64_t *len, int64_t c0, int64_t cl, bool grid)
{
    const IrView *xv = &e->s->val[geo->x].view;
    int64_t on = len[3], r0 = start[3] * geo->s2[0], p0 = geo->pad_lo[0];
    int64_t k0 = geo->k2[0], k1 = geo->k2[1], o1 = geo->out2[1], pix = on * o1;
    int64_t rin = patch_rows(geo, on), wp = patch_width(geo);
    int64_t lo = r0 - p0 > 0 ? r0 - p0 : 0;
    int64_t hi = r0 + rin - p0 < geo->in_ext[0] ? r0 + rin - p0 : geo->in_ext[0];
    uint32_t patch = k->buf[3], bm = k->buf[1], es = op_es(e, k);
    int dt = op_dtype(e, k);
    int64_t rlo = hi > lo ? lo + p0 - r0 : 0, rhi = hi > lo ? hi + p0 - r0 : 0;
    if (lo != r0 - p0 || hi != r0 + rin - p0 || wp != geo->in_ext[1])
        patch_fill(e, dt, patch, geo, cl, rin, wp, rlo, rhi);
    e->patch = (CgPatch){true, patch, cg_value_bits(dt, geo->pad_value), cl, rin, wp,
                         rlo, rhi};
    if (hi > lo) {
        int dx = 2, dy = geo->nsp == 2 ? 3 : 2;     /* input dims of canonical 0, 1 */
        CgDims d = {0};
        cg_dims_add(&d, cl, xv->stride[1], rin * wp);
        cg_dims_add(&d, hi - lo, xv->stride[dx], wp);
        cg_dims_add(&d, geo->in_ext[1], geo->nsp == 2 ? xv->stride[dy] : 1, 1);
        uint32_t seg;
        int64_t off;
        cg_root(e, xv->root, &seg, &off);
        int64_t el = xv->off + start[0] * xv->stride[0] +
                     (start[1] * geo->cg + c0) * xv->stride[1] + lo * xv->stride[dx];
        uint32_t lx = patch + (uint32_t)(((lo + p0 - r0) * wp + geo->pad_lo[1]) * es);
        cg_dma(e, ISA_LOAD, seg, off + el * es, lx, es, &d);
    }
    if (grid) {
        conv_grid(e, k, geo, len[2], on, c0, cl);
        return;
    }
    bool by_channel = cl <= on || o1 == 1;
    for (int64_t a = 0; a < (by_channel ? cl : on); a++)
        for (int64_t i = 0; i < k0; i++)
            for (int64_t j = 0; j < k1; j++) {
                int64_t sj = j * geo->d2[1];
                if (by_channel) {
                    uint32_t dst = bm + (uint32_t)((((a * k0 + i) * k1 + j) * pix) * es);
                    uint32_t src = patch + (uint32_t)(((a * rin + i * geo->d2[0]) * wp + sj) * es);
                    if (o1 == 1)
                        vcopy(e, dt, dst, on, src, 0, geo->s2[0] * wp, 1, on);
                    else
                        vcopy(e, dt, dst, o1, src, geo->s2[0] * wp, geo->s2[1], on, o1);
                } else {
                    uint32_t dst = bm + (uint32_t)((((i * k1 + j) * pix) + a * o1) * es);
                    uint32_t src = patch + (uint32_t)((((a * geo->s2[0] + i * geo->d2[0]) * wp) + sj) * es);
                    vcopy(e, dt, dst, k0 * k1 * pix, src, rin * wp, geo->s2[1], cl, o1);
                }
            }
}

/* CONV work item; grid dims [N, G, Mg, O1..Os], inner [Cg]; access space adds
 * [Cg, K1..Ks]. */
static void conv_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    IrGeom geo;
    plan_geom(e->g, k, &geo);
    int ns = geo.nsp, ic = 3 + ns, ik = 4 + ns, nd = 4 + 2 * ns;
    int64_t st[IR_ITER_MAX] = {0};
    memcpy(st, start, (size_t)(3 + ns) * sizeof *st);
    int64_t taps = 1, pix = 1;
    for (int i = 0; i < ns; i++) {
        taps *= geo.taps[i];
        pix *= len[3 + i];
    }
    int64_t cext = k->inner.ext[0], ct = k->inner.chunk[0];
    bool grid = grid_form(k, &geo, len[2], len[3], ct);
    for (int64_t c0 = 0; c0 < cext; c0 += ct) {
        int64_t cl = cext - c0 < ct ? cext - c0 : ct;
        st[ic] = c0;
        int64_t la[2 + IR_MAX_RANK], lb[2 + 2 * IR_MAX_RANK];
        int da[2 + IR_MAX_RANK], db[2 + 2 * IR_MAX_RANK], na = 0, nb = 0;
        la[na] = len[2], da[na++] = 2;                       /* weights: [m, c, taps] */
        la[na] = cl, da[na++] = ic;
        lb[nb] = cl, db[nb++] = ic;                          /* windows: [c, taps, pixels] */
        for (int i = 0; i < ns; i++) {
            la[na] = geo.taps[i], da[na++] = ik + i;
            lb[nb] = geo.taps[i], db[nb++] = ik + i;
        }
        for (int i = 0; i < ns; i++)
            lb[nb] = len[3 + i], db[nb++] = 3 + i;
        load_tile(e, &k->acc[1], op_es(e, k), st, nd, k->buf[0], la, da, na);
        if (geo.patch)
            conv_patch(e, k, &geo, start, len, c0, cl, grid);
        else
            load_tile(e, &k->acc[0], op_es(e, k), st, nd, k->buf[1], lb, db, nb);
        if (!grid)
            matmul(e, k, len[2], pix, cl * taps, c0 > 0);
    }
    if (grid)
        grid_compact(e, k, &geo, len[2], len[3]);
    cg_tp_run(e, &k->tp[1], start, len);
}

void cg_contract_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    if (ir_node(e->g, k->anchor)->op == IR_OP_CONV)
        conv_item(e, k, start, len);
    else
        matmul_item(e, k, start, len);
}
