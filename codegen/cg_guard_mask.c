/* cg_guard_mask.c: the masks of padding as the guard pass (cg_guard.c) sees them.
 *
 * symdim (passes/symdim_mask.c) keeps padding out of reductions, windows and the K of
 * matrix products by SELECT(mask, x, neutral), the mask a compare of constant positions
 * with a symbol's actual size, read from the dims input: LT(pos, size). Seen as data
 * flow only, such a SELECT reads every element of x at every size, so everything that
 * computes x (a projection, the layers before it) would be needed in its padding too.
 * Its condition is known, though: element i is false when the size is at most pos[i],
 * and there the SELECT does not look at x.
 *
 * This file finds those conditions with a forward walk over the finished code, kernel
 * by kernel in schedule order, each core program from its start, that follows the
 * values of the few bytes that decide them:
 *   - an int32 constant of segment 0 (positions) and the dims input's word of a symbol
 *     (its actual size), through LOADs into LX; a size derived from it by a window's
 *     arithmetic (+, - and / by constants: floor((size + add) / div) + off);
 *   - the bool result of a compare of the two (LT(c, size), GT(size, c), LE, GE):
 *     false when the size is at most a threshold, which is a demand (cg_guard.h Dem:
 *     per symbol, "at or under t_s");
 *   - the AND of such a bool with anything (false where it is), a COPY of one, and
 *     the STOREs and LOADs that move them through the arena (a mask shared by the
 *     layers is a kernel of its own).
 * Any other write to a byte forgets what was known of it. Each SELECT whose condition
 * is, at some byte, such a known bool gets a GdMask: per byte of its condition operand,
 * the sizes at which it is false. The backward pass then makes the SELECT's read of x
 * at an element needed only where the instruction runs and the condition there is not
 * known to be false (gd_mask_read), which is exactly where the SELECT uses x: results
 * are those of the code without guards, as the proof requires.
 * The walk is bounded (MW_ELEMS_MAX elements per instruction); past it nothing is known,
 * which only leaves the reads as they were.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_guard.h"

#define MW_ELEMS_MAX 65536           /* elements of one instruction the walk follows */

enum { MV_NONE, MV_CONST, MV_SIZE, MV_MASK };

typedef struct {                     /* what is known of one element */
    uint8_t kind;
    int32_t x;                       /* MV_CONST: the value; MV_SIZE: the symbol */
    int32_t add, div, off;           /* MV_SIZE: floor((size + add) / div) + off, a size
                                        derived by a window's arithmetic (div >= 1;
                                        with div > 1, size + add >= 0 at the symbol's
                                        min, so the device's truncation is the floor) */
    Dem dem;                         /* MV_MASK: false when some size is at most t_s */
} Mv;

typedef struct {                     /* known elements at bytes [lo, lo + n * es) */
    int64_t seg, lo, n;              /* seg -1: LX of the current program */
    int es;
    Mv *v;                           /* [n] (MV_NONE: not known) */
} Mf;

typedef struct {
    Mf *f;
    int n, cap;
} MfList;

typedef struct {                     /* an int32 constant of segment 0 */
    int64_t off, n;
    const int32_t *v;
} MwConst;

typedef struct {                     /* an element written: its address and value */
    int64_t a;
    Mv v;
} MwPut;

typedef struct {
    CgEmit *e;
    int ns;                          /* symbols followed */
    int64_t min[GD_NS];              /* their least sizes */
    int64_t dims_seg;                /* segment of the dims input, -2: none */
    MwConst *cst;
    int ncst;
    MfList lx, dram, pend;           /* LX; DRAM; DRAM written by the current kernel */
    int64_t (*kill)[3];              /* DRAM ranges the current kernel writes */
    int nkill, capkill;
    MwPut *put;                      /* elements of the instruction being walked */
    int64_t nput;
    GdMask **out;                    /* [e->n] per instruction */
} Mw;

/* ---- the lists of known elements ---- */

static void mf_drop(MfList *l, int i)
{
    free(l->f[i].v);
    l->f[i] = l->f[--l->n];
}

static void mf_clear(MfList *l)
{
    while (l->n)
        mf_drop(l, l->n - 1);
}

/* The known value of the es-byte element at byte a of space seg in l (MV_NONE). */
static Mv mf_get(const MfList *l, int64_t seg, int64_t a, int es)
{
    Mv none = {.kind = MV_NONE};
    for (int i = l->n; i-- > 0;) {
        const Mf *f = &l->f[i];
        if (f->seg == seg && f->es == es && a >= f->lo && a < f->lo + f->n * es &&
            (a - f->lo) % es == 0)
            return f->v[(a - f->lo) / es];
    }
    return none;
}

/* Forgets what l knows of space seg's bytes [lo, hi). */
static void mf_kill(MfList *l, int64_t seg, int64_t lo, int64_t hi)
{
    for (int i = l->n; i-- > 0;)
        if (l->f[i].seg == seg && l->f[i].lo < hi && lo < l->f[i].lo + l->f[i].n * l->f[i].es)
            mf_drop(l, i);
}

/* Forgets what l knows of the LX bytes s. */
static void mf_kill_span(MfList *l, const CgSpan *s)
{
    for (int i = l->n; i-- > 0;) {
        CgSpan fs;
        int64_t one = 1;
        cg_span_make(&fs, l->f[i].lo, (unsigned)(l->f[i].n * l->f[i].es), 1, &one, &one);
        if (l->f[i].seg == -1 && cg_span_overlap(s, &fs))
            mf_drop(l, i);
    }
}

/* Adds to l the elements w->put (es bytes each, space seg) as one run of elements,
 * when they are on one grid of es bytes. */
static void mf_add(Mw *w, MfList *l, int64_t seg, int es)
{
    if (!w->nput)
        return;
    int64_t lo = w->put[0].a, hi = lo;
    for (int64_t i = 0; i < w->nput; i++) {
        lo = w->put[i].a < lo ? w->put[i].a : lo;
        hi = w->put[i].a > hi ? w->put[i].a : hi;
    }
    int64_t n = (hi - lo) / es + 1;
    if (n > 4 * MW_ELEMS_MAX)
        return;
    for (int64_t i = 0; i < w->nput; i++)
        if ((w->put[i].a - lo) % es)
            return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        Mf *f = realloc(l->f, (size_t)cap * sizeof *f);
        if (!f)
            return;
        l->f = f;
        l->cap = cap;
    }
    Mv *v = calloc((size_t)n, sizeof *v);
    if (!v)
        return;
    for (int64_t i = 0; i < w->nput; i++)
        v[(w->put[i].a - lo) / es] = w->put[i].v;
    l->f[l->n++] = (Mf){.seg = seg, .lo = lo, .n = n, .es = es, .v = v};
}

/* Records the element at byte a with value v (known) for mf_add. */
static void mw_put(Mw *w, int64_t a, Mv v)
{
    if (v.kind != MV_NONE)
        w->put[w->nput++] = (MwPut){a, v};
}

/* ---- values of elements ---- */

/* The known value of the es-byte element at byte a of space seg (-1: LX). */
static Mv mw_read(const Mw *w, int64_t seg, int64_t a, int es)
{
    Mv v = {.kind = MV_NONE};
    if (seg == -1)
        return mf_get(&w->lx, seg, a, es);
    if (seg == w->dims_seg) {
        if (es == 4 && a >= 0 && a % 4 == 0 && a / 4 < w->ns)
            v.kind = MV_SIZE, v.x = (int32_t)(a / 4), v.div = 1;
        return v;
    }
    if (seg == ISA_SEG_CONST) {
        for (int i = 0; i < w->ncst && es == 4; i++) {
            const MwConst *c = &w->cst[i];
            if (a >= c->off && a < c->off + 4 * c->n && (a - c->off) % 4 == 0) {
                v.kind = MV_CONST;
                v.x = c->v[(a - c->off) / 4];
                return v;
            }
        }
        return v;
    }
    return mf_get(&w->dram, seg, a, es);
}

/* Whether DRAM bytes [lo, hi) of seg may hold a known element. */
static bool mw_dram_known(const Mw *w, int64_t seg, int64_t lo, int64_t hi)
{
    if (seg == w->dims_seg)
        return true;
    if (seg == ISA_SEG_CONST) {
        for (int i = 0; i < w->ncst; i++)
            if (w->cst[i].off < hi && lo < w->cst[i].off + 4 * w->cst[i].n)
                return true;
        return false;
    }
    for (int i = 0; i < w->dram.n; i++)
        if (w->dram.f[i].seg == seg && w->dram.f[i].lo < hi &&
            lo < w->dram.f[i].lo + w->dram.f[i].n * w->dram.f[i].es)
            return true;
    return false;
}

/* Whether LX bytes [lo, hi) may hold a known element. */
static bool mw_lx_known(const Mw *w, int64_t lo, int64_t hi)
{
    for (int i = 0; i < w->lx.n; i++)
        if (w->lx.f[i].lo < hi && lo < w->lx.f[i].lo + w->lx.f[i].n * w->lx.f[i].es)
            return true;
    return false;
}

/* A mask false where the size of symbol s is at most t. */
static Mv mask_of(int s, int64_t t)
{
    Mv v = {.kind = MV_MASK, .dem = gd_always};
    v.dem.t[s] = t < 0 ? -1 : t > INT32_MAX - 1 ? INT32_MAX - 1 : (int32_t)t;
    return v;
}

/* The mask c < v of a constant c and a (derived) size v: c < floor((s + add) / div) +
 * off holds when (c - off + 1) * div <= s + add, so it is false at the sizes s at most
 * (c - off + 1) * div - add - 1. */
static Mv mask_lt(int64_t c, const Mv *v)
{
    return mask_of(v->x, (c - v->off + 1) * v->div - v->add - 1);
}

/* A derived size v plus k (sign -1: minus), or divided by k; MV_NONE when the result
 * is not of the form floor((s + add) / div) + off with a numerator that is never
 * negative. */
static Mv size_arith(const Mw *w, int fn, Mv v, int64_t k)
{
    Mv none = {.kind = MV_NONE};
    if (fn == ISA_VF_ADD || fn == ISA_VF_SUB) {
        int64_t off = v.off + (fn == ISA_VF_ADD ? k : -k);
        if (off < INT32_MIN / 2 || off > INT32_MAX / 2)
            return none;
        v.off = (int32_t)off;
        return v;
    }
    if (k <= 0 || k > 65536 || (int64_t)v.div * k > 65536)
        return none;
    if (v.off != 0 && v.div != 1)
        return none;
    v.add += v.off;                  /* floor(floor(n / d) / k) = floor(n / (d * k)) */
    v.off = 0;
    v.div *= (int32_t)k;
    return w->min[v.x] + v.add >= 0 ? v : none;
}

/* The value of VEC function fn (an int32 compare or add, sub, div of a size and a
 * constant, or a bool AND / COPY) on known operands a, b. */
static Mv vec_value(const Mw *w, int fn, Mv a, Mv b)
{
    Mv none = {.kind = MV_NONE};
    switch (fn) {
    case ISA_VF_LT:                  /* c < size: false at sizes <= c */
    case ISA_VF_LE:                  /* c <= size: c - 1 < size */
        if (a.kind == MV_CONST && b.kind == MV_SIZE)
            return mask_lt(fn == ISA_VF_LT ? a.x : (int64_t)a.x - 1, &b);
        return none;
    case ISA_VF_GT:
    case ISA_VF_GE:
        if (a.kind == MV_SIZE && b.kind == MV_CONST)
            return mask_lt(fn == ISA_VF_GT ? b.x : (int64_t)b.x - 1, &a);
        return none;
    case ISA_VF_ADD:
        if (a.kind == MV_CONST && b.kind == MV_SIZE)
            return size_arith(w, fn, b, a.x);
        /* fall through */
    case ISA_VF_SUB:
    case ISA_VF_DIV:
        if (a.kind == MV_SIZE && b.kind == MV_CONST)
            return size_arith(w, fn, a, b.x);
        return none;
    case ISA_VF_AND:                 /* false where either is */
        if (a.kind == MV_MASK && b.kind == MV_MASK) {
            gd_dem_or(&a.dem, &b.dem);
            return a;
        }
        return a.kind == MV_MASK ? a : b.kind == MV_MASK ? b : none;
    default:
        return none;
    }
}

/* Operand q of VEC v at row r, column c (qdt its dtype). */
static Mv vec_operand(const Mw *w, const SpyVec *v, int q, int64_t r, int64_t c, int qdt)
{
    Mv x = {.kind = MV_NONE};
    if ((q == 1 && (v->flags & ISA_F_IMM)) || (q == 0 && (v->flags & ISA_F_IMM_A))) {
        if (qdt == ISA_DT_I32)
            x.kind = MV_CONST, x.x = (int32_t)v->imm;
        return x;
    }
    int64_t es = cg_dev_bytes(qdt);
    return mw_read(w, -1, v->src[q] + (r * v->src_rs[q] + c * v->src_cs[q]) * es, (int)es);
}

/* ---- instructions ---- */

/* The lowest and one past the highest byte offset of elements at base over dims
 * (len, strides in elements of es bytes). */
static void dims_range(int64_t base, int es, const uint32_t *len, const int32_t *st,
                       int64_t *lo, int64_t *hi)
{
    *lo = *hi = base;
    for (int i = 0; i < ISA_MAX_DIMS; i++) {
        int64_t r = (len[i] ? (int64_t)len[i] - 1 : 0) * st[i] * es;
        *lo += r < 0 ? r : 0;
        *hi += r > 0 ? r : 0;
    }
    *hi += es;
}

/* Elements of a LOAD / STORE (the outermost dims first), or 0 past MW_ELEMS_MAX. */
static int64_t dma_elems(const SpyDma *d)
{
    int64_t n = 1;
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        if ((n *= d->dims[i]) > MW_ELEMS_MAX)
            return 0;
    return n;
}

/* Byte offsets of element j of d on its DRAM and LX sides. */
static void dma_at(const SpyDma *d, int64_t j, int64_t *da, int64_t *la)
{
    *da = d->dram_off;
    *la = d->lx;
    for (int i = ISA_MAX_DIMS; i-- > 0;) {
        int64_t k = j % d->dims[i];
        j /= d->dims[i];
        *da += k * d->dram_stride[i] * d->esize;
        *la += k * d->lx_stride[i] * d->esize;
    }
}

/* Whether the current kernel writes some DRAM byte of [lo, hi) of seg (its cores' order
 * is not known: such a byte may hold the old value or the new). */
static bool mw_written(const Mw *w, int64_t seg, int64_t lo, int64_t hi)
{
    for (int k = 0; k < w->nkill; k++)
        if (w->kill[k][0] == seg && w->kill[k][1] < hi && lo < w->kill[k][2])
            return true;
    return false;
}

/* A LOAD: the known elements of its DRAM tile move to LX (a tile over the ring holds
 * the DRAM bytes its origin reads), unless its kernel also writes them. */
static void mw_load(Mw *w, const SpyInsn *in)
{
    const SpyDma *d = &in->dma;
    int64_t n = dma_elems(d), lo, hi;
    dims_range(d->dram_off, d->esize, d->dims, d->dram_stride, &lo, &hi);
    w->nput = 0;
    if (n && !(d->flags & ISA_F_F32) && mw_dram_known(w, d->seg, lo, hi) &&
        !mw_written(w, d->seg, lo, hi))
        for (int64_t j = 0; j < n; j++) {
            int64_t da, la;
            dma_at(d, j, &da, &la);
            mw_put(w, la, mw_read(w, d->seg, da, d->esize));
        }
    CgSpan s;
    cg_insn_lx_write(in, &s);
    mf_kill_span(&w->lx, &s);
    mf_add(w, &w->lx, -1, d->esize);
}

/* Records that the current kernel writes DRAM bytes [lo, hi) of seg. */
static void mw_kill_later(Mw *w, int64_t seg, int64_t lo, int64_t hi)
{
    if (w->nkill == w->capkill) {
        int cap = w->capkill ? 2 * w->capkill : 64;
        int64_t (*k)[3] = realloc(w->kill, (size_t)cap * sizeof *k);
        if (!k) {                    /* no room: forget every DRAM element */
            mf_clear(&w->dram);
            return;
        }
        w->kill = k;
        w->capkill = cap;
    }
    w->kill[w->nkill][0] = seg;
    w->kill[w->nkill][1] = lo;
    w->kill[w->nkill++][2] = hi;
}

/* A STORE: its known LX elements are known in DRAM once the kernel is done. */
static void mw_store(Mw *w, const SpyInsn *in)
{
    const SpyDma *d = &in->dma;
    int64_t n = dma_elems(d), llo, lhi;
    dims_range(d->lx, d->esize, d->dims, d->lx_stride, &llo, &lhi);
    w->nput = 0;
    if (n && !(d->flags & ISA_F_F32) && mw_lx_known(w, llo, lhi))
        for (int64_t j = 0; j < n; j++) {
            int64_t da, la;
            dma_at(d, j, &da, &la);
            mw_put(w, da, mw_read(w, -1, la, d->esize));
        }
    mf_add(w, &w->pend, d->seg, d->esize);
}

/* The GdMask of a SELECT (instruction index i): per byte of its condition operand, when
 * that bool is known to be false; none when no byte is. */
static void mw_select(Mw *w, const SpyVec *v, uint64_t i)
{
    int64_t rows = v->rows, cols = v->cols;
    int64_t r0 = (rows - 1) * v->src_rs[0], c0 = (cols - 1) * v->src_cs[0];
    int64_t lo = v->src[0] + (r0 < 0 ? r0 : 0) + (c0 < 0 ? c0 : 0);
    int64_t hi = v->src[0] + (r0 > 0 ? r0 : 0) + (c0 > 0 ? c0 : 0) + 1;
    if (!rows || !cols || hi - lo > MW_ELEMS_MAX || !mw_lx_known(w, lo, hi))
        return;
    GdMask *m = malloc(sizeof *m);
    Dem *dem = malloc((size_t)(hi - lo) * sizeof *dem);
    bool any = false;
    for (int64_t b = 0; m && dem && b < hi - lo; b++) {
        Mv x = mw_read(w, -1, lo + b, 1);
        dem[b] = x.kind == MV_MASK ? x.dem : gd_always;
        for (int s = 0; s < GD_NS; s++)
            any |= dem[b].t[s] >= 0;
    }
    if (!m || !dem || !any) {
        free(m);
        free(dem);
        return;
    }
    *m = (GdMask){.lo = lo, .n = hi - lo, .dem = dem};
    w->out[i] = m;
}

/* A VEC: a SELECT's mask recorded; the known results of compares, ANDs and COPYs of
 * known operands. */
static void mw_vec(Mw *w, const SpyInsn *in, uint64_t i)
{
    const SpyVec *v = &in->vec;
    int sdt = v->src_dtype ? v->src_dtype : v->dtype;
    bool cmp = v->fn >= ISA_VF_LT && v->fn <= ISA_VF_GE && sdt == ISA_DT_I32 &&
               v->dtype == ISA_DT_BOOL;
    bool boolop = v->fn == ISA_VF_AND && sdt == ISA_DT_BOOL && v->dtype == ISA_DT_BOOL;
    bool arith = (v->fn == ISA_VF_ADD || v->fn == ISA_VF_SUB || v->fn == ISA_VF_DIV) &&
                 sdt == ISA_DT_I32 && v->dtype == ISA_DT_I32;
    bool copy = v->fn == ISA_VF_COPY && sdt == v->dtype &&
                (sdt == ISA_DT_BOOL || sdt == ISA_DT_I32);
    int64_t es = cg_dev_bytes(v->dtype);
    if (v->fn == ISA_VF_SELECT && !(v->flags & ISA_F_IMM_A))
        mw_select(w, v, i);
    w->nput = 0;
    if ((cmp || boolop || arith || copy) && (int64_t)v->rows * v->cols <= MW_ELEMS_MAX)
        for (int64_t r = 0; r < v->rows; r++)
            for (int64_t c = 0; c < v->cols; c++) {
                Mv a = vec_operand(w, v, 0, r, c, sdt);
                Mv b = copy ? a : vec_operand(w, v, 1, r, c, sdt);
                mw_put(w, v->dst + (r * v->dst_rs + c) * es, copy ? a : vec_value(w, v->fn, a, b));
            }
    CgSpan s;
    cg_insn_lx_write(in, &s);
    mf_kill_span(&w->lx, &s);
    mf_add(w, &w->lx, -1, (int)es);
}

/* One instruction (index i) of a core program. */
static void mw_insn(Mw *w, const SpyInsn *in, uint64_t i)
{
    CgSpan s;
    switch (in->opcode) {
    case ISA_LOAD:
        mw_load(w, in);
        break;
    case ISA_STORE:
        mw_store(w, in);
        break;
    case ISA_VEC:
        mw_vec(w, in, i);
        break;
    default:
        if (cg_insn_lx_write(in, &s))
            mf_kill_span(&w->lx, &s);
        break;
    }
}

/* Records the DRAM ranges the STOREs and SCATTERs of a kernel (programs kp) write. */
static void mw_kernel_writes(Mw *w, const SpyProgramDesc *kp, uint32_t cores)
{
    w->nkill = 0;
    for (uint32_t j = 0; j < cores; j++)
        for (uint64_t i = kp[j].first_insn; i < kp[j].first_insn + kp[j].ninsns; i++) {
            const SpyInsn *in = &w->e->code[i];
            int64_t lo, hi;
            if (in->opcode == ISA_STORE) {
                const SpyDma *d = &in->dma;
                dims_range(d->dram_off, (d->flags & ISA_F_F32) ? 4 : d->esize, d->dims,
                           d->dram_stride, &lo, &hi);
                mw_kill_later(w, d->seg, lo, hi);
            } else if (in->opcode == ISA_SCATTER) {    /* rows anywhere in its table */
                mw_kill_later(w, in->scatter.seg, INT64_MIN, INT64_MAX);
            }
        }
}

/* The DRAM writes of a finished kernel: what they overwrote is forgotten, what they
 * stored known. */
static void mw_kernel_done(Mw *w)
{
    for (int k = 0; k < w->nkill; k++)
        mf_kill(&w->dram, w->kill[k][0], w->kill[k][1], w->kill[k][2]);
    w->nkill = 0;
    for (int i = 0; i < w->pend.n; i++) {
        w->nput = 0;
        const Mf *f = &w->pend.f[i];
        for (int64_t j = 0; j < f->n; j++)
            mw_put(w, f->lo + j * f->es, f->v[j]);
        mf_add(w, &w->dram, f->seg, f->es);
    }
    mf_clear(&w->pend);
}

/* The int32 constants of segment 0 small enough to follow (positions). */
static bool mw_consts(Mw *w)
{
    Plan *s = w->e->g->plan;
    w->cst = malloc((s->nconsts + 1) * sizeof *w->cst);
    if (!w->cst)
        return false;
    for (uint32_t i = 0; i < s->nconsts; i++) {
        const IrValue *v = ir_val(w->e->g, s->consts[i]);
        const PlanValue *pv = &s->val[s->consts[i]];
        int64_t n = plan_numel(&v->type);
        if (v->type.dtype != IR_DT_I32 || n == 0 || n > MW_ELEMS_MAX ||
            pv->layout == IR_LAYOUT_STICKED || pv->dram_offset < 0)
            continue;
        w->cst[w->ncst++] = (MwConst){pv->dram_offset, n, (const int32_t *)v->data};
    }
    return true;
}

GdMask **gd_masks(CgEmit *e, const SpyProgramDesc *progs, int ns)
{
    IrGraph *g = e->g;
    uint32_t cores = e->t->cores, nk = g->plan->nkernels;
    Mw w;
    memset(&w, 0, sizeof w);
    w.e = e;
    w.ns = ns;
    w.dims_seg = -2;
    for (uint32_t k = 0; k < g->nsymdims; k++)
        if (g->symdims[k].sym < GD_NS)
            w.min[g->symdims[k].sym] = g->symdims[k].min;
    for (uint32_t j = 0; j < g->ninputs; j++)
        if (g->inputs[j] == g->sym_input)
            w.dims_seg = ISA_SEG_IO0 + j;
    w.out = calloc(e->n, sizeof *w.out);
    w.put = malloc(4 * MW_ELEMS_MAX * sizeof *w.put);
    if (!w.out || !w.put || w.dims_seg < 0 || !mw_consts(&w)) {
        free(w.put);
        free(w.cst);
        free(w.out);
        return NULL;
    }
    for (uint32_t k = 0; k < nk; k++) {
        mw_kernel_writes(&w, &progs[(size_t)k * cores], cores);
        for (uint32_t j = 0; j < cores; j++) {
            const SpyProgramDesc *p = &progs[(size_t)k * cores + j];
            mf_clear(&w.lx);         /* LX does not outlive a program */
            for (uint64_t i = p->first_insn; i < p->first_insn + p->ninsns; i++)
                mw_insn(&w, &e->code[i], i);
        }
        mw_kernel_done(&w);
    }
    mf_clear(&w.lx);
    mf_clear(&w.dram);
    free(w.lx.f);
    free(w.dram.f);
    free(w.pend.f);
    free(w.kill);
    free(w.put);
    free(w.cst);
    return w.out;
}

void gd_masks_free(GdMask **m, uint64_t n)
{
    for (uint64_t i = 0; m && i < n; i++)
        if (m[i]) {
            free(m[i]->dem);
            free(m[i]);
        }
    free(m);
}

/* The demand under which the SELECT in reads x at its row r, column c: base (where it
 * runs) joined with the sizes at which its condition there is known to be false. */
static Dem mask_dem(const GdMask *m, const SpyVec *v, int64_t r, int64_t c, const Dem *base)
{
    Dem x = *base;
    int64_t b = v->src[0] + r * v->src_rs[0] + c * v->src_cs[0] - m->lo;
    if (b >= 0 && b < m->n)
        gd_dem_or(&x, &m->dem[b]);
    return x;
}

/* Marks needed under dem the len elements of the SELECT v's x from row r, column c on,
 * stride elements apart (es-byte elements). */
static void x_read(Gd *d, const SpyVec *v, int64_t es, int64_t r, int64_t c, int64_t len,
                   int64_t stride, Dem *dem)
{
    Acc x;
    x.seg = -1;
    cg_span_make(&x.sp, v->src[1] + (r * v->src_rs[1] + c * v->src_cs[1]) * es,
                 (unsigned)es, 1, &len, &stride);
    Visit gen = {.d = d, .op = OP_GEN, .dem = dem};
    gd_visit(&gen, &x);
}

void gd_mask_read(Gd *d, const SpyInsn *in, const GdMask *m, uint32_t r0, uint32_t nr,
                  const Dem *base)
{
    const SpyVec *v = &in->vec;
    int sdt = v->src_dtype ? v->src_dtype : v->dtype;
    int64_t es = cg_dev_bytes(sdt);
    bool per_row = v->src_cs[0] == 0;        /* one condition byte per row */
    if (!per_row && v->src_rs[0] == 0 && nr > 1) {
        /* one condition row for all rows: a column's demand is its every row's, so its
         * rows are read at once (the order of the GENs does not matter: a granule keeps
         * its least demand) */
        for (int64_t c = 0; c < (int64_t)v->cols; c++) {
            Dem dem = mask_dem(m, v, r0, c, base);
            x_read(d, v, es, r0, c, nr, v->src_rs[1], &dem);
        }
        return;
    }
    for (int64_t r = r0; r < (int64_t)r0 + nr; r++)
        for (int64_t c = 0; c < (per_row ? 1 : (int64_t)v->cols); c++) {
            Dem dem = mask_dem(m, v, r, c, base);
            int64_t st = v->src_cs[1];
            x_read(d, v, es, r, c, per_row && st ? v->cols : 1, st ? st : 1, &dem);
        }
}

int gd_select_data(const SpyInsn *in)
{
    if (in->opcode != ISA_VEC || in->vec.fn != ISA_VF_SELECT ||
        (in->vec.flags & (ISA_F_IMM | ISA_F_IMM_A)) || in->vec.src_rs[1] < 0 ||
        in->vec.src_cs[1] < 0)
        return -1;                   /* an immediate condition or x: nothing to follow */
    return 1;
}
