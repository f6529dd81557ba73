/* gen_sbin_lib.c: a hand assembler for small valid bundles (the corpus's reference
 * bundles) and the serializer that lays them out as schemas/sbin.h describes.
 * Broken bundles are made by editing a Bun before writing it (table contents, CRCs
 * stay right) or the written bytes after (container damage). */
#include <stdlib.h>
#include <string.h>

#include "gen_sbin.h"

/* The reference target (same values as the compiler's built-in spyre32). */
void bun_target(SpyTarget *t)
{
    memset(t, 0, sizeof *t);
    strcpy(t->name, "spyre32");
    t->cores = 32;
    t->corelets = 2;
    t->lx_bytes = 2097152;
    t->lx_budget_bytes = 1677721;
    t->stick_bytes = 128;
    t->clock_mhz = 1500;
    t->macs_fp16_per_cycle = 1024;
    t->fp32_mac_divisor = 4;
    t->int8_mac_multiplier = 2;
    t->vec_lanes_fp32 = 32;
    t->transcendental_factor = 4;
    t->dram_peak_mbps = 204800;
    t->dram_oneway_mbps = 150000;
    t->dram_mixed_mbps = 105000;
    t->overlap_permille = 460;
    t->barrier_cycles = 1000;
    t->ring_bytes_per_cycle = 128;
    t->core_window_mib = 256;
    t->dram_gib = 112;
}

/* Offset of s in the STRINGS section (appended). */
uint32_t bun_str(Bun *b, const char *s)
{
    uint32_t off = (uint32_t)b->strings.n;
    buf_put(&b->strings, s, strlen(s) + 1);
    return off;
}

/* Add a graph input or output with its I/O segment. */
void bun_tensor(Bun *b, const char *name, int role, int host, int dev, const int64_t *dims,
                int rank)
{
    SpyTensorDesc *t = &b->tensors[b->ntensors];
    memset(t, 0, sizeof *t);
    t->name = bun_str(b, name);
    t->role = (uint8_t)role;
    t->host_dtype = (uint8_t)host;
    t->dev_dtype = (uint8_t)dev;
    t->rank = (uint8_t)rank;
    t->numel = 1;
    for (int i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        t->numel *= (uint64_t)dims[i];
    }
    t->seg = (uint32_t)b->nsegs;
    unsigned es = dev == 1 || dev == 6 ? 4 : dev == 10 || dev == 16 || dev == 5 ? 2 : 1;
    b->segs[b->nsegs++] = (SpySegmentDesc){SPY_SEGK_IO, (uint32_t)b->ntensors, t->numel * es};
    b->ntensors++;
}

/* Start a bundle: target, constants segment, arena segment of arena bytes. */
static void bun_init(Bun *b, size_t arena)
{
    memset(b, 0, sizeof *b);
    bun_target(&b->target);
    bun_str(b, "");
    b->segs[0] = (SpySegmentDesc){SPY_SEGK_CONST, 0, 0};
    b->segs[1] = (SpySegmentDesc){SPY_SEGK_ARENA, 0, arena};
    b->nsegs = 2;
    b->meta = "compiler=spyrec-corpus\nflags=\n";
}

/* A kernel whose core 0 runs insns[0..n) and whose other cores only meet the barrier. */
void bun_kernel(Bun *b, const char *name, const SpyInsn *insns, int n)
{
    uint32_t k = (uint32_t)b->nkernels++;
    SpyKernelDesc *kd = &b->kernels[k];
    memset(kd, 0, sizeof *kd);
    kd->name = bun_str(b, name);
    kd->first_program = (uint32_t)b->nprograms;
    kd->ncores = b->target.cores;
    kd->flops = 64;
    kd->min_dram_bytes = 256;
    for (uint32_t c = 0; c < b->target.cores; c++) {
        SpyProgramDesc *p = &b->programs[b->nprograms++];
        p->first_insn = (uint64_t)b->ncode;
        p->core = c;
        if (c == 0)
            for (int i = 0; i < n; i++)
                b->code[b->ncode++] = insns[i];
        SpyInsn bar;
        memset(&bar, 0, sizeof bar);
        bar.bar.opcode = ISA_BARRIER;
        bar.bar.kernel = k;
        b->code[b->ncode++] = bar;
        p->ninsns = (uint32_t)(b->ncode - p->first_insn);
    }
    b->sched[b->nsched++] = k;
}

/* A 2-D dense LOAD or STORE of rows x cols elements of esize bytes. */
SpyInsn bun_dma(int op, uint32_t seg, int64_t dram_off, uint32_t lx, uint32_t rows, uint32_t cols,
                int esize)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyDma *d = &in.dma;
    d->opcode = (uint8_t)op;
    d->esize = (uint8_t)esize;
    d->ndim = 2;
    d->seg = seg;
    d->dram_off = dram_off;
    d->lx = lx;
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        d->dims[i] = 1;
    d->dims[0] = rows;
    d->dims[1] = cols;
    d->dram_stride[0] = (int32_t)cols;
    d->dram_stride[1] = 1;
    d->lx_stride[0] = (int32_t)cols;
    d->lx_stride[1] = 1;
    return in;
}

/* VEC fn over rows x cols dense operands of dtype dt. */
SpyInsn bun_vec(int fn, int dt, int nsrc, uint32_t dst, uint32_t s0, uint32_t s1, uint32_t rows,
                uint32_t cols)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC;
    v->dtype = (uint8_t)dt;
    v->src_dtype = (uint8_t)dt;
    v->fn = (uint16_t)fn;
    v->nsrc = (uint16_t)nsrc;
    v->dst = dst;
    v->src[0] = s0;
    v->src[1] = s1;
    v->rows = rows;
    v->cols = cols;
    v->dst_rs = (int32_t)cols;
    for (int q = 0; q < 3; q++) {
        v->src_rs[q] = (int32_t)cols;
        v->src_cs[q] = 1;
    }
    return in;
}

/* relu: x f32[4,8] -> y = max(x, 0). */
static void bun_relu(Bun *b)
{
    bun_init(b, 256);
    bun_tensor(b, "x", SPY_ROLE_INPUT, 1, 1, (const int64_t[]){4, 8}, 2);
    bun_tensor(b, "y", SPY_ROLE_OUTPUT, 1, 1, (const int64_t[]){4, 8}, 2);
    SpyInsn code[3] = {bun_dma(ISA_LOAD, 2, 0, 0, 4, 8, 4),
                       bun_vec(ISA_VF_RELU, ISA_DT_F32, 1, 256, 0, 0, 4, 8),
                       bun_dma(ISA_STORE, 3, 0, 256, 4, 8, 4)};
    bun_kernel(b, "k0_relu", code, 3);
}

/* embed: ids i64[4] -> rows of a constant f32[10,8] table -> y f32[4,8]. */
static void bun_embed(Bun *b)
{
    bun_init(b, 256);
    bun_tensor(b, "ids", SPY_ROLE_INPUT, 7, 6, (const int64_t[]){4}, 1);
    bun_tensor(b, "y", SPY_ROLE_OUTPUT, 1, 1, (const int64_t[]){4, 8}, 2);
    for (int i = 0; i < 80; i++) {
        float v = (float)(i / 8) + 0.125f * (float)(i % 8);
        buf_put(&b->consts, &v, 4);
    }
    b->segs[0].size = b->consts.n;
    SpyInsn g;
    memset(&g, 0, sizeof g);
    g.gather.opcode = ISA_GATHER;
    g.gather.esize = 4;
    g.gather.seg = 0;
    g.gather.row_stride = 8;
    g.gather.lx_dst = 64;
    g.gather.lx_idx = 0;
    g.gather.nidx = 4;
    g.gather.row_elems = 8;
    g.gather.bound = 10;
    g.gather.dst_row_stride = 8;
    SpyInsn code[3] = {bun_dma(ISA_LOAD, 2, 0, 0, 1, 4, 4), g,
                       bun_dma(ISA_STORE, 3, 0, 64, 4, 8, 4)};
    bun_kernel(b, "k0_gather", code, 3);
}

/* div: a, b i32[8] -> q = a / b (integer division: b == 0 is a run-time error). */
static void bun_div(Bun *b)
{
    bun_init(b, 256);
    bun_tensor(b, "a", SPY_ROLE_INPUT, 6, 6, (const int64_t[]){8}, 1);
    bun_tensor(b, "b", SPY_ROLE_INPUT, 6, 6, (const int64_t[]){8}, 1);
    bun_tensor(b, "q", SPY_ROLE_OUTPUT, 6, 6, (const int64_t[]){8}, 1);
    SpyInsn code[4] = {bun_dma(ISA_LOAD, 2, 0, 0, 1, 8, 4), bun_dma(ISA_LOAD, 3, 0, 64, 1, 8, 4),
                       bun_vec(ISA_VF_DIV, ISA_DT_I32, 2, 128, 0, 64, 1, 8),
                       bun_dma(ISA_STORE, 4, 0, 128, 1, 8, 4)};
    bun_kernel(b, "k0_div", code, 4);
}

/* reludyn: relu over x f32[1..n, 8] (a bounded symbolic axis 0, symbol 0), the hidden
 * dims input, y f32[1..n, 8] (SPY_FEAT_DYNDIM, DIMREFS); the reference bundle has n 4. */
void bun_reludyn_n(Bun *b, uint32_t n)
{
    bun_init(b, 256);
    bun_tensor(b, "x", SPY_ROLE_INPUT, 1, 1, (const int64_t[]){n, 8}, 2);
    bun_tensor(b, "dims", SPY_ROLE_INPUT, 6, 6, (const int64_t[]){1}, 1);
    bun_tensor(b, "y", SPY_ROLE_OUTPUT, 1, 1, (const int64_t[]){n, 8}, 2);
    b->tensors[1].flags = SPY_TF_DIMS;
    SpyInsn code[3] = {bun_dma(ISA_LOAD, 2, 0, 0, n, 8, 4),
                       bun_vec(ISA_VF_RELU, ISA_DT_F32, 1, 256, 0, 0, n, 8),
                       bun_dma(ISA_STORE, 4, 0, 256, n, 8, 4)};
    bun_kernel(b, "k0_relu", code, 3);
    SpyDimRef r[2] = {{0, 0, 0, 0, 1, n}, {2, 0, 0, 0, 1, n}};
    buf_put(&b->dimrefs, r, sizeof r);
    b->dimrefs_sec = true;
    b->features |= SPY_FEAT_DYNDIM;
}

/* The reference reludyn bundle (n 4). */
static void bun_reludyn(Bun *b)
{
    bun_reludyn_n(b, 4);
}

/* A VARIANTS section holding the n written bundles, in order. */
Buf bun_variants(const Buf *bundles, int n)
{
    Buf v = {0};
    SpyVariantsHead h;
    memset(&h, 0, sizeof h);
    h.count = (uint32_t)n;
    buf_put(&v, &h, sizeof h);
    uint64_t at = (sizeof h + (uint64_t)n * sizeof(SpyVariantDesc) + 63) / 64 * 64;
    for (int i = 0; i < n; i++) {
        SpyVariantDesc d = {.offset = at, .size = bundles[i].n};
        buf_put(&v, &d, sizeof d);
        at = (at + bundles[i].n + 63) / 64 * 64;
    }
    for (int i = 0; i < n; i++) {
        static const uint8_t zero[64];
        buf_put(&v, zero, (64 - v.n % 64) % 64);
        buf_put(&v, bundles[i].p, bundles[i].n);
    }
    return v;
}

/* Gives b a VARIANTS section holding bucket s (written, then freed with s) and the
 * feature bit. */
void bun_add_bucket(Bun *b, Bun *s)
{
    Buf one = bun_write(s);
    bun_free(s);
    free(s);
    b->variants = bun_variants(&one, 1);
    b->variants_sec = true;
    b->features |= SPY_FEAT_VARIANTS;
    buf_free(&one);
}

/* relubuckets: reludyn (x f32[1..4, 8]) with one size bucket, the same relu compiled
 * for x f32[1..2, 8] (an empty CONSTS: it reads the bundle's). */
static void bun_relubuckets(Bun *b)
{
    Bun *s = calloc(1, sizeof *s);
    bun_reludyn_n(s, 2);
    bun_reludyn(b);
    bun_add_bucket(b, s);
}

/* One of the reference bundles by name: relu, embed, div, reludyn, relubuckets. */
void bun_base(Bun *b, const char *which)
{
    if (!strcmp(which, "relubuckets"))
        bun_relubuckets(b);
    else if (!strcmp(which, "reludyn"))
        bun_reludyn(b);
    else if (!strcmp(which, "embed"))
        bun_embed(b);
    else if (!strcmp(which, "div"))
        bun_div(b);
    else
        bun_relu(b);
}

/* Offset rounded up to the bundle alignment. */
static size_t align64(size_t n)
{
    return (n + SPY_SBIN_ALIGN - 1) & ~(size_t)(SPY_SBIN_ALIGN - 1);
}

/* Recompute every section CRC and the header/table CRC of a written bundle (for
 * edits that must get past the checksums to reach the verifier). Trusts the table. */
void bun_fix_crcs(Buf *f)
{
    SpyHeader *h = (SpyHeader *)f->p;
    SpySection *s = (SpySection *)(f->p + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].offset <= f->n && s[i].size <= f->n - s[i].offset)
            s[i].crc32c = gen_crc32c(0, f->p + s[i].offset, s[i].size);
    h->table_crc = 0;
    uint32_t crc = gen_crc32c(0, h, sizeof *h);
    h->table_crc = gen_crc32c(crc, s, h->nsections * sizeof *s);
}

/* Lay out b as a bundle file. */
Buf bun_write(const Bun *b)
{
    struct {
        uint32_t id;
        const void *p;
        size_t n;
    } sec[] = {
        {SPY_SEC_STRINGS, b->strings.p, b->strings.n},
        {SPY_SEC_TENSORS, b->tensors, (size_t)b->ntensors * sizeof(SpyTensorDesc)},
        {SPY_SEC_CONSTS, b->consts.p, b->consts.n},
        {SPY_SEC_KERNELS, b->kernels, (size_t)b->nkernels * sizeof(SpyKernelDesc)},
        {SPY_SEC_PROGRAMS, b->programs, (size_t)b->nprograms * sizeof(SpyProgramDesc)},
        {SPY_SEC_CODE, b->code, (size_t)b->ncode * sizeof(SpyInsn)},
        {SPY_SEC_SCHEDULE, b->sched, (size_t)b->nsched * 4},
        {SPY_SEC_SEGMENTS, b->segs, (size_t)b->nsegs * sizeof(SpySegmentDesc)},
        {SPY_SEC_META, b->meta, strlen(b->meta)},
        {SPY_SEC_SELFTEST, b->selftest.p, b->selftest.n},
        {SPY_SEC_DEBUG, b->debug.p, b->debug.n},
        {SPY_SEC_DIMREFS, b->dimrefs.p, b->dimrefs.n},
        {SPY_SEC_VARIANTS, b->variants.p, b->variants.n},
    };
    uint32_t ns = 9;
    if (b->selftest.p)
        ns++;
    if (b->dimrefs_sec)
        sec[ns++] = sec[11];
    if (b->debug_sec)                      /* DEBUG follows the others */
        sec[ns++] = sec[10];
    if (b->variants_sec)                   /* then VARIANTS */
        sec[ns++] = sec[12];
    SpyHeader h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SPY_SBIN_MAGIC, 8);
    h.major = SPY_SBIN_MAJOR;
    h.minor = SPY_SBIN_MINOR;
    h.header_bytes = sizeof h;
    h.nsections = ns;
    h.features = b->features;
    h.target = b->target;
    SpySection tab[13];
    memset(tab, 0, sizeof tab);
    size_t off = align64(sizeof h + ns * sizeof(SpySection));
    for (uint32_t i = 0; i < ns; i++) {
        tab[i].id = sec[i].id;
        tab[i].align = SPY_SBIN_ALIGN;
        tab[i].offset = off;
        tab[i].size = sec[i].n;
        off = align64(off + sec[i].n);
    }
    h.file_size = off;
    Buf f = {0};
    uint8_t *zero = calloc(1, off);
    buf_put(&f, zero, off);
    free(zero);
    memcpy(f.p, &h, sizeof h);
    memcpy(f.p + sizeof h, tab, ns * sizeof(SpySection));
    for (uint32_t i = 0; i < ns; i++)
        if (sec[i].n)
            memcpy(f.p + tab[i].offset, sec[i].p, sec[i].n);
    bun_fix_crcs(&f);
    return f;
}

/* The section table entry of section id in a written bundle (NULL if absent). */
SpySection *bun_section(Buf *f, uint32_t id)
{
    SpyHeader *h = (SpyHeader *)f->p;
    SpySection *s = (SpySection *)(f->p + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].id == id)
            return &s[i];
    return NULL;
}

/* Written reference bundle by name (for the input cases). */
Buf sbin_build(const char *which)
{
    Bun *b = malloc(sizeof *b);
    bun_base(b, which);
    Buf f = bun_write(b);
    bun_free(b);
    free(b);
    return f;
}

void bun_free(Bun *b)
{
    buf_free(&b->strings);
    buf_free(&b->consts);
    buf_free(&b->selftest);
    buf_free(&b->debug);
    b->debug_sec = false;
    buf_free(&b->dimrefs);
    b->dimrefs_sec = false;
    buf_free(&b->variants);
    b->variants_sec = false;
    b->features = 0;
}
