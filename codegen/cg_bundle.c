/* cg_bundle.c: serialise the plan and the instruction streams into a .sbin bundle
 * (layout and rules in schemas/sbin.h). Sections, in this order: STRINGS, TENSORS,
 * CONSTS, KERNELS, PROGRAMS, CODE, SCHEDULE, SEGMENTS, META; each 64-byte aligned
 * with its CRC32C; the header's table CRC covers the header and the section table.
 * Nothing depends on pointers, time or hash order, so the same plan always gives the
 * same bytes. SpyKernelDesc.flags holds the IrKernelKind.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"
#include "dtconv.h"
#include "spyrt.h"

typedef struct Writer Writer;

typedef struct {
    uint8_t *p;
    size_t n, cap;
    Writer *w;                             /* the owner, freed on out of memory */
} Buf;

/* Every heap block of the bundle being written (and of the code generator). */
struct Writer {
    CgEmit *e;
    CgOut *out;                            /* where the bundle goes */
    Buf sec[SPY_SEC_MAX];                  /* sections by id (all but CONSTS) */
    Buf file;                              /* the bundle, when written to memory */
    CgSink sink;                           /* the bundle, when written to a file */
    uint32_t crc;                          /* CRC32C of the constants so far */
};

/* Out of memory while writing: free every heap block of w, then take the graph's
 * out-of-memory path (longjmp to g->oom). */
static _Noreturn void writer_oom(Writer *w)
{
    for (int i = 0; i < SPY_SEC_MAX; i++)
        free(w->sec[i].p);
    free(w->file.p);
    cg_sink_free(&w->sink);
    free(w->e->code);
    w->e->code = NULL;
    ir_oom(w->e->g);
}

/* Room for n more bytes in b. */
static void reserve(Buf *b, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (c < b->n + n) {
            if (c > SIZE_MAX / 2)
                writer_oom(b->w);
            c *= 2;
        }
        uint8_t *np = realloc(b->p, c);
        if (!np)
            writer_oom(b->w);
        b->p = np;
        b->cap = c;
    }
}

/* Append n bytes (zeros when d is NULL). */
static void put(Buf *b, const void *d, size_t n)
{
    if (n == 0)
        return;
    reserve(b, n);
    if (d)
        memcpy(b->p + b->n, d, n);
    else
        memset(b->p + b->n, 0, n);
    b->n += n;
}

/* Append a NUL-terminated string; returns its offset. */
static uint32_t put_str(Buf *b, const char *s)
{
    uint32_t off = (uint32_t)b->n;
    put(b, s, strlen(s) + 1);
    return off;
}

/* IEEE half from a float (round to nearest even). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    if (((x >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp), h = mant >> shift, rem = mant & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        h += rem > half || (rem == half && (h & 1));
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fff;
    h += rem > 0x1000 || (rem == 0x1000 && (h & 1));
    return (uint16_t)(sign | h);
}

/* Bits of value v in device dtype dt, as VFILL takes them (ints saturate). */
uint32_t cg_value_bits(int dt, double v)
{
    float f = (float)v;
    uint32_t u;
    double lo = -2147483648.0, hi = 2147483647.0;
    switch (dt) {
    case ISA_DT_F32: memcpy(&u, &f, 4); return u;
    case ISA_DT_F16: return f32_to_f16(f);
    case ISA_DT_DLF16: return spy_f32_to_dlf16_sat(f);
    case ISA_DT_BF16:
        memcpy(&u, &f, 4);
        return isnan(f) ? (u >> 16) | 0x40 : (u + 0x7fff + ((u >> 16) & 1)) >> 16;
    case ISA_DT_BOOL: return v != 0;
    case ISA_DT_F8E4M3FN: case ISA_DT_F8E4M3FNUZ: case ISA_DT_F8E5M2: case ISA_DT_F8E5M2FNUZ:
    case ISA_DT_F4E2M1: case ISA_DT_F8E8M0:
        return spy_f32_to_narrow(f, dt, true);
    case ISA_DT_U4: case ISA_DT_I4: case ISA_DT_U2: case ISA_DT_I2:
        return (uint32_t)spy_wrap_subbyte((int32_t)(isnan(v) ? 0 : fmax(fmin(trunc(v), 1e9), -1e9)),
                                          dt) & 0xff;
    case ISA_DT_I16: lo = -32768, hi = 32767; break;
    case ISA_DT_I8: lo = -128, hi = 127; break;
    case ISA_DT_U8: lo = 0, hi = 255; break;
    default: break;
    }
    double c = isnan(v) ? 0 : v < lo ? lo : v > hi ? hi : trunc(v);
    return (uint32_t)(int32_t)c;
}

/* Constants are converted in pieces of at most this many bytes, so that their CRC
 * reads them back from the processor's cache. */
#define CONST_PIECE ((size_t)256 << 10)

/* Send n bytes (zeros when d is NULL) to the output: appended to the memory bundle or
 * staged for the file (cg_out.c). */
static void out_put(Writer *w, const void *d, size_t n)
{
    if (w->out->fd < 0)
        put(&w->file, d, n);
    else
        cg_sink_put(&w->sink, d, n);
}

/* Where the next constant bytes go: room for at least es bytes, at most CONST_PIECE
 * (*room gets it); const_commit counts them. */
static uint8_t *const_room(Writer *w, size_t es, size_t *room)
{
    uint8_t *p;
    if (w->out->fd >= 0) {
        p = cg_sink_room(&w->sink, es, room);
    } else {
        reserve(&w->file, es);
        p = w->file.p + w->file.n;
        *room = w->file.cap - w->file.n;
    }
    if (*room > CONST_PIECE)
        *room = CONST_PIECE;
    return p;
}

/* The n constant bytes just placed at p (const_room): they extend the segment's CRC. */
static void const_commit(Writer *w, const uint8_t *p, size_t n)
{
    w->crc = spy_crc32c(w->crc, p, n);
    if (w->out->fd >= 0)
        cg_sink_commit(&w->sink, n);
    else
        w->file.n += n;
}

/* n constant bytes of d (zeros when d is NULL). */
static void const_put(Writer *w, const uint8_t *d, uint64_t n)
{
    while (n > 0) {
        size_t room;
        uint8_t *p = const_room(w, 1, &room);
        size_t k = n < room ? (size_t)n : room;
        if (d) {
            memcpy(p, d, k);
            d += k;
        } else {
            memset(p, 0, k);
        }
        const_commit(w, p, k);
        n -= k;
    }
}

/* Elements [e, e + count) of constant v in their device dtype: the same bytes when
 * the device holds the dtype as itself, else converted one by one (pass_dev_elem;
 * dram_plan has checked that every integer fits). */
static void const_elems(Writer *w, const IrValue *v, int64_t e, int64_t count)
{
    IrDType dt = v->type.dtype;
    size_t ds = (size_t)pass_dev_esize(dt);
    if (ds == ir_dtype_size(dt) && !pass_dev_narrows_int(dt)) {
        const_put(w, (const uint8_t *)v->data + (size_t)e * ds, (uint64_t)count * ds);
        return;
    }
    while (count > 0) {
        size_t room;
        uint8_t *p = const_room(w, ds, &room);
        int64_t k = (int64_t)(room / ds) < count ? (int64_t)(room / ds) : count;
        for (int64_t i = 0; i < k; i++) {
            int64_t x;
            bool fits = pass_dev_elem(dt, v->data, e + i, p + (size_t)i * ds, &x);
            IR_ASSERT(fits);
        }
        const_commit(w, p, (size_t)k * ds);
        e += k;
        count -= k;
    }
}

/* Source bytes of a constant written between two drops of its pages. */
#define CONST_PIECE_BYTES ((size_t)32 << 20)

/* Constant c (n elements, rows of row elements) in its device dtype, each row followed
 * by pad zero bytes (a sticked layout's), CONST_PIECE_BYTES of its data at a time: the
 * pages of a piece read from a mapped model file leave the resident set once it is
 * written (ir_const_drop_span), so that a weight of a gigabyte (an embedding table) is
 * never resident whole while it is written, nor after. */
static void put_const_rows(Writer *w, ValId c, int64_t n, int64_t row, uint64_t pad)
{
    IrGraph *g = w->e->g;
    const IrValue *v = ir_val(g, c);
    size_t bytes = ir_type_bytes(&v->type), es = n ? bytes / (size_t)n : 0;
    bool whole = es && (size_t)n * es == bytes;   /* whole bytes an element: pieces */
    int64_t step = row;                    /* elements a piece: whole rows */
    if (whole && (size_t)row * es < CONST_PIECE_BYTES)
        step = (int64_t)(CONST_PIECE_BYTES / ((size_t)row * es)) * row;
    for (int64_t e = 0; e < n; e += step) {
        int64_t k = n - e < step ? n - e : step;
        if (!pad) {
            const_elems(w, v, e, k);
        } else {
            for (int64_t r = e; r < e + k; r += row) {
                const_elems(w, v, r, row);
                const_put(w, NULL, pad);
            }
        }
        if (whole)
            ir_const_drop_span(g, c, (size_t)e * es, (size_t)k * es);
    }
    ir_const_drop_pages(g, c);             /* and the pages the pieces share */
}

/* Constant segment from byte base on, streamed to the output: every planned constant
 * converted to its device dtype and layout (sticked rows padded with zeros) at its DRAM
 * offset, zeros between. Each constant is converted once, straight into the output's
 * staging buffer (or the memory bundle), piece by piece, so the segment is never held
 * whole in memory; the pages of a weight read from a mapped model file are dropped
 * as it is written (put_const_rows), so that the model is never all resident. With a
 * shared pool (size buckets) a constant placed below what was written (before base, or an identical one
 * written already) is skipped, and the buckets' extra bytes (opt) follow the graph's
 * own. Returns its CRC32C. */
static uint32_t put_consts(Writer *w, const CgOptions *opt, uint64_t base)
{
    IrGraph *g = w->e->g;
    const SpyTarget *t = w->e->t;
    Plan *s = g->plan;
    w->crc = 0;
    uint64_t at = base;                    /* end of the segment produced so far */
    for (uint32_t i = 0; i < s->nconsts; i++) {
        const IrValue *v = ir_val(g, s->consts[i]);
        const PlanValue *pv = &s->val[s->consts[i]];
        int64_t n = plan_numel(&v->type);
        if (n == 0 || (opt->shared_consts && (uint64_t)pv->dram_offset < at))
            continue;                      /* before base, or shared with one written */
        IR_ASSERT((uint64_t)pv->dram_offset >= at);   /* placed in increasing order */
        const_put(w, NULL, (uint64_t)pv->dram_offset - at);
        size_t ds = (size_t)pass_dev_esize(v->type.dtype);
        int64_t row = v->type.rank ? v->type.dims[v->type.rank - 1] : 1, prow = row;
        if (pv->layout == IR_LAYOUT_STICKED) {
            int64_t se = (int64_t)(t->stick_bytes / ds);
            prow = (row + se - 1) / se * se;
        }
        put_const_rows(w, s->consts[i], n, row, (uint64_t)(prow - row) * ds);
        at = (uint64_t)pv->dram_offset + (uint64_t)(n / row * prow) * ds;
    }
    if (opt->const_extra_len) {
        IR_ASSERT(at <= opt->const_extra_off);
        const_put(w, NULL, opt->const_extra_off - at);
        const_put(w, opt->const_extra, opt->const_extra_len);
        at = opt->const_extra_off + opt->const_extra_len;
    }
    IR_ASSERT(at <= s->seg0_bytes);
    const_put(w, NULL, s->seg0_bytes - at);
    return w->crc;
}

/* A size bucket's constants (opt->const_tail): the bytes of the shared pool from
 * opt->const_base on, into a malloc'd buffer. */
static void put_const_tail(CgEmit *e, const CgOptions *opt)
{
    CgOut to = {.fd = -1};
    Writer tw;
    memset(&tw, 0, sizeof tw);
    tw.e = e;
    tw.out = &to;
    tw.file.w = &tw;
    CgOptions plain = *opt;
    plain.const_extra_len = 0;
    plain.variants = NULL;
    put_consts(&tw, &plain, opt->const_base);
    *opt->const_tail = tw.file.p;
    *opt->const_tail_len = tw.file.n;
}

/* One tensor descriptor (graph input i or output j). Tensor names must be unique: an
 * output that is also an input or an earlier output is named "NAME:j" (j = its output
 * index). Values have unique names, so that is a value seen before: seen[v] is set
 * once value v has a descriptor. */
static void put_tensor(IrGraph *g, Buf *tb, Buf *sb, ValId v, uint8_t role, uint32_t seg,
                       uint8_t *seen)
{
    const IrValue *val = ir_val(g, v);
    SpyTensorDesc d;
    memset(&d, 0, sizeof d);
    if (seen[v]) {
        char nm[512];
        snprintf(nm, sizeof nm, "%.480s:%u", val->name, seg - ISA_SEG_IO0 - g->ninputs);
        d.name = put_str(sb, nm);
    } else {
        d.name = put_str(sb, val->name);
    }
    seen[v] = 1;
    d.role = role;
    d.host_dtype = (uint8_t)val->type.dtype;
    d.dev_dtype = (uint8_t)pass_dev_dtype(val->type.dtype);
    d.rank = (uint8_t)val->type.rank;
    d.seg = seg;
    d.numel = (uint64_t)plan_numel(&val->type);
    for (int i = 0; i < val->type.rank; i++)
        d.dims[i] = val->type.dims[i];
    if (role == SPY_ROLE_OUTPUT)                /* data-dependent / hidden (cg_dyn.c) */
        cg_dyn_desc(g, seg - ISA_SEG_IO0 - g->ninputs, &d);
    else if (g->nsymdims && v == g->sym_input)
        d.flags |= SPY_TF_DIMS;
    put(tb, &d, sizeof d);
}

/* The DIMREFS section: one entry per bounded symbolic axis of an input or output. */
static void put_dimrefs(IrGraph *g, Buf *b)
{
    for (uint32_t i = 0; i < g->nsymdims; i++) {
        const IrSymDim *d = &g->symdims[i];
        uint32_t t = UINT32_MAX;
        for (uint32_t j = 0; j < g->ninputs && !d->output && t == UINT32_MAX; j++)
            if (g->inputs[j] == d->input)
                t = j;
        if (d->output && d->input < g->noutputs - g->nhidden)
            t = g->ninputs + d->input;
        IR_ASSERT(t != UINT32_MAX);
        SpyDimRef r = {t, (uint32_t)d->axis, (uint32_t)d->sym,
                       d->step > 1 ? (uint32_t)d->step : 0, d->min, d->max};
        put(b, &r, sizeof r);
    }
}

/* Tables: strings, tensors, kernels, programs, schedule, segments; DEBUG when asked. */
static void tables(CgEmit *e, const CgOptions *opt, const SpyProgramDesc *progs, Buf *sec)
{
    IrGraph *g = e->g;
    uint32_t cores = e->t->cores;
    Buf *sb = &sec[SPY_SEC_STRINGS], *tb = &sec[SPY_SEC_TENSORS];
    uint8_t *seen = ir_scratch(g, (size_t)g->nvals + 1);
    put(sb, "", 1);
    for (uint32_t i = 0; i < g->ninputs; i++)
        put_tensor(g, tb, sb, g->inputs[i], SPY_ROLE_INPUT, ISA_SEG_IO0 + i, seen);
    for (uint32_t j = 0; j < g->noutputs; j++)
        put_tensor(g, tb, sb, g->outputs[j], SPY_ROLE_OUTPUT, ISA_SEG_IO0 + g->ninputs + j,
                   seen);
    for (uint32_t i = 0; i < g->plan->nkernels; i++) {
        const IrKernel *k = &g->plan->kernels[i];
        SpyKernelDesc d;
        memset(&d, 0, sizeof d);
        d.name = put_str(sb, k->name);
        d.first_program = i * cores;
        d.ncores = cores;
        d.flags = (uint32_t)k->kind;
        d.flops = k->flops;
        d.min_dram_bytes = k->min_dram_bytes;
        put(&sec[SPY_SEC_KERNELS], &d, sizeof d);
        put(&sec[SPY_SEC_SCHEDULE], &i, 4);
    }
    put(&sec[SPY_SEC_PROGRAMS], progs, (size_t)g->plan->nkernels * cores * sizeof *progs);
    SpySegmentDesc sd[2] = {{SPY_SEGK_CONST, 0, e->s->seg0_bytes},
                            {SPY_SEGK_ARENA, 0, e->s->arena_bytes}};
    put(&sec[SPY_SEC_SEGMENTS], sd, sizeof sd);
    for (uint32_t i = 0; i < g->ninputs + g->noutputs; i++) {
        ValId v = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        SpySegmentDesc s = {SPY_SEGK_IO, i,
                            (uint64_t)plan_numel(ir_vtype(g, v)) *
                                (uint64_t)pass_dev_esize(ir_vtype(g, v)->dtype)};
        put(&sec[SPY_SEC_SEGMENTS], &s, sizeof s);
    }
    if (g->nsymdims)
        put_dimrefs(g, &sec[SPY_SEC_DIMREFS]);
    if (!opt->debug)
        return;
    SpyDebugDesc *dd;
    const char **names;
    uint32_t nd = cg_debug_entries(e, opt, &dd, &names);
    for (uint32_t i = 0; i < nd; i++) {
        dd[i].name = put_str(sb, names[i]);
        put(&sec[SPY_SEC_DEBUG], &dd[i], sizeof dd[i]);
    }
}

/* End the output: the header and section table (hdr, hlen bytes) written at offset 0,
 * over the zeros that held their place. */
static void patch_header(Writer *w, const uint8_t *hdr, size_t hlen)
{
    if (w->out->fd < 0)
        memcpy(w->file.p, hdr, hlen);
    else
        cg_sink_finish(&w->sink, hdr, hlen);
}

/* SPY_FEAT_BWIN when some MATMUL reads a window B, SPY_FEAT_FP8W when some MATMUL
 * reads a float8 B (readers before them refuse the bundle at the header), else 0. */
static uint32_t bwin_feature(const CgEmit *e)
{
    uint32_t f = 0;
    for (uint64_t i = 0; i < e->n; i++)
        if (e->code[i].opcode == ISA_MATMUL)
            f |= ((e->code[i].mm.flags & ISA_F_BWIN) ? SPY_FEAT_BWIN : 0) |
                 ((e->code[i].mm.flags & ISA_F_BF8) ? SPY_FEAT_FP8W : 0);
    return f;
}

/* SPY_FEAT_RING when some LOAD is fed over the ring, else 0. */
static uint32_t ring_feature(const CgEmit *e)
{
    uint32_t f = 0;
    for (uint64_t i = 0; i < e->n; i++)
        if (e->code[i].opcode == ISA_LOAD && (e->code[i].dma.flags & ISA_F_RING)) {
            f |= SPY_FEAT_RING;
            if (spy_insn_guard(&e->code[i]).n & ISA_GUARD_ROWS)
                return SPY_FEAT_RING | SPY_FEAT_RING_CLAMP;
        }
    return f;
}

/* Whether a symbolic dimension of g takes only every step-th size (SPY_FEAT_DIMSTEP). */
static bool dim_steps(const IrGraph *g)
{
    for (uint32_t i = 0; i < g->nsymdims; i++)
        if (g->symdims[i].step > 1)
            return true;
    return false;
}

/* The header of a bundle with sections st[0..nsec). */
static SpyHeader make_header(const CgEmit *e, const CgOptions *opt, const SpySection *st,
                             int nsec, bool guards)
{
    SpyHeader h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SPY_SBIN_MAGIC, 8);
    h.major = SPY_SBIN_MAJOR;
    h.minor = SPY_SBIN_MINOR;
    h.features = (cg_uses_scatter(e) ? SPY_FEAT_SCATTER : 0) | bwin_feature(e) | ring_feature(e) |
                 (opt->debug ? SPY_FEAT_DEBUG : 0) | (e->g->nsymdims ? SPY_FEAT_DYNDIM : 0) |
                 (opt->variants ? SPY_FEAT_VARIANTS : 0) | (guards ? SPY_FEAT_GUARDS : 0) |
                 (dim_steps(e->g) ? SPY_FEAT_DIMSTEP : 0);
    h.header_bytes = sizeof h;
    h.nsections = (uint32_t)nsec;
    h.target = *e->t;
    h.file_size = st[nsec - 1].offset + st[nsec - 1].size;
    return h;
}

bool cg_write_bundle(CgEmit *e, const CgOptions *opt, const SpyProgramDesc *progs, CgOut *o)
{
    uint32_t order[] = {SPY_SEC_STRINGS, SPY_SEC_TENSORS, SPY_SEC_CONSTS, SPY_SEC_KERNELS,
                        SPY_SEC_PROGRAMS, SPY_SEC_CODE, SPY_SEC_SCHEDULE, SPY_SEC_SEGMENTS,
                        SPY_SEC_META, SPY_SEC_DEBUG, SPY_SEC_DIMREFS, SPY_SEC_VARIANTS};
    enum { NSEC = sizeof order / sizeof order[0] };
    int nsec = NSEC - 3;                   /* then DIMREFS, DEBUG and VARIANTS, when written */
    if (e->g->nsymdims)
        order[nsec++] = SPY_SEC_DIMREFS;
    if (opt->debug)
        order[nsec++] = SPY_SEC_DEBUG;
    if (opt->variants)
        order[nsec++] = SPY_SEC_VARIANTS;
    if (opt->const_extra_len)
        e->s->seg0_bytes = opt->const_extra_off + opt->const_extra_len;
    if (opt->const_tail)
        put_const_tail(e, opt);
    Writer w;
    memset(&w, 0, sizeof w);
    w.e = e;
    w.out = o;
    w.file.w = &w;
    for (int i = 0; i < SPY_SEC_MAX; i++)
        w.sec[i].w = &w;
    Buf *sec = w.sec;
    tables(e, opt, progs, sec);
    bool guards = cg_guards(e, progs);
    put(&sec[SPY_SEC_CODE], e->code, (size_t)e->n * sizeof(SpyInsn));
    const char *meta = opt->meta ? opt->meta : "";
    put(&sec[SPY_SEC_META], meta, strlen(meta));

    struct {
        SpyHeader h;
        SpySection st[NSEC];
    } hdr;
    memset(&hdr, 0, sizeof hdr);
    size_t hlen = sizeof hdr.h + (size_t)nsec * sizeof hdr.st[0];   /* header and table */
    uint64_t off = (hlen + SPY_SBIN_ALIGN - 1) / SPY_SBIN_ALIGN * SPY_SBIN_ALIGN;
    for (int i = 0; i < nsec; i++) {
        SpySection *st = &hdr.st[i];
        st->id = order[i];
        st->align = SPY_SBIN_ALIGN;
        st->offset = off;
        bool cst = order[i] == SPY_SEC_CONSTS;
        st->size = cst ? (opt->const_tail ? 0 : e->s->seg0_bytes) : sec[order[i]].n;
        if (order[i] == SPY_SEC_VARIANTS) { /* written from opt, not copied */
            st->size = opt->variants_len;
            st->crc32c = spy_crc32c(0, opt->variants, opt->variants_len);
        } else if (!cst || opt->const_tail)
            st->crc32c = spy_crc32c(0, sec[order[i]].p, sec[order[i]].n);
        off = (off + st->size + SPY_SBIN_ALIGN - 1) / SPY_SBIN_ALIGN * SPY_SBIN_ALIGN;
    }
    hdr.h = make_header(e, opt, hdr.st, nsec, guards);
    if (o->fd < 0)                         /* one block of the final size */
        reserve(&w.file, hdr.h.file_size);
    else if (!cg_sink_open(&w.sink, o))
        writer_oom(&w);
    out_put(&w, NULL, hlen);               /* its place; written last */
    uint64_t at = hlen;
    for (int i = 0; i < nsec; i++) {
        out_put(&w, NULL, (size_t)(hdr.st[i].offset - at));      /* zero padding (sbin.md) */
        if (order[i] == SPY_SEC_CONSTS && !opt->const_tail)
            hdr.st[i].crc32c = put_consts(&w, opt, 0);
        else if (order[i] == SPY_SEC_VARIANTS)
            out_put(&w, opt->variants, opt->variants_len);
        else
            out_put(&w, sec[order[i]].p, sec[order[i]].n);
        at = hdr.st[i].offset + hdr.st[i].size;
    }
    uint32_t crc = spy_crc32c(0, &hdr, hlen);
    memcpy((uint8_t *)&hdr + offsetof(SpyHeader, table_crc), &crc, 4);
    patch_header(&w, (const uint8_t *)&hdr, hlen);
    for (int i = 0; i < SPY_SEC_MAX; i++)
        free(sec[i].p);
    IR_ASSERT(o->err || at == hdr.h.file_size);
    if (o->fd < 0) {
        IR_ASSERT(w.file.n == hdr.h.file_size);
        o->mem = w.file.p;
    }
    o->len = hdr.h.file_size;
    return !o->err;
}
