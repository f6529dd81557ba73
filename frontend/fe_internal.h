/* fe_internal.h: declarations shared by the frontend's own files only.
 *
 * Nothing here is visible past frontend/: the protobuf-c types of the generated
 * ONNX schema appear only in this header and the frontend's .c files.
 */
#ifndef SPYREC_FE_INTERNAL_H
#define SPYREC_FE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fe.h"
#include "onnx/onnx.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the frontend assumes a little-endian host (ONNX raw_data and .npy '<' data)"
#endif

#define FE_DEFAULT_MAX_FILE_BYTES ((size_t)2 << 30) /* 2 GiB */
#define FE_DEFAULT_MAX_NESTING 64

/* ---- fe_io.c: files ---- */

/* Read a whole file (at most max_bytes) into a malloc'd buffer. On error returns NULL
 * and writes the reason (without the path) into err. */
uint8_t *fe_read_file(const char *path, size_t max_bytes, size_t *len, char *err,
                      size_t errlen);
/* A whole file's bytes: mapped read-only (a regular file), else read into memory. */
typedef struct {
    uint8_t *p;
    size_t len;
    bool mapped;                    /* p is a mapping of len bytes, else malloc'd */
} FeBytes;
/* Load path (at most max_bytes) into b; on error false with the reason (without the
 * path) in err. */
bool fe_bytes_load(const char *path, size_t max_bytes, FeBytes *b, char *err, size_t errlen);
void fe_bytes_free(FeBytes *b);
void fe_bytes_release(const FeBytes *b, const void *p, size_t n);
/* munmap, with the signature ir_graph_keep takes. */
void fe_unmap(void *p, size_t len);
/* Write len bytes to path through a temporary file in the same folder + rename, so a
 * failed write never leaves a partial file. "path: message" in err on failure. */
bool fe_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                          size_t errlen);
/* malloc'd folder part of path ("." when it has none); NULL if malloc fails. */
char *fe_dirname(const char *path);
/* snprintf that never fails on a NULL/0-sized buffer. */
void fe_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- fe_pbcheck.c: protobuf wire-format pre-scan ---- */

typedef struct {
    int max_nesting;                /* depth limit of the recursive messages */
    size_t max_unpacked_bytes;      /* refuse when protobuf-c would allocate more */
} FePbLimits;

/* Decode the varint at *off (< end) into *v, moving *off past it; false on a
 * truncated or overlong one (for walks over data that needs no messages). */
bool fe_pb_varint(const uint8_t *b, size_t *off, size_t end, uint64_t *v);
/* Walk buf as an encoded message of type desc before protobuf-c sees it: valid
 * varints, known wire types matching the schema, lengths inside their parent,
 * packed arrays of whole elements, GraphProto/TypeProto nesting at most
 * lim->max_nesting deep, and an estimate of the memory unpacking would take.
 * On error writes "offset N: message" into err and returns false. */
bool fe_pb_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                 const FePbLimits *lim, char *err, size_t errlen);

/* ---- fe_onnx_tensor.c: TensorProto <-> host tensors ---- */

/* The IR dtype of an ONNX TensorProto.DataType code; UNDEF if unsupported. */
IrDType fe_onnx_dtype(int64_t code);
/* Readable name of an ONNX data type code ("float", "complex64", "code 99"). */
const char *fe_onnx_dtype_name(int64_t code, char *buf, size_t len);
/* Check dims (rank, non-negative, no overflow) and fill t->rank/dims; *nbytes gets
 * numel x element size. Message "... " into err on failure. */
bool fe_check_dims(const int64_t *dims, size_t ndims, IrDType dt, int64_t *out_dims,
                   int *rank, size_t *nbytes, char *err, size_t errlen);
/* An external data file mapped read-only for the tensors of one decode or import. */
typedef struct {
    char *path;                     /* its real path (malloc'd) */
    uint8_t *base;                  /* the mapping; NULL for an empty file */
    size_t len;
    uint32_t refs;                  /* tensors that point into it */
} FeMapped;

/* Where the bytes of TensorProtos come from, and whether tensors may point into them
 * rather than copy them. External data files are mapped (never read into a buffer),
 * each once. With borrow set (an ONNX import), a tensor whose bytes need no change
 * and are 16-aligned points into its mapping (FeTensor.borrowed); fe_data_finish
 * then hands the mappings in use to the graph. */
typedef struct {
    const char *dir;                /* folder external data is resolved against; NULL:
                                       external data refused */
    bool borrow;
    FeBytes file;                   /* the model file, when raw_data points into it
                                       (fe_onnx_strip); owned here */
    uint32_t file_refs;             /* tensors that point into it */
    FeMapped *maps;                 /* external data files mapped so far */
    uint32_t nmaps, capmaps;
} FeData;

/* Decode tp into t (row-major little-endian; data malloc'd, or borrowed as FeData
 * says). On error writes "tensor 'name': message" into err. */
bool fe_tensor_from_proto(const Onnx__TensorProto *tp, FeData *src, FeTensor *t, char *err,
                          size_t errlen);
/* t as a constant of g named name (pointing at t's bytes when borrowed, else a copy);
 * frees t. */
ValId fe_tensor_const(IrGraph *g, const char *name, FeTensor *t);
/* Release d's mappings: with g, those tensors point into are kept by g (ir_graph_keep)
 * and the others unmapped; without, all are unmapped. */
void fe_data_finish(FeData *d, IrGraph *g);
/* Encode t as a packed TensorProto (raw_data); malloc'd bytes in *out. */
bool fe_tensor_to_proto(const FeTensor *t, uint8_t **out, size_t *outlen, char *err,
                        size_t errlen);

/* ---- fe_npy.c: NumPy .npy ---- */

bool fe_npy_is(const uint8_t *buf, size_t len);
bool fe_npy_read(const char *label, const uint8_t *buf, size_t len, FeTensor *t, char *err,
                 size_t errlen);
/* Encode t as .npy (v1 header, or v2 when the header needs it); malloc'd bytes. */
bool fe_npy_encode(const FeTensor *t, uint8_t **out, size_t *outlen, char *err, size_t errlen);

/* ---- fe_names.c: string -> u32 hash map living in a graph's arena ---- */

typedef struct {
    IrGraph *g;                     /* arena owner */
    const char **keys;              /* NULL = empty slot */
    uint32_t *vals;
    uint32_t cap, n;                /* cap is a power of two */
} FeMap;

void fe_map_init(FeMap *m, IrGraph *g);
bool fe_map_get(const FeMap *m, const char *key, uint32_t *val);
/* Insert or overwrite. key must outlive the map (arena or protobuf strings). */
void fe_map_put(FeMap *m, const char *key, uint32_t val);

#endif
