/* rt_verify_insn.c: static verification of one instruction against the bundle's
 * target and segment table: opcode, dtypes, flags, and that every LX and DRAM byte
 * range it can touch lies inside the scratchpad budget or its segment, the DRAM range
 * within one core window (target.core_window_mib; isa.md, "DRAM windows"). Ranges are
 * computed in 128-bit arithmetic from extents and strides (any sign, stride 0).
 */
#include <stdio.h>

#include "rt_exec.h"
#include "rt_model.h"

#define RT_MAX_INSN_ELEMS ((uint64_t)1 << 32)

typedef __int128 i128;

typedef struct {
    const spy_model *m;
    char *msg;
    size_t len;
} Vctx;

/* Writes a failure message; always returns false. */
__attribute__((format(printf, 2, 3))) static bool fail(Vctx *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, v->len, fmt, ap);
    va_end(ap);
    return false;
}

/* Byte span [lo, hi) relative to the base touched by an n-d access; false if empty. */
static bool span(int n, const uint64_t *dims, const int64_t *strides, unsigned esize, i128 *lo,
                 i128 *hi) {
    i128 mn = 0, mx = 0;
    for (int d = 0; d < n; d++) {
        if (dims[d] == 0)
            return false;
        i128 ext = (i128)(dims[d] - 1) * strides[d];
        if (ext < 0)
            mn += ext;
        else
            mx += ext;
    }
    *lo = mn * esize;
    *hi = (mx + 1) * esize;
    return true;
}

/* Product of extents, saturated above RT_MAX_INSN_ELEMS. */
static uint64_t elems(int n, const uint64_t *dims) {
    i128 p = 1;
    for (int d = 0; d < n; d++) {
        p *= dims[d];
        if (p > (i128)RT_MAX_INSN_ELEMS)
            return RT_MAX_INSN_ELEMS + 1;
    }
    return (uint64_t)p;
}

/* Checks that the 2-d LX access (rows x cols, strides rs/cs) at base fits the budget. */
static bool lx2(Vctx *v, const char *what, uint64_t base, uint64_t rows, int64_t rs,
                uint64_t cols, int64_t cs, unsigned esize) {
    uint64_t dims[2] = {rows, cols};
    int64_t st[2] = {rs, cs};
    i128 lo, hi;
    if (!span(2, dims, st, esize, &lo, &hi))
        return true;
    i128 budget = v->m->target.lx_budget_bytes;
    if ((i128)base + lo < 0 || (i128)base + hi > budget)
        return fail(v, "%s LX range [%lld, %lld) outside the scratchpad budget [0, %u)", what,
                    (long long)((i128)base + lo), (long long)((i128)base + hi),
                    v->m->target.lx_budget_bytes);
    return true;
}

/* Checks an n-d LX access. */
static bool lxn(Vctx *v, const char *what, uint64_t base, int n, const uint64_t *dims,
                const int64_t *st, unsigned esize) {
    i128 lo, hi;
    if (!span(n, dims, st, esize, &lo, &hi))
        return true;
    if ((i128)base + lo < 0 || (i128)base + hi > (i128)v->m->target.lx_budget_bytes)
        return fail(v, "%s LX range [%lld, %lld) outside the scratchpad budget [0, %u)", what,
                    (long long)((i128)base + lo), (long long)((i128)base + hi),
                    v->m->target.lx_budget_bytes);
    return true;
}

/* Checks an n-d DRAM access in segment seg; store refuses read-only segments. */
static bool dram(Vctx *v, const char *what, uint32_t seg, int64_t base, int n,
                 const uint64_t *dims, const int64_t *st, unsigned esize, bool store) {
    const spy_model *m = v->m;
    if (seg >= m->nsegs)
        return fail(v, "%s segment %u out of range (%u segments)", what, seg, m->nsegs);
    const SpySegmentDesc *s = &m->segs[seg];
    if (store && s->kind == SPY_SEGK_CONST)
        return fail(v, "%s into the constant segment %u", what, seg);
    if (store && s->kind == SPY_SEGK_IO && m->tensors[s->tensor].role == SPY_ROLE_INPUT)
        return fail(v, "%s into segment %u of input '%s' (inputs are read-only)", what, seg,
                    rt_str(m, m->tensors[s->tensor].name));
    i128 lo, hi;
    if (!span(n, dims, st, esize, &lo, &hi)) {   /* moves nothing; its base must still
                                                   lie in the segment: the runtime forms
                                                   the address, the timing reads it */
        if (base < 0 || (uint64_t)base > s->size)
            return fail(v, "%s DRAM offset %lld outside segment %u (%llu bytes)", what,
                        (long long)base, seg, (unsigned long long)s->size);
        return true;
    }
    if ((i128)base + lo < 0 || (i128)base + hi > (i128)s->size)
        return fail(v, "%s DRAM range [%lld, %lld) outside segment %u (%llu bytes)", what,
                    (long long)((i128)base + lo), (long long)((i128)base + hi), seg,
                    (unsigned long long)s->size);
    i128 window = (i128)m->target.core_window_mib << 20;
    if (hi - lo > window)
        return fail(v, "%s DRAM range [%lld, %lld) of segment %u spans more than the core's "
                    "%u MiB window", what, (long long)((i128)base + lo),
                    (long long)((i128)base + hi), seg, m->target.core_window_mib);
    return true;
}

/* Whether esize is a valid raw element size. */
static bool esize_ok(unsigned e) {
    return e == 1 || e == 2 || e == 4 || e == 8;
}

/* LOAD / STORE. */
static bool v_dma(Vctx *v, const SpyDma *d) {
    bool store = d->opcode == ISA_STORE;
    const char *nm = store ? "STORE" : "LOAD";
    if (!esize_ok(d->esize))
        return fail(v, "%s esize %u not 1, 2, 4 or 8", nm, d->esize);
    if (d->flags & ~(ISA_F_F32 | (store ? 0 : ISA_F_RING)))
        return fail(v, "%s unknown flags 0x%x", nm, d->flags);
    if ((d->flags & ISA_F_RING) && !(v->m->hdr->features & SPY_FEAT_RING))
        return fail(v, "LOAD over the ring in a bundle without feature bit SPY_FEAT_RING");
    if ((d->flags & ISA_F_F32) && d->esize != 2)
        return fail(v, "%s float32 <-> DLFloat16 conversion with esize %u (must be 2)", nm,
                    d->esize);
    if (d->ndim > ISA_MAX_DIMS)
        return fail(v, "%s ndim %u > %d", nm, d->ndim, ISA_MAX_DIMS);
    uint64_t dims[ISA_MAX_DIMS];
    int64_t ds[ISA_MAX_DIMS], ls[ISA_MAX_DIMS];
    for (int i = 0; i < ISA_MAX_DIMS; i++) {
        if (i >= d->ndim && d->dims[i] != 1)
            return fail(v, "%s unused dims[%d] = %u (must be 1; ndim = %u)", nm, i, d->dims[i],
                        d->ndim);
        dims[i] = d->dims[i];
        ds[i] = d->dram_stride[i];
        ls[i] = d->lx_stride[i];
    }
    if (elems(ISA_MAX_DIMS, dims) > RT_MAX_INSN_ELEMS)
        return fail(v, "%s moves more than 2^32 elements", nm);
    return lxn(v, nm, d->lx, ISA_MAX_DIMS, dims, ls, d->esize) &&
           dram(v, nm, d->seg, d->dram_off, ISA_MAX_DIMS, dims, ds,
                (d->flags & ISA_F_F32) ? 4u : d->esize, store);
}

/* GATHER. */
static bool v_gather(Vctx *v, const SpyGather *g) {
    if (!esize_ok(g->esize))
        return fail(v, "GATHER esize %u not 1, 2, 4 or 8", g->esize);
    if (g->flags)
        return fail(v, "GATHER unknown flags 0x%x", g->flags);
    uint64_t dn[2] = {g->nidx, g->row_elems};
    if (elems(2, dn) > RT_MAX_INSN_ELEMS)
        return fail(v, "GATHER moves more than 2^32 elements");
    if (!lx2(v, "GATHER index", g->lx_idx, 1, 0, g->nidx, 1, 4) ||
        !lx2(v, "GATHER destination", g->lx_dst, g->nidx, g->dst_row_stride, g->row_elems, 1,
             g->esize))
        return false;
    uint64_t tab[2] = {g->nidx ? g->bound : 0, g->row_elems};
    int64_t ts[2] = {g->row_stride, 1};
    return dram(v, "GATHER table", g->seg, g->dram_off, 2, tab, ts, g->esize, false);
}

/* SCATTER: like GATHER with the table written; the bundle must declare the feature. */
static bool v_scatter(Vctx *v, const SpyScatter *s) {
    if (!(v->m->hdr->features & SPY_FEAT_SCATTER))
        return fail(v, "SCATTER in a bundle without the SCATTER feature bit");
    if (!esize_ok(s->esize))
        return fail(v, "SCATTER esize %u not 1, 2, 4 or 8", s->esize);
    if (s->flags)
        return fail(v, "SCATTER unknown flags 0x%x", s->flags);
    uint64_t dn[2] = {s->nidx, s->row_elems};
    if (elems(2, dn) > RT_MAX_INSN_ELEMS)
        return fail(v, "SCATTER moves more than 2^32 elements");
    if (!lx2(v, "SCATTER index", s->lx_idx, 1, 0, s->nidx, 1, 4) ||
        !lx2(v, "SCATTER source", s->lx_src, s->nidx, s->src_row_stride, s->row_elems, 1,
             s->esize))
        return false;
    uint64_t tab[2] = {s->nidx ? s->bound : 0, s->row_elems};
    int64_t ts[2] = {s->row_stride, 1};
    return dram(v, "SCATTER table", s->seg, s->dram_off, 2, tab, ts, s->esize, true);
}

/* Whether two byte ranges [a, a+na) and [b, b+nb) intersect. */
static bool overlaps(i128 a, i128 na, i128 b, i128 nb) {
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

/* The B window of a MATMUL with ISA_F_BWIN (isa.md): extents that multiply to k and n,
 * ldb 0, and its byte range [*lo, *hi) relative to b inside LX (*hi = *lo: empty). */
static bool v_bwin(Vctx *v, const SpyMatmul *mm, unsigned ea, i128 *lo, i128 *hi) {
    uint64_t d[5] = {mm->bw_kext[0], mm->bw_kext[1], mm->bw_kext[2], mm->bw_next[0],
                     mm->bw_next[1]};
    int64_t st[5] = {mm->bw_ks[0], mm->bw_ks[1], mm->bw_ks[2], mm->bw_ns[0], mm->bw_ns[1]};
    if (mm->ldb != 0)
        return fail(v, "MATMUL B window: ldb %u is not 0", mm->ldb);
    if ((i128)d[0] * d[1] * d[2] != mm->k || (i128)d[3] * d[4] != mm->n)
        return fail(v, "MATMUL B window: extents %llux%llux%llu, %llux%llu do not give k %u, "
                    "n %u", (unsigned long long)d[0], (unsigned long long)d[1],
                    (unsigned long long)d[2], (unsigned long long)d[3],
                    (unsigned long long)d[4], mm->k, mm->n);
    *lo = *hi = 0;
    if (!mm->m || !span(5, d, st, ea, lo, hi))
        return true;
    i128 budget = v->m->target.lx_budget_bytes;
    if ((i128)mm->b + *lo < 0 || (i128)mm->b + *hi > budget)
        return fail(v, "MATMUL B window LX range [%lld, %lld) outside the scratchpad budget "
                    "[0, %u)", (long long)((i128)mm->b + *lo), (long long)((i128)mm->b + *hi),
                    v->m->target.lx_budget_bytes);
    return true;
}

/* MATMUL. */
static bool v_matmul(Vctx *v, const SpyMatmul *mm) {
    unsigned ea, ec;
    if (mm->dtype == ISA_DT_F32 && mm->out_dtype == ISA_DT_F32)
        ea = 4, ec = 4;
    else if (mm->dtype == ISA_DT_DLF16 && mm->out_dtype == ISA_DT_F32)
        ea = 2, ec = 4;
    else if (mm->dtype == ISA_DT_I8 && mm->out_dtype == ISA_DT_I32)
        ea = 1, ec = 4;
    else
        return fail(v, "MATMUL dtype %s -> %s not supported (f32->f32, dlf16->f32, i8->i32)",
                    rt_dtype_name(mm->dtype), rt_dtype_name(mm->out_dtype));
    if (mm->flags & ~(ISA_F_ACCUM | ISA_F_BWIN | ISA_F_BF8))
        return fail(v, "MATMUL unknown flags 0x%x", mm->flags);
    unsigned eb = ea;                    /* B's element size */
    if (mm->flags & ISA_F_BF8) {
        if (mm->dtype != ISA_DT_DLF16 || (mm->flags & ISA_F_BWIN))
            return fail(v, "MATMUL BF8 (a float8 B) needs dtype dlf16 and no BWIN");
        if (!(v->m->hdr->features & SPY_FEAT_FP8W))
            return fail(v, "MATMUL with a float8 B in a bundle without the FP8W feature bit");
        eb = 1;
    }
    uint64_t d3[3] = {mm->m, mm->n, mm->k};
    if (elems(3, d3) > RT_MAX_INSN_ELEMS)
        return fail(v, "MATMUL m*n*k above 2^32");
    bool win = mm->flags & ISA_F_BWIN;
    if (win && !(v->m->hdr->features & SPY_FEAT_BWIN))
        return fail(v, "MATMUL with a window B in a bundle without the BWIN feature bit");
    i128 blo = 0, bhi = ((i128)(mm->k - 1) * mm->ldb + mm->n) * eb;
    if (win && !v_bwin(v, mm, ea, &blo, &bhi))
        return false;
    if (!lx2(v, "MATMUL A", mm->a, mm->m, mm->lda, mm->k, 1, ea) ||
        (!win && !lx2(v, "MATMUL B", mm->b, mm->k, mm->ldb, mm->n, 1, eb)) ||
        !lx2(v, "MATMUL C", mm->c, mm->m, mm->ldc, mm->n, 1, ec))
        return false;
    if (mm->m && mm->n && mm->k) {
        i128 ca = mm->c, cn = ((i128)(mm->m - 1) * mm->ldc + mm->n) * ec;
        i128 an = ((i128)(mm->m - 1) * mm->lda + mm->k) * ea;
        if (overlaps(ca, cn, mm->a, an) || overlaps(ca, cn, (i128)mm->b + blo, bhi - blo))
            return fail(v, "MATMUL C overlaps an operand");
    }
    return true;
}

/* VEC. */
static bool v_vec(Vctx *v, const SpyVec *x) {
    if (x->fn >= ISA_VF_COUNT)
        return fail(v, "VEC unknown function %u", x->fn);
    const char *fn = rt_vecfn_name(x->fn);
    int ar = rt_vecfn_arity(x->fn);
    if (x->flags & ~(ISA_F_IMM | ISA_F_IMM_A | ISA_F_NOSAT))
        return fail(v, "VEC %s unknown flags 0x%x", fn, x->flags);
    int imm_q = -1;
    if ((x->flags & ISA_F_IMM) && (x->flags & ISA_F_IMM_A))
        return fail(v, "VEC %s has both IMM and IMM_A", fn);
    if (x->flags & ISA_F_IMM) {
        if (ar < 2)
            return fail(v, "VEC %s: IMM on a unary function", fn);
        imm_q = 1;
    }
    if (x->flags & ISA_F_IMM_A)
        imm_q = 0;
    if (!(x->nsrc == ar || (imm_q >= 0 && x->nsrc == ar - 1)))
        return fail(v, "VEC %s: nsrc %u, function takes %d", fn, x->nsrc, ar);
    int sdt = x->src_dtype ? x->src_dtype : x->dtype;
    const char *why = "";
    if (!rt_vecfn_types_ok(x->fn, x->dtype, sdt, &why))
        return fail(v, "VEC %s: dtype %s, src_dtype %s: %s", fn, rt_dtype_name(x->dtype),
                    rt_dtype_name(sdt), why);
    uint64_t d2[2] = {x->rows, x->cols};
    if (elems(2, d2) > RT_MAX_INSN_ELEMS)
        return fail(v, "VEC %s processes more than 2^32 elements", fn);
    if (!lx2(v, "VEC dst", x->dst, x->rows, x->dst_rs, x->cols, 1, rt_dtype_size(x->dtype)))
        return false;
    for (int q = 0; q < ar; q++) {
        if (q == imm_q)
            continue;
        int qdt = (x->fn == ISA_VF_SELECT && q == 0) ? ISA_DT_BOOL
                : (x->fn == ISA_VF_FMA && q == 2) ? x->dtype : sdt;
        /* the operand's name for a message, without formatting it for every VEC */
        static const char *const what[3] = {"VEC src[0]", "VEC src[1]", "VEC src[2]"};
        if (!lx2(v, what[q], x->src[q], x->rows, x->src_rs[q], x->cols, x->src_cs[q],
                 rt_dtype_size(qdt)))
            return false;
    }
    return true;
}

/* VREDUCE. */
static bool v_vreduce(Vctx *v, const SpyVReduce *r) {
    if (r->fn >= ISA_RF_COUNT)
        return fail(v, "VREDUCE unknown function %u", r->fn);
    bool arg = r->fn == ISA_RF_ARGMAX || r->fn == ISA_RF_ARGMIN;
    bool ok_dt = (rt_dtype_computable(r->dtype) || r->dtype == ISA_DT_DLF16) &&
                 (r->dtype != ISA_DT_BOOL || r->fn == ISA_RF_MAX || r->fn == ISA_RF_MIN);
    if (!ok_dt)
        return fail(v, "VREDUCE fn %u on dtype %s not supported", r->fn,
                    rt_dtype_name(r->dtype));
    if (r->flags & ~(ISA_F_ACCUM | ISA_F_LAST))
        return fail(v, "VREDUCE unknown flags 0x%x", r->flags);
    if (arg && (r->flags & ISA_F_ACCUM))
        return fail(v, "VREDUCE ACCUM is not allowed with ARGMAX/ARGMIN");
    if (!arg && (r->flags & ISA_F_LAST))
        return fail(v, "VREDUCE LAST is only allowed with ARGMAX/ARGMIN");
    uint64_t d2[2] = {r->rows, r->len};
    if (elems(2, d2) > RT_MAX_INSN_ELEMS)
        return fail(v, "VREDUCE processes more than 2^32 elements");
    unsigned es = rt_dtype_size(r->dtype);
    return lx2(v, "VREDUCE src", r->src, r->rows, r->src_rs, r->len, r->src_cs, es) &&
           lx2(v, "VREDUCE dst", r->dst, r->rows, r->dst_rs, 1, 1, arg ? 4 : es);
}

/* VFILL. */
static bool v_vfill(Vctx *v, const SpyVFill *f) {
    if (!rt_dtype_movable(f->dtype))
        return fail(v, "VFILL dtype %u not supported", f->dtype);
    if (f->flags)
        return fail(v, "VFILL unknown flags 0x%x", f->flags);
    return lx2(v, "VFILL", f->dst, 1, 0, f->n, 1, rt_dtype_size(f->dtype));
}

/* VSCAN. */
static bool v_vscan(Vctx *v, const SpyVScan *s) {
    if ((!rt_dtype_computable(s->dtype) && s->dtype != ISA_DT_DLF16) || s->dtype == ISA_DT_BOOL)
        return fail(v, "VSCAN dtype %s not supported", rt_dtype_name(s->dtype));
    if (s->flags & ~(ISA_F_EXCL | ISA_F_REV))
        return fail(v, "VSCAN unknown flags 0x%x", s->flags);
    uint64_t d2[2] = {s->rows, s->len};
    if (elems(2, d2) > RT_MAX_INSN_ELEMS)
        return fail(v, "VSCAN processes more than 2^32 elements");
    unsigned es = rt_dtype_size(s->dtype);
    return lx2(v, "VSCAN src", s->src, s->rows, s->src_rs, s->len, 1, es) &&
           lx2(v, "VSCAN dst", s->dst, s->rows, s->dst_rs, s->len, 1, es);
}

/* The bounds [*min, *max] of symbol sym of m (its first DIMREFS entry; verified). */
static void sym_bounds(const spy_model *m, uint32_t sym, int64_t *min, int64_t *max) {
    *min = 1, *max = 0;
    for (uint32_t k = 0; k < m->ndimrefs; k++)
        if (m->dimrefs[k].sym == sym) {
            *min = m->dimrefs[k].min, *max = m->dimrefs[k].max;
            return;
        }
}

/* A skip condition of in's guard (slot i): a symbol of the dims input and min <= lo <
 * max (one that can hold and can fail). */
static bool v_cond(Vctx *v, const SpyGuard *g, int i) {
    if (g->sym[i] >= v->m->nsyms)
        return fail(v, "guard condition %d: symbol %u past the %u symbols", i, g->sym[i],
                    v->m->nsyms);
    int64_t lo, hi;
    sym_bounds(v->m, g->sym[i], &lo, &hi);
    if ((int64_t)g->lo[i] < lo || (int64_t)g->lo[i] >= hi)
        return fail(v, "guard condition %d: size of symbol %u <= %u outside [%lld, %lld)",
                    i, g->sym[i], g->lo[i], (long long)lo, (long long)hi);
    return true;
}

/* A row clamp (slots 1 and 2 of in's guard, isa.h ISA_GUARD_ROWS): on an instruction
 * with rows (at least 2; a LOAD over the ring only with SPY_FEAT_RING_CLAMP), a symbol
 * of the dims input, at least one row per step, and rows clamped at some size within
 * the bounds and run at some (else it is no clamp). */
static bool v_clamp(Vctx *v, const SpyInsn *in, const SpyGuard *g) {
    uint32_t e = spy_insn_rows(in);
    bool ring = in->opcode == ISA_LOAD && (in->dma.flags & ISA_F_RING);
    if (e < 2 || (ring && !(v->m->hdr->features & SPY_FEAT_RING_CLAMP)))
        return fail(v, "row clamp on a %s%s of %u rows", rt_opcode_name(in->opcode),
                    ring ? " over the ring (without feature bit SPY_FEAT_RING_CLAMP)" : "", e);
    if (g->sym[1] >= v->m->nsyms || g->sym[2] || g->lo[1] == 0)
        return fail(v, "row clamp: symbol %u of %u, %u rows per step, slot 2 symbol %u",
                    g->sym[1], v->m->nsyms, g->lo[1], g->sym[2]);
    int64_t lo, hi;
    sym_bounds(v->m, g->sym[1], &lo, &hi);
    if (spy_clamp_rows(lo, g->lo[1], g->lo[2], e) == e || spy_clamp_rows(hi, g->lo[1], g->lo[2], e) == 0)
        return fail(v, "row clamp: %u rows per step, offset %u: rows of symbol %u's sizes "
                    "[%lld, %lld] all or none of %u", g->lo[1], g->lo[2], g->sym[1],
                    (long long)lo, (long long)hi, e);
    return true;
}

/* The guard of in (bundles with SPY_FEAT_GUARDS; without it the bytes are padding,
 * ignored): at most ISA_GUARD_MAX skip conditions (one with a row clamp), none on a
 * BARRIER or NOP, each valid (v_cond, v_clamp), unused entries zero. */
static bool v_guard(Vctx *v, const SpyInsn *in) {
    if (!(v->m->hdr->features & SPY_FEAT_GUARDS))
        return true;
    SpyGuard g = spy_insn_guard(in);
    int k = g.n & ISA_GUARD_NMASK, used = (g.n & ISA_GUARD_ROWS) ? 3 : k;
    if (k > ((g.n & ISA_GUARD_ROWS) ? 1 : ISA_GUARD_MAX))
        return fail(v, "guard with %d conditions (at most %d)", k,
                    (g.n & ISA_GUARD_ROWS) ? 1 : ISA_GUARD_MAX);
    if (g.n && (in->opcode == ISA_BARRIER || in->opcode == ISA_NOP))
        return fail(v, "guard on a %s", rt_opcode_name(in->opcode));
    for (int i = 0; i < ISA_GUARD_MAX; i++) {
        if (i >= used) {
            if (g.sym[i] || g.lo[i])
                return fail(v, "guard entry %d past its %d conditions is not zero", i, k);
        } else if (i < k && !v_cond(v, &g, i)) {
            return false;
        } else if (i >= k && i < 1 && (g.sym[i] || g.lo[i])) {
            return fail(v, "guard entry %d (no skip condition) is not zero", i);
        }
    }
    return !(g.n & ISA_GUARD_ROWS) || v_clamp(v, in, &g);
}

/* Verifies the fields of one instruction of m but its guard. */
static bool verify_fields(Vctx *v, const SpyInsn *in);

/* Verifies one instruction of m; on failure writes the reason into msg. */
bool rt_verify_insn(const spy_model *m, const SpyInsn *in, char *msg, size_t msglen) {
    Vctx v = {m, msg, msglen};
    return verify_fields(&v, in) && v_guard(&v, in);
}

static bool verify_fields(Vctx *vc, const SpyInsn *in) {
    Vctx v = *vc;
    const spy_model *m = v.m;
    switch (in->opcode) {
    case ISA_NOP: return true;
    case ISA_LOAD:
    case ISA_STORE: return v_dma(&v, &in->dma);
    case ISA_GATHER: return v_gather(&v, &in->gather);
    case ISA_SCATTER: return v_scatter(&v, &in->scatter);
    case ISA_MATMUL: return v_matmul(&v, &in->mm);
    case ISA_VEC: return v_vec(&v, &in->vec);
    case ISA_VREDUCE: return v_vreduce(&v, &in->red);
    case ISA_VFILL: return v_vfill(&v, &in->fill);
    case ISA_VSCAN: return v_vscan(&v, &in->scan);
    case ISA_BARRIER:
        if (in->bar.kernel >= m->nkernels)
            return fail(&v, "BARRIER kernel %u out of range (%u kernels)", in->bar.kernel,
                        m->nkernels);
        return true;
    default: return fail(&v, "unknown opcode %u", in->opcode);
    }
}
