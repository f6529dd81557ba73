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
    Buf sec[SPY_SEC_MAX];                  /* sections by id */
    Buf file;                              /* the bundle */
};

/* Out of memory while writing: free every heap block of w, then take the graph's
 * out-of-memory path (longjmp to g->oom). */
static _Noreturn void writer_oom(Writer *w)
{
    for (int i = 0; i < SPY_SEC_MAX; i++)
        free(w->sec[i].p);
    free(w->file.p);
    free(w->e->code);
    w->e->code = NULL;
    ir_oom(w->e->g);
}

/* Append n bytes (zeros when d is NULL). */
static void put(Buf *b, const void *d, size_t n)
{
    if (n == 0)
        return;
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
    case ISA_DT_DLF16: return spy_f32_to_dlf16(f);
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

/* Constant segment: every planned constant converted to its device dtype and layout. */
static void consts_blob(IrGraph *g, const SpyTarget *t, Buf *b)
{
    Plan *s = g->plan;
    put(b, NULL, (size_t)s->seg0_bytes);
    for (uint32_t i = 0; i < s->nconsts; i++) {
        const IrValue *v = ir_val(g, s->consts[i]);
        const PlanValue *pv = &s->val[s->consts[i]];
        int64_t n = plan_numel(&v->type);
        if (n == 0)
            continue;                      /* no bytes; b->p may still be NULL */
        size_t ds = (size_t)pass_dev_esize(v->type.dtype);
        int64_t row = v->type.rank ? v->type.dims[v->type.rank - 1] : 1, prow = row;
        if (pv->layout == IR_LAYOUT_STICKED) {
            int64_t se = (int64_t)(t->stick_bytes / ds);
            prow = (row + se - 1) / se * se;
        }
        uint8_t *dst = b->p + pv->dram_offset;
        const uint8_t *src = v->data;
        for (int64_t e = 0; e < n; e++) {
            uint8_t *d = dst + ((e / row) * prow + e % row) * (int64_t)ds;
            int64_t x;
            if (!pass_dev_elem(v->type.dtype, src, e, d, &x)) { /* checked by dram_plan */
                int32_t y = (int32_t)x;
                memcpy(d, &y, 4);
            }
        }
    }
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
    put(tb, &d, sizeof d);
}

/* Tables: strings, tensors, kernels, programs, schedule, segments. */
static void tables(CgEmit *e, const SpyProgramDesc *progs, Buf *sec)
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
}

bool cg_write_bundle(CgEmit *e, const CgOptions *opt, const SpyProgramDesc *progs,
                     uint8_t **out, size_t *outlen)
{
    static const uint32_t order[] = {SPY_SEC_STRINGS, SPY_SEC_TENSORS, SPY_SEC_CONSTS,
                                     SPY_SEC_KERNELS, SPY_SEC_PROGRAMS, SPY_SEC_CODE,
                                     SPY_SEC_SCHEDULE, SPY_SEC_SEGMENTS, SPY_SEC_META};
    enum { NSEC = sizeof order / sizeof order[0] };
    Writer w;
    memset(&w, 0, sizeof w);
    w.e = e;
    w.file.w = &w;
    for (int i = 0; i < SPY_SEC_MAX; i++)
        w.sec[i].w = &w;
    Buf *sec = w.sec;
    tables(e, progs, sec);
    consts_blob(e->g, e->t, &sec[SPY_SEC_CONSTS]);
    put(&sec[SPY_SEC_CODE], e->code, (size_t)e->n * sizeof(SpyInsn));
    const char *meta = opt->meta ? opt->meta : "";
    put(&sec[SPY_SEC_META], meta, strlen(meta));

    Buf *f = &w.file;
    SpyHeader h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SPY_SBIN_MAGIC, 8);
    h.major = SPY_SBIN_MAJOR;
    h.minor = SPY_SBIN_MINOR;
    h.features = cg_uses_scatter(e) ? SPY_FEAT_SCATTER : 0;
    h.header_bytes = sizeof h;
    h.nsections = NSEC;
    h.target = *e->t;
    SpySection st[NSEC];
    memset(st, 0, sizeof st);
    uint64_t off = (sizeof h + sizeof st + SPY_SBIN_ALIGN - 1) / SPY_SBIN_ALIGN * SPY_SBIN_ALIGN;
    for (int i = 0; i < NSEC; i++) {
        const Buf *b = &sec[order[i]];
        st[i].id = order[i];
        st[i].align = SPY_SBIN_ALIGN;
        st[i].offset = off;
        st[i].size = b->n;
        st[i].crc32c = spy_crc32c(0, b->p, b->n);
        off = (off + b->n + SPY_SBIN_ALIGN - 1) / SPY_SBIN_ALIGN * SPY_SBIN_ALIGN;
    }
    h.file_size = st[NSEC - 1].offset + st[NSEC - 1].size;
    put(f, &h, sizeof h);
    put(f, st, sizeof st);
    uint32_t crc = spy_crc32c(0, f->p, f->n);
    memcpy(f->p + offsetof(SpyHeader, table_crc), &crc, 4);
    for (int i = 0; i < NSEC; i++) {
        put(f, NULL, (size_t)(st[i].offset - f->n));      /* zero padding (sbin.md) */
        put(f, sec[order[i]].p, sec[order[i]].n);
    }
    for (int i = 0; i < SPY_SEC_MAX; i++)
        free(sec[i].p);
    IR_ASSERT(f->n == h.file_size);
    *out = f->p;
    *outlen = f->n;
    return true;
}
