/* cg_internal.h: shared state and helpers of the code generator (codegen/ only). */
#ifndef SPYREC_CG_INTERNAL_H
#define SPYREC_CG_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cg.h"
#include "isa.h"
#include "passes/plan/plan.h"
#include "sbin.h"

#define CG_DIMS_MAX 16           /* logical DMA dims before coalescing */
#define CG_CACHE_MAX 64          /* remembered loads per core program; half of it caps the
                                    ring pieces of one shared tile (cg_load_shared) */

/* A logical N-d DMA: extents and strides (elements), outermost first. */
typedef struct {
    int n;
    int64_t len[CG_DIMS_MAX];
    int64_t ds[CG_DIMS_MAX];     /* DRAM strides */
    int64_t ls[CG_DIMS_MAX];     /* LX strides */
} CgDims;

/* A set of LX bytes: runs of width bytes at lo + sum_i j_i * stride[i] (bytes, > 0),
 * 0 <= j_i < len[i], outermost first (cg_lxspan.c). Empty when width is 0. */
typedef struct {
    int64_t lo, width;
    int64_t ext;                 /* bytes from lo to the end of the last run */
    int n;
    int64_t len[CG_DIMS_MAX];
    int64_t stride[CG_DIMS_MAX];
} CgSpan;

/* A load whose data is still in LX (so that an identical load can be skipped). */
typedef struct {
    bool valid;
    uint32_t lx, seg;
    int64_t off;
    unsigned esize;
    CgDims d;
    CgSpan held;                 /* the LX bytes it filled */
} CgCached;

/* A conv input patch in LX whose border holds the pad value (cg_contract.c): rows
 * [rlo, rhi) of its interior columns were loaded, everything else was filled. */
typedef struct {
    bool valid;
    uint32_t lx, value;
    int64_t cl, rin, wp, rlo, rhi;
} CgPatch;

typedef struct {
    IrGraph *g;
    const SpyTarget *t;
    Plan *s;
    SpyInsn *code;               /* every program, back to back */
    uint64_t n, cap;
    CgCached cache[CG_CACHE_MAX];
    uint32_t next_cache;
    CgPatch patch;               /* conv input patch left by the last work item */
    uint8_t *in_f32;             /* per graph input: 1 when its LOADs convert float32 to
                                    DLFloat16 (plan_edge_f32), NULL when none does */
    bool store_f32;              /* the next STOREs widen DLFloat16 to a float32 output */
    uint32_t core;               /* the core whose program is being emitted */
    const IrKernel *kernel;      /* its kernel (work items, grid: ring sharing) */
    uint8_t load_flags;          /* flags the next LOADs carry (ISA_F_RING) */
} CgEmit;

/* ---- cg_emit.c ---- */
/* Append instruction in to the code; the cached loads its LX write overlaps are forgotten. */
void cg_push(CgEmit *e, const SpyInsn *in);
/* Appends VFILL: n elements of dtype dt at LX byte dst set to the element bits. */
void cg_push_fill(CgEmit *e, int dt, uint32_t dst, uint32_t n, uint32_t bits);
/* ---- cg_lxspan.c ---- */
/* The set of the elements (len[i], LX stride ls[i] elements; n dims) of es bytes at lo. */
void cg_span_make(CgSpan *s, int64_t lo, unsigned es, int n, const int64_t *len,
                  const int64_t *ls);
/* Bytes of one LX element of device dtype dt (sub-byte and 8-bit types: one). */
int64_t cg_dev_bytes(int dt);
/* The LX bytes instruction in writes; false if it writes no LX. */
bool cg_insn_lx_write(const SpyInsn *in, CgSpan *s);
/* Whether a and b share a byte (true also when too many runs to compare one by one). */
bool cg_span_overlap(const CgSpan *a, const CgSpan *b);
/* DRAM segment and byte offset of the storage of root value r. */
void cg_root(CgEmit *e, ValId r, uint32_t *seg, int64_t *off);
/* Segment and byte offset of access a at iteration point start (dims nd). */
void cg_access_at(CgEmit *e, const IrAccess *a, const int64_t *start, int nd, unsigned esize,
                  uint32_t *seg, int64_t *off);

/* ---- cg_dma.c ---- */
void cg_dims_add(CgDims *d, int64_t len, int64_t ds, int64_t ls);
/* Set LX strides row-major (contiguous) over d's extents. */
void cg_dims_dense_lx(CgDims *d);
/* Emit LOAD or STORE instructions for a logical DMA (coalesced, split into <= 6-dim
 * pieces that stay inside one core window). */
void cg_dma(CgEmit *e, uint8_t op, uint32_t seg, int64_t off, uint32_t lx, unsigned esize,
            const CgDims *d);
/* ---- cg_ring.c ---- */
/* Items of kernel k that share one tile of access a (the product of the chunk counts
 * of the grid dims a does not depend on; 1: not shared). */
int64_t cg_ring_sharers(const IrKernel *k, const IrAccess *a);
/* Whether this core receives piece j of a's tile at the item at start over the ring. */
bool cg_ring_recv(const CgEmit *e, const IrKernel *k, const IrAccess *a, const int64_t *start,
                  int64_t j);
/* LOAD the tile of access a over dims (len[i], iteration dim dim[i]), dense in LX at lx
 * but for a row pitch of its outermost dim (0: dense), elements of es bytes, for the
 * item at st (nd dims; depth chunk c): in pieces shared over the ring when it is
 * shared (cg_ring.c). */
void cg_load_shared(CgEmit *e, const IrKernel *k, const IrAccess *a, const int64_t *st, int nd,
                    uint32_t lx, unsigned es, const int64_t *len, const int *dim, int n,
                    int64_t pitch, int64_t c);
/* LOAD unless the same data is known to be at lx already. */
void cg_load_cached(CgEmit *e, uint32_t seg, int64_t off, uint32_t lx, unsigned esize,
                    const CgDims *d);
/* Forget the cached loads that overlap the bytes w an instruction writes (called by
 * cg_push for every instruction that writes LX: a result written in place over a
 * loaded tile of the next work item, the pieces of a shared load after its first one
 * too, a LOAD over part of another cached piece). */
void cg_cache_invalidate(CgEmit *e, const CgSpan *w);
/* Forget every cached load and the conv patch state (start of a core program). */
void cg_cache_reset(CgEmit *e);

/* ---- cg_elem.c: tile programs ---- */
void cg_tp_prelude(CgEmit *e, const IrTileProg *tp);
void cg_tp_run(CgEmit *e, const IrTileProg *tp, const int64_t *start, const int64_t *len);

/* ---- per kernel kind: emit one work item ---- */
void cg_contract_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len);
void cg_reduce_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len);
void cg_move_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len);
/* cg_scatter.c: one item of a SCATTER kernel (anchor n) */
void cg_scatter_item(CgEmit *e, const IrKernel *k, const IrNode *n, const int64_t *start,
                     const int64_t *len);

/* ---- cg_dyn.c: data-dependent outputs ---- */
/* SPY_TF_* fields of the descriptor of graph output j. */
void cg_dyn_desc(IrGraph *g, uint32_t j, SpyTensorDesc *d);
bool cg_uses_scatter(const CgEmit *e);     /* the code needs SPY_FEAT_SCATTER */
/* cg_debug.c: the DEBUG section's entries (names to be put into STRINGS by the caller). */
uint32_t cg_debug_entries(CgEmit *e, const CgOptions *opt, SpyDebugDesc **out,
                          const char ***names);

/* ---- the output (cg_bundle.c, cg_out.c) ---- */
/* Where the bundle goes: fd >= 0, a file written front to back from offset 0 (the
 * header last, at 0); otherwise a malloc'd buffer returned in mem. */
typedef struct {
    int fd;
    bool direct;                           /* fd: with direct I/O where allowed (cg_out.c) */
    uint8_t *mem;
    size_t len;                            /* bytes of the bundle */
    int err;                               /* errno of a failed write, else 0 */
} CgOut;
/* ---- cg_guard.c ---- */
/* Guards (isa.md "Guards") on e's code, programs progs, of a graph with bounded symbolic
 * dimensions: each instruction whose results only padding needs, at the sizes its guard
 * names, is skipped then; true when some instruction got one (SPY_FEAT_GUARDS). */
bool cg_guards(CgEmit *e, const SpyProgramDesc *progs);


/* ---- cg_out.c ---- */
/* The file of a CgOut being written front to back through two staging buffers, one
 * filled by the caller while a writer thread writes the other (cg_out.c). */
typedef struct {
    CgOut *out;
    uint8_t *buf[2];                       /* staging buffers (page aligned) */
    int cur;                               /* the one being filled */
    size_t n;                              /* bytes staged in it */
    uint64_t pos, synced;                  /* file offset of its first byte; bytes handed
                                              to writeback (buffered writes) */
    bool direct;                           /* O_DIRECT is on */
    bool threaded, busy, quit;             /* the writer thread: started; writing job;
                                              told to stop */
    pthread_t thread;
    pthread_mutex_t mu;                    /* guards busy, quit and job */
    pthread_cond_t cv;
    const uint8_t *job;                    /* what it writes: job_len bytes at job_off */
    size_t job_len;
    uint64_t job_off;
} CgSink;
/* Start writing o's file at offset 0 (direct I/O when o->direct and the file takes it);
 * false when out of memory. */
bool cg_sink_open(CgSink *s, CgOut *o);
/* Where the next bytes go, with at least min (<= 4096) bytes of room; *room gets all of
 * it. Bytes placed there count once committed (cg_sink_commit). */
uint8_t *cg_sink_room(CgSink *s, size_t min, size_t *room);
void cg_sink_commit(CgSink *s, size_t n);
/* Append n bytes of d (zeros when d is NULL). */
void cg_sink_put(CgSink *s, const void *d, size_t n);
/* Write what is staged, then head (hlen bytes) over the start of the file; frees the
 * buffer. A failed write shows in out->err. */
void cg_sink_finish(CgSink *s, const void *head, size_t hlen);
/* Free the buffer (after an error). */
void cg_sink_free(CgSink *s);

/* Serialise the plan and the programs to o; false when a write failed (o->err). */
bool cg_write_bundle(CgEmit *e, const CgOptions *opt, const SpyProgramDesc *progs, CgOut *o);
/* Device bits of a float constant in dtype dt (for VFILL). */
uint32_t cg_value_bits(int dt, double v);

#endif
