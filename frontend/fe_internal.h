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
/* Decode tp into t (data malloc'd, row-major little-endian). base_dir is the folder
 * external data is resolved against (NULL: external data refused). On error writes
 * "tensor 'name': message" into err. */
bool fe_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, FeTensor *t,
                          char *err, size_t errlen);
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
