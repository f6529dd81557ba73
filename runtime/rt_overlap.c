/* rt_overlap.c: which programs of the previous schedule entry each program waits for.
 *
 * The cores of a kernel meet at its BARRIER; the emulator ran each schedule entry's
 * programs on its host threads and made every thread wait there until the last of them
 * was done. The threads seldom finish together (a program is tens of microseconds and
 * the host preempts its threads), so one of them waited at almost every entry:
 * resnet50 at two threads lost 2-6% of its run that way. A program only needs the
 * programs before it that touch the same DRAM: those that wrote what it reads, and
 * those that read or wrote what it writes. A thread that finds no program of an entry
 * left can start the next entry's programs whose dependences are done.
 *
 * At load (rt_overlap_model), for every schedule entry after the first, each of its
 * active programs (in m->active order) gets the mask of the previous entry's active
 * programs it depends on (m->odep, from m->odep_first[pos]). The previous programs'
 * DRAM rows are marked in grids over each arena segment (a mask of writers per cache
 * line, one of readers per KiB), then each program of the entry ORs the masks of the
 * grains its own rows touch (readers' only where it writes). Rows are the innermost
 * runs of a LOAD or STORE, merged with the dims around them where they leave no gap
 * of a grain (a LOAD of 9 rows of 32 channels of a map touches those rows, not the
 * span of all 32 channels); a DMA whose rows cover half of its span, or of more than
 * RT_OV_MAX_ROWS rows, marks its whole span (the cost at load stays a few ms: llama_1b's
 * decode step 4 ms, bert_base 7); a GATHER or SCATTER marks its whole segment (its
 * rows depend on data). Constants are never written. Caller buffers (inputs and
 * outputs) may be one memory, so they count as one grain. A grain or span larger than
 * the bytes touched only adds a false dependence.
 *
 * rt_session.c then keeps, per entry, the mask of programs done; a program of entry
 * pos starts when every entry before pos - 1 is complete and its mask's programs of
 * pos - 1 are done. Entries with more than 64 active programs (or next to one), and
 * bundles with guards (the DMA sizes depend on run-time dims), keep the barrier
 * (m->odep_first[pos] = RT_OV_BARRIER). The same programs run on the same data in an
 * order the device's barrier allows too: the outputs are the same bits; the modelled
 * time is computed from the bundle and does not change.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"

#define RT_OV_WRITE_SHIFT 6      /* log2 of the bytes a writers' mask covers (a line) */
#define RT_OV_READ_SHIFT 10      /* and a readers' mask: coarser, reads are many (every
                                    program of a projection reads all of its input) and
                                    only a write after them needs them */
#define RT_OV_MAX_GRAINS (1u << 20) /* grains of a segment at most (coarser when larger) */
#define RT_OV_MAX_ROWS 1024       /* rows of one DMA walked; more: its whole span */
#define RT_OV_MAX_SCHED (1u << 20) /* longer schedules keep every barrier */

/* Masks of the previous entry's programs over one arena segment, a grain of 2^sh
 * bytes each. */
typedef struct {
    uint64_t *v;             /* [n] */
    uint64_t n, lo, hi;      /* grains; those marked so far: [lo, hi) */
    unsigned sh;
} OvGrid;

/* The writers and readers of each arena segment, of whole segments (a GATHER's or
 * SCATTER's) and of the caller buffers (one grain for all). */
typedef struct {
    OvGrid *w, *r;           /* [nsegs] (v NULL: a constant or a caller buffer) */
    uint64_t *segw, *segr;   /* [nsegs] writers / readers of the whole segment */
    uint64_t iow, ior;       /* the caller buffers' writers / readers */
} OvMap;

/* A program's side of a check: its bit while marking, its dependence mask while
 * looking up. */
typedef struct {
    OvMap *a;
    const spy_model *m;
    uint64_t bit;            /* marking: the previous program's bit */
    uint64_t dep;            /* looking up: the masks found */
    uint64_t all;            /* every program of the previous entry (nothing to add) */
    bool mark;
} OvPass;

/* The grains [*g0, *g1) of grid g that bytes [lo, hi) touch (clamped). */
static void grid_range(const OvGrid *g, int64_t lo, int64_t hi, uint64_t *g0, uint64_t *g1) {
    *g0 = lo < 0 ? 0 : (uint64_t)lo >> g->sh;
    *g1 = ((uint64_t)(hi < 0 ? 0 : hi) + (1ull << g->sh) - 1) >> g->sh;
    *g1 = *g1 > g->n ? g->n : *g1;
}

/* Adds bit to the grains of bytes [lo, hi). */
static void grid_mark(OvGrid *g, int64_t lo, int64_t hi, uint64_t bit) {
    uint64_t g0, g1;
    grid_range(g, lo, hi, &g0, &g1);
    if (g0 >= g1)
        return;
    for (uint64_t q = g0; q < g1; q++)
        g->v[q] |= bit;
    g->lo = g0 < g->lo ? g0 : g->lo;
    g->hi = g1 > g->hi ? g1 : g->hi;
}

/* The masks of the grains of bytes [lo, hi), ORed. */
static uint64_t grid_or(const OvGrid *g, int64_t lo, int64_t hi) {
    uint64_t g0, g1, d = 0;
    grid_range(g, lo, hi, &g0, &g1);
    for (uint64_t q = g0; q < g1; q++)
        d |= g->v[q];
    return d;
}

/* The masks of every grain marked so far, ORed. */
static uint64_t grid_or_marked(const OvGrid *g) {
    uint64_t d = 0;
    for (uint64_t q = g->lo; q < g->hi; q++)
        d |= g->v[q];
    return d;
}

/* Whether segment seg is a caller buffer (any segment neither constant nor arena). */
static bool io_seg(const spy_model *m, uint32_t seg) {
    return m->segs[seg].kind != SPY_SEGK_CONST && m->segs[seg].kind != SPY_SEGK_ARENA;
}

/* Marks (write: as written, else as read) or looks up bytes [lo, hi) of segment seg. */
static void ov_bytes(OvPass *p, uint32_t seg, int64_t lo, int64_t hi, bool write) {
    OvMap *a = p->a;
    if (seg >= p->m->nsegs || p->m->segs[seg].kind == SPY_SEGK_CONST || lo >= hi ||
        (!p->mark && p->dep == p->all))
        return;
    if (io_seg(p->m, seg)) {                  /* one grain for all caller buffers */
        if (p->mark)
            *(write ? &a->iow : &a->ior) |= p->bit;
        else
            p->dep |= a->iow | (write ? a->ior : 0);
        return;
    }
    if (p->mark) {
        grid_mark(write ? &a->w[seg] : &a->r[seg], lo, hi, p->bit);
        return;
    }
    p->dep |= a->segw[seg] | grid_or(&a->w[seg], lo, hi);
    if (write)
        p->dep |= a->segr[seg] | grid_or(&a->r[seg], lo, hi);
}

/* Marks or looks up a whole segment (a GATHER's table, a SCATTER's). */
static void ov_segment(OvPass *p, uint32_t seg, bool write) {
    OvMap *a = p->a;
    if (seg >= p->m->nsegs || p->m->segs[seg].kind == SPY_SEGK_CONST)
        return;
    if (io_seg(p->m, seg)) {
        ov_bytes(p, seg, 0, 1, write);
        return;
    }
    if (p->mark) {
        *(write ? &a->segw[seg] : &a->segr[seg]) |= p->bit;
        return;
    }
    p->dep |= a->segw[seg] | grid_or_marked(&a->w[seg]);
    if (write)
        p->dep |= a->segr[seg] | grid_or_marked(&a->r[seg]);
}

/* The rows of DMA x's DRAM side, each marked or looked up: its innermost dim, with
 * the dims around it merged in while the blocks they repeat leave no gap of a grain
 * (a LOAD of consecutive rows of a matrix is one row; one of 9 rows of each of 32
 * channels of a map is 32); its whole span when it is in a caller buffer, when its
 * rows cover half of it anyway, or when it has more than RT_OV_MAX_ROWS rows. */
static void ov_dma(OvPass *p, const SpyDma *x, bool write) {
    uint32_t seg = x->seg;
    if (seg >= p->m->nsegs || p->m->segs[seg].kind == SPY_SEGK_CONST)
        return;
    int64_t es = (x->flags & ISA_F_F32) ? 4 : x->esize, rows = 1, lo = 0, hi = es;
    bool grid = !io_seg(p->m, seg);     /* an arena: its grids */
    int64_t gap = grid ? (int64_t)1 << p->a->w[seg].sh : 0;
    int d = ISA_MAX_DIMS - 1;
    for (; d >= 0; d--) {               /* merged: [lo, hi) around the element offset */
        int64_t st = (int64_t)x->dram_stride[d] * es, ext = ((int64_t)x->dims[d] - 1) * st;
        if (x->dims[d] > 1 && (st < 0 ? -st : st) > hi - lo + gap)
            break;
        lo += ext < 0 ? ext : 0;
        hi += ext > 0 ? ext : 0;
    }
    for (int i = 0; i <= d; i++)
        rows *= x->dims[i];
    int64_t slo, shi;                   /* the whole span, when the rows cover half */
    rt_dma_span(x, false, &slo, &shi);
    if (rows > RT_OV_MAX_ROWS || rows == 0 || !grid || 2 * rows * (hi - lo) >= shi - slo) {
        ov_bytes(p, seg, x->dram_off + slo, x->dram_off + shi, write);
        return;
    }
    uint32_t idx[ISA_MAX_DIMS] = {0};
    int64_t off = x->dram_off;
    for (int64_t r = 0; r < rows && (p->mark || p->dep != p->all); r++) {
        ov_bytes(p, seg, off + lo, off + hi, write);
        for (int e = d; e >= 0; e--) {  /* the odometer of the rows */
            off += (int64_t)x->dram_stride[e] * es;
            if (++idx[e] < x->dims[e])
                break;
            off -= (int64_t)x->dram_stride[e] * es * x->dims[e];
            idx[e] = 0;
        }
    }
}

/* Marks or looks up every DRAM access of program pd. */
static void ov_program(OvPass *p, const SpyProgramDesc *pd) {
    for (uint32_t i = 0; i < pd->ninsns; i++) {
        const SpyInsn *in = &p->m->code[pd->first_insn + i];
        switch (in->opcode) {
        case ISA_LOAD: ov_dma(p, &in->dma, false); break;
        case ISA_STORE: ov_dma(p, &in->dma, true); break;
        case ISA_GATHER: ov_segment(p, in->gather.seg, false); break;
        case ISA_SCATTER: ov_segment(p, in->scatter.seg, true); break;
        default: break;
        }
    }
}

/* Clears grid g's marks. */
static void grid_clear(OvGrid *g) {
    if (g->v && g->lo < g->hi)
        memset(g->v + g->lo, 0, (g->hi - g->lo) * sizeof *g->v);
    g->lo = UINT64_MAX;
    g->hi = 0;
}

/* Clears what the previous entry marked. */
static void ov_clear(const spy_model *m, OvMap *a) {
    for (uint32_t s = 0; s < m->nsegs; s++) {
        grid_clear(&a->w[s]);
        grid_clear(&a->r[s]);
        a->segw[s] = a->segr[s] = 0;
    }
    a->iow = a->ior = 0;
}

/* The program of kernel k at active position q. */
static const SpyProgramDesc *active_program(const spy_model *m, uint32_t k, uint32_t q) {
    return &m->programs[m->kernels[k].first_program + m->active[m->active_first[k] + q]];
}

/* Active programs of schedule entry pos. */
static uint32_t entry_active(const spy_model *m, uint32_t pos) {
    uint32_t k = m->schedule[pos];
    return m->active_first[k + 1] - m->active_first[k];
}

/* Fills odep for entry pos (its na programs) from the map of entry pos - 1's. */
static void entry_deps(const spy_model *m, OvMap *a, uint32_t pos, uint64_t *odep) {
    uint32_t kp = m->schedule[pos - 1], k = m->schedule[pos];
    uint32_t np = entry_active(m, pos - 1), na = entry_active(m, pos);
    OvPass p = {a, m, 0, 0, np == 64 ? ~0ull : (1ull << np) - 1, true};
    for (uint32_t q = 0; q < np; q++) {
        p.bit = 1ull << q;
        ov_program(&p, active_program(m, kp, q));
    }
    p.mark = false;
    for (uint32_t j = 0; j < na; j++) {
        p.dep = 0;
        ov_program(&p, active_program(m, k, j));
        odep[j] = p.dep;
    }
    ov_clear(m, a);
}

/* Makes grid g over size bytes, grains of at least 2^sh bytes (false: out of
 * memory). */
static bool grid_new(OvGrid *g, uint64_t size, unsigned sh) {
    while (size >> sh > RT_OV_MAX_GRAINS)
        sh++;
    g->sh = sh;
    g->n = (size + (1ull << sh) - 1) >> sh;
    g->lo = UINT64_MAX;
    g->v = calloc(g->n + 1, sizeof *g->v);
    return g->v != NULL;
}

/* Makes the grids of m's arena segments (false: out of memory). */
static bool ov_map_new(const spy_model *m, OvMap *a) {
    size_t n = m->nsegs + 1;
    a->w = calloc(n, sizeof *a->w);
    a->r = calloc(n, sizeof *a->r);
    a->segw = calloc(n, sizeof *a->segw);
    a->segr = calloc(n, sizeof *a->segr);
    if (!a->w || !a->r || !a->segw || !a->segr)
        return false;
    for (uint32_t s = 0; s < m->nsegs; s++) {
        a->w[s].lo = a->r[s].lo = UINT64_MAX;
        if (m->segs[s].kind == SPY_SEGK_ARENA &&
            (!grid_new(&a->w[s], m->segs[s].size, RT_OV_WRITE_SHIFT) ||
             !grid_new(&a->r[s], m->segs[s].size, RT_OV_READ_SHIFT)))
            return false;
    }
    return true;
}

static void ov_map_free(const spy_model *m, OvMap *a) {
    for (uint32_t s = 0; a->w && a->r && s < m->nsegs; s++) {
        free(a->w[s].v);
        free(a->r[s].v);
    }
    free(a->w);
    free(a->r);
    free(a->segw);
    free(a->segr);
}

/* Whether entry pos can overlap the entry before it: both have 1 to 64 active
 * programs (one bit each). */
static bool entry_overlaps(const spy_model *m, uint32_t pos) {
    uint32_t np = entry_active(m, pos - 1), na = entry_active(m, pos);
    return np >= 1 && np <= 64 && na >= 1 && na <= 64;
}

/* Lists the dependences of every schedule entry's programs (m->odep, m->odep_first);
 * without memory, or for a bundle with guards, none: every entry keeps its barrier. */
void rt_overlap_model(spy_model *m) {
    m->odep = NULL;
    m->odep_first = NULL;
    if (m->guards || m->nsched < 2 || m->nsched > RT_OV_MAX_SCHED)
        return;
    size_t total = 0;
    for (uint32_t pos = 1; pos < m->nsched; pos++)
        total += entry_overlaps(m, pos) ? entry_active(m, pos) : 0;
    OvMap a = {0};
    uint32_t *first = malloc((size_t)m->nsched * sizeof *first);
    uint64_t *dep = malloc((total + 1) * sizeof *dep);
    bool ok = first && dep && total <= UINT32_MAX && ov_map_new(m, &a);
    size_t n = 0;
    for (uint32_t pos = 0; ok && pos < m->nsched; pos++) {
        first[pos] = RT_OV_BARRIER;
        if (pos == 0 || !entry_overlaps(m, pos))
            continue;
        first[pos] = (uint32_t)n;
        entry_deps(m, &a, pos, dep + n);
        n += entry_active(m, pos);
    }
    ov_map_free(m, &a);
    if (!ok) {
        free(first);
        free(dep);
        return;
    }
    m->odep = dep;
    m->odep_first = first;
}
