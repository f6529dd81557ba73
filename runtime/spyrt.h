/* spyrt.h: public API of libspyrert, the spyrec runtime.
 *
 * Load a bundle (.sbin) once; the loaded model is immutable and may be shared by
 * threads. Each thread runs through its own session (its DRAM arena, its 32 core
 * scratchpads). Every function returns a status; on failure a message is available
 * (spy_model_load_* write it to the caller's buffer; sessions keep their last one).
 * Nothing here aborts on bad input.
 *
 *   spy_model *m; char err[256];
 *   if (spy_model_load_file("m.sbin", &m, err, sizeof err)) { puts(err); ... }
 *   spy_session *s; spy_session_create(m, NULL, &s);
 *   spy_session_run(s, inputs, outputs);   // caller-owned buffers, host dtypes
 */
#ifndef SPYRT_H
#define SPYRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SPY_OK = 0,
    SPY_E_INVALID_ARG = 1,   /* NULL pointer, wrong index, buffer too small */
    SPY_E_BAD_BUNDLE = 2,    /* malformed, corrupted or unverifiable bundle */
    SPY_E_VERSION = 3,       /* bundle from an incompatible compiler version */
    SPY_E_TARGET = 4,        /* built for different target parameters */
    SPY_E_IO = 5,            /* file could not be read */
    SPY_E_NOMEM = 6,
    SPY_E_RUNTIME = 7,       /* input data error at run time (index out of range, ...) */
} spy_status;

/* dtype codes equal ONNX TensorProto.DataType (1 = float32, 7 = int64, 9 = bool, ...) */
typedef int spy_dtype;

#define SPY_MAX_RANK 8

typedef struct {
    const char *name;        /* owned by the model */
    spy_dtype dtype;         /* host dtype the caller passes or receives */
    int rank;
    int64_t dims[SPY_MAX_RANK];
    size_t nbytes;           /* size of the caller's buffer */
} spy_tensor_info;

typedef struct spy_model spy_model;
typedef struct spy_session spy_session;

const char *spy_status_str(spy_status s);
/* Short name of a dtype code ("f32", "i64", "bool", ...); "?" if unknown. */
const char *spy_dtype_name(spy_dtype dt);
const char *spy_version(void);

/* Load and verify all of a bundle before anything runs.
 * spy_model_load_file maps a regular file read-only rather than copying it: the model
 * costs the bundle's size in memory once (shared with the page cache) and sessions
 * read its constants in place. The file must then stay as it is until spy_model_free:
 * truncating it or rewriting it in place under a loaded model is undefined (SIGBUS or
 * changed constants); replacing it by rename, as spyrec writes bundles, or removing
 * it is safe. Other files (pipes, devices) are read into memory.
 * spy_model_load_memory copies data once; the caller may free it on return. */
spy_status spy_model_load_file(const char *path, spy_model **out, char *err, size_t errlen);
spy_status spy_model_load_memory(const void *data, size_t size, spy_model **out, char *err,
                                 size_t errlen);
void spy_model_free(spy_model *m);

int spy_model_num_inputs(const spy_model *m);
int spy_model_num_outputs(const spy_model *m);
spy_status spy_model_input_info(const spy_model *m, int i, spy_tensor_info *info);
spy_status spy_model_output_info(const spy_model *m, int i, spy_tensor_info *info);
int spy_model_num_kernels(const spy_model *m);
/* Bytes of memory a session needs (arena + scratchpads + staging; with size buckets,
 * at most, once every bucket has run). */
size_t spy_model_session_bytes(const spy_model *m);

typedef struct {
    int num_threads;         /* host threads emulating the cores; 0 = one per host CPU
                                (with several, which small kernels they share the
                                session decides from the times of its own runs) */
    int profile;             /* record per-kernel host time (modelled time is always kept) */
    int debug_lx_poison;     /* fill scratchpads with 0xFF before each core program, to
                                catch programs that read LX bytes they never wrote (and
                                reuse nothing an earlier program on the thread left) */
} spy_session_options;

spy_status spy_session_create(const spy_model *m, const spy_session_options *opt,
                              spy_session **out);
/* inputs[i]: buffer of spy_model_input_info(i).nbytes bytes, host dtype.
 * outputs[i]: buffer of spy_model_output_info(i).nbytes bytes. */
spy_status spy_session_run(spy_session *s, const void *const *inputs, void *const *outputs);
const char *spy_session_error(const spy_session *s);
void spy_session_free(spy_session *s);

typedef struct {
    const char *name;        /* kernel name */
    double device_us;        /* modelled device time */
    double host_us;          /* host time of the last run (0 if not profiling) */
    double roofline_us;      /* roofline bound */
    uint64_t flops;          /* useful operations of the kernel's instructions */
    uint64_t dram_bytes;     /* modelled DRAM traffic (whole 128-byte sticks) */
    uint64_t min_dram_bytes; /* compulsory DRAM bytes (the roofline's) */
    const char *limiter;     /* what bounds the modelled time: "matrix", "vector", "dram",
                                "8-row passes" (under-filled matrix passes) or "barrier" */
} spy_kernel_profile;

/* Per-kernel profile of the last run; i < spy_model_num_kernels. */
spy_status spy_session_kernel_profile(const spy_session *s, int i, spy_kernel_profile *p);
/* Total modelled device time of one inference, microseconds. */
double spy_model_device_us(const spy_model *m);

/* Modelled figures of kernel i without running anything (host_us = 0). Like
 * spy_session_kernel_profile, figures are per inference (x the times the schedule
 * runs the kernel). */
spy_status spy_model_kernel_profile(const spy_model *m, int i, spy_kernel_profile *p);
/* Modelled time of each core of kernel i for one execution (compute + DRAM - overlap,
 * no barrier), microseconds, indexed by core id: writes min(n, cores) values and
 * returns the number of cores, or -1 on a bad argument. */
int spy_model_kernel_core_us(const spy_model *m, int i, double *core_us, int n);
/* The bundle's META text (compiler version and flags), NUL-terminated; "" if NULL. */
const char *spy_model_meta(const spy_model *m);
/* Sample input i / expected output i from the bundle's optional SELFTEST section,
 * in host dtype (spy_model_*_info(i).nbytes bytes); NULL when there is none. */
const void *spy_model_selftest_input(const spy_model *m, int i);
const void *spy_model_selftest_output(const spy_model *m, int i);

/* Outputs with a data-dependent shape (NonZero, Compress, Unique, NonMaxSuppression):
 * spy_model_output_info gives their upper-bound shape, the size of the buffer to pass;
 * after a run the buffer holds the actual tensor (row-major, the rest zeroed) and
 * spy_session_output_shape its shape (rank and SPY_MAX_RANK dims). Static outputs
 * report their fixed shape. */
spy_status spy_session_output_shape(const spy_session *s, int i, int *rank, int64_t *dims);
/* The axis of output i whose extent depends on the data; -1 if its shape is static;
 * SPY_DYN_SHAPE when its whole shape is computed at run time (a Reshape target or
 * reduction axes given as an input: the buffer to pass holds dims[0] elements, the
 * capacity, and spy_session_output_shape gives the actual shape after a run). */
#define SPY_DYN_SHAPE (-2)
int spy_model_output_dynamic_axis(const spy_model *m, int i);

/* Bounded dynamic dimensions (spyrec --dim, --input-shape MIN..MAX): one bundle serves
 * every size within the bounds. spy_model_input_info gives the upper-bound shape;
 * spy_model_input_dim_bounds returns 1 (with the bounds) for such an axis of input i,
 * 0 for a fixed one, -1 for a bad argument. Before a run, spy_session_set_input_shape
 * gives input i's actual shape (its buffer then holds exactly that many elements,
 * row-major; until set, the upper bound); sizes outside the bounds, or different sizes
 * of one dimension shared by several inputs, fail the run. Output buffers keep their
 * upper-bound size; after the run they start with the actual tensor (row-major), whose
 * shape spy_session_output_shape gives; the bytes after it are unspecified (the run's
 * host time follows the actual size, so nothing zeroes the rest of the bounds). */
int spy_model_input_dim_bounds(const spy_model *m, int i, int axis, int64_t *min,
                               int64_t *max);
spy_status spy_session_set_input_shape(spy_session *s, int i, int rank, const int64_t *dims);

/* Size buckets (spyrec --dim-buckets): such a bundle also holds code compiled for
 * smaller boxes of its symbolic dimensions, and each run uses, of the buckets whose box
 * holds the actual sizes and the bounds, the one with the least modelled time at those
 * sizes. spy_model_num_variants gives how many
 * buckets there are besides the bounds; spy_model_variant(m, v) one of them as a model
 * for the spy_model_* queries (bounds, kernels, modelled time; it lives as long as m).
 * spy_session_variant gives the bucket of the last run (-1: the bounds); the session's
 * kernel profile and host events are then that bucket's kernels. */
int spy_model_num_variants(const spy_model *m);
const spy_model *spy_model_variant(const spy_model *m, int v);
int spy_session_variant(const spy_session *s);
/* Modelled device time of the last run of s, microseconds (before a run: the bounds'):
 * the bucket's it ran in, and, where the bundle has guards (isa.md "Guards"), that of the
 * instructions its sizes left to run, which follows the actual sizes inside the box. */
double spy_session_device_us(const spy_session *s);
/* Modelled device time (us) of one run of m with its inputs at the sizes dims (axis a
 * of input i at dims[i * SPY_MAX_RANK + a], as spy_session_set_input_shape takes them;
 * only symbolic axes are read), without running: what spy_session_device_us reports
 * after such a run. A bundle without dynamic dimensions: spy_model_device_us. -1 for a
 * NULL argument, sizes outside the bounds, or inputs disagreeing on a dimension. */
double spy_model_device_us_at(const spy_model *m, const int64_t *dims);

/* CRC32C (Castagnoli), as used for bundle sections. */
uint32_t spy_crc32c(uint32_t crc, const void *data, size_t n);

/* Host timeline of a profiling session (spy_session_options.profile), e.g. for a
 * Chrome-trace / Perfetto view: one event per (schedule entry, host thread) that ran
 * at least one core program of the entry in the last spy_session_run. */
typedef struct {
    int sched_pos;           /* position in the schedule */
    int kernel;              /* kernel index */
    int thread;              /* host thread (0: the thread that called spy_session_run) */
    int programs;            /* core programs this thread ran for the entry */
    double start_us, end_us; /* host time since the start of that spy_session_run */
} spy_host_event;

/* Events of the last run, ordered by schedule entry then thread: writes min(n, count)
 * of them and returns count; -1 if the session does not profile or on a bad argument. */
int spy_session_host_events(const spy_session *s, spy_host_event *ev, int n);
/* The kernel schedule: writes min(n, entries) kernel indices in execution order and
 * returns the number of entries (-1 on a bad argument). */
int spy_model_schedule(const spy_model *m, int *kernels, int n);

/* Debug info: the model's names of the tensors that kernels store in DRAM (the
 * bundle's DEBUG section; absent from bundles compiled with spyrec --strip), e.g. to
 * compare two compiles of one model layer by layer (spyrun --compare). */
typedef struct {
    const char *name;        /* the model's tensor name (owned by the model) */
    int kernel;              /* index of the kernel that writes it */
    spy_dtype dtype;         /* dtype on the device (ONNX code; 64 = DLFloat16) */
    int rank;
    int64_t dims[SPY_MAX_RANK];
    size_t numel;            /* elements (floats spy_session_read_debug_tensor writes) */
} spy_debug_tensor_info;

/* Number of debug tensors; -1 when the bundle has no DEBUG section. */
int spy_model_num_debug_tensors(const spy_model *m);
spy_status spy_model_debug_tensor_info(const spy_model *m, int i, spy_debug_tensor_info *info);

/* A kernel hook: called during spy_session_run on the calling thread after schedule
 * entry pos (kernel `kernel`) has completed on every core and before any later kernel
 * starts; not called after a failed kernel. */
typedef void (*spy_kernel_hook)(spy_session *s, int pos, int kernel, void *user);
/* Install (fn != NULL) or remove (NULL) the session's kernel hook. While one is
 * installed, the session's threads wait for it after every kernel. */
spy_status spy_session_set_kernel_hook(spy_session *s, spy_kernel_hook fn, void *user);
/* Inside the hook of the kernel that writes debug tensor i (spy_debug_tensor_info
 * .kernel): copy it, widened to float32, row-major, into dst (n >= numel floats).
 * Device memory is reused by later kernels, so this is the one moment it is there:
 * elsewhere SPY_E_INVALID_ARG. */
spy_status spy_session_read_debug_tensor(const spy_session *s, int i, float *dst, size_t n);

#ifdef __cplusplus
}
#endif
#endif
