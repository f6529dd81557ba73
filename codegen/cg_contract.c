/* cg_contract.c: MATMUL and CONV work items -> LOAD, MATMUL (accumulating over depth
 * chunks), epilogue tile program, STORE.
 *
 * MATMUL item (batch index, M tile, N tile): per K chunk, A [m,k] and B [k,n] tiles
 * are loaded (strides from the operands' views: broadcast batch dims have stride 0)
 * and multiplied into C [m,n] (ISA_F_ACCUM after the first chunk). A tile identical
 * to the one already in LX (same rows, single K chunk) is not reloaded. A kernel with
 * side sums (plan_sums.c) also multiplies each A tile by a column of ones and a row of
 * ones by each B tile (one VFILL of ones per item), accumulated like C, for its
 * epilogue's zero-point corrections. A float16/bfloat16 B (a half weight of a float32
 * product, passes/halfweight.c) is loaded at its size and widened in LX (half_b).
 *
 * CONV item (n, group, output-channel tile, output-row chunk) is an im2col matmul:
 * A = weights [m, c*taps] (the weight tensor read as a matrix), B = one N-d LOAD of
 * the input windows: dims [c, k1..ks, o1 rows, o2..os] with DRAM strides
 * [C stride, dilation*stride per tap, conv stride*stride per output dim], LX dense,
 * giving [c*taps, pixels]; C = [m, pixels] is already the NCHW output tile.
 *
 * Patch form (the input rows are loaded once into an LX patch with the padding
 * filled in): the padding is filled only when the patch's border is not already the
 * pad value from the previous item of the same core program. B is then not built:
 * one MATMUL per channel chunk reads it as the implicit-GEMM window of the patch
 * (ISA_F_BWIN), depthwise convolutions included (m = 1 per group), so no im2col copy
 * is made; the products are summed in the same order as the im2col MATMUL's.
 *
 * Depthwise form (plan.h IrGeom.dw): an item takes a block of channels; with its patch
 * rows in row phase planes and the output rows at a pitch of (patch row) / s1, every
 * kernel tap reads one evenly strided run of the patch per channel, and one VEC FMA per
 * tap (isa.md) accumulates the whole block: about taps + 6 instructions per item,
 * whatever its channels and rows.
 */
#include <string.h>

#include "cg_internal.h"

/* Device dtype of kernel k's contraction operands: F32, DLF16 in fp16 mode (the
 * operand tiles then take 2 bytes an element; C accumulates in F32 either way), or I8
 * for an integer contraction (1 byte an element, C accumulates exactly in I32). */
static int op_dtype(CgEmit *e, const IrKernel *k)
{
    return pass_dev_dtype(ir_vtype(e->g, ir_node(e->g, k->anchor)->in[0])->dtype);
}

/* Bytes of an operand element of kernel k. */
static uint32_t op_es(CgEmit *e, const IrKernel *k)
{
    int dt = op_dtype(e, k);
    return dt == ISA_DT_DLF16 ? 2 : dt == ISA_DT_I8 ? 1 : 4;
}

/* Whether kernel k's B operand is float8 e4m3 (fp8 weights: --precision=fp8): the
 * MATMUL reads it with ISA_F_BF8, a byte an element. */
static bool b_fp8(CgEmit *e, const IrKernel *k)
{
    const IrNode *n = ir_node(e->g, k->anchor);
    return n->op == IR_OP_MATMUL && ir_vtype(e->g, n->in[1])->dtype == IR_DT_F8E4M3FN;
}

/* One MATMUL instruction of kernel k's operand dtype: C [m,n] (row pitch n) at c = A
 * [m,kk] (row pitch lda) at a x B [kk,n] (row pitch ldb) at b. */
static void mm_insn(CgEmit *e, const IrKernel *k, uint32_t a, uint32_t b, uint32_t c, int64_t m,
                    int64_t n, int64_t kk, int64_t lda, int64_t ldb, bool acc)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyMatmul *mm = &in.mm;
    mm->opcode = ISA_MATMUL;
    mm->dtype = (uint8_t)op_dtype(e, k);
    mm->out_dtype = mm->dtype == ISA_DT_I8 ? ISA_DT_I32 : ISA_DT_F32;
    mm->flags = (uint8_t)((acc ? ISA_F_ACCUM : 0) | (b_fp8(e, k) ? ISA_F_BF8 : 0));
    mm->a = a;
    mm->b = b;
    mm->c = c;
    mm->m = (uint32_t)m;
    mm->n = (uint32_t)n;
    mm->k = (uint32_t)kk;
    mm->lda = (uint32_t)lda;
    mm->ldb = (uint32_t)ldb;
    mm->ldc = (uint32_t)n;
    cg_push(e, &in);
}

/* One MATMUL instruction on the kernel's A (row pitch lda), B, C buffers. */
static void matmul(CgEmit *e, const IrKernel *k, int64_t m, int64_t n, int64_t kk, int64_t lda,
                   bool acc)
{
    mm_insn(e, k, k->buf[0], k->buf[1], k->buf[2], m, n, kk, lda, n, acc);
}

/* Fill the row of kl ones (buf[3]) the side sums multiply by (plan_sums.c). */
static void ones_fill(CgEmit *e, const IrKernel *k, int64_t kl)
{
    cg_push_fill(e, ISA_DT_I8, k->buf[3], (uint32_t)kl, 1);
}

/* The side sums of the item's K chunk (plan_sums.c), beside its product: A [m,kl] x the
 * ones as a column into the row sums (buf[4], [m,1]), the ones as a row x B [kl,n] into
 * the column sums (buf[5], [1,n]); accumulated over the chunks like C. */
static void side_sums(CgEmit *e, const IrKernel *k, bool rows, bool cols, int64_t m, int64_t n,
                      int64_t kl, bool acc)
{
    if (rows)
        mm_insn(e, k, k->buf[0], k->buf[3], k->buf[4], m, 1, kl, kl, 1, acc);
    if (cols)
        mm_insn(e, k, k->buf[3], k->buf[1], k->buf[5], 1, n, kl, kl, n, acc);
}

/* B tile [kl, n] of a float16/bfloat16 B (plan_half_b, passes/halfweight.c): loaded at
 * its own size into buf[3], then widened exactly to float32 into buf[1] by one VEC
 * CAST. When every piece of the load was already in buf[3] (the load cache skipped it),
 * buf[1] still holds its widened copy (only this CAST writes buf[1], right after the
 * load), so the CAST is skipped too. */
static void half_b(CgEmit *e, const IrKernel *k, const int64_t *st, int nd, const int64_t *lb,
                   const int *db, int64_t c)
{
    const IrNode *n = ir_node(e->g, k->anchor);
    uint64_t before = e->n;
    cg_load_shared(e, k, &k->acc[1], st, nd, k->buf[3], plan_half_b(e->g, k), lb, db, 2, 0, c);
    if (e->n == before || lb[0] * lb[1] == 0)
        return;
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC;
    v->fn = ISA_VF_CAST;
    v->dtype = ISA_DT_F32;
    v->src_dtype = (uint8_t)pass_dev_dtype(ir_vtype(e->g, n->in[1])->dtype);
    v->nsrc = 1;
    v->rows = (uint32_t)lb[0], v->cols = (uint32_t)lb[1];
    v->dst = k->buf[1], v->dst_rs = (int32_t)lb[1];
    v->src[0] = k->buf[3], v->src_rs[0] = (int32_t)lb[1], v->src_cs[0] = 1;
    cg_push(e, &in);
}

/* MATMUL work item; grid dims [batch..., M, N], inner [K]. */
static void matmul_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    int r = k->grid.rank, M = r - 2, N = r - 1, K = r;
    int64_t st[IR_ITER_MAX] = {0};
    memcpy(st, start, (size_t)r * sizeof *st);
    int64_t kext = k->inner.ext[0], kt = k->inner.chunk[0];
    bool rows = plan_side_sum(e->g, k, PLAN_SUM_ROWS) != IR_NONE;
    bool cols = plan_side_sum(e->g, k, PLAN_SUM_COLS) != IR_NONE;
    if ((rows || cols) && kext > 0)
        ones_fill(e, k, kext < kt ? kext : kt);
    if (kext == 0) {
        matmul(e, k, len[M], len[N], 0, 0, false);
        side_sums(e, k, rows, cols, len[M], len[N], 0, false);
    }
    for (int64_t k0 = 0; k0 < kext; k0 += kt) {
        int64_t kl = kext - k0 < kt ? kext - k0 : kt;
        st[K] = k0;
        int64_t la[2] = {len[M], kl}, lb[2] = {kl, len[N]};
        int da[2] = {M, K}, db[2] = {K, N};
        cg_load_shared(e, k, &k->acc[0], st, r + 1, k->buf[0], op_es(e, k), la, da, 2, 0, k0 / kt);
        if (plan_half_b(e->g, k))
            half_b(e, k, st, r + 1, lb, db, k0 / kt);
        else
            cg_load_shared(e, k, &k->acc[1], st, r + 1, k->buf[1], b_fp8(e, k) ? 1 : op_es(e, k),
                           lb, db, 2, 0, k0 / kt);
        matmul(e, k, len[M], len[N], kl, kl, k0 > 0);
        side_sums(e, k, rows, cols, len[M], len[N], kl, k0 > 0);
    }
    cg_tp_run(e, &k->tp[1], start, len);
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
    cg_push_fill(e, dt, patch, (uint32_t)(cl * rin * wp), value);
}

/* Patch form, one channel chunk of cl channels: one MATMUL whose B is the implicit-GEMM
 * window of the patch [cl, rin, wp] (isa.md, ISA_F_BWIN): B[(a, i, j), (r, o)] =
 * patch[a, r*s0 + i*d0, o*s1 + j*d1] (banded: patch[a, i*band + r*s0, ...]), so C
 * [m, rows*O1] is the output tile itself. */
static void conv_window(CgEmit *e, const IrKernel *k, const IrGeom *geo, int64_t m,
                        int64_t on, int64_t cl, int64_t lda, bool acc)
{
    int64_t rin = plan_patch_rows(geo, on), wp = patch_width(geo);
    int64_t kk = cl * geo->k2[0] * geo->k2[1];
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyMatmul *mm = &in.mm;
    mm->opcode = ISA_MATMUL;
    mm->dtype = (uint8_t)op_dtype(e, k);
    mm->out_dtype = mm->dtype == ISA_DT_I8 ? ISA_DT_I32 : ISA_DT_F32;
    mm->flags = (uint8_t)(ISA_F_BWIN | (acc ? ISA_F_ACCUM : 0));
    mm->a = k->buf[0], mm->b = k->buf[3], mm->c = k->buf[2];
    mm->m = (uint32_t)m, mm->n = (uint32_t)(on * geo->out2[1]), mm->k = (uint32_t)kk;
    mm->lda = (uint32_t)lda, mm->ldc = mm->n;
    mm->bw_kext[0] = (uint32_t)cl, mm->bw_ks[0] = (int32_t)(rin * wp);
    int64_t tap_rows = plan_patch_banded(geo, on) ? plan_patch_band(geo, on) : geo->d2[0];
    mm->bw_kext[1] = (uint32_t)geo->k2[0], mm->bw_ks[1] = (int32_t)(tap_rows * wp);
    mm->bw_kext[2] = (uint32_t)geo->k2[1], mm->bw_ks[2] = (int32_t)geo->d2[1];
    mm->bw_next[0] = (uint32_t)on, mm->bw_ns[0] = (int32_t)(geo->s2[0] * wp);
    mm->bw_next[1] = (uint32_t)geo->out2[1], mm->bw_ns[1] = (int32_t)geo->s2[1];
    cg_push(e, &in);
}

/* Load the input rows d ([channels, rows, width]) of the conv item at start (channel
 * chunk c) into the patch at lx. The items of every output-channel tile share them:
 * loaded in pieces of channels like cg_load_shared, each from DRAM on one sharer and over
 * the ring on the others. */
static void load_patch(CgEmit *e, const IrKernel *k, const int64_t *start, int64_t c,
                       uint32_t seg, int64_t off, uint32_t lx, const CgDims *d)
{
    const IrAccess *a = &k->acc[0];
    int64_t sh = cg_ring_sharers(k, a), m = d->len[0], np = m < sh ? m : sh;
    unsigned es = op_es(e, k);
    np = np < CG_CACHE_MAX / 2 ? np : CG_CACHE_MAX / 2;
    np = np > 1 ? np : 1;
    for (int64_t p = 0, r0 = 0; p < np; p++) {
        int64_t r1 = m * (p + 1) / np;
        CgDims q = *d;
        q.len[0] = r1 - r0;
        e->load_flags = sh > 1 && cg_ring_recv(e, k, a, start, c * np + p) ? ISA_F_RING : 0;
        cg_dma(e, ISA_LOAD, seg, off + r0 * d->ds[0] * es, lx + (uint32_t)(r0 * d->ls[0] * es),
               es, &q);
        r0 = r1;
    }
    e->load_flags = 0;
}

/* Loads the input rows [lo, hi) of channels [c0, c0 + cl) of the conv item at start
 * into the patch at LX byte lx (where row lo goes), rows wp apart, a channel rin rows. */
static void patch_rows_load(CgEmit *e, const IrKernel *k, const IrGeom *geo,
                            const int64_t *start, int64_t c0, int64_t cl, int64_t lo,
                            int64_t hi, int64_t rin, int64_t wp, uint32_t lx)
{
    const IrView *xv = &e->s->val[geo->x].view;
    int dx = 2, dy = geo->nsp == 2 ? 3 : 2;         /* input dims of canonical 0, 1 */
    CgDims d = {0};
    cg_dims_add(&d, cl, xv->stride[1], rin * wp);
    cg_dims_add(&d, hi - lo, xv->stride[dx], wp);
    cg_dims_add(&d, geo->in_ext[1], geo->nsp == 2 ? xv->stride[dy] : 1, 1);
    uint32_t seg;
    int64_t off;
    cg_root(e, xv->root, &seg, &off);
    int64_t el = xv->off + start[0] * xv->stride[0] +
                 (start[1] * geo->cg + c0) * xv->stride[1] + lo * xv->stride[dx];
    load_patch(e, k, start, c0 / k->inner.chunk[0], seg, off + el * op_es(e, k), lx, &d);
}

/* Patch form (plan.h IrGeom.patch) of one channel chunk [c0, c0+cl): load the item's
 * input rows into the patch (filling the padding), then multiply through its window.
 * A banded patch (plan_patch_banded) holds each vertical tap's band of rows, loaded
 * one band at a time, and is filled whenever one of them reaches the padding. */
static void conv_patch(CgEmit *e, const IrKernel *k, const IrGeom *geo, const int64_t *start,
                       const int64_t *len, int64_t c0, int64_t cl, int64_t lda)
{
    int64_t on = len[3], r0 = start[3] * geo->s2[0], p0 = geo->pad_lo[0];
    int64_t rin = plan_patch_rows(geo, on), wp = patch_width(geo);
    bool banded = plan_patch_banded(geo, on);
    int64_t nb = banded ? geo->k2[0] : 1, span = banded ? plan_patch_band(geo, on) : rin;
    uint32_t patch = k->buf[3], es = op_es(e, k);
    int dt = op_dtype(e, k);
    bool partial = wp != geo->in_ext[1];
    for (int64_t b = 0; b < nb; b++) {             /* band b: padded rows from pr */
        int64_t pr = r0 + b * geo->d2[0];
        partial |= pr - p0 < 0 || pr + span - p0 > geo->in_ext[0];
    }
    int64_t lo = r0 - p0 > 0 ? r0 - p0 : 0;
    int64_t hi = r0 + rin - p0 < geo->in_ext[0] ? r0 + rin - p0 : geo->in_ext[0];
    int64_t rlo = hi > lo ? lo + p0 - r0 : 0, rhi = hi > lo ? hi + p0 - r0 : 0;
    e->patch.valid &= !banded;                     /* its pad rows are not a border */
    if (partial)
        patch_fill(e, dt, patch, geo, cl, rin, wp, rlo, rhi);
    e->patch = (CgPatch){!banded, patch, cg_value_bits(dt, geo->pad_value), cl, rin, wp,
                         rlo, rhi};
    for (int64_t b = 0; b < nb; b++) {
        int64_t pr = r0 + b * geo->d2[0];
        int64_t blo = pr - p0 > 0 ? pr - p0 : 0;
        int64_t bhi = pr + span - p0 < geo->in_ext[0] ? pr + span - p0 : geo->in_ext[0];
        if (bhi > blo)
            patch_rows_load(e, k, geo, start, c0, cl, blo, bhi, rin, wp,
                            patch + (uint32_t)(((b * span + blo + p0 - pr) * wp +
                                                geo->pad_lo[1]) * es));
    }
    conv_window(e, k, geo, len[2], on, cl, lda, c0 > 0);
}

/* Depthwise form: the first padded row the item at (start, len) loads, rlo (the patch
 * row of input row max(0, r0)), and the end of its rows, rhi; returns the item's phase
 * ph = rlo % s0 (plan_dw_patch: padded row h lives in phase plane (h - ph) mod s0). */
static int64_t dw_rows_of(const IrGeom *geo, const int64_t *start, const int64_t *len,
                          int64_t *rlo, int64_t *rhi)
{
    int64_t r0 = start[3] * geo->s2[0] - geo->pad_lo[0], rin = plan_patch_span(geo, len[3]);
    int64_t lo = r0 > 0 ? r0 : 0, hi = r0 + rin < geo->in_ext[0] ? r0 + rin : geo->in_ext[0];
    *rlo = hi > lo ? lo - r0 : 0;
    *rhi = hi > lo ? hi - r0 : 0;
    return *rlo % geo->s2[0];
}

/* LX element offset in a channel's patch of padded row h, column 0 (plan_dw_patch:
 * plane (h - ph) mod s0, row (h - ph + u*s0) / s0 with u = 1 for strided rows). */
static int64_t dw_row_at(const IrGeom *geo, int64_t h, int64_t ph, int64_t rh, int64_t ww)
{
    int64_t s0 = geo->s2[0], u = s0 > 1, x = h - ph + u * s0;
    return (x % s0 * rh + x / s0) * ww;
}

/* Rows per phase plane of the depthwise patch (plan_dw_patch's size over s0 planes of
 * ww), with its pitch and width; the call comes first (operands of / are unsequenced). */
static int64_t dw_plane_rows(const IrGeom *geo, int64_t len3, int64_t *pitch, int64_t *ww)
{
    int64_t bytes = plan_dw_patch(geo, len3, pitch, ww);
    return bytes / (geo->s2[0] * *ww);
}

/* Depthwise form: one LOAD of the padded patch rows h + g*s0 + p (g < q, p < np: each
 * group of rows in consecutive phase planes) of the gl channels of the item at start
 * (phase ph, padded row 0 = input row r0) into the patch [gl, s0 planes of rh rows, ww].
 * In DRAM the rows are consecutive: one run of bytes per channel. */
static void dw_rows(CgEmit *e, const IrKernel *k, const IrGeom *geo, const int64_t *start,
                    const int64_t *len, int64_t h, int64_t q, int64_t np)
{
    const IrView *xv = &e->s->val[geo->x].view;
    int64_t s0 = geo->s2[0], sx = xv->stride[2], sy = geo->nsp == 2 ? xv->stride[3] : 1;
    int64_t pitch, ww, rlo, rhi;
    int64_t rh = dw_plane_rows(geo, len[3], &pitch, &ww);
    int64_t ph = dw_rows_of(geo, start, len, &rlo, &rhi);
    int64_t r0 = start[3] * s0 - geo->pad_lo[0];
    uint32_t es = op_es(e, k), seg;
    int64_t off;
    CgDims d = {0};
    cg_dims_add(&d, len[1], xv->stride[1], s0 * rh * ww);
    cg_dims_add(&d, q, s0 * sx, ww);
    cg_dims_add(&d, np, sx, rh * ww);
    cg_dims_add(&d, geo->in_ext[1], sy, 1);
    cg_root(e, xv->root, &seg, &off);
    int64_t el = xv->off + start[0] * xv->stride[0] + start[1] * xv->stride[1] + (h + r0) * sx;
    int64_t at = dw_row_at(geo, h, ph, rh, ww) + geo->pad_lo[1];
    cg_dma(e, ISA_LOAD, seg, off + el * es, k->buf[3] + (uint32_t)(at * es), es, &d);
}

/* Depthwise form (plan.h IrGeom.dw): load the input rows of the item's gl channels
 * into the patch's row phase planes, filling the padding: the whole groups of s0 rows
 * from the first loaded one in one LOAD, the rows after the last group in one more. */
static void dw_patch(CgEmit *e, const IrKernel *k, const IrGeom *geo, const int64_t *start,
                     const int64_t *len)
{
    int64_t s0 = geo->s2[0], pitch, ww, rlo, rhi;
    int64_t rh = dw_plane_rows(geo, len[3], &pitch, &ww);
    dw_rows_of(geo, start, len, &rlo, &rhi);
    int dt = op_dtype(e, k);
    if (s0 > 1)            /* where a row lies moves with the phase: no border is reused */
        e->patch.valid = false;
    if (rlo > 0 || rhi < plan_patch_span(geo, len[3]) || ww != geo->in_ext[1] || s0 > 1)
        patch_fill(e, dt, k->buf[3], geo, len[1], s0 * rh, ww, rlo, rhi);
    e->patch = (CgPatch){s0 == 1, k->buf[3], cg_value_bits(dt, geo->pad_value), len[1],
                         s0 * rh, ww, rlo, rhi};
    int64_t q = (rhi - rlo) / s0, h = rlo + q * s0;
    if (q > 0)
        dw_rows(e, k, geo, start, len, rlo, q, s0);
    if (h < rhi)
        dw_rows(e, k, geo, start, len, h, 1, rhi - h);
}

/* One VEC of the depthwise taps: dst [rows, cols] (row stride drs) = fn(src0 (row stride
 * rs0, column stride cs0, src_dtype sdt), src1 per-row broadcast (row stride rs1), and
 * for FMA the addend dst itself). */
static void dw_vec(CgEmit *e, int fn, int sdt, uint32_t dst, int64_t rows, int64_t cols,
                   int64_t drs, uint32_t s0, int64_t rs0, int64_t cs0, uint32_t s1, int64_t rs1)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC;
    v->dtype = ISA_DT_F32;
    v->src_dtype = (uint8_t)(sdt == ISA_DT_F32 ? 0 : sdt);
    v->fn = (uint16_t)fn;
    v->nsrc = fn == ISA_VF_FMA ? 3 : fn == ISA_VF_COPY ? 1 : 2;
    v->rows = (uint32_t)rows, v->cols = (uint32_t)cols;
    v->dst = dst, v->dst_rs = (int32_t)drs;
    v->src[0] = s0, v->src_rs[0] = (int32_t)rs0, v->src_cs[0] = (int32_t)cs0;
    if (v->nsrc > 1)
        v->src[1] = s1, v->src_rs[1] = (int32_t)rs1;
    if (v->nsrc > 2)
        v->src[2] = dst, v->src_rs[2] = (int32_t)drs, v->src_cs[2] = 1;
    cg_push(e, &in);
}

/* Depthwise form: per kernel tap one VEC over the item's channels (rows) and all its
 * output rows at the pitch ww / s1 (columns; the patch read with column stride s1, so
 * that output (r, o) reads padded row r*s0 + i*d0, in its phase plane, column
 * o*s1 + j*d1): MUL for the
 * first tap, then FMA, the weight a per-row broadcast operand; one COPY then drops the
 * pitch's spare columns, leaving C [gl, rows*OW] for the epilogue. */
static void dw_taps(CgEmit *e, const IrKernel *k, const IrGeom *geo, const int64_t *start,
                    const int64_t *len)
{
    int64_t gl = len[1], on = len[3], s0 = geo->s2[0], pitch, ww, rlo, rhi;
    int64_t cs = plan_dw_patch(geo, on, &pitch, &ww), rh = cs / (s0 * ww);
    int64_t ph = dw_rows_of(geo, start, len, &rlo, &rhi);
    int64_t taps = geo->k2[0] * geo->k2[1], ow = geo->out2[1];
    int dt = op_dtype(e, k);
    uint32_t es = op_es(e, k), acc = k->buf[1];
    for (int64_t i = 0; i < geo->k2[0]; i++)
        for (int64_t j = 0; j < geo->k2[1]; j++) {
            int64_t tap = i * geo->k2[1] + j, ri = i * geo->d2[0];
            int64_t at = dw_row_at(geo, ri, ph, rh, ww) + j * geo->d2[1];
            dw_vec(e, tap ? ISA_VF_FMA : ISA_VF_MUL, dt, acc, gl, (on - 1) * pitch + ow,
                   on * pitch, k->buf[3] + (uint32_t)(at * es), cs, geo->s2[1],
                   k->buf[0] + (uint32_t)(tap * es), taps);
        }
    dw_vec(e, ISA_VF_COPY, ISA_DT_F32, k->buf[2], gl * on, ow, ow, acc, pitch, 1, 0, 0);
}

/* Depthwise CONV work item (plan.h IrGeom.dw); grid dims [N, G (a block of channels),
 * 1, O1..Os]: the weights [gl, taps] in one LOAD, the patch, the taps, the epilogue. */
static void dw_item(CgEmit *e, const IrKernel *k, const IrGeom *geo, const int64_t *start,
                    const int64_t *len)
{
    int ns = geo->nsp, ik = 4 + ns, nd = 4 + 2 * ns, na = 0;
    int64_t st[IR_ITER_MAX] = {0}, la[1 + IR_MAX_RANK];
    int da[1 + IR_MAX_RANK];
    memcpy(st, start, (size_t)(3 + ns) * sizeof *st);
    la[na] = len[1], da[na++] = 1;
    for (int i = 0; i < ns; i++)
        la[na] = geo->taps[i], da[na++] = ik + i;
    cg_load_shared(e, k, &k->acc[1], st, nd, k->buf[0], op_es(e, k), la, da, na, 0, 0);
    dw_patch(e, k, geo, start, len);
    dw_taps(e, k, geo, start, len);
    cg_tp_run(e, &k->tp[1], start, len);
}

/* CONV work item; grid dims [N, G, Mg, O1..Os], inner [Cg]; access space adds
 * [Cg, K1..Ks]. */
static void conv_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    IrGeom geo;
    plan_geom(e->g, k, &geo);
    if (plan_dw_form(k, &geo)) {
        dw_item(e, k, &geo, start, len);
        return;
    }
    int ns = geo.nsp, ic = 3 + ns, ik = 4 + ns, nd = 4 + 2 * ns;
    int64_t st[IR_ITER_MAX] = {0};
    memcpy(st, start, (size_t)(3 + ns) * sizeof *st);
    int64_t taps = 1, pix = 1;
    for (int i = 0; i < ns; i++) {
        taps *= geo.taps[i];
        pix *= len[3 + i];
    }
    int64_t cext = k->inner.ext[0], ct = k->inner.chunk[0];
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
        int64_t lda = plan_conv_lda(cl * taps, op_es(e, k));
        cg_load_shared(e, k, &k->acc[1], st, nd, k->buf[0], op_es(e, k), la, da, na, lda,
                       c0 / ct);
        if (geo.patch) {
            conv_patch(e, k, &geo, start, len, c0, cl, lda);
        } else {
            cg_load_shared(e, k, &k->acc[0], st, nd, k->buf[1], op_es(e, k), lb, db, nb, 0,
                           c0 / ct);
            matmul(e, k, len[2], pix, cl * taps, lda, c0 > 0);
        }
    }
    cg_tp_run(e, &k->tp[1], start, len);
}

void cg_contract_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    if (ir_node(e->g, k->anchor)->op == IR_OP_CONV)
        conv_item(e, k, start, len);
    else
        matmul_item(e, k, start, len);
}
