/* sbin.h: binary layout of a spyrec kernel bundle (.sbin). See sbin.md for the diagram.
 *
 * All integers little-endian. Layout:
 *
 *   offset 0   +--------------------------------------+
 *              | SpyHeader (256 bytes)                 |  magic, version, features,
 *              |   incl. SpyTarget (128 bytes)         |  target built for, table CRC
 *   256        +--------------------------------------+
 *              | SpySection[nsections] (32 bytes each) |  id, align, offset, size, crc32c
 *              +--------------------------------------+
 *              | padding to 64                         |
 *              +--------------------------------------+
 *              | section payloads, each 64-byte aligned,|
 *              | in table order, non-overlapping       |
 *              +--------------------------------------+  file_size
 *
 * header.table_crc = CRC32C over the header (with table_crc = 0) followed by the
 * section table. Each section carries the CRC32C of its payload.
 * A reader refuses: bad magic, major > SPY_SBIN_MAJOR (rebuild with a newer runtime)
 * or major < it, unknown required feature bits, any CRC mismatch, sections that
 * overlap, are misaligned, pass the end or overflow, duplicate or missing sections.
 */
#ifndef SPYREC_SBIN_H
#define SPYREC_SBIN_H

#include <stdbool.h>
#include <stdint.h>

#include "isa.h"
#include "target.h"

#define SPY_SBIN_MAGIC "SPYRSBIN"
#define SPY_SBIN_MAJOR 1
#define SPY_SBIN_MINOR 2
#define SPY_SBIN_ALIGN 64
#define SPY_SBIN_MAX_RANK 8

typedef struct {
    char magic[8];           /* "SPYRSBIN" */
    uint16_t major, minor;
    uint32_t features;       /* required-feature bits (SPY_FEAT_*); others are refused */
    uint32_t header_bytes;   /* sizeof(SpyHeader) */
    uint32_t nsections;
    uint64_t file_size;
    uint32_t table_crc;      /* see above */
    uint32_t reserved0;
    SpyTarget target;        /* target parameters the bundle was built for */
    uint8_t reserved[88];
} SpyHeader;

/* Required-feature bits: a reader refuses a bundle with a bit it does not know. */
#define SPY_FEAT_SCATTER 0x1u    /* CODE uses ISA_SCATTER (format 1.1) */
#define SPY_FEAT_DEBUG 0x2u      /* the bundle has a DEBUG section (format 1.2) */
#define SPY_FEAT_BWIN 0x4u       /* CODE uses MATMUL with ISA_F_BWIN (a window B) */
#define SPY_FEAT_DYNDIM 0x8u     /* bounded symbolic dimensions: a DIMREFS section and the
                                    SPY_TF_DIMS input (sbin.md) */
#define SPY_FEAT_FP8W 0x20u      /* CODE uses MATMUL with ISA_F_BF8 (float8 e4m3 B) */
#define SPY_FEAT_RING 0x40u      /* CODE uses LOAD with ISA_F_RING (a tile fed over the ring) */
#define SPY_FEAT_VARIANTS 0x100u /* size buckets: a VARIANTS section of bundles for smaller
                                    boxes of the symbolic dims, sharing CONSTS */
#define SPY_FEAT_GUARDS 0x200u  /* CODE has guarded instructions (isa.h SpyGuard): skipped
                                    at launch for small symbol sizes (SPY_FEAT_DYNDIM) */
#define SPY_FEAT_RING_CLAMP 0x400u  /* a LOAD over the ring has a row clamp (SPY_FEAT_GUARDS):
                                      the tile's origin sends the rows it receives */
#define SPY_FEAT_DIMSTEP 0x800u  /* a DIMREFS entry has a step (SpyDimRef.step, sbin.md) */
#define SPY_FEATURES_KNOWN (SPY_FEAT_SCATTER | SPY_FEAT_DEBUG | SPY_FEAT_BWIN | SPY_FEAT_DYNDIM | \
                            SPY_FEAT_FP8W | SPY_FEAT_RING | SPY_FEAT_VARIANTS | SPY_FEAT_GUARDS | \
                            SPY_FEAT_RING_CLAMP | SPY_FEAT_DIMSTEP)

typedef enum {
    SPY_SEC_STRINGS = 1,     /* NUL-terminated strings; other sections refer by offset */
    SPY_SEC_TENSORS = 2,     /* SpyTensorDesc[]: graph inputs then outputs */
    SPY_SEC_CONSTS = 3,      /* constant data in device layout (segment 0) */
    SPY_SEC_KERNELS = 4,     /* SpyKernelDesc[] */
    SPY_SEC_PROGRAMS = 5,    /* SpyProgramDesc[]: per kernel, per core instruction ranges */
    SPY_SEC_CODE = 6,        /* SpyInsn[] */
    SPY_SEC_SCHEDULE = 7,    /* uint32_t[]: kernel indices in execution order */
    SPY_SEC_SEGMENTS = 8,    /* SpySegmentDesc[]: relocation / binding of DRAM segments */
    SPY_SEC_META = 9,        /* compiler version and flags, UTF-8 text "key=value\n" */
    SPY_SEC_SELFTEST = 10,   /* optional: sample inputs then expected outputs, raw */
    SPY_SEC_DEBUG = 11,      /* optional: SpyDebugDesc[], the model's names of tensors that
                                kernels store in DRAM (left out by spyrec --strip) */
    SPY_SEC_DIMREFS = 12,    /* SpyDimRef[]: the bounded symbolic axes of inputs and outputs
                                (SPY_FEAT_DYNDIM) */
    SPY_SEC_VARIANTS = 15,   /* size buckets (SPY_FEAT_VARIANTS): SpyVariantsHead, then
                                SpyVariantDesc[count], then the bucket bundles (ids 13, 14
                                are not defined) */
    SPY_SEC_MAX
} SpySectionId;

typedef struct {
    uint32_t id;             /* SpySectionId */
    uint32_t align;          /* 64 */
    uint64_t offset;
    uint64_t size;
    uint32_t crc32c;
    uint32_t reserved;
} SpySection;

enum { SPY_ROLE_INPUT = 1, SPY_ROLE_OUTPUT = 2 };

/* SpyTensorDesc.flags (format 1.1; 0 in 1.0 bundles, where these bytes were reserved) */
#define SPY_TF_DYNAMIC 0x1u      /* output whose extent along dyn_axis is data-dependent:
                                    dims[] are upper bounds, the actual extent is the int32
                                    at (count_seg, count_off) after a run */
#define SPY_TF_HIDDEN 0x2u       /* internal output (e.g. a count), after every other
                                    output; not shown to the caller */
#define SPY_TF_SHAPED 0x4u       /* output whose whole shape is computed at run time:
                                    dims[] are [numel, 1, ...] (rank the actual rank, numel
                                    the capacity), the actual dims are rank int32 at
                                    (count_seg, count_off) after a run, the data their
                                    row-major prefix */

#define SPY_TF_DIMS 0x8u         /* the last input, hidden from the caller: int32[nsyms],
                                    the actual size of every symbol, which the runtime
                                    writes before each run (SPY_FEAT_DYNDIM) */

/* One bounded symbolic axis (DIMREFS section): axis `axis` of tensor `tensor` has, at
 * run time, the size of symbol `sym` (element `sym` of the SPY_TF_DIMS input), within
 * [min, max]; max is the tensor's dims[axis], for which everything is planned. The
 * caller gives an input of that size; an output comes back with it. */
typedef struct {
    uint32_t tensor;         /* index in TENSORS */
    uint32_t axis;
    uint32_t sym;
    uint32_t step;           /* 0: any size in [min, max]; > 1 (SPY_FEAT_DIMSTEP): only
                                max - j * step (the model joins sizes derived from it that
                                agree only there) */
    int64_t min, max;
} SpyDimRef;

/* Size buckets (VARIANTS section, SPY_FEAT_VARIANTS; sbin.md "Size buckets"): the
 * section starts with this head, then count entries, then the buckets' bundles. */
typedef struct {
    uint32_t count;          /* 1 .. 255 buckets besides the bound bundle itself */
    uint32_t reserved[15];   /* zero */
} SpyVariantsHead;

/* One bucket: a complete bundle (its CONSTS empty: it reads this bundle's CONSTS) of
 * size bytes at byte offset `offset` of the VARIANTS section (64-aligned, after the
 * table, in table order, not overlapping). Its DIMREFS give its box: the same symbols,
 * axes and minimums as this bundle's, each maximum at most this bundle's. */
typedef struct {
    uint64_t offset;
    uint64_t size;
    uint64_t reserved[2];    /* zero */
} SpyVariantDesc;

typedef struct {             /* one graph input or output (64 + 8*8 bytes) */
    uint32_t name;           /* offset in STRINGS */
    uint8_t role;            /* SPY_ROLE_* */
    uint8_t host_dtype;      /* dtype the caller sees (ONNX code), e.g. 7 = int64 */
    uint8_t dev_dtype;       /* dtype on the device, e.g. 6 = int32 */
    uint8_t rank;
    uint32_t seg;            /* DRAM segment holding the device copy (>= ISA_SEG_IO0) */
    uint32_t layout;         /* 0 = row-major */
    uint64_t numel;
    uint8_t flags;           /* SPY_TF_* */
    uint8_t dyn_axis;        /* SPY_TF_DYNAMIC: the axis with a data-dependent extent */
    uint8_t reserved1[2];
    uint32_t count_seg;      /* SPY_TF_DYNAMIC: DRAM segment of the extent (int32) */
    uint64_t count_off;      /* SPY_TF_DYNAMIC: its byte offset in that segment */
    uint8_t reserved[24];
    int64_t dims[SPY_SBIN_MAX_RANK];
} SpyTensorDesc;

typedef struct {             /* one kernel: SPMD over cores */
    uint32_t name;           /* offset in STRINGS, e.g. "k12_conv_relu" */
    uint32_t first_program;  /* index into PROGRAMS; ncores consecutive entries */
    uint32_t ncores;         /* == target.cores */
    uint32_t flags;
    uint64_t flops;          /* useful FLOPs as the compiler counts them */
    uint64_t min_dram_bytes; /* compulsory DRAM traffic, the compiler's count */
    uint8_t reserved[32];
} SpyKernelDesc;

typedef struct {
    uint64_t first_insn;     /* index into CODE */
    uint32_t ninsns;         /* including the final ISA_BARRIER */
    uint32_t core;
} SpyProgramDesc;

enum { SPY_SEGK_CONST = 0, SPY_SEGK_ARENA = 1, SPY_SEGK_IO = 2 };

typedef struct {             /* DRAM segment id == index in this table */
    uint32_t kind;           /* SPY_SEGK_* */
    uint32_t tensor;         /* IO: index in TENSORS; else 0 */
    uint64_t size;           /* bytes the segment must provide */
} SpySegmentDesc;

/* One tensor a kernel stores in DRAM, under its name in the model (DEBUG section, format
 * 1.2): after kernel `kernel` has run, element (i0, i1, ...) is at byte
 * offset + (i0 * strides[0] + i1 * strides[1] + ...) * size(dtype) of segment seg. */
typedef struct {             /* 160 bytes */
    uint32_t name;           /* offset in STRINGS: the model's tensor name */
    uint32_t kernel;         /* index in KERNELS of the kernel that writes it */
    uint32_t seg;            /* DRAM segment: the arena (1) or an output's IO segment */
    uint8_t dtype;           /* device dtype (ISA_DT_*) */
    uint8_t rank;
    uint8_t reserved0[2];
    uint64_t offset;         /* byte offset of element (0, ..., 0) in seg */
    int64_t dims[SPY_SBIN_MAX_RANK];
    int64_t strides[SPY_SBIN_MAX_RANK];    /* in elements; rows of sticked tensors are
                                              padded, slices of concatenations strided */
    uint8_t reserved[8];
} SpyDebugDesc;

/* Whether a DEBUG entry may have device dtype dt: one a reader widens to float32. */
static inline bool spy_debug_dtype_ok(int dt)
{
    switch (dt) {
    case ISA_DT_F32: case ISA_DT_DLF16: case ISA_DT_F16: case ISA_DT_BF16: case ISA_DT_I32:
    case ISA_DT_I16: case ISA_DT_I8: case ISA_DT_U8: case ISA_DT_BOOL:
        return true;
    default:
        return false;
    }
}

_Static_assert(sizeof(SpyHeader) == 256, "SpyHeader size");
_Static_assert(sizeof(SpySection) == 32, "SpySection size");
_Static_assert(sizeof(SpyVariantsHead) == 64, "SpyVariantsHead size");
_Static_assert(sizeof(SpyVariantDesc) == 32, "SpyVariantDesc size");
_Static_assert(sizeof(SpyTensorDesc) == 128, "SpyTensorDesc size");
_Static_assert(sizeof(SpyKernelDesc) == 64, "SpyKernelDesc size");
_Static_assert(sizeof(SpyProgramDesc) == 16, "SpyProgramDesc size");
_Static_assert(sizeof(SpySegmentDesc) == 16, "SpySegmentDesc size");
_Static_assert(sizeof(SpyDebugDesc) == 160, "SpyDebugDesc size");

#endif
