/* rt_model.h: private types of libspyrert: the loaded model, its verified tables and
 * its timing, shared by the loader, verifier, timing model, session and API files.
 * Nothing here is visible to users of spyrt.h.
 */
#ifndef SPYRT_RT_MODEL_H
#define SPYRT_RT_MODEL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "sbin.h"
#include "spyrt.h"

#define RT_ERR_LEN 512

/* Collected error of a load: status plus a formatted message. */
typedef struct {
    spy_status status;
    char msg[RT_ERR_LEN];
} RtErr;

/* Modelled figures of one kernel (one execution). */
typedef struct {
    double device_us;        /* slowest core + barrier */
    double roofline_us;
    uint64_t dram_bytes;     /* all cores, LOAD + STORE + GATHER + SCATTER, whole sticks */
    uint64_t flops;          /* useful operations of the instructions (rt_timing.c) */
    uint64_t min_dram_bytes; /* compulsory DRAM bytes of the instructions */
    int limiter;             /* RT_LIM_*: what bounds the slowest core */
    double *core_us;         /* [ncores] modelled time per core (no barrier) */
} RtKernelTime;

/* What limits a kernel's modelled time (rt_timing_limiter_name). */
enum { RT_LIM_MATRIX, RT_LIM_VECTOR, RT_LIM_DRAM, RT_LIM_PASSES, RT_LIM_BARRIER };

/* Host <-> device binding of one graph input or output. */
typedef struct {
    spy_tensor_info info;    /* what the public API reports */
    const SpyTensorDesc *desc;
    uint32_t seg;
    size_t dev_bytes;        /* numel * device element size */
    bool direct;             /* caller buffer bound as the segment (no staging) */
    bool hidden;             /* SPY_TF_HIDDEN: internal output, no caller buffer */
    int dyn_axis;            /* SPY_TF_DYNAMIC: data-dependent axis; SPY_TF_SHAPED:
                                SPY_DYN_SHAPE; -1 when static */
    bool symbolic;           /* some axis has a DIMREFS entry (rt_symdim.c) */
    int8_t sym[SPY_MAX_RANK];/* per axis: its symbol, or -1 */
} RtIo;

struct spy_model {
    uint8_t *file;           /* the whole bundle: a read-only mapping of the file, or an
                                owned malloc'd copy (rt_load.c) */
    size_t size;
    bool mapped;             /* file is mapped (munmap), else malloc'd (free) */
    const SpyHeader *hdr;
    SpyTarget target;
    /* sections (pointers into file; NULL/0 when absent) */
    const SpySection *sec[SPY_SEC_MAX];
    const char *strings;
    uint64_t strings_size;
    const SpyTensorDesc *tensors;
    uint32_t ntensors, ninputs, noutputs;
    uint32_t nvisible;       /* outputs shown to the caller; the hidden ones follow */
    const uint8_t *consts;
    uint64_t consts_size;
    const SpyKernelDesc *kernels;
    uint32_t nkernels;
    const SpyProgramDesc *programs;
    uint32_t nprograms;
    const SpyInsn *code;
    uint64_t ncode;
    const uint32_t *schedule;
    uint32_t nsched;
    const SpySegmentDesc *segs;
    uint32_t nsegs;
    const char *meta;
    uint64_t meta_size;
    const uint8_t *selftest;
    uint64_t selftest_size;
    const SpyDebugDesc *debug;  /* DEBUG section (NULL when absent: stripped) */
    uint64_t debug_bytes;
    uint32_t ndebug;         /* its entries (set once verified) */
    const SpyDimRef *dimrefs;/* DIMREFS section (NULL when absent: a static bundle) */
    uint32_t ndimrefs;
    uint32_t nsyms;          /* symbols: elements of the SPY_TF_DIMS input */
    uint32_t nvis_in;        /* inputs shown to the caller (all but SPY_TF_DIMS) */
    /* derived at load */
    RtIo *io;                /* [ntensors]: inputs then outputs */
    char *meta_text;         /* NUL-terminated copy of META */
    RtKernelTime *ktime;     /* [nkernels] */
    uint32_t *sched_count;   /* [nkernels] times the schedule runs each kernel */
    uint8_t *share_rank;     /* [nkernels] lowest share policy that shares the kernel over
                                threads (rt_adapt.h); RT_NPOLICY: never */
    uint32_t *active;        /* program indices (within their kernel) of the programs that
                                hold more than their BARRIER, kernel by kernel */
    uint32_t *active_first;  /* [nkernels + 1] kernel k's are active[active_first[k]..] */
    struct RtPrep *prep;           /* [ncode] execution plans (rt_prep.c) */
    struct RtWrite *kwr;     /* the DRAM bytes each kernel writes (rt_acache.c), kernel k's */
    uint32_t *kwr_first;     /* kwr[kwr_first[k]..kwr_first[k + 1]); NULL: none listed */
    uint64_t *odep;          /* per schedule entry, per active program: the mask of the
                                previous entry's active programs it waits for (rt_overlap.c) */
    uint32_t *odep_first;    /* [nsched] entry pos's masks at odep[odep_first[pos]..], or
                                RT_OV_BARRIER: it waits for all of them; NULL: all do */
    struct RtStitch **stitch;/* [nkernels] kernels whose programs run as a few large
                                products (rt_stitch.c), NULL for the others; NULL: none */
    uint8_t min_rank;        /* lowest share rank scheduled: policies below it need no
                                worker */
    uint32_t share_policies; /* bit p: policy p shares another kernel than p - 1 (bit 0
                                always) */
    double device_us;        /* sum over the schedule */
    bool guards;             /* SPY_FEAT_GUARDS: instructions skipped for small sizes */
    size_t staging_bytes;    /* staging buffers a session needs */
    /* size buckets (SPY_FEAT_VARIANTS, rt_variants.c) */
    const spy_model *parent; /* a bucket: the bundle holding it (whose CONSTS it reads;
                                its file bytes are the parent's, not owned) */
    spy_model **variants;    /* [nvariants] the buckets, smallest first */
    uint32_t nvariants;
};

/* rt_load.c */
void rt_err_set(RtErr *e, spy_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
spy_status rt_model_parse(spy_model *m, RtErr *e);
void rt_model_release(spy_model *m);

/* rt_prep.c: m->prep from the verified code */
spy_status rt_prep_model(spy_model *m, RtErr *e);
void rt_memo_model(spy_model *m);      /* rt_memo.c: reusable input patches */
void rt_acache_model(spy_model *m);    /* rt_acache.c: the DRAM each kernel writes */
void rt_affinity_model(spy_model *m);  /* rt_affinity.c: the order of a kernel's programs */
#define RT_OV_BARRIER UINT32_MAX
void rt_overlap_model(spy_model *m);   /* rt_overlap.c: what each program waits for */
void rt_stitch_model(spy_model *m);    /* rt_stitch.c: kernels run as large products */
void rt_stitch_free(spy_model *m);

/* rt_verify.c: verifies every table after the section layout was checked. */
spy_status rt_verify_tables(spy_model *m, RtErr *e);
const char *rt_str(const spy_model *m, uint32_t off);
/* A name and its table entry; rt_cmp_name_idx orders them by name, then entry (qsort,
 * to find duplicate names). */
typedef struct {
    const char *name;
    uint32_t idx;
} RtNameIdx;
int rt_cmp_name_idx(const void *a, const void *b);

/* rt_verify_insn.c: verifies one instruction; on failure writes why into msg. */
bool rt_verify_insn(const spy_model *m, const SpyInsn *in, char *msg, size_t msglen);

/* rt_dyn.c: outputs with a data-dependent extent (sbin.h SPY_TF_DYNAMIC). */
/* Checks the tensors' flags (dyn_axis, hidden outputs last, count location) after the
 * segments were verified; fills io->dyn_axis and m->nvisible. */
spy_status rt_dyn_verify(spy_model *m, RtErr *e);
/* After a run: reads each dynamic output's count into its entry of dims (tensor t's
 * dims at t * SPY_MAX_RANK), checks it, and moves the valid box of the caller's buffer
 * to its row-major prefix (tail zeroed); a shaped output's dims are all read. */
spy_status rt_dyn_outputs(const spy_model *m, uint8_t *const *seg, void *const *outputs,
                          int64_t *dims, char *err, size_t errlen);

/* rt_symdim.c: bounded symbolic dimensions (SPY_FEAT_DYNDIM, DIMREFS). */
/* Checks the DIMREFS entries, the SPY_TF_DIMS input and the feature bit after the
 * tensors were verified; sets m->nsyms, m->nvis_in and each io's sym[]. */
spy_status rt_sym_verify(spy_model *m, RtErr *e);
/* Before a run: the symbols' values from the inputs' actual dims (in_dims, tensor t's
 * at t * SPY_MAX_RANK) into symv, checked against the bounds and between inputs; each
 * symbolic input's packed caller buffer copied into its bound-shaped buffer pad[i]
 * (the rest zero); bound[i] receives the buffer to bind for input i. */
spy_status rt_sym_inputs(const spy_model *m, const int64_t *in_dims, const void *const *inputs,
                         uint8_t *const *pad, const void **bound, int32_t *symv, char *err,
                         size_t errlen);
/* After a run: each symbolic output's valid box moved to the row-major prefix of its
 * actual shape in the caller's buffer (tail zeroed), its dims into dims. */
void rt_sym_outputs(const spy_model *m, const int32_t *symv, void *const *outputs,
                    int64_t *dims);

/* rt_variants.c: size buckets (SPY_FEAT_VARIANTS, the VARIANTS section). */
/* Loads and verifies every bucket of m (after m itself was verified and timed). */
spy_status rt_variants_load(spy_model *m, RtErr *e);
/* The buckets chosen for the last RT_PICK_KEEP tuples of symbol sizes a session ran
 * (a server alternating between a few prompt lengths times each once). */
#define RT_PICK_KEEP 8
typedef struct {
    int n, next;                   /* tuples kept; the one to replace next */
    int v[RT_PICK_KEEP];
    int32_t key[RT_PICK_KEEP][64];
} RtPick;
/* The bucket of m a run at the input dims in_dims (tensor t's at t * SPY_MAX_RANK)
 * takes: of those whose box holds the sizes and m itself, the least modelled time at
 * them; -1: the bounds (m itself; also for sizes outside them, which the run refuses).
 * *memo (zeroed before the first call) keeps the choices of the last sizes. */
int rt_variant_pick(const spy_model *m, const int64_t *in_dims, RtPick *memo);

/* rt_debug.c: the DEBUG section (sbin.h SpyDebugDesc). */
/* Checks every entry (name, kernel, segment, dtype, shape, byte range inside the
 * segment, unique names, the feature bit) after the kernels and segments were
 * verified; sets m->ndebug. */
spy_status rt_debug_verify(spy_model *m, RtErr *e);
/* rt_verify_ring.c: every LOAD over the ring has a DRAM LOAD of its tile on another
 * core of its kernel. */
spy_status rt_ring_verify(spy_model *m, RtErr *e);

/* rt_session.c: the model of session s, and the base of DRAM segment seg as bound in
 * it (for rt_debug.c). */
const spy_model *rt_session_model(const spy_session *s);
const uint8_t *rt_session_seg(const spy_session *s, uint32_t seg);
/* The kernel whose hook (spy_session_set_kernel_hook) session s is in now; -1 none. */
int rt_session_hook_kernel(const spy_session *s);
/* Share policy of the session's last run (rt_adapt.h). */
int rt_session_policy(const spy_session *s);

/* rt_timing.c: per-kernel modelled times (after verification). */
spy_status rt_timing_compute(spy_model *m, RtErr *e);
/* Modelled device time (us) of one inference of m, a bundle with guards, when its
 * symbols have the sizes dims: every kernel timed as at load but from the instructions
 * the sizes do not skip; kernel_us[nkernels] receives each kernel's time. */
double rt_timing_guarded(const spy_model *m, const int32_t *dims, double *kernel_us);
/* Name of an RT_LIM_* limiter ("matrix", "vector", "dram", "8-row passes", "barrier"). */
const char *rt_timing_limiter_name(int lim);

/* rt_api.c */
int rt_default_threads(const spy_model *m);

/* rt_dtype.c */
unsigned rt_dtype_size(int dt);          /* device or host element size, 0 if unknown */
const char *rt_dtype_name(int dt);
bool rt_dtype_computable(int dt);        /* F32 I32 I16 I8 U8 BOOL */
bool rt_dtype_movable(int dt);           /* computable + storage types, DLF16 */
bool rt_io_pair_ok(int role, int host, int dev);
const char *rt_opcode_name(int op);
const char *rt_section_name(uint32_t id);

#endif
