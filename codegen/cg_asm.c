/* cg_asm.c: human-readable disassembly of a bundle in memory: header, tensors,
 * segments, then per kernel and core one instruction per line, e.g.
 *   load   lx[0x00000] <- seg1[+0x1000] e4 dims[3,3,32] dram[96,32,1] lx[96,32,1]
 * Cores whose program is only the barrier are listed together. Every offset is
 * checked against the buffer first, so a damaged bundle gives a message, not a crash.
 */
#include <inttypes.h>
#include <string.h>

#include "cg_internal.h"

static const char *const vec_names[ISA_VF_COUNT] = {
    "copy", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "recip", "tanh", "erf", "sigmoid",
    "relu", "floor", "ceil", "round", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "asinh", "acosh", "atanh", "sign", "not", "isnan", "isinf", "softplus", "add",
    "sub", "mul", "div", "pow", "max", "min", "fmod", "mod", "eq", "ne", "lt", "le", "gt",
    "ge", "and", "or", "xor", "shl", "shr", "atan2", "select", "cast", "fma"};
static const char *const red_names[ISA_RF_COUNT] = {"sum", "prod", "max", "min", "argmax",
                                                    "argmin"};

/* Short name of a device dtype code. */
static const char *dt(int d)
{
    switch (d) {
    case ISA_DT_F32: return "f32";
    case ISA_DT_U8: return "u8";
    case ISA_DT_I8: return "i8";
    case ISA_DT_I16: return "i16";
    case ISA_DT_I32: return "i32";
    case ISA_DT_BOOL: return "bool";
    case ISA_DT_F16: return "f16";
    case ISA_DT_BF16: return "bf16";
    case ISA_DT_DLF16: return "dlf16";
    case 7: return "i64";
    default: return "?";
    }
}

/* "[a,b,c]" of n int32 values. */
static void list(FILE *f, const char *tag, const int32_t *v, int n)
{
    fprintf(f, " %s[", tag);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

/* One LOAD/STORE line. */
static void print_dma(FILE *f, const SpyDma *d)
{
    int n = d->ndim <= ISA_MAX_DIMS ? d->ndim : ISA_MAX_DIMS;
    if (d->opcode == ISA_LOAD)
        fprintf(f, "load    lx[0x%05x] <- seg%u[+0x%" PRIx64 "]", d->lx, d->seg,
                (uint64_t)d->dram_off);
    else
        fprintf(f, "store   seg%u[+0x%" PRIx64 "] <- lx[0x%05x]", d->seg, (uint64_t)d->dram_off,
                d->lx);
    fprintf(f, " e%u%s%s", d->esize, (d->flags & ISA_F_F32) ? " f32<->dlf16" : "",
            (d->flags & ISA_F_RING) ? " ring" : "");
    int32_t dims[ISA_MAX_DIMS];
    for (int i = 0; i < n; i++)
        dims[i] = (int32_t)d->dims[i];
    list(f, "dims", dims, n);
    list(f, "dram", d->dram_stride, n);
    list(f, "lx", d->lx_stride, n);
}

/* One VEC line. */
static void print_vec(FILE *f, const SpyVec *v)
{
    const char *fn = v->fn < ISA_VF_COUNT ? vec_names[v->fn] : "?";
    fprintf(f, "vec     %s.%s", fn, dt(v->dtype));
    if (v->src_dtype && v->src_dtype != v->dtype)
        fprintf(f, "<-%s", dt(v->src_dtype));
    fprintf(f, " lx[0x%05x] %ux%u rs %d <-", v->dst, v->rows, v->cols, v->dst_rs);
    for (int q = 0; q < v->nsrc && q < 3; q++) {
        if ((q == 1 && (v->flags & ISA_F_IMM)) || (q == 0 && (v->flags & ISA_F_IMM_A)))
            fprintf(f, " imm(0x%x)", v->imm);
        else
            fprintf(f, " lx[0x%05x](%d,%d)", v->src[q], v->src_rs[q], v->src_cs[q]);
    }
}

/* One instruction line (without indentation). */
static void print_insn(FILE *f, const SpyInsn *in)
{
    switch (in->opcode) {
    case ISA_NOP: fprintf(f, "nop"); break;
    case ISA_LOAD: case ISA_STORE: print_dma(f, &in->dma); break;
    case ISA_GATHER: {
        const SpyGather *g = &in->gather;
        fprintf(f, "gather  lx[0x%05x] <- seg%u[+0x%" PRIx64 "] rows(lx[0x%05x] x%u) e%u "
                "row %u stride %" PRId64 " bound %u dst_rs %u", g->lx_dst, g->seg,
                (uint64_t)g->dram_off, g->lx_idx, g->nidx, g->esize, g->row_elems,
                g->row_stride, g->bound, g->dst_row_stride);
        break;
    }
    case ISA_MATMUL: {
        const SpyMatmul *m = &in->mm;
        fprintf(f, "matmul  lx[0x%05x] %s lx[0x%05x] x lx[0x%05x] %s->%s m%u n%u k%u ld %u,%u,%u",
                m->c, (m->flags & ISA_F_ACCUM) ? "+=" : "=", m->a, m->b, dt(m->dtype),
                dt(m->out_dtype), m->m, m->n, m->k, m->lda, m->ldb, m->ldc);
        if (m->flags & ISA_F_BWIN)
            fprintf(f, " bwin %ux%ux%u(%d,%d,%d) %ux%u(%d,%d)", m->bw_kext[0], m->bw_kext[1],
                    m->bw_kext[2], m->bw_ks[0], m->bw_ks[1], m->bw_ks[2], m->bw_next[0],
                    m->bw_next[1], m->bw_ns[0], m->bw_ns[1]);
        if (m->flags & ISA_F_BF8)
            fprintf(f, " b:f8e4m3fn");
        break;
    }
    case ISA_VEC: print_vec(f, &in->vec); break;
    case ISA_VREDUCE: {
        const SpyVReduce *r = &in->red;
        fprintf(f, "vreduce %s.%s lx[0x%05x] %s lx[0x%05x] %ux%u (%d,%d) dst_rs %d%s",
                r->fn < ISA_RF_COUNT ? red_names[r->fn] : "?", dt(r->dtype), r->dst,
                (r->flags & ISA_F_ACCUM) ? "op=" : "=", r->src, r->rows, r->len, r->src_rs,
                r->src_cs, r->dst_rs, (r->flags & ISA_F_LAST) ? " last" : "");
        break;
    }
    case ISA_VFILL:
        fprintf(f, "vfill   lx[0x%05x] %s x%u = 0x%x", in->fill.dst, dt(in->fill.dtype),
                in->fill.n, in->fill.value);
        break;
    case ISA_VSCAN: {
        const SpyVScan *s = &in->scan;
        fprintf(f, "vscan   %s lx[0x%05x] <- lx[0x%05x] %ux%u rs %d,%d%s%s", dt(s->dtype), s->dst,
                s->src, s->rows, s->len, s->src_rs, s->dst_rs,
                (s->flags & ISA_F_EXCL) ? " excl" : "", (s->flags & ISA_F_REV) ? " rev" : "");
        break;
    }
    case ISA_BARRIER: fprintf(f, "barrier %u", in->bar.kernel); break;
    case ISA_SCATTER: {
        const SpyScatter *s = &in->scatter;
        fprintf(f, "scatter seg%u[+0x%" PRIx64 "] rows(lx[0x%05x] x%u) <- lx[0x%05x] e%u "
                "row %u stride %" PRId64 " bound %u src_rs %u", s->seg, (uint64_t)s->dram_off,
                s->lx_idx, s->nidx, s->lx_src, s->esize, s->row_elems, s->row_stride, s->bound,
                s->src_row_stride);
        break;
    }
    default: fprintf(f, "unknown opcode %u", in->opcode); break;
    }
    SpyGuard g = spy_insn_guard(in);          /* isa.md "Guards" (zero bytes: none) */
    for (int i = 0; i < (g.n & ISA_GUARD_NMASK) && i < ISA_GUARD_MAX; i++)
        fprintf(f, "%ssym%u<=%u", i ? " or " : "  skip if ", g.sym[i], g.lo[i]);
    if (g.n & ISA_GUARD_ROWS)                 /* a row clamp: rows sym * per - off */
        fprintf(f, "  rows sym%u*%u-%u", g.sym[1], g.lo[1], g.lo[2]);
    fputc('\n', f);
}

typedef struct {
    const uint8_t *p;
    uint64_t size;
} Sec;

/* Locate the sections; false (with a message) if the container is damaged. */
static bool find_sections(const uint8_t *b, size_t len, SpyHeader *h, Sec *sec, FILE *f)
{
    if (len < sizeof *h || memcmp(b, SPY_SBIN_MAGIC, 8) != 0) {
        fprintf(f, "error: not a spyrec bundle\n");
        return false;
    }
    memcpy(h, b, sizeof *h);
    if (h->nsections > 64 || sizeof *h + (uint64_t)h->nsections * sizeof(SpySection) > len) {
        fprintf(f, "error: bad section table\n");
        return false;
    }
    for (uint32_t i = 0; i < h->nsections; i++) {
        SpySection s;
        memcpy(&s, b + sizeof *h + i * sizeof s, sizeof s);
        if (s.id >= SPY_SEC_MAX || s.offset > len || s.size > len - s.offset) {
            fprintf(f, "error: section %u out of range\n", i);
            return false;
        }
        sec[s.id].p = b + s.offset;
        sec[s.id].size = s.size;
    }
    return true;
}

/* Print tensors and segments. */
static void print_tables(FILE *f, const Sec *sec)
{
    const Sec *st = &sec[SPY_SEC_STRINGS];
    uint64_t nt = sec[SPY_SEC_TENSORS].size / sizeof(SpyTensorDesc);
    for (uint64_t i = 0; i < nt; i++) {
        SpyTensorDesc t;
        memcpy(&t, sec[SPY_SEC_TENSORS].p + i * sizeof t, sizeof t);
        const char *nm = t.name < st->size && memchr(st->p + t.name, 0, st->size - t.name)
                             ? (const char *)st->p + t.name : "?";
        fprintf(f, "tensor %" PRIu64 " %s '%s' %s", i, t.role == SPY_ROLE_INPUT ? "input" : "output",
                nm, dt(t.host_dtype));
        for (int d = 0; d < t.rank && d < SPY_SBIN_MAX_RANK; d++)
            fprintf(f, "%s%" PRId64, d ? "," : "[", t.dims[d]);
        fprintf(f, "%s device %s seg%u", t.rank ? "]" : "[]", dt(t.dev_dtype), t.seg);
        if (t.flags & SPY_TF_DYNAMIC)
            fprintf(f, " dynamic axis %u extent seg%u[+0x%" PRIx64 "]", t.dyn_axis, t.count_seg,
                    t.count_off);
        fprintf(f, "%s\n", (t.flags & SPY_TF_HIDDEN) ? " hidden" : "");
    }
    uint64_t ns = sec[SPY_SEC_SEGMENTS].size / sizeof(SpySegmentDesc);
    for (uint64_t i = 0; i < ns; i++) {
        SpySegmentDesc s;
        memcpy(&s, sec[SPY_SEC_SEGMENTS].p + i * sizeof s, sizeof s);
        fprintf(f, "segment %" PRIu64 " %s %" PRIu64 " bytes\n", i,
                s.kind == SPY_SEGK_CONST ? "const" : s.kind == SPY_SEGK_ARENA ? "arena" : "io",
                s.size);
    }
}

/* Print one kernel's programs. */
static void print_kernel(FILE *f, const Sec *sec, uint64_t ki)
{
    const Sec *st = &sec[SPY_SEC_STRINGS];
    SpyKernelDesc k;
    memcpy(&k, sec[SPY_SEC_KERNELS].p + ki * sizeof k, sizeof k);
    const char *nm = k.name < st->size && memchr(st->p + k.name, 0, st->size - k.name)
                         ? (const char *)st->p + k.name : "?";
    fprintf(f, "\nkernel %" PRIu64 " '%s' flops %" PRIu64 " min_dram %" PRIu64 "\n", ki, nm,
            k.flops, k.min_dram_bytes);
    uint64_t np = sec[SPY_SEC_PROGRAMS].size / sizeof(SpyProgramDesc);
    uint64_t nc = sec[SPY_SEC_CODE].size / sizeof(SpyInsn);
    int64_t idle_from = -1;
    for (uint32_t c = 0; c <= k.ncores; c++) {
        SpyProgramDesc p = {0};
        bool ok = c < k.ncores && (uint64_t)k.first_program + c < np;
        if (ok)
            memcpy(&p, sec[SPY_SEC_PROGRAMS].p + (k.first_program + c) * sizeof p, sizeof p);
        ok = ok && p.first_insn <= nc && p.ninsns <= nc - p.first_insn;
        bool idle = ok && p.ninsns == 1;
        if (idle && idle_from < 0)
            idle_from = c;
        if (!idle && idle_from >= 0) {
            fprintf(f, "  cores %" PRId64 "..%u: barrier only\n", idle_from, c - 1);
            idle_from = -1;
        }
        if (!ok || idle)
            continue;
        fprintf(f, "  core %u: %u instructions\n", p.core, p.ninsns);
        for (uint32_t i = 0; i < p.ninsns; i++) {
            SpyInsn in;
            memcpy(&in, sec[SPY_SEC_CODE].p + (p.first_insn + i) * sizeof in, sizeof in);
            fprintf(f, "    ");
            print_insn(f, &in);
        }
    }
}

bool cg_disassemble(const uint8_t *bundle, size_t len, FILE *f)
{
    SpyHeader h;
    Sec sec[SPY_SEC_MAX];
    memset(sec, 0, sizeof sec);
    if (!bundle || !find_sections(bundle, len, &h, sec, f))
        return false;
    char tname[33];
    memcpy(tname, h.target.name, 32);
    tname[32] = 0;
    fprintf(f, "bundle v%u.%u for %s: %u cores, lx budget %u bytes\n", h.major, h.minor, tname,
            h.target.cores, h.target.lx_budget_bytes);
    print_tables(f, sec);
    uint64_t nk = sec[SPY_SEC_KERNELS].size / sizeof(SpyKernelDesc);
    for (uint64_t k = 0; k < nk; k++)
        print_kernel(f, sec, k);
    return true;
}
